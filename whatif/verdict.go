package whatif

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Mechanisms is what a fault model has that a strategy can lose to; the
// verdict names them when it explains a loss.
type Mechanisms struct {
	// Domains maps each provider to its correlation group ("" = none).
	Domains map[string]string `json:"domains"`
	// SlowOutages: some outage hangs or stalls to a timeout instead of
	// failing fast.
	SlowOutages bool `json:"slow_outages"`
	// RetryStorm: refused requests lengthen a throttle or earn a ban.
	RetryStorm bool `json:"retry_storm"`
	// ScarceFallbacks: a link after the first has a daily request or token
	// quota.
	ScarceFallbacks bool `json:"scarce_fallbacks"`
}

// mechanisms reads what m has.
func (m *Model) mechanisms() Mechanisms {
	mc := Mechanisms{Domains: map[string]string{}}
	for _, g := range m.Groups {
		if g.Fault == "hang" || g.Fault == "stall" {
			mc.SlowOutages = true
		}
	}
	for name, p := range m.Providers {
		mc.Domains[name] = p.Group
		if p.Outages.Fault == "hang" || p.Outages.Fault == "stall" {
			mc.SlowOutages = true
		}
		rl := p.RateLimit
		if rl.Penalty > 0 || rl.BanAfter > 0 {
			mc.RetryStorm = true
		}
		if rl.DailyTokens > 0 || rl.DailyQuota > 0 && rl.DailyQuota < 100 {
			mc.ScarceFallbacks = true
		}
	}
	return mc
}

// figure is one column of the table the verdict ranks.
type figure struct {
	name   string
	value  func(r *Row) float64
	better func(a, b float64) bool // a is better than b
	format func(v float64) string
	// tie reports whether a and b differ by no more than chance: the
	// verdict calls no winner then.
	tie func(a, b float64, jobs int) bool
}

// TieJobs is the difference in published jobs the verdict calls a tie:
// a handful of jobs in a year is the draw of a few unlucky calls.
const TieJobs = 3

func within(abs, rel float64) func(a, b float64, _ int) bool {
	return func(a, b float64, _ int) bool {
		d := math.Abs(a - b)
		return d <= abs || d <= rel*math.Max(math.Abs(a), math.Abs(b))
	}
}

func higher(a, b float64) bool { return a > b }
func lower(a, b float64) bool  { return a < b }

var figures = []figure{
	{"success", func(r *Row) float64 { return r.SuccessRate }, higher, func(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) },
		func(a, b float64, jobs int) bool { return math.Abs(a-b)*float64(jobs) <= TieJobs+0.5 }},
	{"blackout days", func(r *Row) float64 { return float64(r.BlackoutDays) }, lower, func(v float64) string { return fmt.Sprintf("%.0f", v) }, within(1, 0.1)},
	{"cost", func(r *Row) float64 { return r.CostUSD }, lower, func(v float64) string { return fmt.Sprintf("$%.2f", v) }, within(0.005, 0.03)},
	{"quality", func(r *Row) float64 { return r.MeanQuality }, higher, func(v float64) string { return fmt.Sprintf("%.1f", v) }, within(0.3, 0)},
	{"p95 publish", func(r *Row) float64 { return r.P95Seconds }, lower, func(v float64) string { return fmtSeconds(v) }, within(1, 0.1)},
	{"critical alerts/30d", func(r *Row) float64 { return r.Alerts30d["critical"] }, lower, func(v float64) string { return fmt.Sprintf("%.1f", v) }, within(0.2, 0)},
}

func fmtSeconds(v float64) string {
	d := time.Duration(v * float64(time.Second))
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%.1fh", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.1fm", d.Minutes())
	}
	return d.Round(time.Second).String()
}

// Verdict says in words which strategy wins on which figure and why, and
// what the operator should change in the config. It reads only the report.
func (r *Report) Verdict() []string { return r.VerdictWith(nil) }

// VerdictWith is Verdict beside the order advice printed with it (nil =
// none): a sentence about the chain's order then says what the advice
// says, instead of endorsing an order the advice does not. Every sentence
// is derived from the figures of the table it sits under: a baseline is
// said to lose or win a figure only when the figures differ by more than
// a tie, and each reason given names the figures it explains.
func (r *Report) VerdictWith(adv *Advice) []string {
	if len(r.Rows) < 2 {
		return nil
	}
	var out []string
	for _, f := range figures {
		rows := make([]*Row, len(r.Rows))
		for i := range r.Rows {
			rows[i] = &r.Rows[i]
		}
		sort.SliceStable(rows, func(i, j int) bool { return f.better(f.value(rows[i]), f.value(rows[j])) })
		best := f.value(rows[0])
		var winners, rest []string
		for _, row := range rows {
			v := f.value(row)
			if f.tie(v, best, row.Jobs) {
				winners = append(winners, row.Scenario+" "+f.format(v))
			} else {
				rest = append(rest, row.Scenario+" "+f.format(v))
			}
		}
		line := f.name + ": " + strings.Join(winners, " ≈ ")
		switch {
		case len(rest) == 0:
			line += " (all tie)"
		case len(winners) > 1:
			line += " (a tie), then " + strings.Join(rest, ", ")
		default:
			line += ", then " + strings.Join(rest, ", ")
		}
		out = append(out, line)
	}
	c := r.Row(ScenarioChain)
	if c == nil {
		return out
	}
	for _, name := range []string{ScenarioSingle, ScenarioCostOrder, ScenarioNaive} {
		b := r.Row(name)
		if b == nil {
			continue
		}
		out = append(out, r.versus(c, b))
	}
	return append(out, r.advice(c, adv)...)
}

// outcome is how a baseline fared against the chain, figure by figure.
type outcome struct {
	loses, wins []string        // "name (baseline vs chain)" of each figure lost or won
	lost, won   map[string]bool // by figure name
}

// publishesLess reports whether the baseline lost jobs or days to the chain.
func (o outcome) publishesLess() bool { return o.lost["success"] || o.lost["blackout days"] }

// versus explains one baseline against the chain: what it loses and wins,
// and why it loses (a reason only for the figures it explains).
func (r *Report) versus(c, b *Row) string {
	o := compare(c, b)
	var why []string
	m := r.Mechanisms
	switch b.Scenario {
	case ScenarioSingle:
		if o.publishesLess() || o.lost["p95 publish"] {
			why = append(why, fmt.Sprintf("it has nobody to fall back to when %s is down or out of quota", b.Order[0]))
		}
	case ScenarioCostOrder:
		shared := sharedPrefix(b.Order, m.Domains)
		switch {
		case o.publishesLess() && shared != "" && m.SlowOutages:
			why = append(why, fmt.Sprintf("its first links share the failure domain %s, and when it stalls each dead link costs its timeout, so the job deadline runs out before the independent provider is reached", shared))
		case o.publishesLess() && shared != "":
			why = append(why, fmt.Sprintf("its first links share the failure domain %s, so one incident takes out several of its tries at once", shared))
		case o.publishesLess():
			why = append(why, fmt.Sprintf("its order follows prices, and its first link %s publishes less on time than the chain's %s", b.Order[0], c.Order[0]))
		case o.lost["quality"]:
			why = append(why, "its order follows prices, not failure domains, and that costs it no jobs here")
		}
		if o.lost["quality"] {
			why = append(why, fmt.Sprintf("its first link %s writes most of its articles, so its quality (%.1f against %.1f) is what gets published", b.Order[0], b.MeanQuality, c.MeanQuality))
		}
	case ScenarioNaive:
		// Retrying at once explains what it lost, except the quality of
		// the answers (the same providers write them).
		retried := len(o.loses) > 1 || len(o.loses) == 1 && !o.lost["quality"]
		switch {
		case retried && b.Calls > c.Calls:
			why = append(why, fmt.Sprintf("it retries at once and remembers nothing (%d calls against the chain's %d)", b.Calls, c.Calls))
		case retried:
			why = append(why, "it retries at once and remembers nothing")
		}
		if m.RetryStorm && o.publishesLess() {
			why = append(why, "retries into a 429 count against the allowance and lengthen the throttle or earn a ban, so a burst becomes an hour without the provider")
		}
		if m.SlowOutages && (o.lost["success"] || o.lost["p95 publish"]) {
			why = append(why, "three tries at a stalled provider spend the deadline")
		}
	}
	reason := ""
	if len(why) > 0 {
		reason = ": " + strings.Join(why, "; ")
	}
	switch {
	case len(o.loses) == 0 && len(o.wins) == 0:
		return fmt.Sprintf("%s ties with the chain on every figure: this fault model cannot tell them apart", b.Scenario)
	case len(o.loses) == 0:
		return fmt.Sprintf("%s beats the chain on %s and loses on nothing: the mechanisms it ignores cost it nothing in this model", b.Scenario, strings.Join(o.wins, ", "))
	case len(o.wins) == 0:
		return fmt.Sprintf("%s loses to the chain on %s%s", b.Scenario, strings.Join(o.loses, ", "), reason)
	}
	return fmt.Sprintf("%s loses to the chain on %s and beats it on %s%s", b.Scenario, strings.Join(o.loses, ", "), strings.Join(o.wins, ", "), reason)
}

// compare lists the figures on which baseline b loses to (and beats) the
// chain c, with both values; a tie is neither.
func compare(c, b *Row) outcome {
	o := outcome{lost: map[string]bool{}, won: map[string]bool{}}
	for _, f := range figures {
		cv, bv := f.value(c), f.value(b)
		if f.tie(cv, bv, c.Jobs) {
			continue
		}
		s := fmt.Sprintf("%s (%s vs %s)", f.name, f.format(bv), f.format(cv))
		if f.better(cv, bv) {
			o.loses, o.lost[f.name] = append(o.loses, s), true
		} else {
			o.wins, o.won[f.name] = append(o.wins, s), true
		}
	}
	return o
}

// domainNeighbours counts the neighbours of order that share a failure
// domain, and the fewest any order with the same first link has (searched
// exhaustively up to eight links), with that order.
func domainNeighbours(order []string, domains map[string]string) (now, best int, bestOrder []string) {
	count := func(o []string) int {
		n := 0
		for i := 0; i+1 < len(o); i++ {
			if g := domains[o[i]]; g != "" && g == domains[o[i+1]] {
				n++
			}
		}
		return n
	}
	now, best, bestOrder = count(order), count(order), order
	if len(order) < 3 || len(order) > 8 {
		return now, best, bestOrder
	}
	rest := append([]string(nil), order[1:]...)
	var perm func(k int)
	perm = func(k int) {
		if k == len(rest) {
			o := append([]string{order[0]}, rest...)
			if n := count(o); n < best {
				best, bestOrder = n, o
			}
			return
		}
		for i := k; i < len(rest); i++ {
			rest[k], rest[i] = rest[i], rest[k]
			perm(k + 1)
			rest[k], rest[i] = rest[i], rest[k]
		}
	}
	perm(0)
	return now, best, bestOrder
}

// sharedPrefix names the group shared by the first two links of order, if
// any.
func sharedPrefix(order []string, domains map[string]string) string {
	if len(order) < 2 {
		return ""
	}
	if g := domains[order[0]]; g != "" && g == domains[order[1]] {
		return g
	}
	return ""
}

// advice is what the operator should change, from the chain's row and the
// baselines' (and the order advice printed beside it, nil = none).
func (r *Report) advice(c *Row, adv *Advice) []string {
	var out []string
	if co := r.Row(ScenarioCostOrder); co != nil {
		if line := costOrderAdvice(c, co, adv); line != "" {
			out = append(out, line)
		}
	}
	if now, best, order := domainNeighbours(c.Order, r.Mechanisms.Domains); now > best {
		line := fmt.Sprintf("change: %d pair(s) of neighbours in the chain share a failure domain; the order %s has %d", now, strings.Join(order, " → "), best)
		if adv.differs() && strings.Join(adv.Suggested, ",") != strings.Join(order, ",") {
			line += fmt.Sprintf(" (the order advice below, from the failures it saw, supports %s)", strings.Join(adv.Suggested, " → "))
		}
		out = append(out, line)
	} else if now > 0 {
		out = append(out, fmt.Sprintf("add: %d pair(s) of neighbours share a failure domain and no order of these links separates them; a link on other infrastructure between them is what would help", now))
	}
	if nv := r.Row(ScenarioNaive); nv != nil {
		if line := naiveAdvice(c, nv); line != "" {
			out = append(out, line)
		}
	}
	if r.Drift {
		switch {
		case c.DriftDays < 0:
			out = append(out, "watch: the quality drift was never flagged by the weekly report; run `contentpipe report` more often or review the trend section by hand")
		default:
			out = append(out, fmt.Sprintf("watch: the weekly report flagged the quality drift after %.0f days; the chain does not react to a trend, you must (change the link's model or prompt, or move it down)", c.DriftDays))
		}
	}
	if c.BudgetUSD > 0 && c.SpendUSD > c.BudgetUSD {
		out = append(out, fmt.Sprintf("change: the chain spent $%.2f against a budget of $%.2f; raise budget: or lower the links' caps", c.SpendUSD, c.BudgetUSD))
	}
	if c.PublishedTwice > 0 {
		out = append(out, fmt.Sprintf("bug: %d topics were published twice; report it with the scenario database", c.PublishedTwice))
	}
	return out
}

// differs reports whether the advice judged the order and supports
// another one than the configured.
func (a *Advice) differs() bool {
	return a != nil && a.Enough && len(a.Suggested) > 0 && strings.Join(a.Suggested, ",") != strings.Join(a.Configured, ",")
}

// costOrderAdvice is the sentence on the chain's order against cost order:
// reorder when cost order publishes as much and wins something, keep when
// it publishes less, each clause from a figure that differs.
func costOrderAdvice(c, co *Row, adv *Advice) string {
	o := compare(c, co)
	switch {
	case !o.publishesLess() && len(o.wins) > 0:
		gain := "beats it on " + strings.Join(o.wins, ", ")
		if o.won["cost"] {
			gain = fmt.Sprintf("costs $%.2f instead of $%.2f", co.CostUSD, c.CostUSD)
		}
		q := ""
		if o.lost["quality"] {
			q = fmt.Sprintf(" if a mean quality of %.1f instead of %.1f is good enough", co.MeanQuality, c.MeanQuality)
		}
		as := "publishes as much under this model"
		if o.won["success"] {
			as = fmt.Sprintf("publishes more under this model (success %s vs %s)", pct2(co.SuccessRate), pct2(c.SuccessRate))
		}
		return fmt.Sprintf("change: cost order (%s) %s and %s — reorder the chain to it%s, or make this fault model harsher if you do not believe it",
			strings.Join(co.Order, " → "), as, gain, q)
	case o.publishesLess():
		var costs []string
		if o.won["cost"] {
			costs = append(costs, fmt.Sprintf("saves $%.2f", c.CostUSD-co.CostUSD))
		}
		var loses []string
		if o.lost["success"] {
			loses = append(loses, fmt.Sprintf("loses %.2f%% of the jobs", 100*(c.SuccessRate-co.SuccessRate)))
		}
		if o.lost["blackout days"] {
			loses = append(loses, fmt.Sprintf("has %d blackout days against %d", co.BlackoutDays, c.BlackoutDays))
		}
		what := fmt.Sprintf("the risk order (%s) rather than cost order", strings.Join(c.Order, " → "))
		if adv.differs() {
			what = fmt.Sprintf("%s first rather than cost order; for the links behind it, the order advice below supports %s", c.Order[0], strings.Join(adv.Suggested, " → "))
		}
		line := "keep: " + what + "; cost order "
		if len(costs) > 0 {
			line += costs[0] + " but "
		}
		line += strings.Join(loses, " and ")
		if o.won["cost"] {
			line += ". To spend less, lower the first link's daily_budget_usd or daily_cap rather than moving correlated links to the front"
		}
		return line
	}
	return ""
}

// naiveAdvice is the sentence on retry.rate_limited from the naive row:
// waiting is kept only for what immediate retries lost here.
func naiveAdvice(c, nv *Row) string {
	o := compare(c, nv)
	switch {
	case o.lost["success"]:
		return fmt.Sprintf("keep: retry.rate_limited waiting the provider's delay; immediate retries lose jobs here (success %s vs %s)", pct2(nv.SuccessRate), pct2(c.SuccessRate))
	case o.won["success"]:
		return fmt.Sprintf("consider: immediate retries published more here (success %s vs %s): this fault model does not punish retrying at once; shorten retry.rate_limited.wait, or make its rate limits harsher (rate_limit.penalty, ban_after) if you do not believe it", pct2(nv.SuccessRate), pct2(c.SuccessRate))
	case o.lost["blackout days"]:
		return fmt.Sprintf("keep: retry.rate_limited waiting the provider's delay; immediate retries publish as many jobs here but leave more blackout days (%d vs %d)", nv.BlackoutDays, c.BlackoutDays)
	case len(o.loses) > 0:
		return fmt.Sprintf("keep: retry.rate_limited waiting the provider's delay; immediate retries publish as many jobs here and lose on %s", strings.Join(o.loses, ", "))
	}
	return ""
}

func pct2(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

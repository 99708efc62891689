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
func (r *Report) Verdict() []string {
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
	return append(out, r.advice(c)...)
}

// versus explains one baseline against the chain.
func (r *Report) versus(c, b *Row) string {
	loses, wins := compare(c, b)
	var why string
	m := r.Mechanisms
	switch b.Scenario {
	case ScenarioSingle:
		why = fmt.Sprintf("it has nobody to fall back to when %s is down or out of quota", b.Order[0])
	case ScenarioCostOrder:
		shared := sharedPrefix(b.Order, m.Domains)
		switch {
		case shared != "" && m.SlowOutages:
			why = fmt.Sprintf("its first links share the failure domain %s, and when it stalls each dead link costs its timeout, so the job deadline runs out before the independent provider is reached", shared)
		case shared != "":
			why = fmt.Sprintf("its first links share the failure domain %s, so one incident takes out several of its tries at once", shared)
		default:
			why = "its order follows prices, not failure domains, and it loses nothing to that here because its first links fail fast and on their own"
		}
		if b.MeanQuality < c.MeanQuality-0.3 {
			why += fmt.Sprintf("; its first link %s writes most of its articles, so its quality (%.1f against %.1f) is what gets published", b.Order[0], b.MeanQuality, c.MeanQuality)
		}
	case ScenarioNaive:
		why = fmt.Sprintf("it retries at once and remembers nothing (%d calls against the chain's %d)", b.Calls, c.Calls)
		if m.RetryStorm {
			why += "; retries into a 429 count against the allowance and lengthen the throttle or earn a ban, so a burst becomes an hour without the provider"
		}
		if m.SlowOutages {
			why += "; three tries at a stalled provider spend the deadline"
		}
	}
	switch {
	case len(loses) == 0 && len(wins) == 0:
		return fmt.Sprintf("%s ties with the chain on every figure: this fault model cannot tell them apart", b.Scenario)
	case len(loses) == 0:
		return fmt.Sprintf("%s beats the chain on %s and loses on nothing: the mechanisms it ignores cost it nothing in this model", b.Scenario, strings.Join(wins, ", "))
	case len(wins) == 0:
		return fmt.Sprintf("%s loses to the chain on %s: %s", b.Scenario, strings.Join(loses, ", "), why)
	}
	return fmt.Sprintf("%s loses to the chain on %s and beats it on %s: %s", b.Scenario, strings.Join(loses, ", "), strings.Join(wins, ", "), why)
}

// compare lists the figures on which baseline b loses to (and beats) the
// chain c, with both values.
func compare(c, b *Row) (loses, wins []string) {
	for _, f := range figures {
		cv, bv := f.value(c), f.value(b)
		if f.tie(cv, bv, c.Jobs) {
			continue
		}
		s := fmt.Sprintf("%s (%s vs %s)", f.name, f.format(bv), f.format(cv))
		if f.better(cv, bv) {
			loses = append(loses, s)
		} else {
			wins = append(wins, s)
		}
	}
	return loses, wins
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
// baselines'.
func (r *Report) advice(c *Row) []string {
	var out []string
	co, nv := r.Row(ScenarioCostOrder), r.Row(ScenarioNaive)
	if co != nil {
		loses, wins := compare(c, co)
		lost := func(name string) bool {
			for _, l := range loses {
				if strings.HasPrefix(l, name+" (") {
					return true
				}
			}
			return false
		}
		switch {
		case !lost("success") && !lost("blackout days") && len(wins) > 0:
			q := ""
			if lost("quality") {
				q = fmt.Sprintf(" if a mean quality of %.1f instead of %.1f is good enough", co.MeanQuality, c.MeanQuality)
			}
			out = append(out, fmt.Sprintf("change: cost order (%s) publishes as much under this model and costs $%.2f instead of $%.2f — reorder the chain to it%s, or make this fault model harsher if you do not believe it",
				strings.Join(co.Order, " → "), co.CostUSD, c.CostUSD, q))
		case lost("success") || lost("blackout days"):
			out = append(out, fmt.Sprintf("keep: the risk order (%s); cost order saves $%.2f but loses %.2f%% of the jobs and has %d blackout days against %d. To spend less, lower the first link's daily_budget_usd or daily_cap rather than moving correlated links to the front",
				strings.Join(c.Order, " → "), c.CostUSD-co.CostUSD, 100*(c.SuccessRate-co.SuccessRate), co.BlackoutDays, c.BlackoutDays))
		}
	}
	if now, best, order := domainNeighbours(c.Order, r.Mechanisms.Domains); now > best {
		out = append(out, fmt.Sprintf("change: %d pair(s) of neighbours in the chain share a failure domain; the order %s has %d", now, strings.Join(order, " → "), best))
	} else if now > 0 {
		out = append(out, fmt.Sprintf("add: %d pair(s) of neighbours share a failure domain and no order of these links separates them; a link on other infrastructure between them is what would help", now))
	}
	if nv != nil && len(first(compare(c, nv))) > 0 {
		out = append(out, "keep: retry.rate_limited waiting the provider's delay (max_retries 2, max_wait 60s); immediate retries lose jobs here")
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

func first(a, _ []string) []string { return a }

package whatif

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

func TestVerdictNamesWinnersAndWhy(t *testing.T) {
	row := func(name string, order []string, success float64, blackout int, cost float64) Row {
		return Row{Scenario: name, Order: order, Jobs: 2190, SuccessRate: success, BlackoutDays: blackout, CostUSD: cost,
			MeanQuality: 97, P95Seconds: 60, Alerts30d: map[string]float64{}, DriftDays: 20, Calls: 2500}
	}
	risk := []string{"gemini", "groq", "cerebras"}
	cheap := []string{"cerebras", "groq", "gemini"}
	rep := &Report{Drift: true, Mechanisms: Mechanisms{SlowOutages: true, RetryStorm: true,
		Domains: map[string]string{"gemini": "google", "groq": "cheap", "cerebras": "cheap"}},
		Rows: []Row{
			row(ScenarioChain, risk, 0.998, 2, 11),
			row(ScenarioSingle, risk[:1], 0.93, 60, 12),
			row(ScenarioCostOrder, cheap, 0.90, 40, 1.3),
			row(ScenarioNaive, risk, 0.9975, 9, 11), // one job fewer than the chain: a tie
		}}
	got := strings.Join(rep.Verdict(), "\n")
	for _, want := range []string{
		"success: chain 99.80% ≈ naive 99.75% (a tie), then single 93.00%, cost-order 90.00%",
		"blackout days: chain 2, then naive 9, cost-order 40, single 60",
		"cost: cost-order $1.30, then",
		"cost-order loses to the chain on success (90.00% vs 99.80%), blackout days (40 vs 2) and beats it on cost ($1.30 vs $11.00): its first links share the failure domain cheap",
		"naive loses to the chain on blackout days (9 vs 2): it retries at once",
		"keep: the risk order (gemini → groq → cerebras) rather than cost order; cost order saves $9.70 but loses 9.80% of the jobs and has 40 blackout days against 2",
		"keep: retry.rate_limited",
		"watch: the weekly report flagged the quality drift after 20 days",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("verdict lacks %q:\n%s", want, got)
		}
	}
	// groq and cerebras are both cheap: no order with gemini first separates
	// them, so the verdict asks for another domain rather than a reorder.
	if !strings.Contains(got, "add: 1 pair(s) of neighbours share a failure domain and no order of these links separates them") {
		t.Errorf("verdict on inseparable neighbours:\n%s", got)
	}
	// Two cheap links behind the primary with another domain available: the
	// verdict names the order that separates them.
	rep.Mechanisms.Domains["openrouter"] = "broker"
	rep.Rows[0].Order = []string{"gemini", "groq", "cerebras", "openrouter"}
	if got := strings.Join(rep.Verdict(), "\n"); !strings.Contains(got, "change: 1 pair(s) of neighbours in the chain share a failure domain; the order gemini → groq → openrouter → cerebras has 0") {
		t.Errorf("separable neighbours:\n%s", got)
	}
	rep.Rows[0].Order = risk
	// When cost order publishes as much, the verdict says to reorder.
	rep.Rows[2] = row(ScenarioCostOrder, cheap, 0.998, 2, 1.3)
	if got := strings.Join(rep.Verdict(), "\n"); !strings.Contains(got, "reorder the chain to it") ||
		!strings.Contains(got, "cost-order beats the chain on cost ($1.30 vs $11.00) and loses on nothing") {
		t.Errorf("cost order as good and cheaper, yet no reorder advice:\n%s", got)
	}
}

// TestVerdictSentencesMatchFigures feeds the verdict crafted tables in
// which one baseline beats (or loses to) the chain on one figure and ties
// on the rest, for every baseline and figure, and checks every sentence
// against the numbers: the ranking, the baseline's own line, and each
// claim of the advice only where its figure says so.
func TestVerdictSentencesMatchFigures(t *testing.T) {
	chainRow := Row{Scenario: ScenarioChain, Order: []string{"gemini", "groq", "cerebras"}, Jobs: 2190, SuccessRate: 0.99,
		BlackoutDays: 5, CostUSD: 10, MeanQuality: 95, P95Seconds: 60, Alerts30d: map[string]float64{"critical": 1}, Calls: 2500, DriftDays: -1}
	orders := map[string][]string{ScenarioSingle: {"gemini"}, ScenarioCostOrder: {"cerebras", "groq", "gemini"}, ScenarioNaive: chainRow.Order}
	// change moves figure f of r by one clear step, better or worse.
	change := func(r *Row, f string, better bool) {
		s := 1.0
		if !better {
			s = -1
		}
		switch f {
		case "success":
			r.SuccessRate += 0.005 * s // 11 jobs
			if r.SuccessRate > 1 {
				r.SuccessRate = 1
			}
		case "blackout days":
			r.BlackoutDays -= int(4 * s)
		case "cost":
			r.CostUSD -= 5 * s
		case "quality":
			r.MeanQuality += 3 * s
		case "p95 publish":
			r.P95Seconds -= 50 * s
		case "critical alerts/30d":
			r.Alerts30d = map[string]float64{"critical": 1 - 0.8*s}
		}
	}
	for _, base := range []string{ScenarioSingle, ScenarioCostOrder, ScenarioNaive} {
		for _, f := range figures {
			for _, better := range []bool{true, false} {
				name := fmt.Sprintf("%s %s %s", base, map[bool]string{true: "wins", false: "loses"}[better], f.name)
				rep := &Report{Mechanisms: Mechanisms{SlowOutages: true, RetryStorm: true,
					Domains: map[string]string{"gemini": "google", "groq": "cheap", "cerebras": "cheap"}}}
				for _, s := range []string{ScenarioChain, ScenarioSingle, ScenarioCostOrder, ScenarioNaive} {
					r := chainRow
					r.Scenario, r.Alerts30d = s, map[string]float64{"critical": 1}
					if s != ScenarioChain {
						r.Order = orders[s]
					}
					if s == base {
						change(&r, f.name, better)
					}
					rep.Rows = append(rep.Rows, r)
				}
				checkVerdict(t, name, rep, nil)
			}
		}
	}
}

// checkVerdict checks every sentence of rep's verdict against its rows.
func checkVerdict(t *testing.T, name string, rep *Report, adv *Advice) {
	t.Helper()
	lines := rep.VerdictWith(adv)
	c := rep.Row(ScenarioChain)
	fail := func(line, why string) {
		t.Errorf("%s: %q: %s\nverdict:\n%s", name, line, why, strings.Join(lines, "\n"))
	}
	for _, line := range lines {
		for _, f := range figures {
			if !strings.HasPrefix(line, f.name+": ") {
				continue
			}
			// The ranking: each scenario named with its value, a better one
			// never after a worse one that is not a tie with it.
			prev := (*Row)(nil)
			for _, part := range strings.FieldsFunc(strings.SplitN(line, ": ", 2)[1], func(r rune) bool { return r == ',' || r == '≈' }) {
				part = strings.TrimPrefix(strings.TrimSpace(strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(part), " (all tie)"), " (a tie)")), "then ")
				part = strings.TrimSuffix(strings.TrimSpace(strings.SplitN(part, " (a tie)", 2)[0]), " (all tie)")
				sc := strings.SplitN(part, " ", 2)[0]
				r := rep.Row(sc)
				if r == nil {
					fail(line, "names no scenario in "+part)
					continue
				}
				if part != sc+" "+f.format(f.value(r)) {
					fail(line, "misquotes "+sc+": want "+f.format(f.value(r)))
				}
				if prev != nil && f.better(f.value(r), f.value(prev)) && !f.tie(f.value(r), f.value(prev), r.Jobs) {
					fail(line, sc+" is better than the scenario before it")
				}
				prev = r
			}
		}
		for _, name := range []string{ScenarioSingle, ScenarioCostOrder, ScenarioNaive} {
			b := rep.Row(name)
			if b == nil || !strings.HasPrefix(line, name+" ") {
				continue
			}
			o := compare(c, b)
			loseAt, winAt := strings.Index(line, " loses to the chain on "), strings.Index(line, " beats ")
			for _, f := range figures {
				cv, bv := f.value(c), f.value(b)
				quoted := fmt.Sprintf("%s (%s vs %s)", f.name, f.format(bv), f.format(cv))
				at := strings.Index(line, quoted)
				switch {
				case f.tie(cv, bv, c.Jobs) && at >= 0:
					fail(line, f.name+" is a tie, yet the line names it")
				case !f.tie(cv, bv, c.Jobs) && f.better(cv, bv) && (at < 0 || loseAt < 0 || at < loseAt || winAt >= 0 && at > winAt):
					fail(line, "the baseline loses on "+quoted+", and the line does not say so")
				case !f.tie(cv, bv, c.Jobs) && f.better(bv, cv) && (at < 0 || winAt < 0 || at < winAt):
					fail(line, "the baseline wins on "+quoted+", and the line does not say so")
				}
			}
			if len(o.loses) == 0 && len(o.wins) == 0 && !strings.Contains(line, "ties with the chain on every figure") {
				fail(line, "a baseline that ties everywhere")
			}
		}
		checkClaims(t, name, rep, adv, line, fail)
	}
}

// checkClaims checks the sentences that claim something of one figure.
func checkClaims(t *testing.T, name string, rep *Report, adv *Advice, line string, fail func(line, why string)) {
	t.Helper()
	c, s, co, nv := rep.Row(ScenarioChain), rep.Row(ScenarioSingle), rep.Row(ScenarioCostOrder), rep.Row(ScenarioNaive)
	claims := []struct {
		text string
		ok   func() bool
	}{
		{"immediate retries lose jobs here", func() bool { return compare(c, nv).lost["success"] }},
		{"immediate retries published more here", func() bool { return compare(c, nv).won["success"] }},
		{"leave more blackout days", func() bool { return compare(c, nv).lost["blackout days"] }},
		{"immediate retries publish as many jobs here", func() bool { return !compare(c, nv).lost["success"] && !compare(c, nv).won["success"] }},
		{"a burst becomes an hour without the provider", func() bool { return compare(c, nv).publishesLess() }},
		{"three tries at a stalled provider", func() bool { o := compare(c, nv); return o.lost["success"] || o.lost["p95 publish"] }},
		{"nobody to fall back to", func() bool { o := compare(c, s); return o.publishesLess() || o.lost["p95 publish"] }},
		{"rather than cost order", func() bool { return compare(c, co).publishesLess() }},
		{"cost order saves $", func() bool { return compare(c, co).won["cost"] }},
		{"of the jobs", func() bool { return compare(c, co).lost["success"] }},
		{"blackout days against", func() bool { return compare(c, co).lost["blackout days"] }},
		{"publishes as much under this model", func() bool {
			o := compare(c, co)
			return !o.publishesLess() && !o.won["success"] && len(o.wins) > 0
		}},
		{"publishes more under this model", func() bool { return compare(c, co).won["success"] && !compare(c, co).publishesLess() }},
		{"costs $", func() bool { return compare(c, co).won["cost"] }},
		{"the job deadline runs out", func() bool { return compare(c, co).publishesLess() }},
		{"one incident takes out", func() bool { return compare(c, co).publishesLess() }},
		{"so its quality (", func() bool { return compare(c, co).lost["quality"] }},
		{"it retries at once and remembers nothing", func() bool {
			o := compare(c, nv)
			return len(o.loses) > 0 && !(len(o.loses) == 1 && o.lost["quality"])
		}},
		{"keep: the risk order", func() bool { return !adv.differs() }},
	}
	for _, cl := range claims {
		if strings.Contains(line, cl.text) && !cl.ok() {
			fail(line, "claims "+cl.text+" against the figures")
		}
	}
	if m := regexp.MustCompile(`\((\d+) calls against the chain's (\d+)\)`).FindStringSubmatch(line); m != nil {
		if b, _ := strconv.Atoi(m[1]); b <= c.Calls {
			fail(line, "more calls claimed than made")
		}
	}
}

// TestVerdictFollowsTheOrderAdvice: the table and advice of the
// correlated year (naive ties the chain's success, loses blackout days;
// the history supports another order behind gemini). No sentence says
// immediate retries lose jobs, and none keeps the configured order.
func TestVerdictFollowsTheOrderAdvice(t *testing.T) {
	row := func(name string, order []string, success float64, blackout int, cost, quality, p95, crit float64, calls int) Row {
		return Row{Scenario: name, Order: order, Jobs: 2190, SuccessRate: success, BlackoutDays: blackout, CostUSD: cost,
			MeanQuality: quality, P95Seconds: p95, Alerts30d: map[string]float64{"critical": crit}, Calls: calls, DriftDays: 27}
	}
	risk := []string{"gemini", "groq", "cerebras", "openrouter"}
	rep := &Report{Drift: true, Mechanisms: Mechanisms{SlowOutages: true, RetryStorm: true,
		Domains: map[string]string{"gemini": "google", "groq": "cheap", "cerebras": "cheap", "openrouter": "cheap"}},
		Rows: []Row{
			row(ScenarioChain, risk, 0.9991, 12, 11.1173, 95.7, 60, 0.9, 2551),
			row(ScenarioSingle, risk[:1], 0.9849, 73, 11.6609, 95.6, 4*3600, 0.8, 2403),
			row(ScenarioCostOrder, []string{"openrouter", "cerebras", "groq", "gemini"}, 0.9087, 52, 1.3583, 96.2, 44, 3.5, 3944),
			row(ScenarioNaive, risk, 1, 17, 11.0044, 95.7, 60, 0.1, 3293),
		}}
	adv := &Advice{Configured: risk, Suggested: []string{"gemini", "cerebras", "openrouter", "groq"}, Enough: true}
	checkVerdict(t, "correlated", rep, adv)
	got := strings.Join(rep.VerdictWith(adv), "\n")
	for _, bad := range []string{"immediate retries lose jobs", "keep: the risk order"} {
		if strings.Contains(got, bad) {
			t.Errorf("the verdict says %q:\n%s", bad, got)
		}
	}
	if !strings.Contains(got, "keep: gemini first rather than cost order; for the links behind it, the order advice below supports gemini → cerebras → openrouter → groq") {
		t.Errorf("the verdict does not follow the order advice:\n%s", got)
	}
	checkVerdict(t, "correlated without advice", rep, nil)
}

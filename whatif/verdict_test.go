package whatif

import (
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
		"keep: the risk order (gemini → groq → cerebras); cost order saves $9.70 but loses 9.80% of the jobs and has 40 blackout days against 2",
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

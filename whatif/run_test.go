package whatif

import (
	"reflect"
	"testing"
)

func TestSameSeedSameTable(t *testing.T) {
	a := runSim(t, smallModel(), 11, 5)
	b := runSim(t, smallModel(), 11, 5)
	strip := func(r *Report) []Row {
		rows := append([]Row(nil), r.Rows...)
		for i := range rows {
			rows[i].DB = ""
		}
		return rows
	}
	if !reflect.DeepEqual(strip(a), strip(b)) {
		t.Fatalf("same seed, different tables:\n%+v\n%+v", strip(a), strip(b))
	}
	if len(a.Rows) != 4 {
		t.Fatalf("want 4 rows (chain and three baselines), got %d", len(a.Rows))
	}
	for _, r := range a.Rows {
		if r.Jobs != 5*6 {
			t.Errorf("%s: %d jobs, want %d", r.Scenario, r.Jobs, 5*6)
		}
		if r.Calls == 0 || r.CostUSD <= 0 {
			t.Errorf("%s: no calls or no cost: %+v", r.Scenario, r)
		}
	}
	c := runSim(t, smallModel(), 12, 5)
	if reflect.DeepEqual(strip(a), strip(c)) {
		t.Fatal("a different seed gave the very same table: the seed is not used")
	}
	// The chain must beat its first link alone in this eventful world.
	ch, single := a.Row(ScenarioChain), a.Row(ScenarioSingle)
	if ch.SuccessRate <= single.SuccessRate || single.FallbackShare != 0 || ch.FallbackShare == 0 {
		t.Fatalf("chain %+v\nsingle %+v", ch, single)
	}
	if got := a.Row(ScenarioCostOrder).Order[0]; got != "openrouter" {
		t.Fatalf("cost order starts with %s, want the cheapest, openrouter", got)
	}
}

// TestAlertsPerThirtyDays: the product's alert rules run after every
// simulated run. With Gemini answering every call with a 503, the single
// provider's scenario opens one chain-down incident with at most one
// reminder a day (critical: 1 + 9 in 10 days, not one per job — 40 jobs);
// the chain, which fails over to the other links, opens none.
func TestAlertsPerThirtyDays(t *testing.T) {
	m := smallModel()
	g := m.Providers["gemini"]
	g.Errors.Unavailable = 1
	m.Providers["gemini"] = g
	rep := runSim(t, m, 11, 10)
	single, ch := rep.Row(ScenarioSingle), rep.Row(ScenarioChain)
	if c := single.Alerts30d["critical"] * 10 / 30; c < 1 || c > 10 {
		t.Fatalf("single provider down for 10 days: %.1f critical alerts, want one incident and at most a reminder a day: %+v", c, single.Alerts30d)
	}
	if ch.Alerts30d["critical"] != 0 {
		t.Fatalf("the chain raised %v critical alerts per 30 days in a world it fails over in", ch.Alerts30d["critical"])
	}
}

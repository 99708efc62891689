package whatif

import (
	"github.com/contentpipe/contentpipe/adapters/sim"
	"reflect"
	"strconv"
	"testing"
	"time"
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

// stormModel: Gemini starts a short 429 burst at every third call, the
// fallbacks are down: whoever loses Gemini loses the job.
func stormModel(ban bool) *Model {
	rl := RateLimit{PerMinute: 0.3, Burst: 15 * time.Second}
	if ban {
		rl.Penalty, rl.BanAfter, rl.Ban = 60*time.Second, 3, time.Hour
	}
	down := ProviderModel{Errors: Errors{Unavailable: 1}}
	return &Model{Seed: 5, Providers: map[string]ProviderModel{
		"gemini": {RateLimit: rl}, "groq": down, "cerebras": down, "openrouter": down}}
}

// TestRetryStormPunishesNaiveRetries: with refused retries earning a ban,
// the naive baseline's immediate retries lose it more jobs than the same
// retries without the ban, while the chain, which waits the advertised
// delay, loses none in either world.
func TestRetryStormPunishesNaiveRetries(t *testing.T) {
	with := runSim(t, stormModel(true), 5, 10, ScenarioChain, ScenarioNaive)
	without := runSim(t, stormModel(false), 5, 10, ScenarioChain, ScenarioNaive)
	for _, rep := range []*Report{with, without} {
		if c := rep.Row(ScenarioChain); c.SuccessRate < 0.95 {
			t.Fatalf("the chain waits out every burst, yet published only %s", pctOf(c.SuccessRate))
		}
	}
	nw, nwo := with.Row(ScenarioNaive), without.Row(ScenarioNaive)
	t.Logf("chain %s / %s, naive %s with the ban, %s without", pctOf(with.Row(ScenarioChain).SuccessRate), pctOf(without.Row(ScenarioChain).SuccessRate), pctOf(nw.SuccessRate), pctOf(nwo.SuccessRate))
	if nw.SuccessRate >= nwo.SuccessRate-0.05 {
		t.Fatalf("naive retries: %s with the retry-storm ban, %s without: the ban did not cost them", pctOf(nw.SuccessRate), pctOf(nwo.SuccessRate))
	}
}

func pctOf(v float64) string { return strconv.FormatFloat(100*v, 'f', 2, 64) + "%" }

// TestDriftIsFlagged: Gemini's answers slide to 64% of the asked length over
// a week from day 14; the weekly report's detectors flag it within three
// weeks of the start, and the row says how long it took.
func TestDriftIsFlagged(t *testing.T) {
	m := &Model{Seed: 2, Providers: map[string]ProviderModel{
		"gemini": {Drift: Drift{After: 14 * 24 * time.Hour, Over: 7 * 24 * time.Hour, Length: 0.64}},
		"groq":   {}, "cerebras": {}, "openrouter": {},
	}}
	rep := runSim(t, m, 2, 49, ScenarioChain)
	c := rep.Row(ScenarioChain)
	if !rep.Drift || c.DriftDays < 1 || c.DriftDays > 21 {
		t.Fatalf("drift from day 14: flagged after %.1f days (drift in model: %v), want within 21", c.DriftDays, rep.Drift)
	}
	if c.PublishedTwice != 0 {
		t.Fatalf("%d topics published twice", c.PublishedTwice)
	}
	// Without the drift nothing is flagged.
	g := m.Providers["gemini"]
	g.Drift = Drift{}
	m.Providers["gemini"] = g
	rep = runSim(t, m, 2, 49, ScenarioChain)
	if rep.Drift || rep.Row(ScenarioChain).DriftDays != -1 {
		t.Fatalf("no drift in the model, yet %+v", rep.Row(ScenarioChain))
	}
}

// TestRevokedKeyHaltsAndAlerts: Gemini's key is revoked on day 2 for a day.
// Every run in that day halts on the 401 (auth_error.halt) and raises a
// critical alert; once the key is replaced publishing resumes, because each
// run starts afresh.
func TestRevokedKeyHaltsAndAlerts(t *testing.T) {
	m := &Model{Seed: 4, Providers: map[string]ProviderModel{
		"gemini": {Auth: Auth{RevokedAfter: 2 * 24 * time.Hour, RestoredAfter: 24 * time.Hour}},
		"groq":   {}, "cerebras": {}, "openrouter": {},
	}}
	rep := runSim(t, m, 4, 5, ScenarioChain)
	c := rep.Row(ScenarioChain)
	if c.Alerts30d["critical"] == 0 {
		t.Fatalf("a revoked key raised no critical alert: %+v", c.Alerts30d)
	}
	// Day 3 (6 jobs) is lost to the halt; the other four days publish.
	if c.Published < 4*6-1 || c.Published > 4*6 {
		t.Fatalf("published %d of %d, want the four days with a valid key (24)", c.Published, c.Jobs)
	}
}

// TestStalledNeighboursCostTheDeadline: the three cheap links share one
// failure domain that is down for the whole run. When it fails fast (503)
// cost order reaches Gemini in a second and loses nothing; when it stalls
// mid-stream each dead link costs its 5-minute total timeout, three of them
// eat the 15-minute job deadline before Gemini, and cost order loses almost
// every job, while the chain, Gemini first, loses none.
func TestStalledNeighboursCostTheDeadline(t *testing.T) {
	model := func(f sim.Fault) *Model {
		return &Model{Seed: 6, Groups: map[string]Outages{"cheap": {Every: time.Minute, Length: 10000 * time.Hour, Fault: f}},
			Providers: map[string]ProviderModel{"gemini": {}, "groq": {Group: "cheap"}, "cerebras": {Group: "cheap"}, "openrouter": {Group: "cheap"}}}
	}
	fast := runSim(t, model(sim.FaultUnavailable), 6, 4, ScenarioChain, ScenarioCostOrder)
	stall := runSim(t, model(sim.FaultStall), 6, 4, ScenarioChain, ScenarioCostOrder)
	if c := fast.Row(ScenarioCostOrder); c.SuccessRate < 0.95 {
		t.Fatalf("fast-failing neighbours: cost order published only %s", pctOf(c.SuccessRate))
	}
	if c := stall.Row(ScenarioCostOrder); c.SuccessRate > 0.2 {
		t.Fatalf("stalled neighbours: cost order still published %s; the stalls did not cost the deadline", pctOf(c.SuccessRate))
	}
	if c := stall.Row(ScenarioChain); c.SuccessRate < 0.95 {
		t.Fatalf("stalled fallbacks behind a healthy Gemini: the chain published only %s", pctOf(c.SuccessRate))
	}
}

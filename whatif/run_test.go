package whatif

import (
	"context"
	"fmt"
	"reflect"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/telemetry"
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

// richModel has every mechanism at once, dense enough to bind in a few
// weeks: throttling with penalties and bans, hanging and stalling outages
// of a shared group, daily request and token quotas that shrink on busy
// days, bad answers, a quality drift and a revoked key.
func richModel() *Model {
	m := smallModel()
	m.Groups["cheap"] = Outages{Every: 5 * 24 * time.Hour, Length: 10 * time.Hour, Fault: sim.FaultStall}
	g := m.Providers["gemini"]
	g.RateLimit.PerMinute, g.RateLimit.Penalty, g.RateLimit.BanAfter, g.RateLimit.Ban = 0.2, 30*time.Second, 3, time.Hour
	g.Outages = Outages{Every: 4 * 24 * time.Hour, Length: 3 * time.Hour, Fault: sim.FaultHang}
	g.Drift = Drift{After: 5 * 24 * time.Hour, Over: 5 * 24 * time.Hour, Length: 0.6}
	m.Providers["gemini"] = g
	q := m.Providers["groq"]
	q.Group, q.RateLimit.DailyTokens, q.RateLimit.RPM = "cheap", 40000, 2
	m.Providers["groq"] = q
	c := m.Providers["cerebras"]
	c.Group, c.RateLimit.DailyQuota, c.RateLimit.BusyDayQuota = "cheap", 8, 2
	m.Providers["cerebras"] = c
	o := m.Providers["openrouter"]
	o.Auth = Auth{RevokedAfter: 9 * 24 * time.Hour, RestoredAfter: 24 * time.Hour}
	o.Quality.LowQuality = 0.1
	m.Providers["openrouter"] = o
	return m
}

// TestConcurrentRunsGiveOneTable: the same seed gives the same table
// however the runs are scheduled. Four simulations of the fault-rich model
// run at once (each with its four scenarios in parallel, all competing for
// the CPUs, the quality gate and SQLite) and a fifth alone; every row must
// be identical. A dependence on wall-clock time, goroutine scheduling, map
// order or timers shows up here as a difference.
func TestConcurrentRunsGiveOneTable(t *testing.T) {
	const runs, days = 4, 14
	strip := func(r *Report) []Row {
		rows := append([]Row(nil), r.Rows...)
		for i := range rows {
			rows[i].DB = ""
		}
		return rows
	}
	want := strip(runSim(t, richModel(), 3, days))
	got := make([][]Row, runs)
	var wg sync.WaitGroup
	for i := range runs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got[i] = strip(runSim(t, richModel(), 3, days))
		}()
	}
	wg.Wait()
	for i, rows := range got {
		if !reflect.DeepEqual(rows, want) {
			t.Fatalf("concurrent run %d differs from the run alone:\n%+v\nwant\n%+v", i, rows, want)
		}
	}
	// The model must really be fault-rich: every scenario met failures.
	for _, r := range want {
		if r.Calls <= r.Published {
			t.Errorf("%s: %d calls for %d publications: no faults bound", r.Scenario, r.Calls, r.Published)
		}
	}
}

// countGate counts the verdicts it is asked for.
type countGate struct{ n int }

func (g *countGate) Evaluate(string, quality.Spec) quality.Result {
	g.n++
	return quality.Result{Pass: true}
}

// TestMemoGateBounded: the gate's memo scores each answer once while it is
// recent, and its memory stays bounded however many answers a long
// simulation meets.
func TestMemoGateBounded(t *testing.T) {
	g := &countGate{}
	m := &memoGate{g: g}
	spec := quality.Spec{Language: "en", TargetWords: 1500}
	for i := range 3 * memoGateGen {
		m.Evaluate(fmt.Sprintf("answer %d", i), spec)
		m.Evaluate(fmt.Sprintf("answer %d", i), spec)
	}
	if g.n != 3*memoGateGen {
		t.Errorf("the gate scored %d answers, want each of the %d once", g.n, 3*memoGateGen)
	}
	if n := len(m.m) + len(m.older); n > 2*memoGateGen {
		t.Errorf("the memo holds %d verdicts, want at most %d", n, 2*memoGateGen)
	}
}

// TestBudgetWarnAtIsTheConfigs: a scenario's budget rule warns at the
// configured share of a daily cap (alerts.budget_warn_at), not at a share
// of its own: at 5% of a cap of 100 the single provider's few calls a day
// warn, at the default 80% they do not.
func TestBudgetWarnAtIsTheConfigs(t *testing.T) {
	for _, tc := range []struct {
		warnAt float64
		warns  bool
	}{{0.05, true}, {0, false}} {
		ch, specs := testChain(t, 1500)
		ch.Links[0].DailyCap = 100
		w, err := NewWorld(smallModel(), 3, 3)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := Run(context.Background(), Config{
			Chain: ch, Specs: specs, World: w, PostsPerDay: 6, PostsPerRun: 6, BudgetWarnAt: tc.warnAt,
			Dir: t.TempDir(), Open: openScratch, Scenarios: []string{ScenarioSingle},
		})
		if err != nil {
			t.Fatal(err)
		}
		store, err := telemetry.OpenReadOnly(rep.Row(ScenarioSingle).DB)
		if err != nil {
			t.Fatal(err)
		}
		_, warned, err := store.FirstAlertSince(context.Background(), "budget:gemini:", w.Start())
		store.Close()
		if err != nil {
			t.Fatal(err)
		}
		if warned != tc.warns {
			t.Errorf("budget_warn_at %g: budget alert for gemini %v, want %v", tc.warnAt, warned, tc.warns)
		}
	}
}

// TestLockstepWaitEndsWithContext: a scenario waiting for one that neither
// finishes a day nor leaves (it is stuck in a long run) stops waiting when
// the run's context ends.
func TestLockstepWaitEndsWithContext(t *testing.T) {
	l := newLockstep(2)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	returned := make(chan struct{})
	go func() { l.arrive(ctx, 0, 5); close(returned) }()
	select {
	case <-returned:
		t.Fatal("arrive returned while the other scenario was four days behind and ctx was live")
	case <-time.After(50 * time.Millisecond):
	}
	cancel()
	select {
	case <-returned:
	case <-time.After(30 * time.Second):
		t.Fatal("arrive still waits after its context ended")
	}
}

// TestLockstepKeepsScenariosInStep: a fast scenario waits for a slow one
// at each day (so memoGate still holds the answers they share), and a
// scenario that ends early holds nobody back.
func TestLockstepKeepsScenariosInStep(t *testing.T) {
	const days = 12
	l := newLockstep(3)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var lags []string
	for i := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer l.leave(i)
			last := days
			if i == 2 {
				last = 3 // ends early, as a failed scenario does
			}
			for d := 1; d <= last; d++ {
				if i == 1 {
					time.Sleep(2 * time.Millisecond) // the slow one
				}
				l.arrive(context.Background(), i, d)
				l.mu.Lock()
				for j, dj := range l.days {
					if dj < d-lockstepDays {
						mu.Lock()
						lags = append(lags, fmt.Sprintf("scenario %d went past day %d while scenario %d had finished %d", i, d, j, dj))
						mu.Unlock()
					}
				}
				l.mu.Unlock()
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the scenarios did not finish: the lockstep waits for one that left")
	}
	for _, s := range lags {
		t.Error(s)
	}
}

package chain

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestColdRuleJudge(t *testing.T) {
	ms := time.Millisecond
	base := LatencyBaseline{Calls: 12, FirstToken: 3 * ms, Total: 900 * ms}
	cases := []struct {
		name      string
		rule      ColdRule
		total, ft time.Duration
		b         LatencyBaseline
		cold      bool
		says      string
	}{
		{"first token far slower", ColdRule{}, 4600 * ms, 4500 * ms, base, true, "cold: first token 4.5s vs median 3ms"},
		{"total far slower", ColdRule{}, 3 * time.Second, 0, base, true, "total 3s vs median 900ms"},
		{"slower but under the floor", ColdRule{}, 30 * ms, 20 * ms, LatencyBaseline{Calls: 3, FirstToken: 2 * ms, Total: 5 * ms}, false, "cold above 3× and 2s"},
		{"over the floor, not the factor", ColdRule{}, 2500 * ms, 2100 * ms, LatencyBaseline{Calls: 3, FirstToken: time.Second, Total: time.Second}, false, "over 3 job calls"},
		{"own factor and floor", ColdRule{Factor: 1.5, Floor: 100 * ms}, 200 * ms, 150 * ms, LatencyBaseline{Calls: 1, FirstToken: 90 * ms, Total: 120 * ms}, true, "cold above 1.5× and 100ms"},
		{"no baseline, over the floor", ColdRule{}, 6100 * ms, 6 * time.Second, LatencyBaseline{}, true, "cold: first token 6s; no baseline"},
		{"no baseline, under the floor", ColdRule{}, 900 * ms, 800 * ms, LatencyBaseline{}, false, "cold above the floor 2s"},
		{"no baseline, first token unknown", ColdRule{Floor: time.Second}, 3 * time.Second, 0, LatencyBaseline{}, true, "cold: total 3s"},
		{"earlier health calls", ColdRule{}, 6100 * ms, 6 * time.Second, LatencyBaseline{Calls: 2, FirstToken: 400 * ms, Total: 500 * ms, Health: true}, true, "over 2 earlier health calls"},
		{"unknown first token in the baseline", ColdRule{}, 1 * time.Second, 5 * time.Second, LatencyBaseline{Calls: 4, Total: 900 * ms}, false, "first token 5s vs median -"},
	}
	for _, c := range cases {
		cold, why := c.rule.Judge(c.total, c.ft, c.b)
		if cold != c.cold || !strings.Contains(why, c.says) {
			t.Errorf("%s: cold %v %q, want %v containing %q", c.name, cold, why, c.cold, c.says)
		}
	}
}

func TestRecordedHealthState(t *testing.T) {
	cases := []struct {
		outcome string
		ok      bool
		want    HealthState
	}{
		{"ok", true, HealthHealthy},
		{"cold", true, HealthCold},
		{"rate_limited", false, HealthRateLimited},
		{"quota_exhausted", false, HealthExhausted},
		{"exhausted", false, HealthExhausted},
		{"cap", false, HealthCapped},
		{"capped", false, HealthCapped},
		{"budget", false, HealthOverBudget},
		{"tokens", false, HealthOverBudget},
		{"over_budget", false, HealthOverBudget},
		{"circuit_open", false, HealthUnhealthy},
		{"server_error", false, HealthUnhealthy},
		{"rejected", false, HealthUnhealthy},
		{"timeout_first_token", false, HealthUnhealthy},
		{"misconfigured", false, HealthMisconfigured},
	}
	for _, c := range cases {
		if got := RecordedHealthState(c.outcome, c.ok); got != c.want {
			t.Errorf("%s ok=%v: %s, want %s", c.outcome, c.ok, got, c.want)
		}
	}
	unhealthy := 0
	for _, s := range HealthStates() {
		if s.Unhealthy() {
			unhealthy++
		}
	}
	if unhealthy != 2 || !HealthUnhealthy.Unhealthy() || !HealthMisconfigured.Unhealthy() {
		t.Errorf("%d unhealthy states, want only %s and %s", unhealthy, HealthUnhealthy, HealthMisconfigured)
	}
}

// baselines is a BaselineSource with fixed baselines by provider.
type baselines map[string]LatencyBaseline

func (b baselines) LatencyBaseline(_ context.Context, p string, _ time.Time) (LatencyBaseline, error) {
	return b[p], nil
}

func TestHealthColdAndRateLimited(t *testing.T) {
	s := newScenario(t, "slow", "fast", "limited", "fresh")
	ok := func(ft, took time.Duration) step {
		return step{resp: Response{Text: `{"ok":true}`, FirstToken: ft}, took: took}
	}
	s.script("slow", ok(4500*time.Millisecond, 4600*time.Millisecond))
	s.script("fast", ok(20*time.Millisecond, 40*time.Millisecond))
	s.script("limited", step{err: &ProviderError{Status: 429, Outcome: OutcomeRateLimited, Scope: ScopeMinute, Message: "rate limited"}})
	s.script("fresh", ok(4500*time.Millisecond, 4600*time.Millisecond))
	b := baselines{"slow": {Calls: 10, FirstToken: 3 * time.Millisecond, Total: 900 * time.Millisecond},
		"fast": {Calls: 10, FirstToken: 3 * time.Millisecond, Total: 5 * time.Millisecond}}
	rec := &healthRec{}
	got, err := s.chain.Health(context.Background(), HealthWalk{Prompt: healthPrompt, Recorder: rec, Baselines: b})
	if err != nil {
		t.Fatal(err)
	}
	// fresh has no job calls and no earlier health call: the backup nobody
	// calls, cold when its first token takes longer than the floor.
	want := []HealthState{HealthCold, HealthHealthy, HealthRateLimited, HealthCold}
	for i, h := range got {
		if h.State != want[i] || h.Unhealthy() {
			t.Errorf("%s: %s (%s), want %s", h.Provider, h.State, h.Detail, want[i])
		}
	}
	if !strings.Contains(got[0].Detail, "cold: first token 4.5s vs median 3ms") || got[0].Baseline == nil || got[0].Baseline.Calls != 10 {
		t.Errorf("cold detail %q baseline %+v", got[0].Detail, got[0].Baseline)
	}
	if !strings.Contains(got[3].Detail, "no baseline") {
		t.Errorf("a link without job calls: %q", got[3].Detail)
	}
	if len(rec.got) != 4 || rec.got[0].State != HealthCold || rec.got[3].State != HealthCold {
		t.Errorf("recorded %+v", rec.got)
	}
}

// withHealth is a BaselineSource that also gives earlier health calls.
type withHealth struct {
	baselines
	health map[string]LatencyBaseline
}

func (w withHealth) HealthBaseline(_ context.Context, p string, _ time.Time) (LatencyBaseline, error) {
	return w.health[p], nil
}

// TestColdStartOfABackupNobodyCalls: a link without job calls in 14 days
// is judged against its own earlier health calls, else against the floor:
// a 6 s first token is cold either way, a usual one is not.
func TestColdStartOfABackupNobodyCalls(t *testing.T) {
	s := newScenario(t, "backup", "fresh", "steady")
	ok := func(ft time.Duration) step {
		return step{resp: Response{Text: `{"ok":true}`, FirstToken: ft}, took: ft + 50*time.Millisecond}
	}
	s.script("backup", ok(6*time.Second))
	s.script("fresh", ok(6*time.Second))
	s.script("steady", ok(500*time.Millisecond))
	src := withHealth{baselines{}, map[string]LatencyBaseline{
		"backup": {Calls: 3, FirstToken: 400 * time.Millisecond, Total: 500 * time.Millisecond, Health: true},
		"steady": {Calls: 3, FirstToken: 400 * time.Millisecond, Total: 500 * time.Millisecond, Health: true},
	}}
	got, err := s.chain.Health(context.Background(), HealthWalk{Prompt: healthPrompt, Baselines: src})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		state HealthState
		says  string
	}{
		{HealthCold, "over 3 earlier health calls"},
		{HealthCold, "no baseline"},
		{HealthHealthy, "over 3 earlier health calls"},
	}
	for i, h := range got {
		if h.State != want[i].state || !strings.Contains(h.Detail, want[i].says) {
			t.Errorf("%s: %s %q, want %s saying %q", h.Provider, h.State, h.Detail, want[i].state, want[i].says)
		}
	}
}

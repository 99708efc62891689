package chain

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"
)

type healthRec struct {
	mu  sync.Mutex
	got []HealthCheck
}

func (r *healthRec) RecordHealth(_ context.Context, h HealthCheck) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, h)
	return nil
}

func healthPrompt(family string) Prompt {
	return Prompt{User: `Health check: answer with exactly {"ok":true}`, Version: "health@1/" + family}
}

func TestHealthWalkReportsEveryLink(t *testing.T) {
	s := newScenario(t, "gemini", "groq", "cerebras", "openrouter", "broken", "chatty")
	okText := step{resp: Response{Text: "```json\n{\"ok\": true}\n```", InputTokens: 10, OutputTokens: 4, FirstToken: 30 * time.Millisecond}, took: 200 * time.Millisecond}
	s.script("gemini", okText)
	// groq is exhausted until later today: not called.
	s.store.states["groq"] = &ProviderState{ExhaustedUntil: s.clock.Now().Add(3 * time.Hour), ExhaustedReason: "quota_exhausted"}
	s.script("groq", okText)
	// cerebras has used its daily cap: not called.
	s.link("cerebras").DailyCap = 1
	if _, _, ok, _ := s.store.ReserveCap(context.Background(), "cerebras", s.link("cerebras").CapReset.DayStart(s.clock.Now()), 1, s.clock.Now()); !ok {
		t.Fatal("setup reservation refused")
	}
	s.script("cerebras", okText)
	// openrouter's circuit is open: called all the same (a health check
	// tells whether it is still down), and its check says so.
	s.store.states["openrouter"] = &ProviderState{Breaker: Breaker{State: BreakerOpen, OpenedAt: s.clock.Now().Add(-time.Minute)}}
	s.script("openrouter", okText)
	s.script("broken", step{err: &ProviderError{Status: 503, Outcome: OutcomeServerError, Message: "The model is overloaded."}})
	s.script("chatty", step{resp: Response{Text: "Sure! Everything is fine."}})

	rec := &healthRec{}
	got, err := s.chain.Health(context.Background(), HealthWalk{Prompt: healthPrompt, Recorder: rec})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]struct {
		state     HealthState
		unhealthy bool
		calls     int
	}{
		"gemini":     {HealthHealthy, false, 1},
		"groq":       {HealthExhausted, false, 0},
		"cerebras":   {HealthCapped, false, 0},
		"openrouter": {HealthHealthy, false, 1},
		"broken":     {HealthUnhealthy, true, 1},
		"chatty":     {HealthUnhealthy, true, 1},
	}
	if len(got) != len(want) || len(rec.got) != len(want) {
		t.Fatalf("%d results, %d recorded; want %d", len(got), len(rec.got), len(want))
	}
	for i, h := range got {
		if h.Provider != s.chain.Links[i].Name {
			t.Errorf("result %d is %s, want chain order", i, h.Provider)
		}
		w := want[h.Provider]
		if h.State != w.state || h.Unhealthy() != w.unhealthy {
			t.Errorf("%s: state %s unhealthy %v, want %s %v (%s)", h.Provider, h.State, h.Unhealthy(), w.state, w.unhealthy, h.Detail)
		}
		if n := s.prov[h.Provider].count(); n != w.calls {
			t.Errorf("%s called %d times, want %d", h.Provider, n, w.calls)
		}
	}
	g := got[0]
	if !g.OK || g.Latency != 200*time.Millisecond || g.FirstToken != 30*time.Millisecond || g.HTTPStatus != 200 {
		t.Errorf("gemini health %+v", g)
	}
	if got[4].HTTPStatus != 503 || got[4].Outcome != OutcomeServerError || got[4].Detail == "" {
		t.Errorf("broken health %+v", got[4])
	}
	if got[5].Outcome != OutcomeRejected {
		t.Errorf("an answer that is not {\"ok\":true} is %s", got[5].Outcome)
	}
	// Calls are recorded with purpose health, skips with their reason.
	if !strings.Contains(got[3].Detail, "circuit open until") || !strings.Contains(got[3].Detail, "probe answered") {
		t.Errorf("openrouter's check does not tell the open circuit and the probe: %q", got[3].Detail)
	}
	if len(s.store.calls) != 4 {
		t.Fatalf("%d calls recorded, want 4", len(s.store.calls))
	}
	for _, c := range s.store.calls {
		if c.Purpose != PurposeHealth || c.PromptVersion == "" || c.RequestID == "" {
			t.Errorf("call %+v", c)
		}
	}
	reasons := map[string]SkipReason{}
	for _, k := range s.store.skips {
		reasons[k.Provider] = k.Reason
	}
	if reasons["groq"] != SkipExhausted || reasons["cerebras"] != SkipCap || len(reasons) != 2 {
		t.Errorf("skips %v", reasons)
	}
	// The failure fed the breaker like any call.
	if ev := s.store.states["broken"].Breaker.Events; len(ev) != 1 || !ev[0].Fail {
		t.Errorf("breaker events of broken: %+v", ev)
	}
}

func TestHealthLearnsDailyExhaustion(t *testing.T) {
	s := newScenario(t, "gemini")
	s.script("gemini", step{err: &ProviderError{Status: 429, Outcome: OutcomeQuotaExhausted, Scope: ScopeDay, Message: "quota"}})
	got, err := s.chain.Health(context.Background(), HealthWalk{Prompt: healthPrompt})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].State != HealthExhausted || got[0].Unhealthy() || got[0].Outcome != OutcomeQuotaExhausted {
		t.Fatalf("%+v", got[0])
	}
	if !s.store.states["gemini"].ExhaustedUntil.After(s.clock.Now()) {
		t.Fatal("a daily 429 in a health check did not mark the provider exhausted")
	}
	// The next walk skips it without a call.
	got, _ = s.chain.Health(context.Background(), HealthWalk{Prompt: healthPrompt})
	if got[0].State != HealthExhausted || s.prov["gemini"].count() != 1 {
		t.Fatalf("second walk: %+v, %d calls", got[0], s.prov["gemini"].count())
	}
}

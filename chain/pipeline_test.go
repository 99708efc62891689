package chain

import (
	"context"
	"testing"
	"time"
)

// TestNoWaitAfterLastLink: other.wait runs between links, never after the
// last one, where nobody is left to wait for.
func TestNoWaitAfterLastLink(t *testing.T) {
	s := newScenario(t, "a", "b")
	s.script("a", fail(0, OutcomeTimeoutFirstToken))
	s.script("b", fail(0, OutcomeTimeoutFirstToken))
	if res := s.run("t"); res.Status != JobDeferred {
		t.Fatalf("status %s", res.Status)
	}
	if got := s.clock.totalSlept(); got != 10*time.Second {
		t.Fatalf("slept %s; want one other.wait of 10s (after a, not after b)", got)
	}
}

// TestHealthPaces: a health call waits for its link's pacing like a job's.
func TestHealthPaces(t *testing.T) {
	s := newScenario(t, "a")
	s.script("a", step{resp: Response{Text: `{"ok":true}`}})
	s.link("a").Pacer = NewPacer(1, 0)
	prompt := func(string) Prompt { return Prompt{System: "s", User: "u", Version: "health@test"} }
	for i := 0; i < 2; i++ {
		hs, err := s.chain.Health(context.Background(), HealthWalk{Prompt: prompt})
		if err != nil || len(hs) != 1 || hs[0].State != HealthHealthy {
			t.Fatalf("walk %d: %+v %v", i, hs, err)
		}
	}
	if got := s.clock.totalSlept(); got < 59*time.Second || got > 61*time.Second {
		t.Fatalf("slept %s; want the pacing wait of about 1m before the second call", got)
	}
}

// TestJudgeClampsNamedDelays: a provider-named delay past the next cap
// reset + MaxNamedDelay is cut to that bound and reported, for a per-minute
// 429, a daily 429, and an answer's daily reset header.
func TestJudgeClampsNamedDelays(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	next := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	st := Standing{NextReset: next}
	bound := next.Add(MaxNamedDelay)
	tenYears := 315360000 * time.Second
	for name, o := range map[string]Observation{
		"minute":   {Err: &ProviderError{Status: 429, Outcome: OutcomeRateLimited, RetryAfter: tenYears}},
		"day":      {Err: &ProviderError{Status: 429, Outcome: OutcomeQuotaExhausted, Scope: ScopeDay, ResetAt: time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC)}},
		"headers":  {Quota: QuotaHint{Remaining: 0, Reset: tenYears}},
		"believed": {Err: &ProviderError{Status: 429, Outcome: OutcomeRateLimited, RetryAfter: 2 * time.Hour}},
	} {
		_, l := DefaultRetryPolicy().Judge(o, st, now)
		if name == "believed" {
			if l.Clamp != nil || !l.ExhaustUntil.Equal(now.Add(2*time.Hour)) {
				t.Errorf("%s: %+v", name, l)
			}
			continue
		}
		if l.Clamp == nil || !l.ExhaustUntil.Equal(bound) || !l.Clamp.Until.Equal(bound) || l.Clamp.Sent == "" {
			t.Errorf("%s: lesson %+v; want exhausted until %s, clamped", name, l, bound)
		}
	}
}

// TestJudgeSingleCallNeverRetries: a call the rules make single (shadow,
// health) is classified and teaches, but a per-minute 429 is not retried.
func TestJudgeSingleCallNeverRetries(t *testing.T) {
	now := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	d, l := DefaultRetryPolicy().Judge(Observation{Err: &ProviderError{Status: 429, RetryAfter: time.Second}},
		Standing{NoRetry: true, NextReset: now.Add(time.Hour)}, now)
	if d.Action != ActionNext || d.Wait != 0 || d.Outcome != OutcomeRateLimited || l.Sample != SampleNone {
		t.Fatalf("decision %+v lesson %+v", d, l)
	}
	d, l = DefaultRetryPolicy().Judge(Observation{Err: &ProviderError{Status: 503}}, Standing{NoRetry: true}, now)
	if d.Outcome != OutcomeServerError || l.Sample != SampleFailure {
		t.Fatalf("decision %+v lesson %+v", d, l)
	}
}

package whatif

import (
	"context"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
)

// modelProvider builds one in-process provider of a world.
func modelProvider(t *testing.T, m *Model, name string, start time.Time) (*sim.InProc, *sim.VirtualClock) {
	t.Helper()
	m.Start = start.Format("2006-01-02")
	w, err := NewWorld(m, 1, 10)
	if err != nil {
		t.Fatal(err)
	}
	clock := sim.NewVirtualClock(start)
	p, err := w.Provider(name, "openai", clock, LinkSpec{Timeouts: chain.Timeouts{FirstToken: time.Minute}})
	if err != nil {
		t.Fatal(err)
	}
	return p, clock
}

func TestInProcDailyQuotaAndReset(t *testing.T) {
	m := &Model{Providers: map[string]ProviderModel{"cerebras": {RateLimit: RateLimit{DailyQuota: 3, QuotaReset: "00:00 UTC"}}}}
	start := time.Date(2026, 3, 2, 20, 0, 0, 0, time.UTC)
	p, clock := modelProvider(t, m, "cerebras", start)
	req := chain.Request{JobID: "j", Prompt: "Title: Solar panels\nLanguage: en\nTarget words: 300\nMin sections: 3\nMin section words: 60", Stream: true}
	ctx := context.Background()
	for i := range 3 {
		resp, err := p.Generate(ctx, req)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if resp.Quota.Remaining != 2-i || resp.Quota.Reset <= 0 {
			t.Fatalf("answer %d: quota hint %+v, want %d remaining with a reset", i, resp.Quota, 2-i)
		}
		if !clock.Now().After(start) {
			t.Fatal("an answer took no virtual time")
		}
	}
	_, err := p.Generate(ctx, req)
	pe := chain.AsProviderError(err)
	if pe == nil || pe.Status != 429 || pe.Outcome != chain.OutcomeQuotaExhausted || pe.Scope != chain.ScopeDay {
		t.Fatalf("after the quota: %v, want a daily 429", err)
	}
	next := time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)
	if got := clock.Now().Add(pe.RetryAfter); got.Before(next) || got.After(next.Add(time.Second)) {
		t.Fatalf("Cerebras Retry-After points at %s, want the model's reset %s", got, next)
	}
	clock.Set(next.Add(time.Minute))
	if _, err := p.Generate(ctx, req); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

func TestInProcOutageAndBurst(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	m := &Model{Providers: map[string]ProviderModel{"gemini": {RateLimit: RateLimit{PerMinute: 1, Burst: 40 * time.Second}}}}
	p, clock := modelProvider(t, m, "gemini", start)
	_, err := p.Generate(context.Background(), chain.Request{JobID: "a"})
	pe := chain.AsProviderError(err)
	if pe == nil || pe.Outcome != chain.OutcomeRateLimited || pe.Scope != chain.ScopeMinute || pe.RetryAfter < time.Second {
		t.Fatalf("want a per-minute 429 with a Retry-After, got %v", err)
	}
	// A call inside the burst is refused with the rest of it.
	ra := pe.RetryAfter
	clock.Advance(ra / 2)
	_, err = p.Generate(context.Background(), chain.Request{JobID: "a"})
	if pe2 := chain.AsProviderError(err); pe2 == nil || pe2.RetryAfter >= ra {
		t.Fatalf("inside the burst: %v, want a shorter Retry-After than %s", err, ra)
	}

	b := p.Behaviour.(*behaviour)
	b.outages = []window{{from: start.Add(time.Hour), to: start.Add(2 * time.Hour), fault: sim.FaultHang}}
	b.m.RateLimit.PerMinute = 0
	clock.Set(start.Add(90 * time.Minute))
	before := clock.Now()
	_, err = p.Generate(context.Background(), chain.Request{JobID: "b", Stream: true})
	if pe := chain.AsProviderError(err); pe == nil || pe.Outcome != chain.OutcomeTimeoutFirstToken || pe.Status != 0 {
		t.Fatalf("in a hanging outage: %v, want timeout_first_token without a status", err)
	}
	if clock.Now().Sub(before) != time.Minute {
		t.Fatalf("a hang cost %s of virtual time, want the first-token timeout 1m", clock.Now().Sub(before))
	}
}

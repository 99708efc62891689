package whatif

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/profile"
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
	p, err := w.Provider(name, profile.KindOpenAI, clock, LinkSpec{Timeouts: chain.Timeouts{FirstToken: time.Minute}})
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

// hammer sends n requests to p at once (each refusal takes the error
// latency of the clock) and returns how many were refused with a 429.
func hammer(t *testing.T, p *sim.InProc, job string, n int) int {
	t.Helper()
	refused := 0
	for range n {
		_, err := p.Generate(context.Background(), chain.Request{JobID: job, Prompt: "Target words: 300"})
		if pe := chain.AsProviderError(err); pe != nil && pe.Status == 429 {
			refused++
		}
	}
	return refused
}

// throttleEnd reads when p's throttle (a burst or a ban) ends: probing
// it with requests would itself lengthen it.
func throttleEnd(p *sim.InProc) time.Time {
	b := p.Behaviour.(*behaviour)
	if b.ban.After(b.burst) {
		return b.ban
	}
	return b.burst
}

func TestRetryBurstLengthensTheThrottle(t *testing.T) {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	m := func() *Model {
		return &Model{Providers: map[string]ProviderModel{"gemini": {RateLimit: RateLimit{
			PerMinute: 1, Burst: 20 * time.Second, Penalty: 30 * time.Second, BanAfter: 3, Ban: time.Hour}}}}
	}
	// A patient client: one refusal, then it waits the advertised delay.
	patient, pc := modelProvider(t, m(), "gemini", start)
	if hammer(t, patient, "a", 1) != 1 {
		t.Fatal("the first call did not start a burst")
	}
	patientEnd := throttleEnd(patient)
	patient.Behaviour.(*behaviour).m.RateLimit.PerMinute = 0
	pc.Set(patientEnd)
	if hammer(t, patient, "a", 1) != 0 {
		t.Fatal("a call after the advertised delay was refused")
	}

	// An impatient one: the same first refusal, then two immediate retries.
	naive, nc := modelProvider(t, m(), "gemini", start)
	if got := hammer(t, naive, "a", 3); got != 3 {
		t.Fatalf("%d of 3 immediate calls refused, want 3", got)
	}
	naive.Behaviour.(*behaviour).m.RateLimit.PerMinute = 0
	end := throttleEnd(naive)
	if !end.After(patientEnd.Add(50 * time.Minute)) {
		t.Fatalf("three immediate calls throttle until %s, a patient client until %s: the retry burst did not lengthen it", end, patientEnd)
	}
	nc.Set(patientEnd)
	if hammer(t, naive, "a", 1) != 1 {
		t.Fatal("the impatient client was answered when the patient one was")
	}
	// Hammering through the ban re-arms it ("an hour later still 429").
	nc.Set(end.Add(-time.Minute))
	hammer(t, naive, "a", 3)
	if again := throttleEnd(naive); !again.After(end) {
		t.Fatalf("hammering inside the ban did not re-arm it (%s, was %s)", again, end)
	}
}

func TestPenaltyWithoutBan(t *testing.T) {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	m := &Model{Providers: map[string]ProviderModel{"gemini": {RateLimit: RateLimit{
		PerMinute: 1, Burst: 10 * time.Second, Penalty: 45 * time.Second}}}}
	p, clock := modelProvider(t, m, "gemini", start)
	hammer(t, p, "a", 1)
	first := throttleEnd(p)
	p.Behaviour.(*behaviour).m.RateLimit.PerMinute = 0
	at := clock.Now()
	if hammer(t, p, "a", 1) != 1 { // an immediate retry, inside the burst
		t.Fatal("the immediate retry was answered")
	}
	if got := throttleEnd(p); got.Before(at.Add(45*time.Second)) || !got.After(first) {
		t.Fatalf("a refused retry at %s moved the throttle end from %s to %s, want %s", at, first, got, at.Add(45*time.Second))
	}
	clock.Set(first)
	if hammer(t, p, "a", 1) != 1 {
		t.Fatal("answered at the burst's own end although the retry lengthened it")
	}
}

func TestRPMBucketCountsRefusedRequests(t *testing.T) {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	m := &Model{Providers: map[string]ProviderModel{"groq": {
		Latency:   Latency{Median: time.Second, P95: 2 * time.Second, Error: 100 * time.Millisecond},
		RateLimit: RateLimit{RPM: 5}}}}
	p, clock := modelProvider(t, m, "groq", start)
	if got := hammer(t, p, "a", 5); got != 0 {
		t.Fatalf("%d of the first 5 requests refused, want none", got)
	}
	t5 := clock.Now()
	if got := hammer(t, p, "a", 5); got != 5 {
		t.Fatalf("%d of the next 5 requests refused, want 5 (the bucket is full)", got)
	}
	// The refused requests count: when the five answered ones have left
	// the minute, the five refused ones still fill it.
	clock.Set(t5.Add(59500 * time.Millisecond))
	if got := hammer(t, p, "a", 1); got != 1 {
		t.Fatal("the refused requests did not count against the minute's allowance")
	}
	clock.Set(start.Add(3 * time.Minute))
	if got := hammer(t, p, "a", 1); got != 0 {
		t.Fatal("a request after a quiet minute was refused")
	}
}

func TestTPMBucket(t *testing.T) {
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	m := &Model{Providers: map[string]ProviderModel{"groq": {
		Latency:   Latency{Median: time.Second, P95: 2 * time.Second},
		RateLimit: RateLimit{TPM: 1000}}}}
	p, _ := modelProvider(t, m, "groq", start)
	// Each asks for 300 words ≈ 405 tokens plus the prompt: two fit, a third does not.
	if got := hammer(t, p, "a", 3); got != 1 {
		t.Fatalf("%d of 3 requests refused under a TPM of 1000, want 1", got)
	}
}

func TestHangAndStallOutagesEatTheDeadline(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		fault   sim.Fault
		cost    time.Duration
		outcome chain.Outcome
	}{
		{sim.FaultHang, time.Minute, chain.OutcomeTimeoutFirstToken},
		{sim.FaultStall, 5 * time.Minute, chain.OutcomeTimeoutTotal},
		{sim.FaultUnavailable, 300 * time.Millisecond, chain.OutcomeServerError},
	} {
		m := &Model{Start: start.Format("2006-01-02"), Groups: map[string]Outages{"pool": {Every: time.Hour, Length: time.Hour, Fault: tc.fault}},
			Providers: map[string]ProviderModel{"groq": {Group: "pool"}}}
		w, err := NewWorld(m, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		clock := sim.NewVirtualClock(start)
		p, err := w.Provider("groq", profile.KindOpenAI, clock, LinkSpec{Timeouts: chain.Timeouts{FirstToken: time.Minute, Total: 5 * time.Minute}})
		if err != nil {
			t.Fatal(err)
		}
		b := p.Behaviour.(*behaviour)
		b.outages = []window{{from: start, to: start.Add(time.Hour), fault: tc.fault}}
		_, err = p.Generate(context.Background(), chain.Request{JobID: "j", Stream: true})
		if pe := chain.AsProviderError(err); pe == nil || pe.Outcome != tc.outcome {
			t.Fatalf("%s outage: %v, want %s", tc.fault, err, tc.outcome)
		}
		if got := clock.Now().Sub(start); got != tc.cost {
			t.Fatalf("%s outage cost %s, want %s", tc.fault, got, tc.cost)
		}
	}
}

func TestFallbackTokenQuotaRunsOut(t *testing.T) {
	start := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	m := &Model{Providers: map[string]ProviderModel{"groq": {RateLimit: RateLimit{DailyTokens: 5000, QuotaReset: "00:00 UTC"}}}}
	p, clock := modelProvider(t, m, "groq", start)
	req := chain.Request{JobID: "j", Prompt: "Title: Heat pumps\nLanguage: en\nTarget words: 600\nMin sections: 3\nMin section words: 100", Stream: true}
	answered, used := 0, 0
	var last error
	for range 20 {
		resp, err := p.Generate(context.Background(), req)
		if err != nil {
			last = err
			break
		}
		answered++
		used += resp.InputTokens + resp.OutputTokens
	}
	pe := chain.AsProviderError(last)
	if pe == nil || pe.Outcome != chain.OutcomeQuotaExhausted || answered == 0 || used < 5000 {
		t.Fatalf("after %d answers (%d tokens): %v, want the daily-quota 429 once 5000 tokens were used", answered, used, last)
	}
	clock.Set(time.Date(2026, 3, 3, 0, 1, 0, 0, time.UTC))
	if _, err := p.Generate(context.Background(), req); err != nil {
		t.Fatalf("after the reset: %v", err)
	}
}

func TestRevokedKey(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	m := &Model{Providers: map[string]ProviderModel{"groq": {Auth: Auth{RevokedAfter: 2 * time.Hour, RestoredAfter: 3 * time.Hour}}}}
	p, clock := modelProvider(t, m, "groq", start)
	call := func() error {
		_, err := p.Generate(context.Background(), chain.Request{JobID: "j", Prompt: "Target words: 200"})
		return err
	}
	if err := call(); err != nil {
		t.Fatalf("before the revocation: %v", err)
	}
	clock.Set(start.Add(3 * time.Hour))
	if pe := chain.AsProviderError(call()); pe == nil || pe.Outcome != chain.OutcomeAuthError || pe.Status != 401 {
		t.Fatalf("with the key revoked: %v, want a 401", pe)
	}
	clock.Set(start.Add(6 * time.Hour))
	if err := call(); err != nil {
		t.Fatalf("after the new key: %v", err)
	}
}

func TestDriftSlidesTheLength(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	m := &Model{Providers: map[string]ProviderModel{"gemini": {Drift: Drift{After: 240 * time.Hour, Over: 480 * time.Hour, Length: 0.7}}}}
	p, _ := modelProvider(t, m, "gemini", start)
	b := p.Behaviour.(*behaviour)
	for _, tc := range []struct {
		at   time.Duration
		want float64
	}{{0, 0}, {240 * time.Hour, 1}, {480 * time.Hour, 0.85}, {720 * time.Hour, 0.7}, {2000 * time.Hour, 0.7}} {
		if got := b.lengthAt(start.Add(tc.at)); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("length at +%s = %v, want %v", tc.at, got, tc.want)
		}
	}
}

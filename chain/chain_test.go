package chain

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"
)

// scenario builds a chain of scripted providers on a virtual clock.
type scenario struct {
	t     *testing.T
	clock *vclock
	store *memStore
	prov  map[string]*scripted
	chain *Chain
}

func newScenario(t *testing.T, names ...string) *scenario {
	s := &scenario{t: t, clock: newVClock(), store: newMemStore(), prov: map[string]*scripted{}}
	reset, _ := ParseCapReset("")
	s.chain = &Chain{
		Policy:   DefaultRetryPolicy(),
		Deadline: 15 * time.Minute,
		Store:    s.store,
		Gate:     markerGate{},
		Clock:    s.clock,
		Jitter:   rand.New(rand.NewPCG(1, 2)).Float64,
		Prompt: func(family string, j Job) (Prompt, error) {
			return Prompt{System: "s", User: "Title: " + j.Title, Version: "article@test/" + family}, nil
		},
	}
	for _, n := range names {
		p := &scripted{name: n, clock: s.clock}
		s.prov[n] = p
		s.chain.Links = append(s.chain.Links, &Link{Name: n, Model: n + "-model", Family: "openai", Provider: p, CapReset: reset,
			Price: Price{InputPerMTok: 1, OutputPerMTok: 2}})
	}
	return s
}

func (s *scenario) script(name string, steps ...step) { s.prov[name].steps = steps }

func (s *scenario) link(name string) *Link {
	for _, l := range s.chain.Links {
		if l.Name == name {
			return l
		}
	}
	s.t.Fatalf("no link %s", name)
	return nil
}

func (s *scenario) run(topic string) Result {
	s.t.Helper()
	res, err := s.chain.Generate(context.Background(), Job{ID: JobID(topic, "2026-11-29"), Topic: topic, Slot: "2026-11-29", Title: topic, Language: "en", TargetWords: 100})
	if err != nil {
		s.t.Fatalf("generate: %v", err)
	}
	return res
}

func ok() step {
	return step{resp: Response{Text: "GOOD article", InputTokens: 100, OutputTokens: 1000}}
}

func rl(wait time.Duration, scope Scope) step {
	out := OutcomeRateLimited
	if scope == ScopeDay {
		out = OutcomeQuotaExhausted
	}
	return step{err: &ProviderError{Status: 429, Outcome: out, RetryAfter: wait, Scope: scope, Message: "quota"}}
}

func fail(status int, o Outcome) step {
	return step{err: &ProviderError{Status: status, Outcome: o, Message: string(o)}}
}

func TestProviderDelayIsAFloor(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", rl(26*time.Second, ScopeMinute), ok())
	res := s.run("a")
	if res.Status != JobPublished || res.Winner.Provider != "gemini" {
		t.Fatalf("status %s winner %+v, want published by gemini", res.Status, res.Winner)
	}
	if len(s.clock.sleeps) != 1 || s.clock.sleeps[0] < 26*time.Second || s.clock.sleeps[0] > 27*time.Second {
		t.Fatalf("sleeps %v, want one wait in [26s, 27s]", s.clock.sleeps)
	}
	if s.prov["groq"].count() != 0 {
		t.Fatal("groq was called although gemini recovered")
	}
	calls := s.store.callsOf("gemini")
	if len(calls) != 2 || calls[0].Outcome != OutcomeRateLimited || calls[1].Outcome != OutcomeOK || calls[1].Attempt != 2 {
		t.Fatalf("calls %+v", calls)
	}
	if calls[1].PreviousError == "" {
		t.Fatal("second attempt has no previous_error")
	}
}

func TestJitterSpreadsWaitsWithoutProviderDelay(t *testing.T) {
	seen := map[time.Duration]bool{}
	var lo, hi time.Duration = time.Hour, 0
	for i := 0; i < 20; i++ {
		s := newScenario(t, "gemini")
		s.chain.Jitter = rand.New(rand.NewPCG(uint64(i), 7)).Float64
		s.script("gemini", rl(0, ScopeMinute), ok())
		if res := s.run("a"); res.Status != JobPublished {
			t.Fatalf("status %s", res.Status)
		}
		d := s.clock.sleeps[0]
		seen[d] = true
		lo, hi = min(lo, d), max(hi, d)
		if d < 0 || d > 30*time.Second {
			t.Fatalf("wait %s outside [0, 30s]", d)
		}
	}
	if len(seen) < 15 || hi-lo < 10*time.Second {
		t.Fatalf("waits not spread: %d distinct, range %s..%s", len(seen), lo, hi)
	}
}

func TestNoWaitRunsPastTheDeadline(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.chain.Deadline = 20 * time.Second
	s.script("gemini", rl(26*time.Second, ScopeMinute))
	s.script("groq", ok())
	res := s.run("a")
	if res.Status != JobPublished || res.Winner.Provider != "groq" {
		t.Fatalf("status %s winner %+v", res.Status, res.Winner)
	}
	if got := s.clock.totalSlept(); got != 0 {
		t.Fatalf("slept %s although the wait did not fit the deadline", got)
	}
	// Other waits are fitted too: timeouts wait other.wait (10s) only if it fits.
	s2 := newScenario(t, "a", "b", "c")
	s2.chain.Deadline = 15 * time.Second
	s2.script("a", step{err: &ProviderError{Outcome: OutcomeTimeoutFirstToken}, took: 8 * time.Second})
	s2.script("b", fail(503, OutcomeServerError))
	s2.script("c", ok())
	res = s2.run("x")
	if res.Status != JobPublished {
		t.Fatalf("status %s story %v", res.Status, res.Story)
	}
	if s2.clock.Now().Sub(newVClock().Now()) > 15*time.Second {
		t.Fatalf("virtual time %s ran past the 15s deadline", s2.clock.Now().Sub(newVClock().Now()))
	}
}

func TestDailyQuotaMovesOnAndLaterJobsSkipWithoutACall(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", rl(0, ScopeDay))
	s.script("groq", ok())
	res := s.run("a")
	if res.Status != JobPublished || res.Winner.Provider != "groq" {
		t.Fatalf("status %s winner %+v", res.Status, res.Winner)
	}
	if s.clock.totalSlept() != 0 {
		t.Fatalf("waited %s on a daily quota", s.clock.totalSlept())
	}
	if c := s.store.callsOf("gemini"); len(c) != 1 || c[0].Outcome != OutcomeQuotaExhausted {
		t.Fatalf("gemini calls %+v", c)
	}
	for _, topic := range []string{"b", "c"} {
		if res := s.run(topic); res.Winner.Provider != "groq" {
			t.Fatalf("job %s winner %+v", topic, res.Winner)
		}
	}
	if n := s.prov["gemini"].count(); n != 1 {
		t.Fatalf("gemini called %d times, want 1 (later jobs skip it)", n)
	}
	if n := s.store.skipsOf("gemini", SkipExhausted); n != 2 {
		t.Fatalf("%d exhausted skips, want 2", n)
	}
	// The next day (after the cap reset) gemini is called again.
	s.clock.advance(24 * time.Hour)
	s.script("gemini", ok())
	if res := s.run("d"); res.Winner.Provider != "gemini" {
		t.Fatalf("after reset winner %+v", res.Winner)
	}
}

func TestDailyCapSkipsWithoutACall(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.link("gemini").DailyCap = 2
	s.script("gemini", ok())
	s.script("groq", ok())
	for _, topic := range []string{"a", "b", "c", "d"} {
		s.run(topic)
	}
	if n := s.prov["gemini"].count(); n != 2 {
		t.Fatalf("gemini called %d times, cap 2", n)
	}
	if n := s.store.skipsOf("gemini", SkipCap); n != 2 {
		t.Fatalf("%d cap skips, want 2", n)
	}
}

func TestServerErrorMovesOnAtOnce(t *testing.T) {
	for _, st := range []int{500, 502, 503, 504, 529} {
		s := newScenario(t, "gemini", "groq")
		s.script("gemini", fail(st, OutcomeServerError))
		s.script("groq", ok())
		res := s.run("a")
		if res.Winner == nil || res.Winner.Provider != "groq" || s.clock.totalSlept() != 0 {
			t.Fatalf("%d: winner %+v slept %s", st, res.Winner, s.clock.totalSlept())
		}
	}
}

func TestOtherFailuresWaitThenMoveOn(t *testing.T) {
	for _, o := range []Outcome{OutcomeTimeoutConnect, OutcomeTimeoutFirstToken, OutcomeTimeoutIdle, OutcomeTimeoutTotal, OutcomeStreamBroken, OutcomeBlocked, OutcomeBadRequest} {
		s := newScenario(t, "gemini", "groq")
		s.script("gemini", step{err: &ProviderError{Outcome: o}})
		s.script("groq", ok())
		res := s.run("a")
		if res.Winner == nil || res.Winner.Provider != "groq" {
			t.Fatalf("%s: winner %+v", o, res.Winner)
		}
		if got := s.clock.totalSlept(); got != 10*time.Second {
			t.Fatalf("%s: slept %s, want other.wait 10s", o, got)
		}
		if c := s.store.callsOf("gemini"); c[0].Outcome != o {
			t.Fatalf("%s recorded as %s", o, c[0].Outcome)
		}
	}
}

func TestAuthErrorHaltsTheRun(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", fail(401, OutcomeAuthError))
	s.script("groq", ok())
	res := s.run("a")
	if res.Status != JobHalted || res.Halt == nil || s.prov["groq"].count() != 0 {
		t.Fatalf("status %s halt %v groq calls %d", res.Status, res.Halt, s.prov["groq"].count())
	}
	res = s.run("b")
	if res.Status != JobHalted || s.prov["gemini"].count() != 1 {
		t.Fatalf("second job: status %s, gemini calls %d", res.Status, s.prov["gemini"].count())
	}
	if n := s.store.skipsOf("gemini", SkipHalted); n != 1 {
		t.Fatalf("halted skips %d", n)
	}
	// Without halt, the provider is skipped for the rest of the run.
	s = newScenario(t, "gemini", "groq")
	s.chain.Policy.AuthHalt = false
	s.script("gemini", fail(403, OutcomeAuthError))
	s.script("groq", ok())
	if res := s.run("a"); res.Winner == nil || res.Winner.Provider != "groq" {
		t.Fatalf("no-halt: %+v", res)
	}
	s.run("b")
	if s.prov["gemini"].count() != 1 {
		t.Fatalf("gemini called again after 403 without halt")
	}
}

func TestRejectedAnswersGoToNextAndAllBadIsReview(t *testing.T) {
	s := newScenario(t, "gemini", "groq", "cerebras")
	s.script("gemini", step{resp: Response{Text: "BAD thin"}})
	s.script("groq", step{resp: Response{Text: "not json"}})
	s.script("cerebras", step{resp: Response{Text: "BAD again"}})
	res := s.run("a")
	if res.Status != JobReview || res.Best == nil || res.Best.Provider != "gemini" {
		t.Fatalf("status %s best %+v", res.Status, res.Best)
	}
	if s.clock.totalSlept() != 0 {
		t.Fatal("waited after a rejected answer")
	}
	c := s.store.callsOf("groq")
	if c[0].Outcome != OutcomeRejected || c[0].QualityScore == nil || *c[0].QualityScore != 0 {
		t.Fatalf("outright rejection recorded as %+v", c[0])
	}
}

func TestEverythingFailingDefersTheJob(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", fail(503, OutcomeServerError))
	s.script("groq", rl(0, ScopeDay))
	res := s.run("a")
	if res.Status != JobDeferred || res.Winner != nil {
		t.Fatalf("status %s", res.Status)
	}
	if len(res.Story) < 2 {
		t.Fatalf("story too short: %v", res.Story)
	}
}

func TestBreakerOpensHalfOpensAndCloses(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.chain.Breaker = BreakerSettings{Window: 10 * time.Minute, MinSamples: 3, FailureRate: 0.5, Cooldown: 2 * time.Minute, CloseAfter: 2}
	s.script("gemini", fail(503, OutcomeServerError))
	s.script("groq", ok())
	for _, topic := range []string{"a", "b", "c"} {
		s.run(topic)
	}
	if n := s.prov["gemini"].count(); n != 3 {
		t.Fatalf("gemini calls %d before opening", n)
	}
	s.run("d")
	if n := s.prov["gemini"].count(); n != 3 || s.store.skipsOf("gemini", SkipCircuitOpen) != 1 {
		t.Fatalf("circuit did not open: calls %d skips %d", n, s.store.skipsOf("gemini", SkipCircuitOpen))
	}
	// After the cooldown one probe goes through; it fails → open, cooldown doubles.
	s.clock.advance(2 * time.Minute)
	s.run("e")
	if n := s.prov["gemini"].count(); n != 4 {
		t.Fatalf("no half-open probe: calls %d", n)
	}
	s.clock.advance(3 * time.Minute) // < doubled cooldown of 4m
	s.run("f")
	if n := s.prov["gemini"].count(); n != 4 {
		t.Fatalf("probe allowed before the doubled cooldown: calls %d", n)
	}
	// Gemini recovers: probes succeed and the circuit closes.
	s.script("gemini", ok())
	s.clock.advance(2 * time.Minute)
	if res := s.run("g"); res.Winner.Provider != "gemini" {
		t.Fatalf("probe: winner %+v", res.Winner)
	}
	s.clock.advance(5 * time.Minute)
	s.run("h")
	s.run("i")
	st, _ := s.store.ProviderState(context.Background(), "gemini")
	if st.Breaker.Current() != BreakerClosed {
		t.Fatalf("breaker %s after successes", st.Breaker.Current())
	}
	var kinds []string
	for _, tr := range s.store.trans {
		if tr.Kind == "breaker" {
			kinds = append(kinds, tr.From+"→"+tr.To)
		}
	}
	if len(kinds) < 4 {
		t.Fatalf("transitions not recorded: %v", kinds)
	}
}

func TestRateLimitsNeverCountTowardTheBreaker(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.chain.Breaker = BreakerSettings{MinSamples: 2, FailureRate: 0.5}
	s.chain.Policy.RateLimitedMaxRetries = 0
	s.script("gemini", rl(time.Second, ScopeMinute))
	s.script("groq", ok())
	for _, topic := range []string{"a", "b", "c", "d", "e"} {
		s.run(topic)
	}
	if n := s.prov["gemini"].count(); n != 5 {
		t.Fatalf("gemini calls %d: 429s opened the circuit", n)
	}
}

func TestQuotaHeadersMarkExhaustion(t *testing.T) {
	s := newScenario(t, "groq", "cerebras")
	s.script("groq", step{resp: Response{Text: "GOOD", Quota: QuotaHint{Remaining: 0, Reset: 3 * time.Hour}}})
	s.script("cerebras", ok())
	s.run("a")
	if res := s.run("b"); res.Winner.Provider != "cerebras" {
		t.Fatalf("winner %+v: groq's remaining=0 header ignored", res.Winner)
	}
	if s.prov["groq"].count() != 1 {
		t.Fatal("groq called after it said it had no requests left today")
	}
}

// TestExhaustionFromAClockAheadExpires: a link marked exhausted while the
// clock ran a month ahead is called again once the clock is back, while an
// exhaustion ending later today still keeps it off.
func TestExhaustionFromAClockAheadExpires(t *testing.T) {
	s := newScenario(t, "groq", "cerebras")
	s.store.states["groq"] = &ProviderState{ExhaustedUntil: s.clock.Now().Add(31 * 24 * time.Hour), ExhaustedReason: "quota_exhausted"}
	s.script("groq", ok())
	s.script("cerebras", ok())
	if res := s.run("a"); res.Winner.Provider != "groq" {
		t.Fatalf("winner %+v: an exhaustion a month ahead (a clock that ran ahead) still keeps groq off", res.Winner)
	}
	s.store.states["groq"].ExhaustedUntil = s.clock.Now().Add(5 * time.Hour)
	if res := s.run("b"); res.Winner.Provider != "cerebras" {
		t.Fatalf("winner %+v: groq called while exhausted for 5 more hours", res.Winner)
	}
}

// JobID is a test job's id: its slot date, a slash, its topic id.
func JobID(topic, slot string) string { return slot + "/" + topic }

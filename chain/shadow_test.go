package chain

import (
	"fmt"
	"testing"
	"time"
)

// A slow shadow provider does not delay the job: Generate returns with the
// primary's answer while the shadow call is still in flight, and the
// comparison is written when the shadow answer arrives.
func TestShadowSlowDoesNotDelayPublication(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", ok())
	slow := newGated()
	_, cmp := s.shadowOf("mistral", slow)

	res := s.generateAsync("slow-shadow")
	if res.Status != JobPublished || res.Winner == nil || res.Winner.Provider != "gemini" {
		t.Fatalf("status %s winner %+v, want published by gemini", res.Status, res.Winner)
	}
	if s.clock.totalSlept() != 0 {
		t.Fatalf("the walk waited %s", s.clock.totalSlept())
	}
	select {
	case <-slow.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the shadow call never started")
	}
	if n := len(s.store.callsOf("mistral")); n != 0 {
		t.Fatalf("%d shadow calls recorded before the shadow answered", n)
	}
	if len(cmp.all()) != 0 {
		t.Fatal("comparison written before the shadow answered")
	}
	close(slow.release)
	mustWaitShadows(t, s.chain)

	calls := s.store.shadowCalls("mistral")
	if len(calls) != 1 || s.store.jobCalls("mistral") != nil {
		t.Fatalf("mistral calls %+v", s.store.callsOf("mistral"))
	}
	c := calls[0]
	if c.Purpose != PurposeShadow || c.Attempt != 0 || c.Outcome != OutcomeOK || c.QualityScore == nil || *c.QualityScore != 90 || c.Text == "" {
		t.Fatalf("shadow call %+v", c)
	}
	rows := cmp.all()
	if len(rows) != 1 {
		t.Fatalf("%d comparisons", len(rows))
	}
	r := rows[0]
	if r.PrimaryProvider != "gemini" || r.ShadowProvider != "mistral" || !r.ShadowPass || r.ShadowOutcome != OutcomeOK ||
		r.PrimaryScore == nil || *r.PrimaryScore != 90 || r.ShadowScore == nil || *r.ShadowScore != 90 {
		t.Fatalf("comparison %+v", r)
	}
	// "GOOD article" (2 words) vs "GOOD shadow article with a few more words" (8).
	if r.WordRatio == nil || *r.WordRatio != 4 {
		t.Fatalf("word ratio %v, want 4", r.WordRatio)
	}
	if r.PrimaryCostUSD <= 0 || r.ShadowCostUSD <= 0 {
		t.Fatalf("costs primary %v shadow %v", r.PrimaryCostUSD, r.ShadowCostUSD)
	}
}

// A shadow call that is still hanging when the run ends is cancelled by
// WaitShadows and recorded as a timeout; the job was published long before.
func TestShadowHangingIsCancelledAtExit(t *testing.T) {
	s := newScenario(t, "gemini")
	s.script("gemini", ok())
	hang := newGated()
	_, cmp := s.shadowOf("mistral", hang)

	res := s.generateAsync("hanging-shadow")
	if res.Status != JobPublished || res.Winner.Provider != "gemini" {
		t.Fatalf("status %s winner %+v", res.Status, res.Winner)
	}
	<-hang.started
	if n := s.chain.WaitShadows(10 * time.Millisecond); n != 0 {
		t.Fatalf("%d shadow calls left after cancellation", n)
	}
	calls := s.store.shadowCalls("mistral")
	if len(calls) != 1 || calls[0].Outcome != OutcomeTimeoutTotal {
		t.Fatalf("shadow calls %+v", calls)
	}
	rows := cmp.all()
	if len(rows) != 1 || rows[0].ShadowPass || rows[0].ShadowScore != nil || rows[0].ShadowOutcome != OutcomeTimeoutTotal {
		t.Fatalf("comparisons %+v", rows)
	}
}

// A failing shadow provider changes nothing for the job, is recorded, and
// never feeds the circuit breaker of a link the chain uses.
func TestShadowFailureIsRecordedNotActedOn(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", ok())
	s.script("groq", fail(503, OutcomeServerError))
	s.chain.Breaker = BreakerSettings{MinSamples: 1, FailureRate: 0.5}
	_, cmp := s.shadowOf("groq", nil)

	for i := 0; i < 3; i++ {
		res := s.run(fmt.Sprintf("failing-shadow-%d", i))
		if res.Status != JobPublished || res.Winner.Provider != "gemini" {
			t.Fatalf("job %d: status %s winner %+v", i, res.Status, res.Winner)
		}
		mustWaitShadows(t, s.chain)
	}
	if s.clock.totalSlept() != 0 {
		t.Fatalf("the walk waited %s", s.clock.totalSlept())
	}
	calls := s.store.shadowCalls("groq")
	if len(calls) != 3 || s.store.jobCalls("groq") != nil {
		t.Fatalf("groq calls %+v", s.store.callsOf("groq"))
	}
	for _, c := range calls {
		if c.Outcome != OutcomeServerError || c.HTTPStatus != 503 || c.QualityScore != nil {
			t.Fatalf("shadow call %+v", c)
		}
	}
	st, _ := s.store.ProviderState(t.Context(), "groq")
	if st.Breaker.Current() != BreakerClosed || len(st.Breaker.Events) != 0 {
		t.Fatalf("shadow failures fed groq's breaker: %+v", st.Breaker)
	}
	rows := cmp.all()
	if len(rows) != 3 {
		t.Fatalf("%d comparisons", len(rows))
	}
	for _, r := range rows {
		if r.ShadowPass || r.ShadowScore != nil || r.PrimaryProvider != "gemini" || r.ShadowOutcome != OutcomeServerError {
			t.Fatalf("comparison %+v", r)
		}
	}
}

// A daily-quota 429 from a shadow call is a fact about the account: it is
// persisted, and the chain then skips the provider without a call.
func TestShadowDailyQuotaMarksExhausted(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", ok(), fail(503, OutcomeServerError))
	s.script("groq", rl(0, ScopeDay))
	s.shadowOf("groq", nil)

	if res := s.run("quota-1"); res.Status != JobPublished {
		t.Fatalf("status %s", res.Status)
	}
	mustWaitShadows(t, s.chain)
	st, _ := s.store.ProviderState(t.Context(), "groq")
	if !st.ExhaustedUntil.After(s.clock.Now()) {
		t.Fatalf("groq not exhausted after a shadow daily 429: %+v", st)
	}
	s.chain.Shadow = Shadow{}
	res := s.run("quota-2") // gemini 503 → groq is skipped as exhausted
	if res.Status != JobDeferred || s.store.skipsOf("groq", SkipExhausted) != 1 || len(s.store.jobCalls("groq")) != 0 {
		t.Fatalf("status %s, groq skips %d, job calls %d", res.Status, s.store.skipsOf("groq", SkipExhausted), len(s.store.jobCalls("groq")))
	}
}

// A shadow call never takes daily-cap capacity the failover chain may need:
// on a chain link it stops at half the cap (skip "cap"), and the chain still
// gets the rest of the day.
func TestShadowNeverTakesTheChainsCap(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", ok(), ok(), ok(), ok(), ok(), fail(503, OutcomeServerError), fail(503, OutcomeServerError))
	s.script("groq", ok())
	groq := s.link("groq")
	groq.DailyCap = 4
	s.shadowOf("groq", nil)

	for i := 0; i < 5; i++ {
		res := s.run(fmt.Sprintf("cap-%d", i))
		if res.Status != JobPublished || res.Winner.Provider != "gemini" {
			t.Fatalf("job %d: %s %+v", i, res.Status, res.Winner)
		}
		mustWaitShadows(t, s.chain)
	}
	if n := len(s.store.shadowCalls("groq")); n != 2 {
		t.Fatalf("%d shadow calls under a daily cap of 4, want 2 (half)", n)
	}
	if n := s.store.skipsOf("groq", SkipCap); n != 3 {
		t.Fatalf("%d cap skips, want 3", n)
	}
	// Gemini fails now: the chain needs groq, and its half of the cap is there.
	for i := 5; i < 7; i++ {
		res := s.run(fmt.Sprintf("cap-%d", i))
		if res.Status != JobPublished || res.Winner.Provider != "groq" {
			t.Fatalf("job %d: %s %+v\n%v", i, res.Status, res.Winner, res.Story)
		}
		mustWaitShadows(t, s.chain)
	}
	if n := len(s.store.jobCalls("groq")); n != 2 {
		t.Fatalf("%d chain calls of groq, want 2", n)
	}
	if n := len(s.store.shadowCalls("groq")); n != 2 {
		t.Fatalf("%d shadow calls after the chain used groq, want still 2", n)
	}
}

// When the shadow call would exhaust the cap the chain is about to need in
// the same job, the shadow is skipped and the chain's call goes through.
func TestShadowSkippedWhenCapNearlyUsed(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", fail(503, OutcomeServerError))
	s.script("groq", ok())
	groq := s.link("groq")
	groq.DailyCap = 2
	s.shadowOf("groq", nil)
	if _, _, ok, _ := s.store.ReserveCap(t.Context(), "groq", groq.CapReset.DayStart(s.clock.Now()), 2, s.clock.Now()); !ok {
		t.Fatal("pre-reserve")
	}
	res := s.run("cap-nearly-used")
	mustWaitShadows(t, s.chain)
	if res.Status != JobPublished || res.Winner.Provider != "groq" {
		t.Fatalf("%s %+v\n%v", res.Status, res.Winner, res.Story)
	}
	if n := len(s.store.shadowCalls("groq")); n != 0 {
		t.Fatalf("%d shadow calls", n)
	}
	if s.store.skipsOf("groq", SkipCap) != 1 {
		t.Fatalf("no cap skip recorded for the shadow")
	}
}

// A candidate (not in the chain) may use its whole cap; without a cap it is
// not limited.
func TestShadowCandidateUsesWholeCap(t *testing.T) {
	s := newScenario(t, "gemini")
	s.script("gemini", ok())
	cand := &scripted{name: "mistral", clock: s.clock, steps: []step{ok()}}
	l, _ := s.shadowOf("mistral", cand)
	l.DailyCap = 3
	for i := 0; i < 4; i++ {
		s.run(fmt.Sprintf("cand-%d", i))
		mustWaitShadows(t, s.chain)
	}
	if n := len(s.store.shadowCalls("mistral")); n != 3 {
		t.Fatalf("%d candidate shadow calls under cap 3", n)
	}
	if s.store.skipsOf("mistral", SkipCap) != 1 {
		t.Fatal("fourth shadow call not skipped for the cap")
	}
}

// A good shadow answer never becomes the job's answer: with every chain
// answer below the threshold the job goes to review with the chain's best.
func TestShadowAnswerIsNeverTheJobsAnswer(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	s.script("gemini", step{resp: Response{Text: "BAD thin", OutputTokens: 10}})
	s.script("groq", step{resp: Response{Text: "BAD thinner", OutputTokens: 10}})
	cand := &scripted{name: "mistral", clock: s.clock, steps: []step{ok()}}
	_, cmp := s.shadowOf("mistral", cand)
	res := s.run("all-bad")
	mustWaitShadows(t, s.chain)
	if res.Status != JobReview || res.Winner != nil || res.Best == nil || res.Best.Provider == "mistral" {
		t.Fatalf("status %s winner %+v best %+v", res.Status, res.Winner, res.Best)
	}
	for _, a := range res.Attempts {
		if a.Provider == "mistral" {
			t.Fatalf("shadow attempt in the job's attempts: %+v", a)
		}
	}
	rows := cmp.all()
	if len(rows) != 1 || rows[0].PrimaryProvider != "gemini" || *rows[0].PrimaryScore != 40 || !rows[0].ShadowPass {
		t.Fatalf("comparisons %+v", rows)
	}
}

func TestSampledIsDeterministic(t *testing.T) {
	n := 0
	for i := 0; i < 2000; i++ {
		id := JobID(fmt.Sprintf("topic-%d", i), "2026-11-29")
		a, b := Sampled(id, 0.25), Sampled(id, 0.25)
		if a != b {
			t.Fatalf("%s sampled %v then %v", id, a, b)
		}
		if a {
			n++
			if !Sampled(id, 0.5) {
				t.Fatalf("%s sampled at 0.25 but not at 0.5", id)
			}
		}
		if Sampled(id, 0) || !Sampled(id, 1) {
			t.Fatalf("rate 0/1 wrong for %s", id)
		}
	}
	if n < 400 || n > 600 {
		t.Fatalf("%d of 2000 sampled at 0.25", n)
	}
	s := newScenario(t, "gemini")
	s.script("gemini", ok())
	cand := &scripted{name: "mistral", clock: s.clock, steps: []step{ok()}}
	s.shadowOf("mistral", cand)
	s.chain.Shadow.SampleRate = 0
	s.run("unsampled")
	mustWaitShadows(t, s.chain)
	if cand.count() != 0 {
		t.Fatal("an unsampled job got a shadow call")
	}
}

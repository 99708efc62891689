package chain

import (
	"context"
	"testing"
	"time"
)

// TestMisconfiguredIncidentEndsWhenAProbeAnswers: the day's probe (a job
// call once ProbeAfter passed) that gets an answer closes the incident,
// and the link takes jobs again; a health walk probes a misconfigured
// link at any time and reports it as such.
func TestMisconfiguredIncidentEndsWhenAProbeAnswers(t *testing.T) {
	s := newScenario(t, "gemini", "groq")
	notes := &notes{}
	s.chain.Notifier = notes
	s.script("gemini", step{err: &ProviderError{Status: 404, Outcome: OutcomeMisconfigured, Message: "models/x is not found", Fix: "set model"}},
		step{err: &ProviderError{Status: 404, Outcome: OutcomeMisconfigured, Message: "models/x is not found", Fix: "set model"}}, ok())
	s.script("groq", ok())
	s.run("a")
	s.run("b")
	if n := s.prov["gemini"].count(); n != 1 || s.store.skipsOf("gemini", SkipMisconfigured) != 1 {
		t.Fatalf("%d calls, %d skips", n, s.store.skipsOf("gemini", SkipMisconfigured))
	}
	// The health walk probes it: still misconfigured, told no more.
	got, err := s.chain.Health(context.Background(), HealthWalk{Prompt: healthPrompt})
	if err != nil {
		t.Fatal(err)
	}
	if got[0].State != HealthMisconfigured || !got[0].Unhealthy() || s.prov["gemini"].count() != 2 {
		t.Fatalf("health %+v after %d calls", got[0], s.prov["gemini"].count())
	}
	if len(notes.got) != 1 || notes.got[0].Rule != RuleMisconfigured {
		t.Fatalf("alerts %+v, want the incident's one", notes.got)
	}
	s.clock.advance(MisconfigProbeEvery + time.Minute)
	if res := s.run("c"); res.Winner == nil || res.Winner.Provider != "gemini" {
		t.Fatalf("the probe's answer did not win: %+v", res.Story)
	}
	if s.store.states["gemini"].Misconfigured != nil {
		t.Fatalf("the incident stays open after an answer: %+v", s.store.states["gemini"].Misconfigured)
	}
	if res := s.run("d"); res.Winner == nil || res.Winner.Provider != "gemini" {
		t.Fatalf("not called after the incident closed: %+v", res.Story)
	}
}

type notes struct{ got []Alert }

func (n *notes) Notify(_ context.Context, a Alert) error { n.got = append(n.got, a); return nil }

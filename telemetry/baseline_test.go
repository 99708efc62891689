package telemetry

import (
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

func TestLatencyBaseline(t *testing.T) { forEachBackend(t, testLatencyBaseline) }

func testLatencyBaseline(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	add := func(provider string, ago time.Duration, purpose chain.Purpose, o chain.Outcome, total, first time.Duration) {
		t.Helper()
		c := chain.Call{Provider: provider, Model: "m", RequestID: "r", Attempt: 1, TS: now.Add(-ago), Latency: total,
			FirstToken: first, Outcome: o, Purpose: purpose, PromptVersion: "v"}
		if err := s.RecordCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	day := 24 * time.Hour
	// Counted: answered job calls of groq in the last 14 days.
	add("groq", day, chain.PurposeJob, chain.OutcomeOK, 800*ms, 3*ms)
	add("groq", 2*day, chain.PurposeJob, chain.OutcomeRejected, 1000*ms, 5*ms)
	add("groq", 3*day, chain.PurposeJob, chain.OutcomeOK, 1200*ms, 0) // first token unknown
	add("groq", 4*day, chain.PurposeJob, chain.OutcomeOK, 900*ms, 4*ms)
	// Not counted: too old, a failure, a health call, another provider.
	add("groq", 15*day, chain.PurposeJob, chain.OutcomeOK, 90*time.Second, 80*time.Second)
	add("groq", day, chain.PurposeJob, chain.OutcomeTimeoutTotal, 30*time.Second, 0)
	add("groq", day, chain.PurposeHealth, chain.OutcomeOK, 60*time.Second, 50*time.Second)
	add("gemini", day, chain.PurposeJob, chain.OutcomeOK, 7*time.Second, 6*time.Second)

	b, err := s.LatencyBaseline(ctx, "groq", now.Add(-chain.BaselineWindow))
	if err != nil {
		t.Fatal(err)
	}
	want := chain.LatencyBaseline{Calls: 4, FirstToken: 4 * ms, Total: 950 * ms}
	if b != want {
		t.Errorf("baseline %+v, want %+v", b, want)
	}
	none, err := s.LatencyBaseline(ctx, "cerebras", now.Add(-chain.BaselineWindow))
	if err != nil || none != (chain.LatencyBaseline{}) {
		t.Errorf("no calls: %+v %v", none, err)
	}
}

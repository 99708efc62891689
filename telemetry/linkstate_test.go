package telemetry

import (
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

func TestLinkStateReads(t *testing.T) { forEachBackend(t, testLinkStateReads) }

// testLinkStateReads: a misconfigured incident survives the store (and
// ends), usage_suspect is stored, and the reads `health` and the walk use
// (health baseline, last failure, too-large links of a job) on both
// backends.
func testLinkStateReads(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	ms := time.Millisecond
	m := chain.Misconfig{Since: now, Detail: "http 404 misconfigured: model x not found", Fix: "change the model", ConfigHash: "abc", ProbeAfter: now.Add(24 * time.Hour)}
	set := func(st *chain.ProviderState) []chain.Transition { st.Misconfigured = &m; return nil }
	if err := s.UpdateProviderState(ctx, "gemini", set); err != nil {
		t.Fatal(err)
	}
	st, err := s.ProviderState(ctx, "gemini")
	if err != nil || st.Misconfigured == nil || !st.Misconfigured.Since.Equal(now) || st.Misconfigured.ConfigHash != "abc" || st.Misconfigured.Fix != m.Fix {
		t.Fatalf("state %+v %v", st.Misconfigured, err)
	}
	links, err := s.MisconfiguredLinks(ctx)
	if err != nil || len(links) != 1 || links[0].Provider != "gemini" || links[0].Detail != m.Detail {
		t.Fatalf("misconfigured links %+v %v", links, err)
	}
	if err := s.UpdateProviderState(ctx, "gemini", func(st *chain.ProviderState) []chain.Transition { st.Misconfigured = nil; return nil }); err != nil {
		t.Fatal(err)
	}
	if links, err := s.MisconfiguredLinks(ctx); err != nil || len(links) != 0 {
		t.Fatalf("after the incident ended: %+v %v", links, err)
	}

	add := func(c chain.Call) {
		t.Helper()
		c.Model, c.Attempt, c.PromptVersion = "m", 1, "v"
		if err := s.RecordCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	add(chain.Call{Provider: "groq", RequestID: "health/1", TS: now.Add(-2 * time.Hour), Purpose: chain.PurposeHealth, Outcome: chain.OutcomeOK, Latency: 500 * ms, FirstToken: 400 * ms})
	add(chain.Call{Provider: "groq", RequestID: "health/2", TS: now.Add(-time.Hour), Purpose: chain.PurposeHealth, Outcome: chain.OutcomeOK, Latency: 700 * ms, FirstToken: 600 * ms})
	add(chain.Call{Provider: "groq", RequestID: "health/3", TS: now.Add(time.Minute), Purpose: chain.PurposeHealth, Outcome: chain.OutcomeOK, Latency: 9 * time.Second, FirstToken: 9 * time.Second})
	add(chain.Call{Provider: "groq", RequestID: "j1", TS: now.Add(-30 * time.Minute), Purpose: chain.PurposeJob, Outcome: chain.OutcomeTooLarge, HTTPStatus: 413, Detail: "Request too large"})
	add(chain.Call{Provider: "groq", RequestID: "j1", TS: now.Add(-20 * time.Minute), Purpose: chain.PurposeJob, Outcome: chain.OutcomeServerError, HTTPStatus: 503, Detail: "upstream reset"})
	add(chain.Call{Provider: "groq", RequestID: "j2", TS: now.Add(-10 * time.Minute), Purpose: chain.PurposeJob, Outcome: chain.OutcomeOK, UsageSuspect: "negative input tokens (-1000000)", InputTokens: -1000000, CostUSD: 0.01})

	b, err := s.HealthBaseline(ctx, "groq", now)
	if err != nil || b.Calls != 2 || b.FirstToken != 500*ms || b.Total != 600*ms || !b.Health {
		t.Fatalf("health baseline %+v %v", b, err)
	}
	f, ok, err := s.LastFailure(ctx, "groq")
	if err != nil || !ok || f.Outcome != chain.OutcomeServerError || f.Status != 503 || f.Detail != "upstream reset" {
		t.Fatalf("last failure %+v %v %v", f, ok, err)
	}
	if _, ok, err := s.LastFailure(ctx, "cerebras"); ok || err != nil {
		t.Fatalf("a link that never failed: %v %v", ok, err)
	}
	if got, err := s.JobHistory(ctx, "j1"); err != nil || len(got.TooLarge) != 1 || got.TooLarge[0] != "groq" {
		t.Fatalf("too large for j1: %v %v", got, err)
	}
	if got, err := s.JobHistory(ctx, "j2"); err != nil || len(got.TooLarge) != 0 || got.NextAttempt < 2 {
		t.Fatalf("history of j2: %+v %v, want no too-large link and an attempt after the recorded one", got, err)
	}
	if got, err := s.JobHistory(ctx, "never"); err != nil || got.NextAttempt != 1 || got.TooLarge != nil {
		t.Fatalf("history of a job without calls: %+v %v, want attempt 1", got, err)
	}
	_, rows, err := s.Query(ctx, "SELECT usage_suspect, input_tokens FROM calls WHERE request_id = 'j2'")
	if err != nil || len(rows) != 1 || rows[0][0].(string) == "" {
		t.Fatalf("usage_suspect %v %v", rows, err)
	}
}

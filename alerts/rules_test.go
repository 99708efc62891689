package alerts

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

func TestBudgetAlerts(t *testing.T) {
	day := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	got := BudgetAlerts([]CapUse{
		{Provider: "gemini", DayStart: day, Used: 159, Cap: 200}, // 79.5%: below
		{Provider: "groq", DayStart: day, Used: 480, Cap: 600},   // 80%: at the mark
		{Provider: "cerebras", DayStart: day, Used: 1000, Cap: 1000},
		{Provider: "openrouter", DayStart: day, Used: 5000, Cap: 0}, // no cap
	}, 0.8)
	if len(got) != 2 {
		t.Fatalf("%d alerts: %+v", len(got), got)
	}
	if got[0].Key != "budget:groq:2026-11-29" || got[0].Rule != "budget" || !strings.Contains(got[0].Text, "480 of its daily cap of 600") {
		t.Errorf("groq: %+v", got[0])
	}
	if got[1].Key != "budget:cerebras:2026-11-29" || !strings.Contains(got[1].Text, "whole daily cap") {
		t.Errorf("cerebras: %+v", got[1])
	}
}

func TestProviderDownAlerts(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	got := ProviderDownAlerts([]telemetry.FailureStreak{
		{Provider: "gemini", First: t0, Last: t0.Add(4 * time.Hour), Failures: 3, LastOutcome: "server_error", LastDetail: "overloaded"},
		{Provider: "groq", First: t0, Last: t0.Add(50 * time.Minute), Failures: 5},   // not long enough
		{Provider: "cerebras", First: t0, Last: t0, Failures: 1},                     // a single failure
		{Provider: "openrouter", First: t0, Last: t0.Add(time.Hour), Failures: 2},    // exactly the limit: not longer
		{Provider: "ollama", First: t0, Last: t0.Add(61 * time.Minute), Failures: 2}, // just longer
	}, time.Hour)
	var names []string
	for _, a := range got {
		names = append(names, a.Key)
		if a.Rule != "provider_down" {
			t.Errorf("rule %s", a.Rule)
		}
	}
	if fmt.Sprint(names) != "[provider_down:gemini provider_down:ollama]" {
		t.Fatalf("alerts %v", names)
	}
	if !strings.Contains(got[0].Text, "4h0m0s") || !strings.Contains(got[0].Text, "overloaded") || !strings.Contains(got[0].Text, "never answered") {
		t.Errorf("text %q", got[0].Text)
	}
}

func TestReviewQueueAlert(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	if _, ok := ReviewQueueAlert(0, time.Time{}, now); ok {
		t.Fatal("alert for an empty queue")
	}
	a, ok := ReviewQueueAlert(2, now.Add(-30*time.Hour), now)
	if !ok || a.Key != "review_queue" || !strings.Contains(a.Text, "2 job(s)") || !strings.Contains(a.Text, "30h0m0s") {
		t.Fatalf("%+v", a)
	}
}

// TestRulesEvaluateOnStore runs the rule glue on a real database: a cap past
// the warning mark, a provider failing for hours, a job in review. A second
// evaluation within the quiet periods queues nothing new.
func TestRulesEvaluateOnStore(t *testing.T) {
	store, _ := tgStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	reset, _ := chain.ParseCapReset("")
	day := reset.DayStart(t0)
	for i := 0; i < 9; i++ {
		id, _, ok, err := store.ReserveCap(ctx, "gemini", day, 10, t0)
		tgMust(t, err)
		if !ok {
			t.Fatal("reservation refused")
		}
		tgMust(t, store.SettleCap(ctx, id, true, 100))
	}
	call := func(provider string, ts time.Time, o chain.Outcome) {
		tgMust(t, store.RecordCall(ctx, chain.Call{Provider: provider, Model: "m", RequestID: "r-" + ts.String(), Attempt: 1, TS: ts, Outcome: o, Purpose: chain.PurposeJob}))
	}
	call("groq", t0.Add(-10*time.Hour), chain.OutcomeOK)
	call("groq", t0.Add(-5*time.Hour), chain.OutcomeServerError)
	call("groq", t0.Add(-1*time.Hour), chain.OutcomeTimeoutFirstToken)
	call("groq", t0, chain.OutcomeServerError)
	call("cerebras", t0.Add(-5*time.Hour), chain.OutcomeServerError) // then recovered
	call("cerebras", t0, chain.OutcomeOK)
	owner := chain.Owner{Host: "h", PID: 1}
	_, _, err := store.ClaimJob(ctx, chain.JobRecord{ID: "2026-11-29/x", Topic: "x", Slot: "2026-11-29"}, owner, nil, time.Hour, t0)
	tgMust(t, err)
	tgMust(t, store.FinishJob(ctx, chain.JobRecord{ID: "2026-11-29/x", Topic: "x", Slot: "2026-11-29", Status: chain.JobReview}, owner, t0))

	r := Rules{Store: store, Notifier: &Outbox{Store: store, Now: func() time.Time { return t0 }},
		Caps:         []CapLimit{{Provider: "gemini", Cap: 10, DayStart: day}, {Provider: "groq", Cap: 600, DayStart: day}},
		BudgetWarnAt: 0.8, ProviderDownAfter: time.Hour}
	tgMust(t, r.Evaluate(ctx, t0))
	keys := func() string {
		_, rows, err := store.Query(ctx, "SELECT key FROM alerts ORDER BY key")
		tgMust(t, err)
		var ks []string
		for _, row := range rows {
			ks = append(ks, fmt.Sprint(row[0]))
		}
		return strings.Join(ks, " ")
	}
	want := "budget:gemini:2026-11-29 provider_down:groq review_queue"
	if got := keys(); got != want {
		t.Fatalf("alerts %q, want %q", got, want)
	}
	tgMust(t, r.Evaluate(ctx, t0.Add(time.Hour)))
	if got := keys(); got != want {
		t.Fatalf("second evaluation queued more: %q", got)
	}
}

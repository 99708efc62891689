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

func TestProviderDownObservation(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		s      telemetry.FailureStreak
		active bool
	}{
		{telemetry.FailureStreak{Provider: "gemini", First: t0, Last: t0.Add(4 * time.Hour), Failures: 3, LastOutcome: "server_error", LastStatus: 503, LastDetail: "overloaded"}, true},
		{telemetry.FailureStreak{Provider: "groq", First: t0, Last: t0.Add(50 * time.Minute), Failures: 5}, false},  // not long enough
		{telemetry.FailureStreak{Provider: "cerebras", First: t0, Last: t0, Failures: 1}, false},                    // a single failure
		{telemetry.FailureStreak{Provider: "openrouter", First: t0, Last: t0.Add(time.Hour), Failures: 2}, false},   // exactly the limit: not longer
		{telemetry.FailureStreak{Provider: "ollama", First: t0, Last: t0.Add(61 * time.Minute), Failures: 2}, true}, // just longer
		{telemetry.FailureStreak{Provider: "idle", LastSuccess: t0}, false},                                         // no streak
	} {
		o := ProviderDownObservation(c.s, time.Hour, false)
		if o.Active != c.active || o.Key != "provider_down:"+c.s.Provider || o.ClearedAt != c.s.LastSuccess {
			t.Errorf("%s: %+v", c.s.Provider, o)
		}
	}
	o := ProviderDownObservation(telemetry.FailureStreak{Provider: "gemini", First: t0, Last: t0.Add(4 * time.Hour), Failures: 3,
		LastOutcome: "server_error", LastStatus: 503, LastDetail: "overloaded"}, time.Hour, true)
	if !o.Silent || o.Since != t0 || !strings.Contains(o.Detail, "3 failed calls; latest server_error (HTTP 503): overloaded") {
		t.Errorf("%+v", o)
	}
}

func TestAnswerFailure(t *testing.T) {
	for _, c := range []struct {
		what string
		skip bool
		want bool
	}{
		{"server_error", false, true}, {"timeout_first_token", false, true}, {"stream_broken", false, true},
		{"auth_error", false, true}, {"bad_request", false, true}, {"circuit_open", true, true}, {"halted", true, true},
		{"rate_limited", false, false}, {"quota_exhausted", false, false}, {"ok", false, false}, {"rejected", false, false},
		{"cap", true, false}, {"tokens", true, false}, {"budget", true, false}, {"exhausted", true, false},
	} {
		if got := AnswerFailure(telemetry.WalkEvent{What: c.what, Skip: c.skip}); got != c.want {
			t.Errorf("%s (skip %v): %v, want %v", c.what, c.skip, got, c.want)
		}
	}
}

func TestReviewQueueAlert(t *testing.T) {
	now := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	if _, ok := ReviewQueueAlert(0, time.Time{}, now); ok {
		t.Fatal("alert for an empty queue")
	}
	a, ok := ReviewQueueAlert(2, now.Add(-30*time.Hour), now)
	if !ok || a.Key != "review_queue" || !strings.Contains(a.Text, "2 job(s)") || !strings.Contains(a.Text, "30h0m") {
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

	r := Rules{Store: store, Notifier: &Outbox{Store: store, Clock: &vtime{now: t0}},
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
	want := "budget:gemini:2026-11-29 provider_down:groq#1:opened review_queue"
	if got := keys(); got != want {
		t.Fatalf("alerts %q, want %q", got, want)
	}
	tgMust(t, r.Evaluate(ctx, t0.Add(time.Hour)))
	if got := keys(); got != want {
		t.Fatalf("second evaluation queued more: %q", got)
	}
}

// TestHealthAlertsSayTheChainIsDownOnce: when no link answered, one
// critical alert names every link's cause and no warning per link comes on
// top; otherwise each failed link's warning names the links that still
// take its jobs, and a misconfigured link has none (its own alert).
func TestHealthAlertsSayTheChainIsDownOnce(t *testing.T) {
	down := []chain.HealthCheck{
		{Provider: "gemini", State: chain.HealthUnhealthy, Outcome: chain.OutcomeConnectFailed, Detail: "dial tcp: lookup generativelanguage.googleapis.com: no such host"},
		{Provider: "groq", State: chain.HealthUnhealthy, Outcome: chain.OutcomeServerError, HTTPStatus: 503, Detail: "upstream reset"},
		{Provider: "cerebras", State: chain.HealthMisconfigured, Outcome: chain.OutcomeMisconfigured, HTTPStatus: 404, Detail: "Model llama3.1-70b does not exist"},
	}
	got := HealthAlerts(down)
	if len(got) != 1 || got[0].Severity != SeverityCritical {
		t.Fatalf("whole chain down: %d alerts %+v, want one critical", len(got), got)
	}
	for _, words := range []string{"whole chain is down", "no such host", "HTTP 503", "does not exist"} {
		if !strings.Contains(got[0].Text, words) {
			t.Errorf("chain-down alert lacks %q: %s", words, got[0].Text)
		}
	}
	if strings.Contains(got[0].Text, "fall back to the other providers") {
		t.Errorf("says jobs fall back with none left: %s", got[0].Text)
	}
	some := append([]chain.HealthCheck{{Provider: "openrouter", State: chain.HealthHealthy, OK: true}}, down...)
	got = HealthAlerts(some)
	if len(got) != 2 {
		t.Fatalf("%d alerts, want gemini's and groq's (none for the misconfigured link): %+v", len(got), got)
	}
	for _, a := range got {
		if a.Severity != SeverityWarning || !strings.Contains(a.Text, "Jobs fall back to openrouter.") {
			t.Errorf("alert %+v", a)
		}
	}
	if !strings.Contains(got[0].Text, "no such host") {
		t.Errorf("the cause is not named: %s", got[0].Text)
	}
	if HealthAlerts([]chain.HealthCheck{{Provider: "a", State: chain.HealthHealthy}, {Provider: "b", State: chain.HealthCapped}}) != nil {
		t.Error("alerts for a walk without a failure")
	}
}

package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

func ptr(f float64) *float64 { return &f }

func TestRecordCallRoundTrip(t *testing.T) { forEachBackend(t, testRecordCallRoundTrip) }

func testRecordCallRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	ts := time.Date(2026, 11, 29, 18, 0, 0, 123_000_000, time.UTC)
	c := chain.Call{
		Provider: "groq", Model: "llama-3.3-70b-versatile", RequestID: "topic-1@2026-11-29", Attempt: 3, TS: ts,
		InputTokens: 812, OutputTokens: 2301, Latency: 4321 * time.Millisecond, FirstToken: 654 * time.Millisecond,
		HTTPStatus: 200, CostUSD: 0.00123, QualityScore: ptr(64.5), Outcome: chain.OutcomeRejected,
		PromptVersion: "article@3/openai", PreviousError: "gemini: rate_limited (http 429)", Truncated: true,
		Shadow: true, Purpose: chain.PurposeShadow, Checks: []string{"words:-20", "meta:-100"}, Detail: "below threshold",
		Text: `{"title":"x"}`, Partial: true,
	}
	if err := s.RecordCall(ctx, c); err != nil {
		t.Fatal(err)
	}
	cols, rows, err := s.Query(ctx, `SELECT id, provider, model, request_id, attempt, ts, input_tokens, output_tokens,
	latency_ms, first_token_ms, http_status, cost_estimate_usd, quality_score, outcome, prompt_version,
	previous_error, truncated, shadow, purpose, checks, detail, `+dateHourSQL(s)+` FROM calls`)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 {
		t.Fatalf("rows = %d", len(rows))
	}
	got := map[string]any{}
	for i, c := range cols {
		got[c] = rows[0][i]
	}
	want := map[string]any{
		"provider": "groq", "model": "llama-3.3-70b-versatile", "request_id": "topic-1@2026-11-29", "attempt": int64(3),
		"ts": "2026-11-29T18:00:00.123Z", "input_tokens": int64(812), "output_tokens": int64(2301),
		"latency_ms": int64(4321), "first_token_ms": int64(654), "http_status": int64(200), "cost_estimate_usd": 0.00123,
		"quality_score": 64.5, "outcome": "rejected", "prompt_version": "article@3/openai",
		"previous_error": "gemini: rate_limited (http 429)", "truncated": int64(1), "shadow": int64(1), "purpose": "shadow",
		"detail": "below threshold", "date(ts)": "2026-11-29", "strftime('%H:%M', ts)": "18:00",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %#v, want %#v", k, got[k], v)
		}
	}
	if !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(got["ts"].(string)) {
		t.Errorf("ts %q does not match the stored timestamp pattern", got["ts"])
	}
	var checks []string
	if err := json.Unmarshal([]byte(got["checks"].(string)), &checks); err != nil || !slices.Equal(checks, c.Checks) {
		t.Errorf("checks = %v (%v)", got["checks"], err)
	}
	_, out, err := s.Query(ctx, "SELECT call_id, request_id, attempt, text, partial, created_at FROM outputs")
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0][0] != got["id"] || out[0][3] != c.Text || out[0][4] != int64(1) || out[0][5] != "2026-11-29T18:00:00.123Z" {
		t.Fatalf("outputs = %v", out)
	}

	// No text, no score: no outputs row, quality_score NULL, purpose default.
	c2 := chain.Call{Provider: "gemini", RequestID: "topic-1@2026-11-29", Attempt: 4, TS: ts.Add(time.Second), Outcome: chain.OutcomeServerError, HTTPStatus: 503}
	if err := s.RecordCall(ctx, c2); err != nil {
		t.Fatal(err)
	}
	_, r2, err := s.Query(ctx, "SELECT quality_score, purpose, checks, shadow FROM calls WHERE attempt = 4")
	if err != nil {
		t.Fatal(err)
	}
	if r2[0][0] != nil || r2[0][1] != "job" || r2[0][2] != "[]" || r2[0][3] != int64(0) {
		t.Fatalf("defaults = %v", r2[0])
	}
	if n := queryInt(t, s, "SELECT count(*) FROM outputs"); n != 1 {
		t.Fatalf("outputs rows = %d, want 1", n)
	}
	if n, err := s.NextAttempt(ctx, "topic-1@2026-11-29"); err != nil || n != 5 {
		t.Fatalf("NextAttempt = %d, %v; want 5", n, err)
	}
	if n, err := s.NextAttempt(ctx, "other"); err != nil || n != 1 {
		t.Fatalf("NextAttempt(new) = %d, %v; want 1", n, err)
	}
}

// TestWeeklyCostQuery runs the weekly cost query that the README shows.
func TestWeeklyCostQuery(t *testing.T) { forEachBackend(t, testWeeklyCostQuery) }

func testWeeklyCostQuery(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	now := time.Now().UTC()
	calls := []struct {
		provider string
		age      time.Duration
		cost     float64
	}{
		{"gemini", 24 * time.Hour, 0.01},
		{"gemini", 72 * time.Hour, 0.02},
		{"groq", 48 * time.Hour, 0.5},
		{"groq", 10 * 24 * time.Hour, 100}, // older than a week
		{"cerebras", 12 * 24 * time.Hour, 7},
	}
	for i, c := range calls {
		err := s.RecordCall(ctx, chain.Call{Provider: c.provider, RequestID: fmt.Sprint("j", i), Attempt: 1,
			TS: now.Add(-c.age), CostUSD: c.cost, Outcome: chain.OutcomeOK})
		if err != nil {
			t.Fatal(err)
		}
	}
	cols, rows, err := s.Query(ctx, weeklyCostSQL[s.Backend()])
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cols, []string{"provider", "calls", "usd"}) {
		t.Fatalf("cols = %v", cols)
	}
	want := [][]any{{"groq", int64(1), 0.5}, {"gemini", int64(2), 0.03}}
	if fmt.Sprint(rows) != fmt.Sprint(want) {
		t.Fatalf("rows = %v, want %v", rows, want)
	}
}

func TestRecordSkipHealthShadow(t *testing.T) { forEachBackend(t, testRecordSkipHealthShadow) }

func testRecordSkipHealthShadow(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	ts := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	if err := s.RecordSkip(ctx, chain.Skip{TS: ts, RequestID: "j1", Provider: "gemini", Reason: chain.SkipExhausted, Until: ts.Add(7 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSkip(ctx, chain.Skip{TS: ts, RequestID: "j1", Provider: "groq", Reason: chain.SkipCircuitOpen}); err != nil {
		t.Fatal(err)
	}
	_, rows, err := s.Query(ctx, "SELECT provider, reason, until FROM skips ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rows) != "[[gemini exhausted 2026-11-30T01:00:00.000Z] [groq circuit_open <nil>]]" {
		t.Fatalf("skips = %v", rows)
	}
	if err := s.RecordHealth(ctx, HealthCheck{TS: ts, Provider: "cerebras", Model: "gpt-oss-120b", OK: false, HTTPStatus: 0,
		Latency: 60 * time.Second, Outcome: chain.OutcomeTimeoutFirstToken, Detail: "no first token in 60s"}); err != nil {
		t.Fatal(err)
	}
	_, rows, err = s.Query(ctx, "SELECT provider, ok, http_status, latency_ms, outcome FROM health_checks")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rows) != "[[cerebras 0 0 60000 timeout_first_token]]" {
		t.Fatalf("health = %v", rows)
	}
	if err := s.RecordShadowComparison(ctx, ShadowComparison{TS: ts, RequestID: "j1", PrimaryProvider: "gemini", ShadowProvider: "groq",
		PrimaryScore: ptr(80), ShadowScore: ptr(72.5), ShadowPass: true, WordRatio: ptr(0.9), PrimaryLatency: time.Second,
		ShadowLatency: 2 * time.Second, PrimaryCostUSD: 0.01, ShadowCostUSD: 0}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordShadowComparison(ctx, ShadowComparison{TS: ts, RequestID: "j2", PrimaryProvider: "gemini", ShadowProvider: "groq", PrimaryScore: ptr(80)}); err != nil {
		t.Fatal(err)
	}
	_, rows, err = s.Query(ctx, "SELECT quality_delta, shadow_pass, word_ratio, shadow_latency_ms FROM shadow_comparisons ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rows) != "[[-7.5 1 0.9 2000] [<nil> 0 <nil> 0]]" {
		t.Fatalf("shadow = %v", rows)
	}
}

func TestReserveCapConcurrentStores(t *testing.T) { forEachBackend(t, testReserveCapConcurrentStores) }

func testReserveCapConcurrentStores(t *testing.T) {
	_, path := openTemp(t)
	const (
		workers = 8
		tries   = 10
		limit   = 25
	)
	day := time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC)
	var (
		mu   sync.Mutex
		used []int
		ids  []int64
		wg   sync.WaitGroup
	)
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(path) // its own connections
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for i := range tries {
				id, u, ok, err := s.ReserveCap(context.Background(), "gemini", day, limit, day.Add(time.Duration(w*tries+i)*time.Second))
				if err != nil {
					errs <- err
					return
				}
				if ok {
					mu.Lock()
					used = append(used, u)
					ids = append(ids, id)
					mu.Unlock()
				} else if u < limit {
					errs <- fmt.Errorf("refused with used %d < limit", u)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(used) != limit {
		t.Fatalf("%d reservations granted, want exactly %d", len(used), limit)
	}
	slices.Sort(used)
	for i, u := range used {
		if u != i+1 {
			t.Fatalf("used counts %v, want 1..%d each once", used, limit)
		}
	}

	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	if _, _, ok, _ := s.ReserveCap(ctx, "gemini", day, limit, day); ok {
		t.Fatal("reservation past the limit")
	}
	// A request that was sent stays taken; one given back frees a slot.
	if err := s.SettleCap(ctx, ids[0], true, 1234); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := s.ReserveCap(ctx, "gemini", day, limit, day); ok {
		t.Fatal("settling a sent request freed a slot")
	}
	if err := s.SettleCap(ctx, ids[1], false, 0); err != nil {
		t.Fatal(err)
	}
	if _, u, ok, err := s.ReserveCap(ctx, "gemini", day, limit, day); !ok || u != limit || err != nil {
		t.Fatalf("after giving one back: ok=%v used=%d err=%v", ok, u, err)
	}
	// Another day and another provider have their own counts.
	if _, u, ok, _ := s.ReserveCap(ctx, "gemini", day.Add(24*time.Hour), limit, day); !ok || u != 1 {
		t.Fatalf("next day: ok=%v used=%d", ok, u)
	}
	if _, u, ok, _ := s.ReserveCap(ctx, "groq", day, 1, day); !ok || u != 1 {
		t.Fatalf("other provider: ok=%v used=%d", ok, u)
	}
	if err := s.SettleCap(ctx, 999999, true, 0); err == nil {
		t.Fatal("settling an unknown reservation succeeded")
	}
	if n := queryInt(t, s, "SELECT tokens FROM cap_reservations WHERE id = ?", ids[0]); n != 1234 {
		t.Fatalf("tokens = %d", n)
	}
}

func TestUpdateProviderState(t *testing.T) { forEachBackend(t, testUpdateProviderState) }

func testUpdateProviderState(t *testing.T) {
	s, path := openTemp(t)
	ctx := t.Context()
	set := chain.BreakerSettings{Window: 10 * time.Minute, MinSamples: 2, FailureRate: 0.5, Cooldown: time.Minute}
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

	st, err := s.ProviderState(ctx, "groq")
	if err != nil || !st.ExhaustedUntil.IsZero() || st.Breaker.Current() != chain.BreakerClosed {
		t.Fatalf("initial state = %+v, %v", st, err)
	}
	until := now.Add(6 * time.Hour)
	for i := range 3 {
		at := now.Add(time.Duration(i) * time.Second)
		err := s.UpdateProviderState(ctx, "groq", func(st *chain.ProviderState) []chain.Transition {
			var out []chain.Transition
			if tr := st.Breaker.Record(set, at, true); tr != nil {
				tr.Provider = "groq"
				out = append(out, *tr)
			}
			if i == 2 {
				st.ExhaustedUntil, st.ExhaustedReason = until, "quota_exhausted"
				out = append(out, chain.Transition{TS: at, Kind: "exhausted", From: "available", To: "exhausted", Detail: "daily quota"})
			}
			return out
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	st, err = s.ProviderState(ctx, "groq")
	if err != nil {
		t.Fatal(err)
	}
	if st.Breaker.Current() != chain.BreakerOpen || !st.ExhaustedUntil.Equal(until) || st.ExhaustedReason != "quota_exhausted" {
		t.Fatalf("state = %+v", st)
	}
	if st.Breaker.OpenedAt.IsZero() {
		t.Fatalf("breaker lost its opened_at: %+v", st.Breaker)
	}
	_, rows, err := s.Query(ctx, "SELECT provider, kind, from_state, to_state FROM provider_events ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rows) != "[[groq breaker closed open] [groq exhausted available exhausted]]" {
		t.Fatalf("events = %v", rows)
	}
	var b map[string]any
	_, rows, _ = s.Query(ctx, "SELECT breaker FROM provider_state WHERE provider = 'groq'")
	if err := json.Unmarshal([]byte(rows[0][0].(string)), &b); err != nil || b["state"] != "open" {
		t.Fatalf("breaker column = %v (%v)", rows, err)
	}

	// Read-modify-write is atomic across stores (processes).
	var wg sync.WaitGroup
	const workers, each = 4, 10
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer o.Close()
			for range each {
				if err := o.UpdateProviderState(context.Background(), "cerebras", func(st *chain.ProviderState) []chain.Transition {
					st.Breaker.Successes++
					return nil
				}); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	st, err = s.ProviderState(ctx, "cerebras")
	if err != nil || st.Breaker.Successes != workers*each {
		t.Fatalf("counter = %d (%v), want %d", st.Breaker.Successes, err, workers*each)
	}
	if n := queryInt(t, s, "SELECT count(*) FROM provider_events WHERE provider = 'cerebras'"); n != 0 {
		t.Fatalf("events without transitions: %d", n)
	}
}

// weeklyCostSQL is the README's weekly cost query in each dialect.
var weeklyCostSQL = map[string]string{
	BackendSQLite: `SELECT provider, COUNT(*) AS calls, ROUND(SUM(cost_estimate_usd), 4) AS usd
FROM calls WHERE ts >= date('now', '-7 days') GROUP BY provider ORDER BY usd DESC;`,
	BackendPostgres: `SELECT provider, COUNT(*) AS calls, ROUND(SUM(cost_estimate_usd)::numeric, 4) AS usd
FROM calls WHERE ts::timestamptz >= now() - interval '7 days' GROUP BY provider ORDER BY usd DESC;`,
}

// dateHourSQL selects the date and the HH:MM of ts in s's dialect (the
// README's way to group by day or hour).
func dateHourSQL(s *Store) string {
	if s.pg() {
		return `substr(ts, 1, 10) AS "date(ts)", to_char(ts::timestamptz AT TIME ZONE 'UTC', 'HH24:MI') AS "strftime('%H:%M', ts)"`
	}
	return "date(ts), strftime('%H:%M', ts)"
}

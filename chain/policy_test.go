package chain

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// The fixtures below are the *ProviderError an adapter produces from the real
// bodies and headers of provider-wire.md. now is the evening before the
// OpenRouter reset in that file (X-RateLimit-Reset 1787616000000 ms).
var (
	polNow        = time.Date(2026, 8, 24, 18, 0, 0, 0, time.UTC)
	polDeadline   = polNow.Add(15 * time.Minute)
	resetUTC      = time.Date(2026, 8, 25, 0, 0, 0, 0, time.UTC) // next 00:00 UTC
	resetLA       = time.Date(2026, 8, 25, 7, 0, 0, 0, time.UTC) // next 00:00 America/Los_Angeles (PDT)
	openRouterRst = time.UnixMilli(1787616000000).UTC()
)

func TestWireFixtureTimes(t *testing.T) {
	la, err := ParseCapReset("00:00 America/Los_Angeles")
	if err != nil {
		t.Fatal(err)
	}
	if got := la.Next(polNow); !got.Equal(resetLA) {
		t.Fatalf("LA next reset = %s, want %s", got, resetLA)
	}
	if got := (CapReset{}).Next(polNow); !got.Equal(resetUTC) {
		t.Fatalf("UTC next reset = %s, want %s", got, resetUTC)
	}
	if !openRouterRst.Equal(resetUTC) {
		t.Fatalf("OpenRouter reset %s is not the next UTC midnight %s", openRouterRst, resetUTC)
	}
}

func half() float64 { return 0.5 }

func TestDecideTable(t *testing.T) {
	def := DefaultRetryPolicy()
	noHalt := def
	noHalt.AuthHalt = false
	slow5xx := def
	slow5xx.ServerErrorWait = 5 * time.Second
	noRetry := def
	noRetry.RateLimitedMaxRetries = 0

	geminiMinute := &ProviderError{Provider: "gemini", Status: 429, Outcome: OutcomeRateLimited, Scope: ScopeMinute,
		RetryAfter: 26 * time.Second, Message: "You exceeded your current quota, please check your plan and billing details.",
		Quota: QuotaHint{Remaining: -1}}
	cerebrasMinute := &ProviderError{Provider: "cerebras", Status: 429, Outcome: OutcomeRateLimited, Scope: ScopeMinute,
		Message: "Requests per minute limit exceeded - too many requests sent.", Quota: QuotaHint{Remaining: 14398, Reset: 33011380 * time.Millisecond}}

	type want struct {
		action           Action
		waitMin, waitMax time.Duration
		outcome          Outcome
		exhaust          time.Time
		breaker          bool
		reason           string // substring of Reason
	}
	rows := []struct {
		name      string
		p         RetryPolicy
		e         *ProviderError
		retries   int
		deadline  time.Time
		nextReset time.Time
		want      want
	}{
		{name: "gemini 429 per-minute RetryInfo 26s is a floor", p: def, e: geminiMinute, nextReset: resetLA,
			want: want{action: ActionRetry, waitMin: 26 * time.Second, waitMax: 27 * time.Second, outcome: OutcomeRateLimited, reason: "26s"}},
		{name: "gemini 429 per-minute second retry still waits the floor", p: def, e: geminiMinute, retries: 1, nextReset: resetLA,
			want: want{action: ActionRetry, waitMin: 26 * time.Second, waitMax: 27 * time.Second, outcome: OutcomeRateLimited}},
		{name: "gemini 429 per-minute after max_retries goes next", p: def, e: geminiMinute, retries: 2, nextReset: resetLA,
			want: want{action: ActionNext, outcome: OutcomeRateLimited, reason: "2 retries"}},
		{name: "max_retries 0 goes next at once", p: noRetry, e: geminiMinute, nextReset: resetLA,
			want: want{action: ActionNext, outcome: OutcomeRateLimited}},
		{name: "gemini 429 26s does not fit a 20s deadline: exhausted for its wait", p: def, e: geminiMinute,
			deadline: polNow.Add(20 * time.Second), nextReset: resetLA,
			want: want{action: ActionNext, outcome: OutcomeRateLimited, exhaust: polNow.Add(26 * time.Second), reason: "deadline"}},
		{name: "gemini 429 daily PerDay quotaId with 'Please retry in 23.47s': until LA midnight", p: def,
			e: &ProviderError{Provider: "gemini", Status: 429, Outcome: OutcomeQuotaExhausted, Scope: ScopeDay,
				RetryAfter: 23472316927 * time.Nanosecond, Message: "You exceeded your current quota... Please retry in 23.472316927s."},
			nextReset: resetLA,
			want:      want{action: ActionNext, outcome: OutcomeQuotaExhausted, exhaust: resetLA, reason: "daily"}},
		{name: "groq TPD 'try again in 9m52.272s' + retry-after 2: cap reset is later", p: def,
			e: &ProviderError{Provider: "groq", Status: 429, Outcome: OutcomeRateLimited, Scope: ScopeDay,
				RetryAfter: 9*time.Minute + 52272*time.Millisecond,
				Message:    "Rate limit reached for model llama-3.3-70b-versatile on tokens per day (TPD): Limit 200000, Used 197117, Requested 4254. Please try again in 9m52.272s.",
				Quota:      QuotaHint{Remaining: 998, Reset: 2*time.Minute + 59560*time.Millisecond}},
			nextReset: resetUTC,
			want:      want{action: ActionNext, outcome: OutcomeQuotaExhausted, exhaust: resetUTC}},
		{name: "cerebras request_quota_exceeded per-minute without a delay: full jitter", p: def, e: cerebrasMinute, nextReset: resetUTC,
			want: want{action: ActionRetry, waitMin: 15 * time.Second, waitMax: 15 * time.Second, outcome: OutcomeRateLimited, reason: "no provider delay"}},
		{name: "cerebras per-minute without a delay, retry 1: jitter over 60s", p: def, e: cerebrasMinute, retries: 1, nextReset: resetUTC,
			want: want{action: ActionRetry, waitMin: 30 * time.Second, waitMax: 30 * time.Second, outcome: OutcomeRateLimited}},
		{name: "cerebras token_quota_exceeded Retry-After 86399: provider's reset is later", p: def,
			e: &ProviderError{Provider: "cerebras", Status: 429, Outcome: OutcomeQuotaExhausted, Scope: ScopeDay,
				RetryAfter: 86399 * time.Second, Message: "Tokens per day limit exceeded - too many tokens processed.",
				Quota: QuotaHint{Remaining: 13000}},
			nextReset: resetUTC,
			want:      want{action: ActionNext, outcome: OutcomeQuotaExhausted, exhaust: polNow.Add(86399 * time.Second)}},
		{name: "cerebras x-ratelimit-remaining-requests-day 0, reset-requests-day 33011.38 later than cap_reset", p: def,
			e: &ProviderError{Provider: "cerebras", Status: 429, Outcome: OutcomeRateLimited,
				Message: "Requests per minute limit exceeded - too many requests sent.", Quota: QuotaHint{Remaining: 0, Reset: 33011380 * time.Millisecond}},
			nextReset: resetUTC,
			want:      want{action: ActionNext, outcome: OutcomeQuotaExhausted, exhaust: polNow.Add(33011380 * time.Millisecond)}},
		{name: "remaining-requests-day 0 with a reset before cap_reset: until cap_reset", p: def,
			e: &ProviderError{Provider: "cerebras", Status: 429, Outcome: OutcomeRateLimited,
				Quota: QuotaHint{Remaining: 0, Reset: time.Hour}},
			nextReset: resetUTC,
			want:      want{action: ActionNext, outcome: OutcomeQuotaExhausted, exhaust: resetUTC}},
		{name: "the zero QuotaHint{} is not a daily report", p: def,
			e:         &ProviderError{Provider: "groq", Status: 429, Outcome: OutcomeRateLimited, RetryAfter: 2 * time.Second},
			nextReset: resetUTC,
			want:      want{action: ActionRetry, waitMin: 2 * time.Second, waitMax: 2200 * time.Millisecond, outcome: OutcomeRateLimited}},
		{name: "openrouter free-models-per-day X-RateLimit-Reset epoch ms", p: def,
			e: &ProviderError{Provider: "openrouter", Status: 429, Outcome: OutcomeRateLimited, Scope: ScopeDay,
				ResetAt: openRouterRst, Message: "Rate limit exceeded: free-models-per-day."},
			nextReset: resetUTC,
			want:      want{action: ActionNext, outcome: OutcomeQuotaExhausted, exhaust: resetUTC}},
		{name: "openrouter daily reset later than a misconfigured cap_reset wins", p: def,
			e: &ProviderError{Provider: "openrouter", Status: 429, Outcome: OutcomeRateLimited, Scope: ScopeDay,
				ResetAt: openRouterRst, Message: "Rate limit exceeded: free-models-per-day."},
			nextReset: polNow.Add(30 * time.Minute),
			want:      want{action: ActionNext, outcome: OutcomeQuotaExhausted, exhaust: openRouterRst, reason: "provider"}},
		{name: "groq per-minute 'try again in 2m30s' exceeds max_wait 60s", p: def,
			e: &ProviderError{Provider: "groq", Status: 429, Outcome: OutcomeRateLimited, Scope: ScopeMinute,
				RetryAfter: 150 * time.Second, Message: "Rate limit reached ... on requests per minute (RPM). Please try again in 2m30s."},
			nextReset: resetUTC,
			want:      want{action: ActionNext, outcome: OutcomeRateLimited, exhaust: polNow.Add(150 * time.Second), reason: "max_wait"}},
		{name: "per-minute ResetAt without Retry-After is the floor", p: def,
			e:         &ProviderError{Provider: "openrouter", Status: 429, Outcome: OutcomeRateLimited, ResetAt: polNow.Add(10 * time.Second)},
			nextReset: resetUTC,
			want:      want{action: ActionRetry, waitMin: 10 * time.Second, waitMax: 11 * time.Second, outcome: OutcomeRateLimited}},
		{name: "500", p: def, e: &ProviderError{Provider: "groq", Status: 500, Outcome: OutcomeServerError},
			want: want{action: ActionNext, outcome: OutcomeServerError, breaker: true, reason: "at once"}},
		{name: "502", p: def, e: &ProviderError{Provider: "groq", Status: 502, Outcome: OutcomeServerError},
			want: want{action: ActionNext, outcome: OutcomeServerError, breaker: true}},
		{name: "gemini 503 UNAVAILABLE model overloaded", p: def,
			e:    &ProviderError{Provider: "gemini", Status: 503, Outcome: OutcomeServerError, Message: "The model is overloaded. Please try again later."},
			want: want{action: ActionNext, outcome: OutcomeServerError, breaker: true}},
		{name: "504", p: def, e: &ProviderError{Provider: "cerebras", Status: 504, Outcome: OutcomeServerError},
			want: want{action: ActionNext, outcome: OutcomeServerError, breaker: true}},
		{name: "529 without an adapter outcome is classified from the status", p: def, e: &ProviderError{Provider: "openrouter", Status: 529},
			want: want{action: ActionNext, outcome: OutcomeServerError, breaker: true}},
		{name: "server_error.wait 5s is waited, then next", p: slow5xx, e: &ProviderError{Provider: "groq", Status: 503, Outcome: OutcomeServerError},
			want: want{action: ActionNext, waitMin: 5 * time.Second, waitMax: 5 * time.Second, outcome: OutcomeServerError, breaker: true}},
		{name: "401 halts", p: def, e: &ProviderError{Provider: "groq", Status: 401, Outcome: OutcomeAuthError, Message: "Invalid API Key"},
			want: want{action: ActionHalt, outcome: OutcomeAuthError, reason: "halting"}},
		{name: "gemini 403 PERMISSION_DENIED halts", p: def, e: &ProviderError{Provider: "gemini", Status: 403, Outcome: OutcomeAuthError},
			want: want{action: ActionHalt, outcome: OutcomeAuthError}},
		{name: "gemini 400 API_KEY_INVALID classified auth by the adapter halts", p: def,
			e:    &ProviderError{Provider: "gemini", Status: 400, Outcome: OutcomeAuthError, Message: "API key not valid. Please pass a valid API key."},
			want: want{action: ActionHalt, outcome: OutcomeAuthError}},
		{name: "401 without halt skips the provider for the run", p: noHalt, e: &ProviderError{Provider: "groq", Status: 401, Outcome: OutcomeAuthError},
			want: want{action: ActionSkipRun, outcome: OutcomeAuthError, reason: "skipping"}},
		{name: "403 without halt skips the provider for the run", p: noHalt, e: &ProviderError{Provider: "gemini", Status: 403},
			want: want{action: ActionSkipRun, outcome: OutcomeAuthError}},
		{name: "timeout_connect", p: def, e: &ProviderError{Provider: "groq", Outcome: OutcomeTimeoutConnect},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeTimeoutConnect, breaker: true}},
		{name: "timeout_first_token", p: def, e: &ProviderError{Provider: "groq", Outcome: OutcomeTimeoutFirstToken},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeTimeoutFirstToken, breaker: true}},
		{name: "timeout_idle", p: def, e: &ProviderError{Provider: "groq", Status: 200, Outcome: OutcomeTimeoutIdle},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeTimeoutIdle, breaker: true}},
		{name: "timeout_total", p: def, e: &ProviderError{Provider: "groq", Status: 200, Outcome: OutcomeTimeoutTotal},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeTimeoutTotal, breaker: true}},
		{name: "openrouter error chunk in a 200 stream is stream_broken", p: def,
			e:    &ProviderError{Provider: "openrouter", Status: 200, Outcome: OutcomeStreamBroken, Message: "Provider disconnected unexpectedly", Partial: `{"title":`},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeStreamBroken, breaker: true}},
		{name: "timeout whose other.wait does not fit: next at once, still a breaker failure", p: def,
			e: &ProviderError{Provider: "groq", Outcome: OutcomeTimeoutTotal}, deadline: polNow.Add(5 * time.Second),
			want: want{action: ActionNext, outcome: OutcomeTimeoutTotal, breaker: true, reason: "does not fit"}},
		{name: "gemini SAFETY block", p: def, e: &ProviderError{Provider: "gemini", Status: 200, Outcome: OutcomeBlocked, Message: "finishReason SAFETY"},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeBlocked}},
		{name: "bad_request 400", p: def, e: &ProviderError{Provider: "cerebras", Status: 400, Outcome: OutcomeBadRequest},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeBadRequest}},
		{name: "other 4xx without an outcome is bad_request", p: def, e: &ProviderError{Provider: "groq", Status: 422},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeBadRequest}},
		{name: "unclassified error", p: def, e: &ProviderError{Provider: "groq", Outcome: OutcomeError},
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeError}},
		{name: "other.wait 0s: next at once", p: RetryPolicy{OtherWait: 0, AuthHalt: true}, e: &ProviderError{Provider: "groq", Status: 400, Outcome: OutcomeBadRequest},
			want: want{action: ActionNext, outcome: OutcomeBadRequest}},
		{name: "rejected answer: next at once", p: def, e: &ProviderError{Provider: "groq", Status: 200, Outcome: OutcomeRejected},
			want: want{action: ActionNext, outcome: OutcomeRejected}},
		{name: "nil error is an unclassified error", p: def, e: nil,
			want: want{action: ActionNext, waitMin: 10 * time.Second, waitMax: 10 * time.Second, outcome: OutcomeError}},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			deadline := r.deadline
			if deadline.IsZero() {
				deadline = polDeadline
			}
			d := r.p.Decide(r.e, r.retries, polNow, deadline, r.nextReset, half)
			w := r.want
			if d.Action != w.action {
				t.Errorf("action = %s, want %s (%s)", d.Action, w.action, d.Reason)
			}
			if d.Wait < w.waitMin || d.Wait > w.waitMax {
				t.Errorf("wait = %s, want in [%s, %s] (%s)", d.Wait, w.waitMin, w.waitMax, d.Reason)
			}
			if d.Outcome != w.outcome {
				t.Errorf("outcome = %s, want %s", d.Outcome, w.outcome)
			}
			if !d.ExhaustUntil.Equal(w.exhaust) {
				t.Errorf("exhaust until = %s, want %s (%s)", d.ExhaustUntil, w.exhaust, d.Reason)
			}
			if !d.ExhaustUntil.IsZero() && d.ExhaustUntil.Location() != time.UTC {
				t.Errorf("exhaust until %s is not UTC", d.ExhaustUntil)
			}
			if d.Breaker != w.breaker {
				t.Errorf("breaker = %v, want %v", d.Breaker, w.breaker)
			}
			if d.Reason == "" || !strings.Contains(d.Reason, w.reason) {
				t.Errorf("reason %q does not contain %q", d.Reason, w.reason)
			}
			if d.Wait > 0 && !polNow.Add(d.Wait).Before(deadline) {
				t.Errorf("wait %s runs past the deadline %s", d.Wait, deadline)
			}
		})
	}
}

// TestDecideJitterSpread checks that 100 decisions from a seeded source
// spread over their range: above the provider's floor when it gave a delay,
// over [0, ceiling) when it did not.
func TestDecideJitterSpread(t *testing.T) {
	p := DefaultRetryPolicy()
	rng := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name     string
		e        *ProviderError
		retries  int
		lo, hi   time.Duration
		minRange time.Duration
	}{
		{"provider delay 26s", &ProviderError{Status: 429, Outcome: OutcomeRateLimited, RetryAfter: 26 * time.Second}, 0, 26 * time.Second, 27 * time.Second, 800 * time.Millisecond},
		{"provider delay 2s", &ProviderError{Status: 429, Outcome: OutcomeRateLimited, RetryAfter: 2 * time.Second}, 1, 2 * time.Second, 2200 * time.Millisecond, 150 * time.Millisecond},
		{"no delay, retry 0", &ProviderError{Status: 429, Outcome: OutcomeRateLimited}, 0, 0, 30 * time.Second, 24 * time.Second},
		{"no delay, retry 1 capped at max_wait", &ProviderError{Status: 429, Outcome: OutcomeRateLimited}, 1, 0, 60 * time.Second, 48 * time.Second},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var buckets [10]int
			lo, hi := time.Duration(1<<62), time.Duration(0)
			seen := map[time.Duration]bool{}
			for range 100 {
				d := p.Decide(c.e, c.retries, polNow, polDeadline, resetUTC, rng.Float64)
				if d.Action != ActionRetry {
					t.Fatalf("action = %s, want retry", d.Action)
				}
				if d.Wait < c.lo || d.Wait >= c.hi {
					t.Fatalf("wait %s outside [%s, %s)", d.Wait, c.lo, c.hi)
				}
				lo, hi = min(lo, d.Wait), max(hi, d.Wait)
				seen[d.Wait] = true
				buckets[int(10*(d.Wait-c.lo)/(c.hi-c.lo))]++
			}
			if hi-lo < c.minRange {
				t.Errorf("waits span only %s..%s", lo, hi)
			}
			if len(seen) < 95 {
				t.Errorf("only %d distinct waits of 100", len(seen))
			}
			for i, n := range buckets {
				if n == 0 {
					t.Errorf("no wait in tenth %d of the range: %v", i, buckets)
				}
			}
		})
	}
}

func TestDecideBackoffDoubles(t *testing.T) {
	p := RetryPolicy{RateLimitedWait: time.Second, RateLimitedMaxWait: 10 * time.Second, RateLimitedMaxRetries: 10, AuthHalt: true}
	one := func() float64 { return 0.999999 }
	e := &ProviderError{Status: 429, Outcome: OutcomeRateLimited}
	var got []time.Duration
	for retries := range 6 {
		got = append(got, p.Decide(e, retries, polNow, polDeadline, resetUTC, one).Wait.Round(10*time.Millisecond))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ceilings = %v, want %v", got, want)
		}
	}
	// A huge retry count must not overflow the shift.
	if d := p.Decide(e, 9, polNow, time.Time{}, resetUTC, one); d.Wait > 10*time.Second || d.Wait <= 0 {
		t.Fatalf("wait at retry 9 = %s", d.Wait)
	}
	// Nor with the default 30s base, where 30s<<29 would overflow.
	q := DefaultRetryPolicy()
	q.RateLimitedMaxRetries = 1000
	for _, r := range []int{28, 29, 30, 63, 64, 80, 999} {
		if d := q.Decide(e, r, polNow, time.Time{}, resetUTC, one); d.Action != ActionRetry || d.Wait < 59*time.Second || d.Wait > time.Minute {
			t.Fatalf("retry %d: %s after %s, want retry after ~60s", r, d.Action, d.Wait)
		}
	}
}

func TestDecideJitterSourceClamped(t *testing.T) {
	e := &ProviderError{Status: 429, Outcome: OutcomeRateLimited}
	p := DefaultRetryPolicy()
	for _, f := range []func() float64{nil, func() float64 { return 1 }, func() float64 { return 7 }, func() float64 { return -3 }, func() float64 { return math.NaN() }} {
		d := p.Decide(e, 0, polNow, polDeadline, resetUTC, f)
		if d.Action != ActionRetry || d.Wait < 0 || d.Wait >= 30*time.Second {
			t.Fatalf("jitter source gave %s after %s, want a retry within [0, 30s)", d.Action, d.Wait)
		}
	}
}

func TestDecideJitterTrimmedToDeadline(t *testing.T) {
	// The floor fits but floor+jitter would not: the floor is waited.
	e := &ProviderError{Status: 429, Outcome: OutcomeRateLimited, RetryAfter: 26 * time.Second}
	d := DefaultRetryPolicy().Decide(e, 0, polNow, polNow.Add(26500*time.Millisecond), resetUTC, func() float64 { return 0.9 })
	if d.Action != ActionRetry || d.Wait != 26*time.Second {
		t.Fatalf("got %s %s, want retry after exactly 26s", d.Action, d.Wait)
	}
	// Our own backoff that does not fit goes next without marking exhaustion.
	e = &ProviderError{Status: 429, Outcome: OutcomeRateLimited}
	d = DefaultRetryPolicy().Decide(e, 0, polNow, polNow.Add(5*time.Second), resetUTC, func() float64 { return 0.9 })
	if d.Action != ActionNext || d.Wait != 0 || !d.ExhaustUntil.IsZero() {
		t.Fatalf("got %+v, want next at once without exhaustion", d)
	}
}

func TestFit(t *testing.T) {
	var p RetryPolicy
	cases := []struct {
		wait     time.Duration
		deadline time.Time
		want     time.Duration
		ok       bool
	}{
		{10 * time.Second, polNow.Add(time.Minute), 10 * time.Second, true},
		{10 * time.Second, polNow.Add(10 * time.Second), 0, false}, // ending at the deadline leaves no time for the call
		{10 * time.Second, polNow.Add(10*time.Second + time.Millisecond), 10 * time.Second, true},
		{time.Minute, polNow.Add(-time.Second), 0, false}, // deadline already past
		{0, polNow.Add(-time.Second), 0, true},
		{-time.Second, polNow, 0, true},
		{time.Hour, time.Time{}, time.Hour, true}, // no deadline
	}
	for _, c := range cases {
		got, ok := p.Fit(c.wait, polNow, c.deadline)
		if got != c.want || ok != c.ok {
			t.Errorf("Fit(%s, deadline %s) = %s, %v; want %s, %v", c.wait, c.deadline.Sub(polNow), got, ok, c.want, c.ok)
		}
	}
}

func TestRetryPolicyDefaults(t *testing.T) {
	if got := (RetryPolicy{}).WithDefaults(); got != DefaultRetryPolicy() {
		t.Fatalf("zero policy = %+v, want defaults", got)
	}
	want := RetryPolicy{RateLimitedWait: 30 * time.Second, RateLimitedMaxRetries: 2, RateLimitedMaxWait: 60 * time.Second,
		ServerErrorWait: 0, AuthHalt: true, OtherWait: 10 * time.Second}
	if DefaultRetryPolicy() != want {
		t.Fatalf("defaults = %+v, want %+v", DefaultRetryPolicy(), want)
	}
	// Any other policy is taken as written: its zeros are explicit zeros.
	explicit := DefaultRetryPolicy()
	explicit.RateLimitedMaxRetries, explicit.OtherWait, explicit.ServerErrorWait = 0, 0, 0
	got := explicit.WithDefaults()
	if again := got.WithDefaults(); again != got || got != explicit {
		t.Fatalf("WithDefaults changed an explicit policy: %+v then %+v", got, again)
	}
	// The explicit zeros act as zeros, also after WithDefaults.
	for _, p := range []RetryPolicy{explicit, got} {
		d := p.Decide(&ProviderError{Status: 429, Outcome: OutcomeRateLimited, RetryAfter: time.Second}, 0, polNow, polDeadline, resetUTC, half)
		if d.Action != ActionNext || d.Wait != 0 {
			t.Fatalf("max_retries 0: got %s after %s", d.Action, d.Wait)
		}
		for _, o := range []Outcome{OutcomeTimeoutIdle, OutcomeServerError, OutcomeBadRequest} {
			if d := p.Decide(&ProviderError{Outcome: o}, 0, polNow, polDeadline, resetUTC, half); d.Wait != 0 || d.Action != ActionNext {
				t.Fatalf("%s with wait 0: got %s after %s", o, d.Action, d.Wait)
			}
		}
	}
}

func TestActionString(t *testing.T) {
	for a, s := range map[Action]string{ActionNext: "next", ActionRetry: "retry", ActionHalt: "halt", ActionSkipRun: "skip_run", Action(9): "action(9)"} {
		if a.String() != s {
			t.Errorf("%d.String() = %q, want %q", int(a), a.String(), s)
		}
	}
}

// Decide is Judge for a failure without the lesson, in the arguments the
// table tests give: retries already made, the job's deadline, the link's
// next reset and the jitter source. A nil e is an unclassified error.
func (p RetryPolicy) Decide(e *ProviderError, retries int, now, deadline, nextReset time.Time, jitter func() float64) Decision {
	if e == nil {
		e = &ProviderError{Outcome: OutcomeError}
	}
	d, _ := p.decide(e, Standing{Retries: retries, Deadline: deadline, NextReset: nextReset, Jitter: jitter}, now)
	return d
}

// String names an action in test failures.
func (a Action) String() string {
	switch a {
	case ActionNext:
		return "next"
	case ActionRetry:
		return "retry"
	case ActionHalt:
		return "halt"
	case ActionSkipRun:
		return "skip_run"
	}
	return fmt.Sprintf("action(%d)", int(a))
}

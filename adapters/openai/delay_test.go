package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// TestProviderNamedDelays: a wait or reset the provider names is reported
// as it was meant, without overflow, however absurd (the policy bounds
// it), together with the text it came as; one that cannot be read is
// reported as transport.MaxDelay, never as no wait.
func TestProviderNamedDelays(t *testing.T) {
	date2035 := time.Date(2035, 6, 1, 12, 0, 0, 0, time.UTC)
	httpDate := date2035.Format(http.TimeFormat)
	groqBody := func(msg string) string {
		return fmt.Sprintf(`{"error":{"message":%q,"type":"tokens","code":"rate_limit_exceeded"}}`, msg)
	}
	openRouterBody := func(reset string) string {
		return `{"error":{"code":429,"message":"Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day","metadata":{"headers":{"X-RateLimit-Limit":"50","X-RateLimit-Remaining":"0","X-RateLimit-Reset":"` + reset + `"}}}}`
	}
	tests := []struct {
		name    string
		header  http.Header
		body    string
		wait    time.Duration // -1: HTTP date 2035, relative to now
		resetAt time.Time
		raw     []string
	}{
		{"Retry-After ten years", http.Header{"Retry-After": {"315360000"}}, groqBody("Too many requests"),
			315360000 * time.Second, time.Time{}, []string{"Retry-After: 315360000"}},
		{"Retry-After HTTP date in 2035", http.Header{"Retry-After": {httpDate}}, groqBody("Too many requests"),
			-1, time.Time{}, []string{"Retry-After: " + httpDate}},
		{"Groq try again in", nil, groqBody("Rate limit reached for model m on tokens per day (TPD): Limit 200000, Used 197117. Please try again in 9m52.272s. Visit https://console.groq.com"),
			9*time.Minute + 52272*time.Millisecond, time.Time{}, []string{"message: try again in 9m52.272s"}},
		{"header and message: the longest", http.Header{"Retry-After": {"2"}}, groqBody("Please try again in 9m52.272s."),
			9*time.Minute + 52272*time.Millisecond, time.Time{}, []string{"Retry-After: 2", "message: try again in 9m52.272s"}},
		{"try again in beyond a Duration", nil, groqBody("Please try again in 99999999999999h."),
			transport.MaxDelay, time.Time{}, []string{"message: try again in 99999999999999h"}},
		{"Retry-After beyond a Duration", http.Header{"Retry-After": {"99999999999999999999"}}, groqBody("slow down"),
			transport.MaxDelay, time.Time{}, []string{"Retry-After: 99999999999999999999"}},
		{"Retry-After unreadable", http.Header{"Retry-After": {"soon"}}, groqBody("slow down"),
			transport.MaxDelay, time.Time{}, []string{"Retry-After: soon"}},
		{"Retry-After negative", http.Header{"Retry-After": {"-5"}}, groqBody("slow down"),
			transport.MaxDelay, time.Time{}, []string{"Retry-After: -5"}},
		{"OpenRouter reset in metadata", nil, openRouterBody("1787616000000"),
			0, time.UnixMilli(1787616000000).UTC(), []string{"metadata X-RateLimit-Reset: 1787616000000"}},
		{"OpenRouter reset in year 5138", nil, openRouterBody("99999999999999"),
			0, time.UnixMilli(99999999999999).UTC(), []string{"metadata X-RateLimit-Reset: 99999999999999"}},
		{"OpenRouter reset unreadable", nil, openRouterBody("tomorrow"),
			transport.MaxDelay, time.Time{}, []string{"metadata X-RateLimit-Reset: tomorrow"}},
		{"reset header in seconds from now", http.Header{"X-RateLimit-Reset": {"60"}}, groqBody("slow down"),
			time.Minute, time.Time{}, []string{"X-RateLimit-Reset: 60"}},
		{"nothing named", nil, groqBody("slow down"), 0, time.Time{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
				for k, vs := range tt.header {
					w.Header()[k] = vs
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				fmt.Fprint(w, tt.body)
			})
			_, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(false))
			pe := providerError(t, err)
			if pe.Outcome != chain.OutcomeRateLimited && pe.Outcome != chain.OutcomeQuotaExhausted {
				t.Fatalf("outcome %s", pe.Outcome)
			}
			checkDelay(t, pe, tt.wait, date2035, tt.resetAt, tt.raw)
		})
	}
}

// checkDelay compares the reported wait, reset and raw text; wait -1 means
// the time until date, give or take the HTTP date's second.
func checkDelay(t *testing.T, pe *chain.ProviderError, wait time.Duration, date, resetAt time.Time, raw []string) {
	t.Helper()
	if pe.RetryAfter < 0 || pe.RetryAfter > transport.MaxDelay {
		t.Fatalf("RetryAfter %v out of range", pe.RetryAfter)
	}
	if wait == -1 {
		if d := time.Until(date) - pe.RetryAfter; d < -2*time.Second || d > 2*time.Second {
			t.Fatalf("RetryAfter %v, want about %v", pe.RetryAfter, time.Until(date))
		}
	} else if pe.RetryAfter != wait {
		t.Fatalf("RetryAfter %v, want %v", pe.RetryAfter, wait)
	}
	if !pe.ResetAt.Equal(resetAt) {
		t.Fatalf("ResetAt %v, want %v", pe.ResetAt, resetAt)
	}
	if want := strings.Join(raw, "; "); pe.RetryRaw != want {
		t.Fatalf("RetryRaw %q, want %q", pe.RetryRaw, want)
	}
}

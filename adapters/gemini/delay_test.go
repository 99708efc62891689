package gemini_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// TestProviderNamedDelays: RetryInfo.retryDelay, Retry-After and "Please
// retry in …" are reported as the provider meant them, without overflow
// (the policy bounds them), with the text they came as; one that cannot be
// read is reported as transport.MaxDelay, never as no wait.
func TestProviderNamedDelays(t *testing.T) {
	date2035 := time.Date(2035, 6, 1, 12, 0, 0, 0, time.UTC)
	httpDate := date2035.Format(http.TimeFormat)
	body := func(msg, retryDelay string) string {
		d := ""
		if retryDelay != "" {
			d = `,{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":` + retryDelay + `}`
		}
		return fmt.Sprintf(`{"error":{"code":429,"message":%q,"status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateContentInputTokensPerModelPerMinute-FreeTier"}]}%s]}}`, msg, d)
	}
	const quota = "You exceeded your current quota, please check your plan and billing details."
	tests := []struct {
		name   string
		header http.Header
		body   string
		wait   time.Duration // -1: HTTP date 2035, relative to now
		raw    []string
	}{
		{"retryDelay 999999999s", nil, body(quota, `"999999999s"`), 999999999 * time.Second, []string{"retryDelay: 999999999s"}},
		{"retryDelay 26s", nil, body(quota, `"26s"`), 26 * time.Second, []string{"retryDelay: 26s"}},
		{"retryDelay beyond a Duration", nil, body(quota, `"99999999999999s"`), transport.MaxDelay, []string{"retryDelay: 99999999999999s"}},
		{"retryDelay unreadable", nil, body(quota, `"soon"`), transport.MaxDelay, []string{"retryDelay: soon"}},
		{"retryDelay negative", nil, body(quota, `"-5s"`), transport.MaxDelay, []string{"retryDelay: -5s"}},
		{"retryDelay as an object", nil, body(quota, `{"seconds":"999999999","nanos":5}`), 999999999*time.Second + 5, []string{`retryDelay: {"nanos":5,"seconds":"999999999"}`}},
		{"retryDelay as a huge object", nil, body(quota, `{"seconds":1e300}`), transport.MaxDelay, []string{`retryDelay: {"seconds":1e+300}`}},
		{"Retry-After ten years", http.Header{"Retry-After": {"315360000"}}, body(quota, ""), 315360000 * time.Second, []string{"Retry-After: 315360000"}},
		{"Retry-After HTTP date in 2035", http.Header{"Retry-After": {httpDate}}, body(quota, `"26s"`), -1, []string{"retryDelay: 26s", "Retry-After: " + httpDate}},
		{"message", nil, body(quota+" Please retry in 9m52.272s.", ""), 9*time.Minute + 52272*time.Millisecond, []string{"message: retry in 9m52.272s"}},
		{"nothing named", nil, body(quota, ""), 0, nil},
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
			_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
			pe := providerError(t, err)
			if pe.Outcome != chain.OutcomeRateLimited || pe.Scope != chain.ScopeMinute {
				t.Fatalf("got %+v", pe)
			}
			if pe.RetryAfter < 0 || pe.RetryAfter > transport.MaxDelay {
				t.Fatalf("RetryAfter %v out of range", pe.RetryAfter)
			}
			if tt.wait == -1 {
				if d := time.Until(date2035) - pe.RetryAfter; d < -2*time.Second || d > 2*time.Second {
					t.Fatalf("RetryAfter %v, want about %v", pe.RetryAfter, time.Until(date2035))
				}
			} else if pe.RetryAfter != tt.wait {
				t.Fatalf("RetryAfter %v, want %v", pe.RetryAfter, tt.wait)
			}
			if want := strings.Join(tt.raw, "; "); pe.RetryRaw != want {
				t.Fatalf("RetryRaw %q, want %q", pe.RetryRaw, want)
			}
		})
	}
}

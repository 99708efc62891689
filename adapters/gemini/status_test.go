package gemini_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// Bodies that a status outside 2xx may carry; none of them makes an answer,
// an auth failure or a rate limit.
var non2xxBodies = map[string]string{
	"fuzz seed":   `{"ChoiCes":[{}]}`,
	"answer":      `{"candidates":[{"content":{"parts":[{"text":"{\"title\":\"Tea\"}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":14,"candidatesTokenCount":2,"totalTokenCount":16}}`,
	"stream":      "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Tea\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\r\n\r\n",
	"bad key":     `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`,
	"quota (day)": `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}`,
	"empty":       ``,
}

// TestStatusOutside2xxIsNoAnswer: a final status that is neither 2xx, 4xx
// nor 5xx (101, 3xx including every redirect, 600 and up) is an error with
// that status, whatever the body says; a body's API_KEY_INVALID, quotaId
// and retryDelay count only on a 4xx/5xx; a redirect's Location gets
// nothing. A 1xx with no final answer is a failure with no status.
func TestStatusOutside2xxIsNoAnswer(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprint(w, non2xxBodies["answer"])
	}))
	t.Cleanup(other.Close)
	tests := []struct {
		status   int
		outcome  chain.Outcome
		recorded int
	}{
		{384, chain.OutcomeError, 384},
		{101, chain.OutcomeError, 101},
		{184, chain.OutcomeStreamBroken, 0},
		{300, chain.OutcomeError, 300},
		{301, chain.OutcomeError, 301},
		{302, chain.OutcomeError, 302},
		{303, chain.OutcomeError, 303},
		{304, chain.OutcomeError, 304},
		{307, chain.OutcomeError, 307},
		{308, chain.OutcomeError, 308},
		{399, chain.OutcomeError, 399},
		{600, chain.OutcomeError, 600},
		{999, chain.OutcomeError, 999},
	}
	for _, tt := range tests {
		for name, body := range non2xxBodies {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%d/%s/stream=%v", tt.status, name, stream), func(t *testing.T) {
					srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
						h := http.Header{"Content-Type": {"application/json"}, "Location": {other.URL + r.URL.RequestURI()}, "Retry-After": {"7"}}
						if stream {
							h.Set("Content-Type", "text/event-stream")
						}
						transporttest.WriteRaw(w, r, tt.status, h, []byte(body))
					})
					resp, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(stream))
					if err == nil {
						t.Fatalf("status %d taken as an answer: %+v", tt.status, resp)
					}
					pe := providerError(t, err)
					if pe.Outcome != tt.outcome || pe.Status != tt.recorded || pe.Message == "" {
						t.Fatalf("got %+v; want outcome %s status %d", pe, tt.outcome, tt.recorded)
					}
					if pe.Scope != chain.ScopeNone || pe.RetryAfter != 0 {
						t.Fatalf("a %d's body or headers were read as a rate limit: %+v", tt.status, pe)
					}
					if n := elsewhere.Load(); n != 0 {
						t.Fatalf("the Location got %d request(s)", n)
					}
					if n := len(srv.Requests()); n != 1 {
						t.Fatalf("%d requests; the SDK must not retry", n)
					}
				})
			}
		}
	}
}

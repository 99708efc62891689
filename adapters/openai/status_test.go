package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// Bodies that a status outside 2xx may carry; none of them makes an answer.
var non2xxBodies = map[string]string{
	"fuzz seed":  `{"ChoiCes":[{}]}`,
	"completion": `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"title\":\"Tea\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	"stream":     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Tea\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
	"rate limit": `{"error":{"message":"Rate limit reached for model m on tokens per day (TPD). Please try again in 9m52.272s.","type":"tokens","code":"rate_limit_exceeded"}}`,
	"empty":      ``,
}

// TestStatusOutside2xxIsNoAnswer: a final status that is neither 2xx, 4xx
// nor 5xx (101, 3xx including every redirect, 600 and up) is an error with
// that status, whatever the body says (go-openai on its own decodes a 3xx
// body as a completion), with no wait and no quota scope taken from the
// body, and a redirect's Location gets nothing. A 1xx with no final answer
// is a failure with no status. The first row is the input the fuzzer found.
func TestStatusOutside2xxIsNoAnswer(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprint(w, non2xxBodies["completion"])
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
						h := http.Header{"Content-Type": {"application/json"}, "Location": {other.URL + r.URL.Path}, "Retry-After": {"7"}}
						if stream {
							h.Set("Content-Type", "text/event-stream")
						}
						transporttest.WriteRaw(w, r, tt.status, h, []byte(body))
					})
					resp, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(stream))
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
						t.Fatalf("%d requests", n)
					}
				})
			}
		}
	}
}

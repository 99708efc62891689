package transporttest

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/contentpipe/contentpipe/chain"
)

// Outside2xxCases are the final statuses that are neither 2xx, 4xx nor 5xx
// (101, 3xx including every redirect, 600 and up, and a 1xx with no final
// answer), with the outcome and the status an adapter must report for each;
// 384 is the input a fuzzer found.
var Outside2xxCases = []struct {
	Status, Recorded int
	Outcome          chain.Outcome
}{
	{384, 384, chain.OutcomeError},
	{101, 101, chain.OutcomeError},
	{184, 0, chain.OutcomeStreamBroken},
	{300, 300, chain.OutcomeError},
	{301, 301, chain.OutcomeError},
	{302, 302, chain.OutcomeError},
	{303, 303, chain.OutcomeError},
	{304, 304, chain.OutcomeError},
	{307, 307, chain.OutcomeError},
	{308, 308, chain.OutcomeError},
	{399, 399, chain.OutcomeError},
	{600, 600, chain.OutcomeError},
	{999, 999, chain.OutcomeError},
}

// CheckOutside2xx runs every Outside2xxCases status with every body of
// bodies, streamed and not, through generate (the adapter under test at
// baseURL): each must be an error with that outcome and status, whatever
// the body says, with no wait and no quota scope read from the body or a
// Retry-After, one request only (no SDK retry), and nothing sent to the
// Location a redirect names (a server that would answer with answer).
func CheckOutside2xx(t *testing.T, bodies map[string]string, answer string, generate func(t *testing.T, baseURL string, stream bool) (chain.Response, error)) {
	t.Helper()
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprint(w, answer)
	}))
	t.Cleanup(other.Close)
	for _, tt := range Outside2xxCases {
		for name, body := range bodies {
			for _, stream := range []bool{false, true} {
				t.Run(fmt.Sprintf("%d/%s/stream=%v", tt.Status, name, stream), func(t *testing.T) {
					srv := NewServer(t, func(w http.ResponseWriter, r *http.Request) {
						h := http.Header{"Content-Type": {"application/json"}, "Location": {other.URL + r.URL.RequestURI()}, "Retry-After": {"7"}}
						if stream {
							h.Set("Content-Type", "text/event-stream")
						}
						WriteRaw(w, r, tt.Status, h, []byte(body))
					})
					resp, err := generate(t, srv.URL, stream)
					if err == nil {
						t.Fatalf("status %d taken as an answer: %+v", tt.Status, resp)
					}
					pe := chain.AsProviderError(err)
					if pe == nil {
						t.Fatalf("error %T %v is not a *chain.ProviderError", err, err)
					}
					if pe.Outcome != tt.Outcome || pe.Status != tt.Recorded || pe.Message == "" {
						t.Fatalf("got %+v; want outcome %s status %d", pe, tt.Outcome, tt.Recorded)
					}
					if pe.Scope != chain.ScopeNone || pe.RetryAfter != 0 {
						t.Fatalf("a %d's body or headers were read as a rate limit: %+v", tt.Status, pe)
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

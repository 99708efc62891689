package transport_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// answerBody is what a chat completion looks like; a body like it must not
// make an answer of a status outside 2xx.
const answerBody = `{"ChoiCes":[{}],"choices":[{"index":0,"message":{"role":"assistant","content":"{\"title\":\"Tea\"}"},"finish_reason":"stop"}]}`

// TestStatusOutside2xxIsRefused: the transport hands no answer outside 2xx
// to the client above it, whatever its body says. Its status, headers and
// body are in the Exchange, the error is ErrStatus (not a transport
// failure: the adapter classifies it), and a redirect is not followed.
func TestStatusOutside2xxIsRefused(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		elsewhere.Add(1)
		fmt.Fprint(w, answerBody)
	}))
	t.Cleanup(other.Close)
	tr := transport.New("p", chain.Timeouts{Connect: 5 * time.Second, FirstToken: 10 * time.Second, Idle: 10 * time.Second, Total: 30 * time.Second})
	for _, status := range []int{101, 300, 301, 302, 303, 304, 307, 308, 384, 399, 400, 429, 503, 600, 999} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
				h := http.Header{"Content-Type": {"application/json"}, "Location": {other.URL + "/v1/chat/completions"}, "Retry-After": {"7"}}
				transporttest.WriteRaw(w, r, status, h, []byte(answerBody))
			})
			ex, body, err := get(t, tr, context.Background(), srv.URL)
			if err == nil || body != nil {
				t.Fatalf("status %d handed up as an answer: %q", status, body)
			}
			if !errors.Is(err, transport.ErrStatus) {
				t.Fatalf("error %v, want ErrStatus", err)
			}
			if o, ok := transport.FailureOutcome(err); ok {
				t.Fatalf("FailureOutcome = %q: an answer outside 2xx is the adapter's to classify", o)
			}
			if ex.Status() != status || ex.Header().Get("Retry-After") != "7" || ex.Err() != nil {
				t.Fatalf("exchange: status %d header %v err %v", ex.Status(), ex.Header(), ex.Err())
			}
			bodyAllowed := status >= 200 && status != 304
			if got := string(ex.Body()); bodyAllowed != (got == answerBody) {
				t.Fatalf("exchange body %q (a body is allowed: %v)", got, bodyAllowed)
			}
			if n := elsewhere.Load(); n != 0 {
				t.Fatalf("the redirect target got %d request(s)", n)
			}
		})
	}
}

// TestInformationalWithoutFinalAnswer: a 1xx that is not followed by a
// final answer is a failure with no status, not an answer.
func TestInformationalWithoutFinalAnswer(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		transporttest.WriteRaw(w, r, 184, http.Header{"Content-Type": {"application/json"}}, []byte(answerBody))
	})
	tr := transport.New("p", chain.Timeouts{Connect: 5 * time.Second, FirstToken: 10 * time.Second, Total: 30 * time.Second})
	ex, body, err := get(t, tr, context.Background(), srv.URL)
	if err == nil || body != nil || ex.Status() != 0 {
		t.Fatalf("status %d, body %q, err %v", ex.Status(), body, err)
	}
	if o, ok := transport.FailureOutcome(err); !ok || o != chain.OutcomeStreamBroken {
		t.Fatalf("FailureOutcome(%v) = %q, %v", err, o, ok)
	}
}

// TestStatusMessage: the fallback message names the status and quotes the
// start of the body on one line.
func TestStatusMessage(t *testing.T) {
	for _, tt := range []struct {
		status int
		body   string
		want   string
	}{
		{503, "", "http 503 Service Unavailable"},
		{384, "<html>\n moved \xff</html>", "http 384: <html> moved \uFFFD</html>"},
		{302, strings.Repeat("a", 300), "http 302 Found: " + strings.Repeat("a", 200)},
	} {
		if got := transport.StatusMessage(tt.status, []byte(tt.body)); got != tt.want {
			t.Errorf("StatusMessage(%d, %q) = %q, want %q", tt.status, tt.body, got, tt.want)
		}
	}
}

// TestMalformedAnswerIsTransportFailure: an answer net/http cannot parse
// (here the fuzzer's status 385 with a header value holding a NUL) is a
// failure with no status, whatever its status line said.
func TestMalformedAnswerIsTransportFailure(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		transporttest.WriteRaw(w, r, 385, http.Header{"0": {"\x00"}}, []byte(answerBody))
	})
	tr := transport.New("p", chain.Timeouts{Connect: 5 * time.Second, FirstToken: 10 * time.Second, Total: 30 * time.Second})
	ex, body, err := get(t, tr, context.Background(), srv.URL)
	if err == nil || body != nil || ex.Status() != 0 {
		t.Fatalf("status %d, body %q, err %v", ex.Status(), body, err)
	}
	if o, ok := transport.FailureOutcome(err); !ok || o != chain.OutcomeStreamBroken {
		t.Fatalf("FailureOutcome(%v) = %q, %v", err, o, ok)
	}
}

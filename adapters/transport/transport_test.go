package transport_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// stall blocks a handler until the client goes away or the test ends.
func get(t *testing.T, tr *transport.Transport, ctx context.Context, url string) (*transport.Exchange, []byte, error) {
	t.Helper()
	ex := new(transport.Exchange)
	req, err := http.NewRequestWithContext(transport.WithExchange(ctx, ex), http.MethodPost, url, strings.NewReader(`{"q":1}`))
	if err != nil {
		t.Fatal(err)
	}
	resp, err := tr.Client().Do(req)
	if err != nil {
		return ex, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return ex, b, err
}

func wantOutcome(t *testing.T, err error, kind error, want chain.Outcome) {
	t.Helper()
	if !errors.Is(err, kind) {
		t.Fatalf("error %v, want %v", err, kind)
	}
	got, ok := transport.FailureOutcome(err)
	if !ok || got != want {
		t.Fatalf("FailureOutcome(%v) = %q, %v; want %q", err, got, ok, want)
	}
}

func TestExchangeRecordsAnswer(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Ratelimit-Remaining-Requests", "41")
		w.WriteHeader(http.StatusOK)
		fmt.Fprint(w, `{"choices":[{"message":{"content":"slow down"}}]}`)
	})
	tr := transport.New("p", chain.Timeouts{Connect: 5 * time.Second, FirstToken: 10 * time.Second, Idle: 10 * time.Second, Total: 30 * time.Second})
	ex, body, err := get(t, tr, context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if ex.Status() != 200 || ex.Header().Get("x-ratelimit-remaining-requests") != "41" {
		t.Fatalf("status %d header %v", ex.Status(), ex.Header())
	}
	if !bytes.Equal(ex.Body(), body) || !strings.Contains(string(body), "slow down") {
		t.Fatalf("tee %q, body %q", ex.Body(), body)
	}
	if ex.FirstByte() <= 0 || ex.HeaderTime() <= 0 || ex.FirstByte() < ex.HeaderTime() {
		t.Fatalf("timings: headers %v first byte %v", ex.HeaderTime(), ex.FirstByte())
	}
	if !ex.Complete() || ex.Err() != nil {
		t.Fatalf("complete %v err %v", ex.Complete(), ex.Err())
	}
	if got := srv.Last(t).Body; string(got) != `{"q":1}` {
		t.Fatalf("server got %q", got)
	}
}

func TestFirstTokenTimeoutBeforeHeaders(t *testing.T) {
	wait := transporttest.Stall(t)
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
	tr := transport.New("p", chain.Timeouts{FirstToken: 150 * time.Millisecond, Total: time.Minute})
	ex, _, err := get(t, tr, context.Background(), srv.URL)
	wantOutcome(t, err, transport.ErrFirstTokenTimeout, chain.OutcomeTimeoutFirstToken)
	if ex.Status() != 0 || !errors.Is(ex.Err(), transport.ErrFirstTokenTimeout) {
		t.Fatalf("status %d, exchange err %v", ex.Status(), ex.Err())
	}
}

func TestKeepAliveCommentsAreNotAnswerBytes(t *testing.T) {
	wait := transporttest.Stall(t)
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(200)
		for i := 0; i < 1000; i++ {
			if _, err := fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
		wait(r)
	})
	tr := transport.New("p", chain.Timeouts{FirstToken: 200 * time.Millisecond, Idle: time.Hour, Total: time.Minute})
	ex, _, err := get(t, tr, context.Background(), srv.URL)
	wantOutcome(t, err, transport.ErrFirstTokenTimeout, chain.OutcomeTimeoutFirstToken)
	if ex.Status() != 200 || ex.FirstByte() != 0 {
		t.Fatalf("status %d first byte %v", ex.Status(), ex.FirstByte())
	}
	if !strings.Contains(string(ex.Body()), "OPENROUTER PROCESSING") {
		t.Fatalf("tee lost the comments: %q", ex.Body())
	}
}

func TestKeepAliveThenData(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
		w.(http.Flusher).Flush()
		fmt.Fprint(w, "data: {\"x\":1}\n\ndata: [DONE]\n\n")
	})
	tr := transport.New("p", chain.Timeouts{FirstToken: 10 * time.Second, Idle: 10 * time.Second})
	ex, body, err := get(t, tr, context.Background(), srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(body), "data: [DONE]\n\n") || ex.FirstByte() <= 0 {
		t.Fatalf("body %q first byte %v", body, ex.FirstByte())
	}
}

func TestIdleTimeoutMidStream(t *testing.T) {
	wait := transporttest.Stall(t)
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"part\":1}\n\n")
		w.(http.Flusher).Flush()
		wait(r)
	})
	tr := transport.New("p", chain.Timeouts{FirstToken: 10 * time.Second, Idle: 150 * time.Millisecond, Total: time.Minute})
	ex, body, err := get(t, tr, context.Background(), srv.URL)
	wantOutcome(t, err, transport.ErrIdleTimeout, chain.OutcomeTimeoutIdle)
	if ex.Status() != 200 || !strings.Contains(string(body), `"part":1`) {
		t.Fatalf("status %d body %q", ex.Status(), body)
	}
}

func TestTotalTimeoutWhileTrickling(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for {
			if _, err := fmt.Fprint(w, "data: {}\n\n"); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	})
	tr := transport.New("p", chain.Timeouts{FirstToken: 10 * time.Second, Idle: 10 * time.Second, Total: 300 * time.Millisecond})
	_, _, err := get(t, tr, context.Background(), srv.URL)
	wantOutcome(t, err, transport.ErrTotalTimeout, chain.OutcomeTimeoutTotal)
}

func TestCallerDeadline(t *testing.T) {
	wait := transporttest.Stall(t)
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
	tr := transport.New("p", chain.Timeouts{})
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	_, _, err := get(t, tr, ctx, srv.URL)
	wantOutcome(t, err, context.DeadlineExceeded, chain.OutcomeTimeoutTotal)
}

func TestConnectRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	tr := transport.New("p", chain.Timeouts{Connect: 5 * time.Second})
	ex, _, err := get(t, tr, context.Background(), "http://"+addr+"/")
	wantOutcome(t, err, transport.ErrConnect, chain.OutcomeConnectFailed)
	if errors.Is(err, transport.ErrConnectTimeout) || ex.Status() != 0 || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("refusal reported as %v (status %d)", err, ex.Status())
	}
}

// TestConnectTLSFailure: a server whose certificate is not trusted is a
// connection that could not be made (connect_failed), with the TLS
// library's words, not a timeout.
func TestConnectTLSFailure(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "{}") }))
	defer srv.Close()
	tr := transport.New("p", chain.Timeouts{Connect: 5 * time.Second})
	ex, _, err := get(t, tr, context.Background(), srv.URL+"/")
	wantOutcome(t, err, transport.ErrConnect, chain.OutcomeConnectFailed)
	if ex.Status() != 0 || !strings.Contains(err.Error(), "certificate") {
		t.Fatalf("TLS failure reported as %v (status %d)", err, ex.Status())
	}
}

// TestConnectDNSFailure: a name the resolver does not know is a connection
// that could not be made (connect_failed) with the resolver's words ("no
// such host"), not a timeout. It needs a resolver that answers; without
// one the test is skipped.
func TestConnectDNSFailure(t *testing.T) {
	tr := transport.New("p", chain.Timeouts{Connect: 5 * time.Second})
	ex, _, err := get(t, tr, context.Background(), "https://generativelanguage.invalid/")
	if err == nil || !strings.Contains(err.Error(), "no such host") {
		t.Skipf("this machine's resolver gave no NXDOMAIN for a .invalid name (%v): nothing to test", err)
	}
	wantOutcome(t, err, transport.ErrConnect, chain.OutcomeConnectFailed)
	if ex.Status() != 0 {
		t.Fatalf("status %d", ex.Status())
	}
}

func TestBodyBounded(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 32<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
			if r.Context().Err() != nil {
				return
			}
		}
	})
	tr := transport.New("p", chain.Timeouts{Total: time.Minute})
	tr.MaxBody = 256 << 10
	ex, body, err := get(t, tr, context.Background(), srv.URL)
	wantOutcome(t, err, transport.ErrBodyTooLarge, chain.OutcomeError)
	if len(body) != 256<<10 || len(ex.Body()) != 256<<10 {
		t.Fatalf("read %d, teed %d; want %d", len(body), len(ex.Body()), 256<<10)
	}
}

func TestConnectionLostMidBody(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		fmt.Fprint(w, `{"partial":`)
		w.(http.Flusher).Flush()
		conn, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			conn.Close()
		}
	})
	tr := transport.New("p", chain.Timeouts{FirstToken: 10 * time.Second, Idle: 10 * time.Second})
	ex, body, err := get(t, tr, context.Background(), srv.URL)
	wantOutcome(t, err, transport.ErrConnectionLost, chain.OutcomeStreamBroken)
	if string(body) != `{"partial":` || ex.Status() != 200 {
		t.Fatalf("body %q status %d", body, ex.Status())
	}
}

func TestRequestWithoutExchange(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") })
	resp, err := transport.New("p", chain.Timeouts{FirstToken: 10 * time.Second}).Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if b, _ := io.ReadAll(resp.Body); string(b) != "ok" {
		t.Fatalf("body %q", b)
	}
}

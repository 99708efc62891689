package publish

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// redirector is a webhook receiver that answers every POST with a redirect
// (status and Location set by the test) until it is told to accept, and
// records what it received.
type redirector struct {
	mu      sync.Mutex
	status  int // 0: accept with 200
	to      string
	bodies  [][]byte
	headers []http.Header
	methods []string
}

func (r *redirector) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	var b bytes.Buffer
	_, _ = b.ReadFrom(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, b.Bytes())
	r.headers = append(r.headers, req.Header.Clone())
	r.methods = append(r.methods, req.Method)
	status, to := r.status, r.to
	r.mu.Unlock()
	if status == 0 {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Location", to)
	w.WriteHeader(status)
	fmt.Fprint(w, `{"moved":true}`)
}

func (r *redirector) accept() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.status = 0
}

// TestWebhookNeverFollowsRedirects: a receiver that answers a redirect has
// not got the article. Whatever the redirect status, and whether the
// Webhook uses its own client or one the caller built (which would follow),
// the delivery fails with a *StatusError naming the status, the host the
// Location names receives nothing (neither the bodyless GET Go makes of a
// 301/302/303 nor the re-sent POST with signature of a 307/308), and the
// later delivery once the receiver answers 200 carries the same key,
// signature and byte-identical body.
func TestWebhookNeverFollowsRedirects(t *testing.T) {
	var reached atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		w.WriteHeader(http.StatusOK) // a GET answered 200 would look like a delivery
	}))
	t.Cleanup(elsewhere.Close)
	// Another host name for the same loopback server: a cross-host redirect.
	target := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1) + "/steal?token=t0ken"

	clients := map[string]func(srv *httptest.Server) *http.Client{
		"own client":      func(*httptest.Server) *http.Client { return nil },
		"caller's client": func(srv *httptest.Server) *http.Client { return srv.Client() },
	}
	for _, status := range []int{301, 302, 303, 307, 308} {
		for name, client := range clients {
			t.Run(fmt.Sprintf("%d/%s", status, name), func(t *testing.T) {
				reached.Store(0)
				rec := &redirector{status: status, to: target}
				srv := httptest.NewServer(rec)
				t.Cleanup(srv.Close)
				w := &Webhook{URL: srv.URL + "/hook", Secret: testSecret, Client: client(srv)}
				a := testArticle("redirect/2026-12-01", "Redirects are not deliveries")

				loc, err := w.Publish(context.Background(), a)
				var se *StatusError
				if err == nil || loc != "" || !errors.As(err, &se) || se.StatusCode != status {
					t.Fatalf("Publish = %q, %v; want a *StatusError %d and no location", loc, err, status)
				}
				if !se.Retryable() {
					t.Errorf("a %d is not retryable: the delivery must be tried again later", status)
				}
				if !strings.Contains(err.Error(), "redirect not followed") || !strings.Contains(se.Location, "localhost") {
					t.Errorf("error does not say where the redirect pointed: %v", err)
				}
				if strings.Contains(err.Error(), "t0ken") || strings.Contains(err.Error(), string(testSecret)) {
					t.Errorf("error leaks the Location's query or the secret: %v", err)
				}
				if n := reached.Load(); n != 0 {
					t.Fatalf("the redirect target got %d request(s)", n)
				}

				rec.accept()
				b := testArticle("redirect/2026-12-01", "Redirects are not deliveries") // rebuilt, as by the next run
				if loc, err := w.Publish(context.Background(), b); err != nil || loc != w.Location(a) {
					t.Fatalf("retry after the receiver accepts: %q, %v", loc, err)
				}
				if reached.Load() != 0 {
					t.Fatal("the redirect target was reached on the retry")
				}
				if len(rec.bodies) != 2 || rec.methods[0] != http.MethodPost || rec.methods[1] != http.MethodPost {
					t.Fatalf("receiver got %d requests (%v), want 2 POSTs", len(rec.bodies), rec.methods)
				}
				if !bytes.Equal(rec.bodies[0], rec.bodies[1]) || len(rec.bodies[0]) == 0 {
					t.Errorf("retry body differs:\n%s\n%s", rec.bodies[0], rec.bodies[1])
				}
				for _, k := range []string{"Idempotency-Key", "X-Signature"} {
					if v0, v1 := rec.headers[0].Get(k), rec.headers[1].Get(k); v0 != v1 || v0 == "" {
						t.Errorf("%s: %q then %q", k, v0, v1)
					}
				}
				if rec.headers[1].Get("Idempotency-Key") != a.JobID {
					t.Errorf("Idempotency-Key %q", rec.headers[1].Get("Idempotency-Key"))
				}
			})
		}
	}
}

// TestWebhookLeavesCallersClientAlone: refusing redirects does not change
// the *http.Client the caller handed in.
func TestWebhookLeavesCallersClientAlone(t *testing.T) {
	_, srv := newReceiver(t)
	c := srv.Client()
	if _, err := (&Webhook{URL: srv.URL, Client: c}).Publish(context.Background(), testArticle("j", "t")); err != nil {
		t.Fatal(err)
	}
	if c.CheckRedirect != nil {
		t.Error("Publish changed the caller's client")
	}
}

// TestStatusErrorLocation: a relative Location is resolved against the
// webhook URL and quoted without user info or query.
func TestStatusErrorLocation(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/moved?sig=abc#frag")
		w.WriteHeader(http.StatusFound)
	}))
	t.Cleanup(srv.Close)
	_, err := (&Webhook{URL: srv.URL + "/hook"}).Publish(context.Background(), testArticle("j", "t"))
	var se *StatusError
	if !errors.As(err, &se) {
		t.Fatalf("err = %v", err)
	}
	u, _ := url.Parse(srv.URL)
	if want := u.Scheme + "://" + u.Host + "/moved"; se.Location != want {
		t.Errorf("Location = %q, want %q", se.Location, want)
	}
}

package publish

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// receiver is a webhook endpoint that records every request and answers
// with the next scripted status (200 when the script is used up).
type receiver struct {
	mu       sync.Mutex
	bodies   [][]byte
	headers  []http.Header
	statuses []int
	answer   string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, body)
	r.headers = append(r.headers, req.Header.Clone())
	status := http.StatusOK
	if len(r.statuses) > 0 {
		status, r.statuses = r.statuses[0], r.statuses[1:]
	}
	answer := r.answer
	r.mu.Unlock()
	w.WriteHeader(status)
	io.WriteString(w, answer)
}

func newReceiver(t *testing.T, statuses ...int) (*receiver, *httptest.Server) {
	t.Helper()
	r := &receiver{statuses: statuses}
	srv := httptest.NewServer(r)
	t.Cleanup(srv.Close)
	return r, srv
}

var testSecret = []byte("s3cr3t-webhook-key")

func TestWebhookPublish(t *testing.T) {
	rec, srv := newReceiver(t)
	w := &Webhook{URL: srv.URL + "/hook", Secret: testSecret, Client: srv.Client()}
	a := testArticle("home-composting/2026-11-29", "Home composting: <basics> & more")
	loc, err := w.Publish(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if want := srv.URL + "/hook#home-composting/2026-11-29"; loc != want || w.Location(a) != want {
		t.Errorf("location = %q (Location %q), want %q", loc, w.Location(a), want)
	}
	if len(rec.bodies) != 1 {
		t.Fatalf("requests = %d, want 1", len(rec.bodies))
	}
	h, body := rec.headers[0], rec.bodies[0]
	for k, want := range map[string]string{
		"Content-Type":    "application/json",
		"Idempotency-Key": a.JobID,
		"User-Agent":      "contentpipe",
	} {
		if got := h.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if !Verify(testSecret, body, h.Get("X-Signature")) {
		t.Errorf("signature %q does not verify", h.Get("X-Signature"))
	}
	if Verify([]byte("other"), body, h.Get("X-Signature")) {
		t.Errorf("signature verifies under another secret")
	}
	if Verify(testSecret, append(bytes.Clone(body), ' '), h.Get("X-Signature")) {
		t.Errorf("signature verifies a changed body")
	}

	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("body is not JSON: %v", err)
	}
	for _, k := range []string{"job_id", "topic", "slot", "title", "category", "language", "provider", "model", "quality_score", "date", "sections", "markdown"} {
		if _, ok := got[k]; !ok {
			t.Errorf("body lacks %q", k)
		}
	}
	if got["job_id"] != a.JobID || got["title"] != a.Title || got["quality_score"] != 87.5 || got["date"] != "2026-11-29T15:00:00Z" {
		t.Errorf("body fields: %v", got)
	}
	secs, _ := got["sections"].([]any)
	if len(secs) != 2 || secs[0].(map[string]any)["h2"] != "Why compost" {
		t.Errorf("sections = %v", got["sections"])
	}
	if md, _ := got["markdown"].(string); md != Body(a) || !strings.HasPrefix(md, "# Home composting") {
		t.Errorf("markdown = %q", md)
	}
	if ok, err := w.Exists(context.Background(), a); ok || err != nil {
		t.Errorf("Exists = %v, %v; want false, nil", ok, err)
	}
}

func TestWebhookResendIsByteIdentical(t *testing.T) {
	rec, srv := newReceiver(t, http.StatusInternalServerError, http.StatusOK)
	a := testArticle("job-7", "Backups for small offices")
	if _, err := (&Webhook{URL: srv.URL, Secret: testSecret}).Publish(context.Background(), a); err == nil {
		t.Fatal("500 answer accepted")
	}
	// The next run rebuilds the article from the database: equal, not the same value.
	b := testArticle("job-7", "Backups for small offices")
	b.Keywords = append([]string(nil), a.Keywords...)
	if _, err := (&Webhook{URL: srv.URL, Secret: testSecret}).Publish(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	if len(rec.bodies) != 2 {
		t.Fatalf("requests = %d", len(rec.bodies))
	}
	if !bytes.Equal(rec.bodies[0], rec.bodies[1]) {
		t.Errorf("resend body differs:\n%s\n%s", rec.bodies[0], rec.bodies[1])
	}
	for _, k := range []string{"X-Signature", "Idempotency-Key"} {
		if rec.headers[0].Get(k) != rec.headers[1].Get(k) || rec.headers[0].Get(k) == "" {
			t.Errorf("%s differs or is empty: %q vs %q", k, rec.headers[0].Get(k), rec.headers[1].Get(k))
		}
	}
}

func TestWebhookStatuses(t *testing.T) {
	tests := []struct {
		status    int
		ok        bool
		retryable bool
	}{
		{http.StatusOK, true, false},
		{http.StatusCreated, true, false},
		{http.StatusAccepted, true, false},
		{http.StatusNoContent, true, false},
		{http.StatusConflict, true, false},
		{http.StatusBadRequest, false, false},
		{http.StatusUnauthorized, false, false},
		{http.StatusUnprocessableEntity, false, false},
		{http.StatusTooManyRequests, false, true},
		{http.StatusInternalServerError, false, true},
		{http.StatusBadGateway, false, true},
		{http.StatusServiceUnavailable, false, true},
	}
	for _, tt := range tests {
		rec, srv := newReceiver(t, tt.status)
		rec.answer = "receiver says no; echoed secret " + string(testSecret) + strings.Repeat(" pad", 500)
		w := &Webhook{URL: srv.URL, Secret: testSecret}
		_, err := w.Publish(context.Background(), testArticle("j", "t"))
		if tt.ok {
			if err != nil {
				t.Errorf("%d: %v", tt.status, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%d: no error", tt.status)
			continue
		}
		var se *StatusError
		if !errors.As(err, &se) || se.StatusCode != tt.status {
			t.Errorf("%d: error %v is not a StatusError with that status", tt.status, err)
			continue
		}
		if se.Retryable() != tt.retryable {
			t.Errorf("%d: Retryable = %v", tt.status, se.Retryable())
		}
		msg := err.Error()
		if !strings.Contains(msg, "receiver says no") || !strings.Contains(msg, http.StatusText(tt.status)) {
			t.Errorf("%d: error does not name status and body: %s", tt.status, msg)
		}
		if strings.Contains(msg, string(testSecret)) {
			t.Errorf("%d: error contains the secret: %s", tt.status, msg)
		}
		if len(se.Body) > responseQuoteLimit {
			t.Errorf("%d: quoted body is %d bytes", tt.status, len(se.Body))
		}
	}
}

func TestWebhookNetworkErrorHidesSecretAndQuery(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/hook?token=query-token"
	srv.Close() // nothing listens any more
	w := &Webhook{URL: url, Secret: testSecret}
	_, err := w.Publish(context.Background(), testArticle("j", "t"))
	if err == nil {
		t.Fatal("post to a closed server succeeded")
	}
	if strings.Contains(err.Error(), string(testSecret)) || strings.Contains(err.Error(), "query-token") {
		t.Errorf("error leaks: %v", err)
	}
	var se *StatusError
	if errors.As(err, &se) {
		t.Errorf("network error reported as a status: %v", err)
	}
}

func TestWebhookRespectsContext(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := (&Webhook{URL: srv.URL}).Publish(ctx, testArticle("j", "t"))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want deadline exceeded", err)
	}
}

func TestWebhookNoSecretNoSignature(t *testing.T) {
	rec, srv := newReceiver(t)
	if _, err := (&Webhook{URL: srv.URL}).Publish(context.Background(), testArticle("j", "t")); err != nil {
		t.Fatal(err)
	}
	if sig := rec.headers[0].Get("X-Signature"); sig != "" {
		t.Errorf("X-Signature without a secret: %q", sig)
	}
}

func TestWebhookRejectsBadInput(t *testing.T) {
	for _, u := range []string{"", "not a url", "ftp://example.org/x", "/relative"} {
		if _, err := (&Webhook{URL: u}).Publish(context.Background(), testArticle("j", "t")); err == nil {
			t.Errorf("url %q accepted", u)
		}
	}
	if _, err := (&Webhook{URL: "http://127.0.0.1:1"}).Publish(context.Background(), testArticle("", "t")); err == nil {
		t.Error("article without job id accepted")
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"job_id":"x"}`)
	sig := Sign(testSecret, body)
	tests := []struct {
		name   string
		secret []byte
		header string
		want   bool
	}{
		{"valid", testSecret, sig, true},
		{"upper-case hex", testSecret, "sha256=" + strings.ToUpper(strings.TrimPrefix(sig, "sha256=")), true},
		{"no prefix", testSecret, strings.TrimPrefix(sig, "sha256="), false},
		{"wrong algorithm", testSecret, "sha1=" + strings.TrimPrefix(sig, "sha256="), false},
		{"truncated", testSecret, sig[:len(sig)-2], false},
		{"not hex", testSecret, "sha256=zz", false},
		{"empty header", testSecret, "", false},
		{"empty secret", nil, Sign(nil, body), false},
	}
	for _, tt := range tests {
		if got := Verify(tt.secret, body, tt.header); got != tt.want {
			t.Errorf("%s: Verify = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// Verify reports whether header is a valid X-Signature for body under
// secret, comparing in constant time. An empty secret never verifies.
func Verify(secret, body []byte, header string) bool {
	if len(secret) == 0 {
		return false
	}
	h, ok := strings.CutPrefix(strings.TrimSpace(header), "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(h)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, mac(secret, body))
}

package gemini_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/gemini"
	"github.com/contentpipe/contentpipe/chain"
)

// fuzzKey is the key the fuzzed clients send; "{{KEY}}" in a fuzzed answer
// is replaced by the key the request carried.
const fuzzKey = "AIzaFUZZ-secret-key-0123456789"

var failureOutcomes = map[chain.Outcome]bool{
	chain.OutcomeRateLimited: true, chain.OutcomeQuotaExhausted: true, chain.OutcomeServerError: true,
	chain.OutcomeAuthError: true, chain.OutcomeTimeoutConnect: true, chain.OutcomeTimeoutFirstToken: true,
	chain.OutcomeTimeoutIdle: true, chain.OutcomeTimeoutTotal: true, chain.OutcomeStreamBroken: true,
	chain.OutcomeBlocked: true, chain.OutcomeBadRequest: true, chain.OutcomeError: true,
}

type wireCase struct {
	status int
	header string
	body   []byte
}

func wireServer(tb testing.TB, cur *atomic.Pointer[wireCase]) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := cur.Load()
		key := r.Header.Get("x-goog-api-key")
		for _, l := range strings.Split(c.header, "\n") {
			k, v, ok := strings.Cut(l, ":")
			k = strings.TrimSpace(k)
			if !ok || !token(k) {
				continue
			}
			switch strings.ToLower(k) {
			case "content-length", "transfer-encoding", "connection", "trailer", "location":
				continue // no Location: a fuzzed redirect must never leave the loopback server
			}
			w.Header().Add(k, strings.ReplaceAll(strings.TrimSpace(v), "{{KEY}}", key))
		}
		w.WriteHeader(c.status)
		_, _ = w.Write(bytes.ReplaceAll(c.body, []byte("{{KEY}}"), []byte(key)))
	}))
	tb.Cleanup(s.Close)
	return s
}

func token(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

func addFixtureSeeds(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "testdata", "gemini", "*.http"))
	if len(files) == 0 {
		f.Fatal("no gemini fixtures")
	}
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			f.Fatalf("%s: %v", file, err)
		}
		var hb strings.Builder
		for k, vs := range resp.Header {
			for _, v := range vs {
				hb.WriteString(k + ": " + v + "\n")
			}
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
		f.Add(resp.StatusCode, hb.String(), body.Bytes(), stream)
		f.Add(resp.StatusCode, hb.String(), bytes.Replace(body.Bytes(), []byte(`"message": "`), []byte(`"message": "key {{KEY}} at https://x.test/?key={{KEY}} `), 1), stream)
	}
	f.Add(429, "Content-Type: application/json\nRetry-After: NaN", []byte(`{"error":{"code":429,"message":"retry in 99999999999999999999 hours","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-5s"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":1e300,"nanos":-1}}]}}`), false)
}

// FuzzGenerateClassifies drives the real adapter (genai over the shared
// transport) with fuzzed status, headers and body over loopback HTTP: no
// panic; a success only for a 2xx; every failure one *chain.ProviderError
// with one known outcome, the same for the same answer, a non-negative wait
// and no key in any text.
func FuzzGenerateClassifies(f *testing.F) {
	addFixtureSeeds(f)
	var cur atomic.Pointer[wireCase]
	srv := wireServer(f, &cur)
	c, err := gemini.New(context.Background(), gemini.Config{Name: "fuzz", Model: "gemini-flash-latest", APIKey: fuzzKey, BaseURL: srv.URL,
		Timeouts: chain.Timeouts{Connect: 2 * time.Second, FirstToken: 2 * time.Second, Idle: 2 * time.Second, Total: 5 * time.Second}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, header string, body []byte, stream bool) {
		status = 200 + (status%400+400)%400
		cur.Store(&wireCase{status: status, header: header, body: body})
		req := chain.Request{JobID: "j", Prompt: "Title: x", MaxTokens: 100, Stream: stream}
		first := outcomeOf(t, c, req, status)
		if again := outcomeOf(t, c, req, status); again != first {
			t.Fatalf("same answer, two outcomes: %q then %q", first, again)
		}
	})
}

func outcomeOf(t *testing.T, c *gemini.Client, req chain.Request, status int) chain.Outcome {
	t.Helper()
	resp, err := c.Generate(context.Background(), req)
	if err == nil {
		if status/100 != 2 || resp.HTTPStatus != status {
			t.Fatalf("status %d accepted as an answer (HTTPStatus %d)", status, resp.HTTPStatus)
		}
		return chain.OutcomeOK
	}
	pe := chain.AsProviderError(err)
	if pe == nil {
		t.Fatalf("error %T is not a *chain.ProviderError: %v", err, err)
	}
	if !failureOutcomes[pe.Outcome] {
		t.Fatalf("outcome %q is not a failure outcome", pe.Outcome)
	}
	if pe.RetryAfter < 0 || pe.Quota.Remaining < -1 {
		t.Fatalf("negative wait or quota: %v %+v", pe.RetryAfter, pe.Quota)
	}
	for _, s := range []string{pe.Error(), pe.Message, fmt.Sprint(pe.Cause), fmt.Sprintf("%+v", pe)} {
		if strings.Contains(s, fuzzKey) {
			t.Fatalf("key in error text: %q", s)
		}
	}
	switch {
	case pe.Status != status && pe.Status != 0:
		t.Fatalf("status %d recorded as %d", status, pe.Status)
	case status == 429 && pe.Outcome != chain.OutcomeRateLimited && pe.Outcome != chain.OutcomeQuotaExhausted:
		t.Fatalf("429 → %q", pe.Outcome)
	case (status == 401 || status == 403) && pe.Outcome != chain.OutcomeAuthError:
		t.Fatalf("%d → %q", status, pe.Outcome)
	}
	return pe.Outcome
}

// TestRedirectKeepsKeyHome: a base_url that answers with a redirect to
// another host must not get the key sent there (x-goog-api-key is not one
// of the headers Go drops on a cross-host redirect).
func TestRedirectKeepsKeyHome(t *testing.T) {
	var leaked atomic.Int32
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(fmt.Sprint(r.Header, r.URL), fuzzKey) {
			leaked.Add(1)
		}
		w.WriteHeader(http.StatusNotFound)
	}))
	defer elsewhere.Close()
	other := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	home := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer home.Close()
	c, err := gemini.New(context.Background(), gemini.Config{Name: "g", Model: "m", APIKey: fuzzKey, BaseURL: home.URL,
		Timeouts: chain.Timeouts{Connect: 5 * time.Second, FirstToken: 10 * time.Second, Total: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Generate(context.Background(), chain.Request{Prompt: "Title: x"})
	if err == nil {
		t.Fatal("a redirect answered like an article")
	}
	if n := leaked.Load(); n != 0 {
		t.Fatalf("the key was sent to the redirect target %d time(s)", n)
	}
}

package gemini_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/gemini"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// fuzzKey is the key the fuzzed clients send; "{{KEY}}" in a fuzzed answer
// is replaced by the key the request carried.
const fuzzKey = "AIzaFUZZ-secret-key-0123456789"

func addFixtureSeeds(f *testing.F) {
	transporttest.AddFixtureSeeds(f, func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"message": "`), []byte(`"message": "key {{KEY}} at https://x.test/?key={{KEY}} `), 1)
	}, filepath.Join("..", "testdata", "gemini"), filepath.Join("..", "testdata", "real", "gemini"))
	f.Add(429, "Content-Type: application/json\nRetry-After: NaN", []byte(`{"error":{"code":429,"message":"retry in 99999999999999999999 hours","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"-5s"},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":{"seconds":1e300,"nanos":-1}}]}}`), false)
}

// FuzzGenerateClassifies drives the real adapter (genai over the shared
// transport) with fuzzed status, headers and body over loopback HTTP: no
// panic; a success only for a 2xx; every failure one *chain.ProviderError
// with one known outcome, the same for the same answer, a non-negative wait
// and no key in any text.
func FuzzGenerateClassifies(f *testing.F) {
	addFixtureSeeds(f)
	var cur atomic.Pointer[transporttest.WireCase]
	srv := transporttest.WireServer(f, &cur, func(r *http.Request) string { return r.Header.Get("x-goog-api-key") })
	c, err := gemini.New(context.Background(), gemini.Config{Name: "fuzz", Model: "gemini-flash-latest", APIKey: fuzzKey, BaseURL: srv.URL,
		Timeouts: chain.Timeouts{Connect: 2 * time.Second, FirstToken: 2 * time.Second, Idle: 2 * time.Second, Total: 5 * time.Second}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, header string, body []byte, stream bool) {
		status = transporttest.WireStatus(status)
		cur.Store(&transporttest.WireCase{Status: status, Header: header, Body: body})
		req := chain.Request{JobID: "j", Prompt: "Title: x", MaxTokens: 100, Stream: stream}
		first := transporttest.OutcomeOf(t, c, req, status, fuzzKey, false)
		if again := transporttest.OutcomeOf(t, c, req, status, fuzzKey, false); again != first {
			t.Fatalf("same answer, two outcomes: %q then %q", first, again)
		}
	})
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

package openai_test

import (
	"bytes"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// fuzzKey is the key the fuzzed clients send; "{{KEY}}" in a fuzzed answer
// is replaced by the key the request carried, as a hostile or careless
// provider echoes it.
const fuzzKey = "sk-FUZZ-secret-key-0123456789abcdef"

// addFixtureSeeds adds every fixture of the OpenAI-compatible providers,
// plain and with the key echoed into its message.
func addFixtureSeeds(f *testing.F) {
	var dirs []string
	for _, p := range []string{"groq", "cerebras", "openrouter"} {
		dirs = append(dirs, filepath.Join("..", "testdata", p), filepath.Join("..", "testdata", "real", p))
	}
	dirs = append(dirs, filepath.Join("..", "testdata", "real", "openai-compatible"))
	transporttest.AddFixtureSeeds(f, func(b []byte) []byte {
		return bytes.Replace(b, []byte(`"message":"`), []byte(`"message":"Incorrect API key provided: {{KEY}} `), 1)
	}, dirs...)
	f.Add(401, "Content-Type: application/json\nX-Debug: https://x.test/?key={{KEY}}", []byte(`{"error":{"message":"bad key {{KEY}}","code":"invalid_api_key"}}`), false)
	f.Add(429, "Retry-After: NaN\nx-ratelimit-remaining-requests: 1e400", []byte(`{"error":{"message":"try again in 99999999999999999999 hours","code":"rate_limit_exceeded"}}`), false)
	f.Add(200, "Content-Type: text/event-stream", []byte("data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\n\ndata: {\"error\":{\"message\":\"{{KEY}}\"}}\n\n"), true)
}

// FuzzGenerateClassifies drives the real adapter (go-openai over the shared
// transport) with fuzzed status, headers and body over loopback HTTP: no
// panic; a success only for a 2xx; every failure one *chain.ProviderError
// with one known outcome, the same for the same answer, a non-negative wait
// and no key in any text.
func FuzzGenerateClassifies(f *testing.F) {
	addFixtureSeeds(f)
	var cur atomic.Pointer[transporttest.WireCase]
	srv := transporttest.WireServer(f, &cur, func(r *http.Request) string {
		return strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
	})
	c, err := openai.New(openai.Config{Name: "fuzz", Model: "m", APIKey: fuzzKey, BaseURL: srv.URL + "/v1",
		Timeouts: chain.Timeouts{Connect: 2 * time.Second, FirstToken: 2 * time.Second, Idle: 2 * time.Second, Total: 5 * time.Second}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, header string, body []byte, stream bool) {
		status = transporttest.WireStatus(status)
		cur.Store(&transporttest.WireCase{Status: status, Header: header, Body: body})
		req := chain.Request{JobID: "j", Prompt: "Title: x", MaxTokens: 100, Stream: stream}
		first := outcomeOf(t, c, req, status, body)
		if again := outcomeOf(t, c, req, status, body); again != first {
			t.Fatalf("same answer, two outcomes: %q then %q", first, again)
		}
	})
}

// outcomeOf checks the adapter contract (transporttest.OutcomeOf) and, for
// the OpenAI-compatible providers, that a 5xx is a server error unless the
// body names a rate limit (Groq's 413 and friends).
func outcomeOf(t *testing.T, c *openai.Client, req chain.Request, status int, body []byte) chain.Outcome {
	t.Helper()
	rateCode := bytes.Contains(body, []byte("rate_limit_exceeded"))
	out := transporttest.OutcomeOf(t, c, req, status, fuzzKey, rateCode)
	if (status == 500 || status == 502 || status == 503 || status == 504 || status == 529) && !rateCode && out != chain.OutcomeServerError {
		t.Fatalf("%d → %q", status, out)
	}
	return out
}

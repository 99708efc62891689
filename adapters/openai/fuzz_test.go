package openai_test

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

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/chain"
)

// fuzzKey is the key the fuzzed clients send; "{{KEY}}" in a fuzzed answer
// is replaced by the key the request carried, as a hostile or careless
// provider echoes it.
const fuzzKey = "sk-FUZZ-secret-key-0123456789abcdef"

var failureOutcomes = map[chain.Outcome]bool{
	chain.OutcomeRateLimited: true, chain.OutcomeQuotaExhausted: true, chain.OutcomeServerError: true,
	chain.OutcomeAuthError: true, chain.OutcomeTimeoutConnect: true, chain.OutcomeTimeoutFirstToken: true,
	chain.OutcomeTimeoutIdle: true, chain.OutcomeTimeoutTotal: true, chain.OutcomeStreamBroken: true,
	chain.OutcomeBlocked: true, chain.OutcomeBadRequest: true, chain.OutcomeError: true,
}

// wireCase is one fuzzed provider answer.
type wireCase struct {
	status int
	header string // "Name: value" lines
	body   []byte
}

// wireServer answers every request with the current case.
func wireServer(tb testing.TB, cur *atomic.Pointer[wireCase]) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := cur.Load()
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		for _, l := range strings.Split(c.header, "\n") {
			k, v, ok := strings.Cut(l, ":")
			k = strings.TrimSpace(k)
			if !ok || !token(k) {
				continue
			}
			switch strings.ToLower(k) {
			case "content-length", "transfer-encoding", "connection", "trailer", "location":
				// No Location: a fuzzed redirect must never send the client
				// off the loopback server.
				continue
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

// addFixtureSeeds adds every fixture of the OpenAI-compatible providers,
// plain and with the key echoed into its message.
func addFixtureSeeds(f *testing.F) {
	for _, p := range []string{"groq", "cerebras", "openrouter"} {
		files, _ := filepath.Glob(filepath.Join("..", "testdata", p, "*.http"))
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
			f.Add(resp.StatusCode, hb.String(), bytes.Replace(body.Bytes(), []byte(`"message":"`), []byte(`"message":"Incorrect API key provided: {{KEY}} `), 1), stream)
		}
	}
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
	var cur atomic.Pointer[wireCase]
	srv := wireServer(f, &cur)
	c, err := openai.New(openai.Config{Name: "fuzz", Model: "m", APIKey: fuzzKey, BaseURL: srv.URL + "/v1",
		Timeouts: chain.Timeouts{Connect: 2 * time.Second, FirstToken: 2 * time.Second, Idle: 2 * time.Second, Total: 5 * time.Second}})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, header string, body []byte, stream bool) {
		status = 200 + (status%400+400)%400 // 200..599: WriteHeader refuses the rest
		cur.Store(&wireCase{status: status, header: header, body: body})
		req := chain.Request{JobID: "j", Prompt: "Title: x", MaxTokens: 100, Stream: stream}
		first := outcomeOf(t, c, req, status, body)
		if again := outcomeOf(t, c, req, status, body); again != first {
			t.Fatalf("same answer, two outcomes: %q then %q", first, again)
		}
	})
}

func outcomeOf(t *testing.T, c *openai.Client, req chain.Request, status int, body []byte) chain.Outcome {
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
	rateCode := bytes.Contains(body, []byte("rate_limit_exceeded"))
	switch {
	case pe.Status != status && pe.Status != 0:
		t.Fatalf("status %d recorded as %d", status, pe.Status)
	case status == 429 && pe.Outcome != chain.OutcomeRateLimited && pe.Outcome != chain.OutcomeQuotaExhausted:
		t.Fatalf("429 → %q", pe.Outcome)
	case (status == 401 || status == 403) && !rateCode && pe.Outcome != chain.OutcomeAuthError:
		t.Fatalf("%d → %q", status, pe.Outcome)
	case (status == 500 || status == 502 || status == 503 || status == 504 || status == 529) && !rateCode && pe.Outcome != chain.OutcomeServerError:
		t.Fatalf("%d → %q", status, pe.Outcome)
	}
	return pe.Outcome
}

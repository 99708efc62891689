package gemini_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/gemini"
	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

const testKey = "AIzaTEST-secret-key-0123456789"

var schema = []byte(`{"type":"object","properties":{"title":{"type":"string"},"sections":{"type":"array","items":{"type":"object","properties":{"h2":{"type":"string"},"body":{"type":"string"}},"required":["h2","body"]}}},"required":["title","sections"]}`)

func fixture(name string) string { return filepath.Join("..", "testdata", "gemini", name) }

func newClient(t *testing.T, url string, to chain.Timeouts) *gemini.Client {
	t.Helper()
	c, err := gemini.New(context.Background(), gemini.Config{Name: "gemini", Model: "gemini-flash-latest", APIKey: testKey, BaseURL: url, Timeouts: to})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

var generous = chain.Timeouts{Connect: 10 * time.Second, FirstToken: 30 * time.Second, Idle: 30 * time.Second, Total: time.Minute}

func request(stream bool) chain.Request {
	return chain.Request{JobID: "job-1", System: "You write articles.", Prompt: "Title: Tea", Schema: schema, MaxTokens: 8192, Stream: stream}
}

func providerError(t *testing.T, err error) *chain.ProviderError {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	pe := chain.AsProviderError(err)
	if pe == nil {
		t.Fatalf("error %T %v is not a *chain.ProviderError", err, err)
	}
	if strings.Contains(pe.Error(), testKey) || strings.Contains(fmt.Sprint(pe.Cause), testKey) {
		t.Fatalf("error leaks the key: %v / %v", pe, pe.Cause)
	}
	return pe
}

func TestGenerateNonStream(t *testing.T) {
	srv := transporttest.Replay(t, fixture("generate_ok.http"))
	resp, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"title":"Tea","sections":[{"h2":"Origins","body":"Tea began in China."}]}` {
		t.Fatalf("text %q (thought part must be skipped)", resp.Text)
	}
	if resp.InputTokens != 14 || resp.OutputTokens != 2+24 {
		t.Fatalf("tokens in %d out %d; want 14, 26 (candidates + thoughts)", resp.InputTokens, resp.OutputTokens)
	}
	if resp.HTTPStatus != 200 || resp.FinishReason != "STOP" || resp.Truncated || resp.Model != "gemini-2.5-flash" || resp.FirstToken <= 0 {
		t.Fatalf("response %+v", resp)
	}
	if resp.Quota.Known() {
		t.Fatalf("quota %+v, Gemini sends none", resp.Quota)
	}

	got := srv.Last(t)
	if got.Path != "/v1beta/models/gemini-flash-latest:generateContent" || got.Header.Get("x-goog-api-key") != testKey {
		t.Fatalf("request %s %v", got.Path, got.Header)
	}
	var body struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"contents"`
		SystemInstruction struct {
			Parts []struct {
				Text string `json:"text"`
			} `json:"parts"`
		} `json:"systemInstruction"`
		GenerationConfig struct {
			ResponseMimeType   string         `json:"responseMimeType"`
			ResponseJsonSchema map[string]any `json:"responseJsonSchema"`
			MaxOutputTokens    int            `json:"maxOutputTokens"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatalf("request body %s: %v", got.Body, err)
	}
	if len(body.Contents) != 1 || body.Contents[0].Role != "user" || body.Contents[0].Parts[0].Text != "Title: Tea" {
		t.Fatalf("contents %s", got.Body)
	}
	if len(body.SystemInstruction.Parts) != 1 || body.SystemInstruction.Parts[0].Text != "You write articles." {
		t.Fatalf("system instruction %s", got.Body)
	}
	gc := body.GenerationConfig
	if gc.ResponseMimeType != "application/json" || gc.MaxOutputTokens != 8192 || gc.ResponseJsonSchema["type"] != "object" {
		t.Fatalf("generation config %s", got.Body)
	}
}

func TestGenerateStream(t *testing.T) {
	srv := transporttest.Replay(t, fixture("stream_ok.http"))
	resp, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(true))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != `{"title":"Tea","sections":[{"h2":"Origins","body":"Tea began in China."}]}` {
		t.Fatalf("text %q", resp.Text)
	}
	if resp.InputTokens != 14 || resp.OutputTokens != 21+24 || resp.FinishReason != "STOP" {
		t.Fatalf("response %+v; want usage of the last chunk", resp)
	}
	got := srv.Last(t)
	if got.Path != "/v1beta/models/gemini-flash-latest:streamGenerateContent" || got.RawQuery != "alt=sse" {
		t.Fatalf("request %s?%s", got.Path, got.RawQuery)
	}
}

func TestGenerateFailures(t *testing.T) {
	tests := []struct {
		fixture string
		stream  bool
		status  int
		outcome chain.Outcome
		scope   chain.Scope
		wait    time.Duration
		partial string
	}{
		{"429_per_minute.http", false, 429, chain.OutcomeRateLimited, chain.ScopeMinute, 26 * time.Second, ""},
		{"429_per_minute.http", true, 429, chain.OutcomeRateLimited, chain.ScopeMinute, 26 * time.Second, ""},
		{"429_per_day.http", false, 429, chain.OutcomeQuotaExhausted, chain.ScopeDay, 23472316927 * time.Nanosecond, ""},
		{"503_overloaded.http", false, 503, chain.OutcomeServerError, "", 0, ""},
		{"503_overloaded.http", true, 503, chain.OutcomeServerError, "", 0, ""},
		{"400_api_key_invalid.http", false, 400, chain.OutcomeAuthError, "", 0, ""},
		{"403_permission_denied.http", false, 403, chain.OutcomeAuthError, "", 0, ""},
		{"finish_safety.http", false, 200, chain.OutcomeBlocked, "", 0, ""},
		{"prompt_blocked.http", false, 200, chain.OutcomeBlocked, "", 0, ""},
		{"empty_candidates.http", false, 200, chain.OutcomeBlocked, "", 0, ""},
		{"stream_no_finish.http", true, 200, chain.OutcomeStreamBroken, "", 0, `{"title":"Tea","sections":[{"h2":`},
		{"stream_error_event.http", true, 200, chain.OutcomeStreamBroken, "", 0, `{"title":"Tea",`},
		{"stream_safety.http", true, 200, chain.OutcomeBlocked, "", 0, `{"title":"How to`},
		{"stream_prompt_blocked.http", true, 200, chain.OutcomeBlocked, "", 0, ""},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/stream=%v", tt.fixture, tt.stream), func(t *testing.T) {
			srv := transporttest.Replay(t, fixture(tt.fixture))
			_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(tt.stream))
			pe := providerError(t, err)
			if pe.Provider != "gemini" || pe.Status != tt.status || pe.Outcome != tt.outcome || pe.Scope != tt.scope || pe.RetryAfter != tt.wait || pe.Partial != tt.partial {
				t.Fatalf("got %+v; want status %d outcome %s scope %q wait %v partial %q", pe, tt.status, tt.outcome, tt.scope, tt.wait, tt.partial)
			}
			if pe.Message == "" {
				t.Fatal("empty message")
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests; the adapter and SDK must not retry", n)
			}
		})
	}
}

func TestMaxTokensIsTruncatedResponse(t *testing.T) {
	srv := transporttest.Replay(t, fixture("finish_max_tokens.http"))
	resp, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
	if err != nil {
		t.Fatal(err)
	}
	if !resp.Truncated || resp.FinishReason != "MAX_TOKENS" || !strings.HasPrefix(resp.Text, `{"title":"Tea"`) || resp.OutputTokens != 16 {
		t.Fatalf("response %+v", resp)
	}
}

func TestRetryAfterHeaderWhenNoRetryInfo(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "7")
		w.WriteHeader(429)
		fmt.Fprint(w, `{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}`)
	})
	_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
	pe := providerError(t, err)
	if pe.Outcome != chain.OutcomeRateLimited || pe.RetryAfter != 7*time.Second || pe.Scope != chain.ScopeNone {
		t.Fatalf("got %+v", pe)
	}
}

func TestTimeouts(t *testing.T) {
	t.Run("first token: no headers", func(t *testing.T) {
		wait := transporttest.Stall(t)
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
		to := generous
		to.FirstToken = 150 * time.Millisecond
		_, err := newClient(t, srv.URL, to).Generate(context.Background(), request(false))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeTimeoutFirstToken || pe.Status != 0 || !errors.Is(err, transport.ErrFirstTokenTimeout) {
			t.Fatalf("got %+v (%v)", pe, err)
		}
	})
	t.Run("idle: stream stalls", func(t *testing.T) {
		wait := transporttest.Stall(t)
		f := transporttest.Load(t, fixture("stream_no_finish.http"))
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			f.Write(w)
			w.(http.Flusher).Flush()
			wait(r)
		})
		to := generous
		to.Idle = 150 * time.Millisecond
		_, err := newClient(t, srv.URL, to).Generate(context.Background(), request(true))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeTimeoutIdle || pe.Status != 200 || pe.Partial != `{"title":"Tea","sections":[{"h2":` || pe.FirstToken <= 0 {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("total: caller deadline", func(t *testing.T) {
		wait := transporttest.Stall(t)
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, err := newClient(t, srv.URL, generous).Generate(ctx, request(true))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeTimeoutTotal || pe.Status != 0 {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("total: link limit", func(t *testing.T) {
		wait := transporttest.Stall(t)
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
		to := generous
		to.Total = 150 * time.Millisecond
		_, err := newClient(t, srv.URL, to).Generate(context.Background(), request(false))
		if pe := providerError(t, err); pe.Outcome != chain.OutcomeTimeoutTotal {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("connect: refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String()
		l.Close()
		_, err = newClient(t, url, generous).Generate(context.Background(), request(false))
		if pe := providerError(t, err); pe.Outcome != chain.OutcomeConnectFailed || pe.Status != 0 || !strings.Contains(pe.Message, "connection refused") {
			t.Fatalf("got %+v", pe)
		}
	})
}

func TestHugeBodyIsBounded(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"candidates":[{"content":{"parts":[{"text":"`)
		chunk := []byte(strings.Repeat("a", 64<<10))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	})
	_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(false))
	pe := providerError(t, err)
	if pe.Outcome != chain.OutcomeError || !errors.Is(err, transport.ErrBodyTooLarge) {
		t.Fatalf("got %+v", pe)
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	// A hostile or careless server that echoes the key back everywhere.
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		key := r.Header.Get("x-goog-api-key")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"API key %s not valid; see https://x.test/?key=%s","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`, key, key)
	})
	for _, stream := range []bool{false, true} {
		_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(stream))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeAuthError {
			t.Fatalf("got %+v", pe)
		}
		for e := error(pe); e != nil; e = errors.Unwrap(e) {
			if strings.Contains(e.Error(), testKey) {
				t.Fatalf("error chain leaks the key: %q", e.Error())
			}
		}
		if !strings.Contains(pe.Message, chain.Redacted) {
			t.Fatalf("message %q not scrubbed", pe.Message)
		}
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []gemini.Config{
		{Model: "m", APIKey: "k"},
		{Name: "g", APIKey: "k"},
		{Name: "g", Model: "m"},
	} {
		if _, err := gemini.New(context.Background(), cfg); err == nil {
			t.Errorf("New(%+v) accepted an incomplete config", cfg)
		}
	}
}

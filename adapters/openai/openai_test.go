package openai_test

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

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

const testKey = "gsk_TEST_secret_key_0123456789abcdef"

var schema = []byte(`{"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false}`)

const article = `{"title":"Tea","sections":[{"h2":"Origins","body":"Tea began in China."}]}`

var generous = chain.Timeouts{Connect: 10 * time.Second, FirstToken: 30 * time.Second, Idle: 30 * time.Second, Total: time.Minute}

func fixture(provider, name string) string { return filepath.Join("..", "testdata", provider, name) }

func newClient(t *testing.T, name, url, jsonMode string, to chain.Timeouts) *openai.Client {
	t.Helper()
	c, err := openai.New(openai.Config{Name: name, Model: "llama-3.3-70b-versatile", APIKey: testKey, BaseURL: url, JSONMode: jsonMode, Timeouts: to})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func request(stream bool) chain.Request {
	return chain.Request{JobID: "job-1", System: "You write articles.", Prompt: "Title: Tea", Schema: schema, MaxTokens: 4096, Stream: stream}
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
	for e := error(pe); e != nil; e = errors.Unwrap(e) {
		if strings.Contains(e.Error(), testKey) {
			t.Fatalf("error chain leaks the key: %q", e.Error())
		}
	}
	return pe
}

func TestGroqNonStream(t *testing.T) {
	srv := transporttest.Replay(t, fixture("groq", "chat_ok.http"))
	resp, err := newClient(t, "groq", srv.URL+"/openai/v1", openai.JSONObject, generous).Generate(context.Background(), request(false))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != article || resp.FinishReason != "stop" || resp.Truncated || resp.Model != "llama-3.3-70b-versatile" {
		t.Fatalf("response %+v", resp)
	}
	if resp.InputTokens != 253 || resp.OutputTokens != 31 || resp.CostKnown || resp.HTTPStatus != 200 || resp.FirstToken <= 0 {
		t.Fatalf("response %+v", resp)
	}
	if resp.Quota != (chain.QuotaHint{Remaining: 998, Reset: 2*time.Minute + 52800*time.Millisecond}) {
		t.Fatalf("quota %+v", resp.Quota)
	}
	got := srv.Last(t)
	if got.Path != "/openai/v1/chat/completions" || got.Header.Get("Authorization") != "Bearer "+testKey {
		t.Fatalf("request %s %v", got.Path, got.Header)
	}
	var body map[string]any
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	msgs, _ := body["messages"].([]any)
	rf, _ := body["response_format"].(map[string]any)
	if len(msgs) != 2 || rf["type"] != "json_object" || body["max_tokens"] != float64(4096) || body["stream"] == true {
		t.Fatalf("request body %s", got.Body)
	}
}

func TestJSONSchemaRequest(t *testing.T) {
	srv := transporttest.Replay(t, fixture("cerebras", "chat_ok.http"))
	resp, err := newClient(t, "cerebras", srv.URL+"/v1", openai.JSONSchema, generous).Generate(context.Background(), request(false))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Text != article || resp.InputTokens != 256 || resp.OutputTokens != 64 {
		t.Fatalf("response %+v", resp)
	}
	if resp.Quota != (chain.QuotaHint{Remaining: 14370, Reset: 33011380 * time.Millisecond}) {
		t.Fatalf("quota %+v; want the -day headers", resp.Quota)
	}
	var body struct {
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string         `json:"name"`
				Strict bool           `json:"strict"`
				Schema map[string]any `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	got := srv.Last(t)
	if err := json.Unmarshal(got.Body, &body); err != nil {
		t.Fatal(err)
	}
	rf := body.ResponseFormat
	if rf.Type != "json_schema" || !rf.JSONSchema.Strict || rf.JSONSchema.Schema["additionalProperties"] != false {
		t.Fatalf("response_format %s", got.Body)
	}
}

func TestOpenRouterCost(t *testing.T) {
	t.Run("non-stream", func(t *testing.T) {
		srv := transporttest.Replay(t, fixture("openrouter", "chat_ok.http"))
		resp, err := newClient(t, "openrouter", srv.URL+"/api/v1", openai.JSONObject, generous).Generate(context.Background(), request(false))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != article || !resp.CostKnown || resp.CostUSD != 0.000071 || resp.InputTokens != 194 || resp.OutputTokens != 31 {
			t.Fatalf("response %+v", resp)
		}
	})
	t.Run("stream with keep-alive comments", func(t *testing.T) {
		srv := transporttest.Replay(t, fixture("openrouter", "stream_ok.http"))
		resp, err := newClient(t, "openrouter", srv.URL+"/api/v1", openai.JSONObject, generous).Generate(context.Background(), request(true))
		if err != nil {
			t.Fatal(err)
		}
		if resp.Text != article || !resp.CostKnown || resp.CostUSD != 0.95 || resp.InputTokens != 194 || resp.OutputTokens != 2 || resp.FinishReason != "stop" {
			t.Fatalf("response %+v", resp)
		}
		var body map[string]any
		if err := json.Unmarshal(srv.Last(t).Body, &body); err != nil {
			t.Fatal(err)
		}
		so, _ := body["stream_options"].(map[string]any)
		if body["stream"] != true || so["include_usage"] != true {
			t.Fatalf("request body %s", srv.Last(t).Body)
		}
	})
}

func TestStreamOutcomes(t *testing.T) {
	t.Run("error chunk in a 200 stream", func(t *testing.T) {
		srv := transporttest.Replay(t, fixture("openrouter", "stream_error_chunk.http"))
		resp, err := newClient(t, "openrouter", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(true))
		pe := providerError(t, err)
		if resp.Text != "" || pe.Outcome != chain.OutcomeStreamBroken || pe.Status != 200 {
			t.Fatalf("resp %+v err %+v", resp, pe)
		}
		if pe.Partial != `{"title":"Tea","sections":[{"h2":` || !strings.Contains(pe.Message, "Provider disconnected unexpectedly") {
			t.Fatalf("partial %q message %q", pe.Partial, pe.Message)
		}
	})
	t.Run("finish length", func(t *testing.T) {
		srv := transporttest.Replay(t, fixture("groq", "stream_length.http"))
		resp, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(true))
		if err != nil {
			t.Fatal(err)
		}
		if !resp.Truncated || resp.FinishReason != "length" || resp.Text != `{"title":"Tea","sections":[{"h2":"Origins","body":"Tea began in` || resp.OutputTokens != 16 {
			t.Fatalf("response %+v", resp)
		}
		if resp.Quota.Remaining != 997 {
			t.Fatalf("quota %+v", resp.Quota)
		}
	})
	t.Run("ends without finish or DONE", func(t *testing.T) {
		srv := transporttest.Replay(t, fixture("groq", "stream_no_done.http"))
		_, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(true))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeStreamBroken || pe.Status != 200 || pe.Partial != `{"title":"Tea","sections":[` {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("error line first in a 200 stream", func(t *testing.T) {
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n")
			fmt.Fprint(w, "data: {\"error\":{\"message\":\"upstream overloaded\",\"code\":502}}\n\n")
		})
		_, err := newClient(t, "openrouter", srv.URL, openai.JSONNone, generous).Generate(context.Background(), request(true))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeStreamBroken || pe.Partial != "Hel" || !strings.Contains(pe.Message, "upstream overloaded") {
			t.Fatalf("got %+v", pe)
		}
	})
}

func TestHTTPErrors(t *testing.T) {
	resetAt := time.UnixMilli(1787616000000).UTC()
	tests := []struct {
		provider, fixture string
		stream            bool
		status            int
		outcome           chain.Outcome
		scope             chain.Scope
		wait              time.Duration
		resetAt           time.Time
		remaining         int
	}{
		{"groq", "429_tpd.http", false, 429, chain.OutcomeQuotaExhausted, chain.ScopeDay, 9*time.Minute + 52272*time.Millisecond, time.Time{}, 912},
		{"groq", "429_tpd.http", true, 429, chain.OutcomeQuotaExhausted, chain.ScopeDay, 9*time.Minute + 52272*time.Millisecond, time.Time{}, 912},
		{"groq", "429_tpm.http", false, 429, chain.OutcomeRateLimited, chain.ScopeMinute, 15670 * time.Millisecond, time.Time{}, 987},
		{"groq", "413_tpm.http", false, 413, chain.OutcomeTooLarge, "", 0, time.Time{}, 987},
		{"groq", "401_invalid_key.http", false, 401, chain.OutcomeAuthError, "", 0, time.Time{}, -1},
		{"cerebras", "429_requests_minute.http", false, 429, chain.OutcomeRateLimited, chain.ScopeMinute, 11 * time.Second, time.Time{}, 14112},
		{"cerebras", "429_requests_minute.http", true, 429, chain.OutcomeRateLimited, chain.ScopeMinute, 11 * time.Second, time.Time{}, 14112},
		{"cerebras", "429_tokens_day.http", false, 429, chain.OutcomeQuotaExhausted, chain.ScopeDay, 86399 * time.Second, time.Time{}, 13877},
		{"cerebras", "429_requests_day_header.http", false, 429, chain.OutcomeQuotaExhausted, chain.ScopeDay, 0, time.Time{}, 0},
		{"cerebras", "503_overloaded.http", false, 503, chain.OutcomeServerError, "", 0, time.Time{}, -1},
		{"openrouter", "429_free_per_day.http", false, 429, chain.OutcomeQuotaExhausted, chain.ScopeDay, 0, resetAt, -1},
		{"openrouter", "429_free_per_day.http", true, 429, chain.OutcomeQuotaExhausted, chain.ScopeDay, 0, resetAt, -1},
		{"openrouter", "429_upstream.http", false, 429, chain.OutcomeRateLimited, chain.ScopeNone, 0, time.Time{}, -1},
		{"openrouter", "402_credits.http", false, 402, chain.OutcomeMisconfigured, "", 0, time.Time{}, -1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%s/stream=%v", tt.provider, tt.fixture, tt.stream), func(t *testing.T) {
			srv := transporttest.Replay(t, fixture(tt.provider, tt.fixture))
			_, err := newClient(t, tt.provider, srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(tt.stream))
			pe := providerError(t, err)
			if pe.Provider != tt.provider || pe.Status != tt.status || pe.Outcome != tt.outcome || pe.Scope != tt.scope || pe.RetryAfter != tt.wait || !pe.ResetAt.Equal(tt.resetAt) || pe.Quota.Remaining != tt.remaining {
				t.Fatalf("got %+v\nwant status %d outcome %s scope %q wait %v reset %v remaining %d", pe, tt.status, tt.outcome, tt.scope, tt.wait, tt.resetAt, tt.remaining)
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

func TestRetryAfterHTTPDate(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", time.Now().Add(90*time.Second).UTC().Format(http.TimeFormat))
		w.WriteHeader(429)
		fmt.Fprint(w, `{"error":{"message":"Too many requests","type":"requests","code":"rate_limit_exceeded"}}`)
	})
	_, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(false))
	pe := providerError(t, err)
	// An HTTP date has one-second resolution: allow for it and a slow machine.
	if pe.Outcome != chain.OutcomeRateLimited || pe.RetryAfter < 30*time.Second || pe.RetryAfter > 91*time.Second {
		t.Fatalf("got %+v", pe)
	}
}

func TestTimeouts(t *testing.T) {
	t.Run("first token: only keep-alives", func(t *testing.T) {
		wait := transporttest.Stall(t)
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, ": OPENROUTER PROCESSING\n\n")
			w.(http.Flusher).Flush()
			wait(r)
		})
		to := generous
		to.FirstToken = 150 * time.Millisecond
		_, err := newClient(t, "openrouter", srv.URL, openai.JSONObject, to).Generate(context.Background(), request(true))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeTimeoutFirstToken || pe.Status != 200 || pe.FirstToken != 0 {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("first token: no headers", func(t *testing.T) {
		wait := transporttest.Stall(t)
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
		to := generous
		to.FirstToken = 150 * time.Millisecond
		_, err := newClient(t, "groq", srv.URL, openai.JSONObject, to).Generate(context.Background(), request(false))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeTimeoutFirstToken || pe.Status != 0 || !errors.Is(err, transport.ErrFirstTokenTimeout) {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("idle: stall mid-stream", func(t *testing.T) {
		wait := transporttest.Stall(t)
		f := transporttest.Load(t, fixture("groq", "stream_no_done.http"))
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			f.Write(w)
			w.(http.Flusher).Flush()
			wait(r)
		})
		to := generous
		to.Idle = 150 * time.Millisecond
		_, err := newClient(t, "groq", srv.URL, openai.JSONObject, to).Generate(context.Background(), request(true))
		pe := providerError(t, err)
		if pe.Outcome != chain.OutcomeTimeoutIdle || pe.Status != 200 || pe.Partial != `{"title":"Tea","sections":[` {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("total: caller deadline", func(t *testing.T) {
		wait := transporttest.Stall(t)
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
		ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
		defer cancel()
		_, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(ctx, request(false))
		if pe := providerError(t, err); pe.Outcome != chain.OutcomeTimeoutTotal || pe.Status != 0 {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("cancelled by caller", func(t *testing.T) {
		wait := transporttest.Stall(t)
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) { wait(r) })
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(100*time.Millisecond, cancel)
		_, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(ctx, request(true))
		if pe := providerError(t, err); pe.Outcome != chain.OutcomeError || !errors.Is(err, context.Canceled) {
			t.Fatalf("got %+v", pe)
		}
	})
	t.Run("connect: refused", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		url := "http://" + l.Addr().String() + "/v1"
		l.Close()
		_, err = newClient(t, "cerebras", url, openai.JSONObject, generous).Generate(context.Background(), request(true))
		if pe := providerError(t, err); pe.Outcome != chain.OutcomeConnectFailed || pe.Status != 0 || !errors.Is(err, transport.ErrConnect) || !strings.Contains(pe.Message, "connection refused") {
			t.Fatalf("got %+v", pe)
		}
	})
}

func TestHugeStreamIsBounded(t *testing.T) {
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		line := []byte(`data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("a", 4000) + `"}}]}` + "\n\n")
		for r.Context().Err() == nil {
			if _, err := w.Write(line); err != nil {
				return
			}
		}
	})
	_, err := newClient(t, "groq", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(true))
	pe := providerError(t, err)
	if pe.Outcome != chain.OutcomeError || !errors.Is(err, transport.ErrBodyTooLarge) || len(pe.Partial) == 0 || len(pe.Partial) > transport.DefaultMaxBody {
		t.Fatalf("outcome %s err %v partial %d bytes", pe.Outcome, err, len(pe.Partial))
	}
}

func TestKeyNeverInErrors(t *testing.T) {
	// Servers that echo the key back: in a wrapped error, an unwrapped one
	// (which go-openai keeps whole in RequestError.Body), and a plain-text one.
	bodies := []string{
		`{"error":{"message":"Invalid API Key %s (see https://x.test/?api_key=%s)","type":"invalid_request_error","code":"invalid_api_key"}}`,
		`{"message":"Wrong API key %s; %s","type":"invalid_request_error","param":"api_key","code":"wrong_api_key"}`,
		`<html>bad key %s %s</html>`,
	}
	for _, b := range bodies {
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
			w.WriteHeader(401)
			fmt.Fprintf(w, b, key, key)
		})
		for _, stream := range []bool{false, true} {
			_, err := newClient(t, "p", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(stream))
			pe := providerError(t, err)
			if pe.Outcome != chain.OutcomeAuthError || pe.Status != 401 {
				t.Fatalf("got %+v", pe)
			}
			if strings.Contains(fmt.Sprintf("%v %+v %#v", err, pe, pe.Cause), testKey) {
				t.Fatalf("formatted error leaks the key")
			}
		}
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []openai.Config{
		{Model: "m"},
		{Name: "p"},
		{Name: "p", Model: "m", JSONMode: "yaml"},
	} {
		if _, err := openai.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted a bad config", cfg)
		}
	}
}

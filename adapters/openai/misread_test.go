package openai_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// TestAnswersOnceMisread are answers the adapter once classified wrong, or
// classified so that nobody was told: each with the outcome README "Real
// provider answers" gives it. Outcomes are compared by name so that the
// cases read the same against any version of the adapter.
func TestAnswersOnceMisread(t *testing.T) {
	tests := []struct {
		name, link, file string
		outcome          string
		scope            chain.Scope
		wait             time.Duration
	}{
		// Cerebras sends token_quota_exceeded for its per-minute token
		// limit too: a minute, not the day.
		{"cerebras per-minute tokens", "cerebras", fixture("cerebras", "429_tokens_minute.http"), "rate_limited", chain.ScopeMinute, time.Minute},
		// It can never fit: no retry, no per-minute wait.
		{"groq 413 request too large", "groq", filepath.Join("..", "testdata", "real", "groq", "413_tpm_request_too_large.http"), "too_large", "", 0},
		// A refused content, not refused credentials.
		{"openrouter moderation", "openrouter", fixture("openrouter", "403_moderation.http"), "blocked", "", 0},
		// Only a person can fix these.
		{"cerebras model archived", "cerebras", filepath.Join("..", "testdata", "real", "cerebras", "404_model_not_found.http"), "misconfigured", "", 0},
		{"openrouter no allowed providers", "openrouter", filepath.Join("..", "testdata", "real", "openrouter", "404_no_allowed_providers_zai.http"), "misconfigured", "", 0},
		{"openrouter credits", "openrouter", filepath.Join("..", "testdata", "real", "openrouter", "402_requires_more_credits.http"), "misconfigured", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := transporttest.Replay(t, tt.file)
			_, err := newClient(t, tt.link, srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(false))
			pe := providerError(t, err)
			if string(pe.Outcome) != tt.outcome || pe.Scope != tt.scope || pe.RetryAfter != tt.wait {
				t.Fatalf("got %s scope %q wait %v; want %s scope %q wait %v", pe.Outcome, pe.Scope, pe.RetryAfter, tt.outcome, tt.scope, tt.wait)
			}
		})
	}
}

// TestUndecodableAnswerIsRejected: a 200 whose body is no completion (no
// choices, a number where text belongs, a chunk that is no JSON) is a bad
// answer, kept for review, not a broken stream (which would count toward
// the circuit breaker).
func TestUndecodableAnswerIsRejected(t *testing.T) {
	tests := []struct {
		name, contentType, body string
		stream                  bool
	}{
		{"no choices", "application/json", `{"id":"x","object":"chat.completion","model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}`, false},
		{"a number for the content", "application/json", `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":123},"finish_reason":"stop"}]}`, false},
		{"no JSON at all", "application/json", `<html>gateway says hi</html>`, false},
		{"a chunk with a number for the content", "text/event-stream", "data: {\"id\":\"x\",\"choices\":[{\"index\":0,\"delta\":{\"content\":7}}]}\n\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", tt.contentType)
				fmt.Fprint(w, tt.body)
			})
			_, err := newClient(t, "openai-compatible", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(tt.stream))
			pe := providerError(t, err)
			if string(pe.Outcome) != "rejected" || pe.Status != 200 || pe.Partial != tt.body {
				t.Fatalf("got %s status %d partial %q; want rejected, 200, the body kept", pe.Outcome, pe.Status, pe.Partial)
			}
		})
	}
}

package openai_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// openaiCorpus is the OpenAI-compatible part of the corpus, by file.
var openaiCorpus = map[string]transporttest.Want{
	"cerebras/401_wrong_api_key.http":                           {Outcome: chain.OutcomeAuthError, Words: "Wrong API Key"},
	"cerebras/402_payment_required.http":                        {Outcome: chain.OutcomeMisconfigured, Words: "Payment required"},
	"cerebras/404_model_not_found.http":                         {Outcome: chain.OutcomeMisconfigured, Words: "does not exist"},
	"cerebras/429_requests_per_minute.http":                     {Outcome: chain.OutcomeRateLimited, Scope: chain.ScopeMinute, Words: "Requests per minute"},
	"groq/400_model_decommissioned.http":                        {Outcome: chain.OutcomeMisconfigured, Words: "has been decommissioned"},
	"groq/401_invalid_api_key.http":                             {Outcome: chain.OutcomeAuthError, Words: "Invalid API Key"},
	"groq/404_model_not_found.http":                             {Outcome: chain.OutcomeMisconfigured, Words: "does not exist"},
	"groq/413_tpm_request_too_large.http":                       {Outcome: chain.OutcomeTooLarge, Limit: 6000, Requested: 12089, Words: "Request too large"},
	"groq/429_requests_per_minute.http":                         {Outcome: chain.OutcomeRateLimited, Scope: chain.ScopeMinute, Wait: 2 * time.Second, Words: "requests per minute (RPM)"},
	"groq/503_upstream_reset_overflow.http":                     {Outcome: chain.OutcomeServerError, Words: "reset reason: overflow"},
	"openrouter/200_stream_error_chunk_token_limit.http":        {Outcome: chain.OutcomeStreamBroken, Words: "Token limit reached"},
	"openrouter/400_context_length_exceeded.http":               {Outcome: chain.OutcomeTooLarge, Limit: 200000, Requested: 2500021, Words: "maximum context length"},
	"openrouter/400_invalid_model_id.http":                      {Outcome: chain.OutcomeMisconfigured, Words: "is not a valid model ID"},
	"openrouter/401_missing_auth_header.http":                   {Outcome: chain.OutcomeAuthError, Words: "Missing Authentication header"},
	"openrouter/401_no_auth_credentials.http":                   {Outcome: chain.OutcomeAuthError, Words: "No auth credentials found"},
	"openrouter/402_requires_more_credits.http":                 {Outcome: chain.OutcomeMisconfigured, Words: "requires more credits"},
	"openrouter/404_no_allowed_providers_litellm.http":          {Outcome: chain.OutcomeMisconfigured, Words: "No allowed providers"},
	"openrouter/404_no_allowed_providers_zai.http":              {Outcome: chain.OutcomeMisconfigured, Words: "No allowed providers"},
	"openai-compatible/deepseek_400_context_length.http":        {Outcome: chain.OutcomeTooLarge, Limit: 1048565, Requested: 1250025, Words: "maximum context length"},
	"openai-compatible/deepseek_401_invalid_key.http":           {Outcome: chain.OutcomeAuthError, Words: "Authentication Fails"},
	"openai-compatible/mistral_401_invalid_key.http":            {Outcome: chain.OutcomeAuthError, Words: "Invalid API Key"},
	"openai-compatible/mistral_invalid_model.http":              {Outcome: chain.OutcomeMisconfigured, Words: "Invalid model"},
	"openai-compatible/ollama_cloud_400_prompt_too_long.http":   {Outcome: chain.OutcomeTooLarge, Words: "prompt too long"},
	"openai-compatible/ollama_cloud_401_unauthorized.http":      {Outcome: chain.OutcomeAuthError, Words: "Unauthorized"},
	"openai-compatible/openai_400_context_window_exceeded.http": {Outcome: chain.OutcomeTooLarge, Words: "exceeds the context window"},
	"openai-compatible/openailegacy_invalid_model.http":         {Outcome: chain.OutcomeMisconfigured, Words: "does not exist"},
	"openai-compatible/sambanova_invalid_model.http":            {Outcome: chain.OutcomeMisconfigured, Words: "Model not found"},
	"openai-compatible/togetherai_401_invalid_key.http":         {Outcome: chain.OutcomeAuthError, Words: "Invalid API key provided"},
	"openai-compatible/togetherai_invalid_model.http":           {Outcome: chain.OutcomeMisconfigured, Words: "Unable to access model"},
}

// TestRealAnswers replays every OpenAI-compatible body of the development
// corpus byte for byte over loopback through the real adapter (go-openai
// over the shared transport), with the link's provider profile, streamed
// and not, and checks the classification README gives for it.
func TestRealAnswers(t *testing.T) {
	transporttest.CheckCorpusComplete(t, filepath.Join("..", "testdata", "real"), openaiCorpus, "cerebras", "groq", "openrouter", "openai-compatible")
	for file, want := range openaiCorpus {
		dir, base := filepath.Split(file)
		provider := profile.ID(strings.TrimSuffix(dir, "/"))
		name := string(provider)
		if provider == "openai-compatible" {
			provider, name = profile.OpenAI, strings.SplitN(base, "_", 2)[0]
		}
		f := transporttest.Load(t, filepath.Join("..", "testdata", "real", file))
		streams := []bool{false, true}
		if f.Status == 200 {
			streams = []bool{strings.HasPrefix(f.Header.Get("Content-Type"), "text/event-stream")}
		}
		for _, stream := range streams {
			t.Run(fmt.Sprintf("%s/stream=%v", file, stream), func(t *testing.T) {
				srv := transporttest.Replay(t, filepath.Join("..", "testdata", "real", file))
				c, err := openai.New(openai.Config{Name: name, Provider: provider, Model: "m", APIKey: testKey, BaseURL: srv.URL,
					JSONMode: openai.JSONObject, Timeouts: generous})
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.Generate(context.Background(), request(stream))
				transporttest.CheckWant(t, providerError(t, err), f.Status, want)
				if n := len(srv.Requests()); n != 1 {
					t.Fatalf("%d requests; the adapter and SDK must not retry", n)
				}
			})
		}
	}
}

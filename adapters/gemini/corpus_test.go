package gemini_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// geminiCorpus is the Gemini part of the development corpus of real
// answers (adapters/testdata/real/gemini, sources in SOURCES.md), as README
// "Real provider answers" classifies it.
var geminiCorpus = map[string]transporttest.Want{
	"gemini/400_api_key_invalid.http":                  {Outcome: chain.OutcomeAuthError, Words: "API key not valid"},
	"gemini/400_input_token_count_exceeds_vertex.http": {Outcome: chain.OutcomeTooLarge, Limit: 1048576, Requested: 1250074, Words: "exceeds the maximum number of tokens"},
	"gemini/400_user_location_not_supported.http":      {Outcome: chain.OutcomeMisconfigured, Words: "User location is not supported"},
	"gemini/403_insufficient_scopes.http":              {Outcome: chain.OutcomeAuthError, Words: "insufficient authentication scopes"},
	"gemini/404_model_not_found.http":                  {Outcome: chain.OutcomeMisconfigured, Words: "is not found for API version v1beta"},
	"gemini/404_model_retired.http":                    {Outcome: chain.OutcomeMisconfigured, Words: "models/gemini-1.5-flash is not found"},
	"gemini/429_input_tokens_per_minute_huge_request.http": {Outcome: chain.OutcomeRateLimited, Scope: chain.ScopeMinute,
		Wait: 48939935699 * time.Nanosecond, Words: "limit: 1000000"},
	"gemini/429_limit_0_flash.http":      {Outcome: chain.OutcomeMisconfigured, Words: "limit: 0, model: gemini-2.0-flash"},
	"gemini/429_limit_0_flash_lite.http": {Outcome: chain.OutcomeMisconfigured, Words: "limit: 0, model: gemini-2.0-flash-lite"},
	"gemini/429_per_day_requests.http": {Outcome: chain.OutcomeQuotaExhausted, Scope: chain.ScopeDay,
		Wait: 48180526505 * time.Nanosecond, Words: "limit: 20"},
	"gemini/429_per_minute_requests.http": {Outcome: chain.OutcomeRateLimited, Scope: chain.ScopeMinute,
		Wait: 55160198287 * time.Nanosecond, Words: "limit: 5"},
	"gemini/500_internal_stream.http":  {Outcome: chain.OutcomeServerError, Words: "Internal error encountered"},
	"gemini/503_high_demand.http":      {Outcome: chain.OutcomeServerError, Words: "high demand"},
	"gemini/503_model_overloaded.http": {Outcome: chain.OutcomeServerError, Words: "The model is overloaded"},
}

// TestRealAnswers replays every Gemini body of the development corpus byte
// for byte over loopback through the real adapter (genai over the shared
// transport), streamed and not, and checks the classification README gives
// for it.
func TestRealAnswers(t *testing.T) {
	root := filepath.Join("..", "testdata", "real")
	transporttest.CheckCorpusComplete(t, root, geminiCorpus, "gemini")
	for file, want := range geminiCorpus {
		status := transporttest.Load(t, filepath.Join(root, file)).Status
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/stream=%v", file, stream), func(t *testing.T) {
				srv := transporttest.Replay(t, filepath.Join(root, file))
				_, err := newClient(t, srv.URL, generous).Generate(context.Background(), request(stream))
				transporttest.CheckWant(t, providerError(t, err), status, want)
				if n := len(srv.Requests()); n != 1 {
					t.Fatalf("%d requests; the adapter and SDK must not retry", n)
				}
			})
		}
	}
}

package gemini_test

import (
	"context"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// Bodies that a status outside 2xx may carry; none of them makes an answer,
// an auth failure or a rate limit.
var non2xxBodies = map[string]string{
	"fuzz seed":   `{"ChoiCes":[{}]}`,
	"answer":      `{"candidates":[{"content":{"parts":[{"text":"{\"title\":\"Tea\"}"}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":14,"candidatesTokenCount":2,"totalTokenCount":16}}`,
	"stream":      "data: {\"candidates\":[{\"content\":{\"parts\":[{\"text\":\"Tea\"}],\"role\":\"model\"},\"finishReason\":\"STOP\"}]}\r\n\r\n",
	"bad key":     `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`,
	"quota (day)": `{"error":{"code":429,"message":"You exceeded your current quota.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"26s"}]}}`,
	"empty":       ``,
}

// TestStatusOutside2xxIsNoAnswer: a final status that is neither 2xx, 4xx
// nor 5xx (101, 3xx including every redirect, 600 and up) is an error with
// that status, whatever the body says; a body's API_KEY_INVALID, quotaId
// and retryDelay count only on a 4xx/5xx; a redirect's Location gets
// nothing. A 1xx with no final answer is a failure with no status.
func TestStatusOutside2xxIsNoAnswer(t *testing.T) {
	transporttest.CheckOutside2xx(t, non2xxBodies, non2xxBodies["answer"], func(t *testing.T, baseURL string, stream bool) (chain.Response, error) {
		return newClient(t, baseURL, generous).Generate(context.Background(), request(stream))
	})
}

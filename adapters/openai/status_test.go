package openai_test

import (
	"context"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// Bodies that a status outside 2xx may carry; none of them makes an answer.
var non2xxBodies = map[string]string{
	"fuzz seed":  `{"ChoiCes":[{}]}`,
	"completion": `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{\"title\":\"Tea\"}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}`,
	"stream":     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Tea\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
	"rate limit": `{"error":{"message":"Rate limit reached for model m on tokens per day (TPD). Please try again in 9m52.272s.","type":"tokens","code":"rate_limit_exceeded"}}`,
	"empty":      ``,
}

// TestStatusOutside2xxIsNoAnswer: a final status that is neither 2xx, 4xx
// nor 5xx (101, 3xx including every redirect, 600 and up) is an error with
// that status, whatever the body says (go-openai on its own decodes a 3xx
// body as a completion), with no wait and no quota scope taken from the
// body, and a redirect's Location gets nothing. A 1xx with no final answer
// is a failure with no status. The first of transporttest.Outside2xxCases
// (384) is the input the fuzzer found.
func TestStatusOutside2xxIsNoAnswer(t *testing.T) {
	transporttest.CheckOutside2xx(t, non2xxBodies, non2xxBodies["completion"], func(t *testing.T, baseURL string, stream bool) (chain.Response, error) {
		return newClient(t, "groq", baseURL, openai.JSONObject, generous).Generate(context.Background(), request(stream))
	})
}

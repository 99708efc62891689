package profile

import (
	"net/http"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

func TestScopeFromText(t *testing.T) {
	tests := []struct {
		in   string
		want chain.Scope
	}{
		{"GenerateRequestsPerDayPerProjectPerModel-FreeTier", chain.ScopeDay},
		{"GenerateContentInputTokensPerModelPerMinute-FreeTier", chain.ScopeMinute},
		{"Rate limit reached for model x on tokens per day (TPD): Limit 200000", chain.ScopeDay},
		{"Rate limit reached on requests per day (RPD)", chain.ScopeDay},
		{"Rate limit reached on tokens per minute (TPM): Limit 12000", chain.ScopeMinute},
		{"Tokens per minute limit exceeded - too many tokens processed.", chain.ScopeMinute},
		{"Tokens per day limit exceeded - too many tokens processed.", chain.ScopeDay},
		{"Rate limit exceeded: free-models-per-day. Add 10 credits", chain.ScopeDay},
		{"Rate limit exceeded: free-models-per-min.", chain.ScopeNone},
		{"overloaded", chain.ScopeNone},
	}
	for _, tt := range tests {
		if got := ScopeFromText(tt.in); got != tt.want {
			t.Errorf("ScopeFromText(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func header(kv ...string) http.Header {
	out := http.Header{}
	for i := 0; i < len(kv); i += 2 {
		out.Set(kv[i], kv[i+1])
	}
	return out
}

// TestQuota: each profile reads its own daily headers and no other's
// (OpenAI counts x-ratelimit-*-requests per minute, Groq per day).
func TestQuota(t *testing.T) {
	groqH := header("x-ratelimit-limit-requests", "1000", "x-ratelimit-remaining-requests", "999", "x-ratelimit-reset-requests", "1m26.4s", "x-ratelimit-remaining-tokens", "11000")
	cerebrasH := header("x-ratelimit-remaining-requests-day", "14399", "x-ratelimit-reset-requests-day", "33011.38", "x-ratelimit-remaining-tokens-minute", "59000")
	tests := []struct {
		id   ID
		h    http.Header
		want chain.QuotaHint
	}{
		{Groq, groqH, chain.QuotaHint{Remaining: 999, Reset: time.Minute + 26400*time.Millisecond}},
		{Cerebras, cerebrasH, chain.QuotaHint{Remaining: 14399, Reset: 33011380 * time.Millisecond}},
		{Cerebras, header("x-ratelimit-remaining-requests-day", "0"), chain.QuotaHint{Remaining: 0}},
		{Cerebras, groqH, chain.QuotaHint{Remaining: -1}},
		{OpenAI, groqH, chain.QuotaHint{Remaining: -1}},
		{OpenRouter, groqH, chain.QuotaHint{Remaining: -1}},
		{Groq, header("content-type", "application/json"), chain.QuotaHint{Remaining: -1}},
		{Groq, header("x-ratelimit-remaining-requests", "NaN"), chain.QuotaHint{Remaining: -1}},
		{Groq, header("x-ratelimit-remaining-requests", "1e300"), chain.QuotaHint{Remaining: 1<<31 - 1}},
	}
	for _, tt := range tests {
		if got := Must(tt.id).Quota(tt.h); got != tt.want {
			t.Errorf("%s: Quota(%v) = %+v, want %+v", tt.id, tt.h, got, tt.want)
		}
	}
}

// TestScopeByHeaders: where a provider's window headers say which window
// is at 0, they decide; a daily signal wins over a per-minute one.
func TestScopeByHeaders(t *testing.T) {
	tpm := Words{Message: "Tokens per minute limit exceeded - too many tokens processed.", Code: "token_quota_exceeded", Found: true}
	bare := Words{Message: "Too many tokens.", Code: "token_quota_exceeded", Found: true}
	tests := []struct {
		h    http.Header
		w    Words
		want chain.Scope
	}{
		{nil, tpm, chain.ScopeMinute},
		{nil, bare, chain.ScopeNone},
		{header("x-ratelimit-remaining-tokens-minute", "0", "x-ratelimit-remaining-requests-day", "14000"), bare, chain.ScopeMinute},
		{header("x-ratelimit-remaining-tokens-minute", "12", "x-ratelimit-remaining-requests-day", "0"), bare, chain.ScopeDay},
		{header("x-ratelimit-remaining-tokens-minute", "0", "x-ratelimit-remaining-requests-day", "0"), tpm, chain.ScopeDay},
	}
	for _, tt := range tests {
		if got := Must(Cerebras).scope(tt.h, tt.w); got != tt.want {
			t.Errorf("scope(%v, %q) = %q, want %q", tt.h, tt.w.Message, got, tt.want)
		}
	}
}

func TestDetect(t *testing.T) {
	tests := []struct {
		kind          Kind
		name, baseURL string
		want          ID
	}{
		{KindGemini, "anything", "", Gemini},
		{KindOpenAI, "fast", "https://api.groq.com/openai/v1", Groq},
		{KindOpenAI, "backup", "https://api.cerebras.ai/v1", Cerebras},
		{KindOpenAI, "broker", "https://openrouter.ai/api/v1", OpenRouter},
		{KindOpenAI, "groq", "http://127.0.0.1:4000/openai/v1", Groq},
		{KindOpenAI, "cerebras-2", "http://127.0.0.1:4000/v1", Cerebras},
		{KindOpenAI, "mistral", "https://api.mistral.ai/v1", OpenAI},
		{KindOpenAI, "local", "http://localhost:11434/v1", OpenAI},
	}
	for _, tt := range tests {
		if got := Detect(tt.kind, tt.name, tt.baseURL); got != tt.want {
			t.Errorf("Detect(%s, %q, %q) = %q, want %q", tt.kind, tt.name, tt.baseURL, got, tt.want)
		}
	}
	if _, err := Resolve(KindGemini, Groq, "g", ""); err == nil {
		t.Error("provider groq accepted for a gemini link")
	}
	if _, err := Resolve(KindOpenAI, "acme", "a", ""); err == nil {
		t.Error("unknown provider accepted")
	}
}

// TestSizes reads the limit and the request's size of a too-large answer
// in each provider's words.
func TestSizes(t *testing.T) {
	tests := []struct {
		msg  string
		want chain.TooLarge
	}{
		{"Request too large for model `m` in organization `o` service tier `on_demand` on tokens per minute (TPM): Limit 6000, Requested 10338, please reduce your message size and try again.",
			chain.TooLarge{Limit: 6000, Requested: 10338, Unit: "tokens per minute (TPM)"}},
		{"Rate limit reached for model `m` in organization `o` on tokens per minute (TPM): Limit 7000, Used 0, Requested ~12903. Please try again in 50.6s.",
			chain.TooLarge{Limit: 7000, Requested: 12903, Unit: "tokens per minute (TPM)"}},
		{"This endpoint's maximum context length is 200000 tokens. However, you requested about 2500021 tokens (2500021 of text input).",
			chain.TooLarge{Limit: 200000, Requested: 2500021, Unit: "tokens of context"}},
		{"The input token count (1250074) exceeds the maximum number of tokens allowed (1048576).",
			chain.TooLarge{Limit: 1048576, Requested: 1250074, Unit: "input tokens"}},
		{"Rate limit reached for model `m`: please slow down", chain.TooLarge{}},
	}
	for _, tt := range tests {
		if got := sizes(tt.msg); got != tt.want {
			t.Errorf("sizes(%q) = %+v, want %+v", tt.msg, got, tt.want)
		}
	}
}

func TestSuspectUsage(t *testing.T) {
	for _, tt := range []struct {
		in, out, max int
		cost         float64
		suspect      bool
	}{
		{100, 200, 8192, 0.01, false},
		{-1000000, 200, 8192, 0, true},
		{100, -5, 8192, 0, true},
		{100, 200, 8192, -10, true},
		{100, 20000, 8192, 0, true},
		{100, 20000, 0, 0, false},
		{100, 9000, 8192, 0, false},
	} {
		if got := SuspectUsage(tt.in, tt.out, tt.max, tt.cost); (got != "") != tt.suspect {
			t.Errorf("SuspectUsage(%d, %d, %d, %v) = %q", tt.in, tt.out, tt.max, tt.cost, got)
		}
	}
}

// TestWriteQuotaRoundTrips: what the fakes write, Quota reads back exactly.
func TestWriteQuotaRoundTrips(t *testing.T) {
	for _, id := range []ID{Groq, Cerebras} {
		for _, q := range []chain.QuotaHint{{Remaining: 999, Reset: time.Minute + 26400*time.Millisecond},
			{Remaining: 0, Reset: 86399 * time.Second}, {Remaining: 14399, Reset: 33011380 * time.Millisecond},
			{Remaining: 3, Reset: 23*time.Hour + 59*time.Minute + 1234567891}, {Remaining: 7}} {
			h := http.Header{}
			Must(id).WriteQuota(h, q)
			if got := Must(id).Quota(h); got != q {
				t.Errorf("%s: wrote %+v as %v, read %+v", id, q, h, got)
			}
		}
	}
	h := http.Header{}
	Must(Groq).WriteQuota(h, chain.QuotaHint{Remaining: -1})
	Must(OpenAI).WriteQuota(h, chain.QuotaHint{Remaining: 5, Reset: time.Second})
	if len(h) != 0 {
		t.Errorf("an unknown hint or a profile without daily headers wrote %v", h)
	}
}

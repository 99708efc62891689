// Package gemini is the provider adapter for the Gemini API
// (generativelanguage, v1beta) on google.golang.org/genai, the successor of
// the deprecated github.com/google/generative-ai-go. It turns the generic
// chain.Request into a generateContent / streamGenerateContent call and
// every failure into one *chain.ProviderError, read with the Gemini profile
// of adapters/profile. It decides no retries: the SDK's own retry and
// automatic stream continuation are off.
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"google.golang.org/genai"

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/chain"
)

// DefaultBaseURL is the Gemini API endpoint used when Config.BaseURL is empty.
const DefaultBaseURL = "https://generativelanguage.googleapis.com/"

// Config describes one Gemini link. Name, Model and APIKey are required;
// an empty BaseURL means DefaultBaseURL; zero Timeouts fields mean no
// limit of that kind.
type Config struct {
	Name     string
	Model    string
	APIKey   string
	BaseURL  string
	Timeouts chain.Timeouts
}

// Client is a Gemini provider link. It is safe for concurrent use.
type Client struct {
	name      string
	model     string
	key       string
	prof      *profile.Profile
	transport *transport.Transport
	sdk       *genai.Client
}

var _ chain.Provider = (*Client)(nil)

// New builds a Client. It sends nothing over the network.
func New(ctx context.Context, cfg Config) (*Client, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("gemini: name is required")
	case cfg.Model == "":
		return nil, fmt.Errorf("gemini %s: model is required", cfg.Name)
	case cfg.APIKey == "":
		return nil, fmt.Errorf("gemini %s: api key is required", cfg.Name)
	}
	base := cfg.BaseURL
	if base == "" {
		// Set explicitly so that the SDK never falls back to its environment
		// variables.
		base = DefaultBaseURL
	}
	tr := transport.New(cfg.Name, cfg.Timeouts)
	sdk, err := genai.NewClient(ctx, &genai.ClientConfig{
		APIKey:     cfg.APIKey,
		Backend:    genai.BackendGeminiAPI,
		HTTPClient: tr.Client(),
		HTTPOptions: genai.HTTPOptions{
			BaseURL:    base,
			APIVersion: "v1beta",
		},
	})
	if err != nil {
		return nil, fmt.Errorf("gemini %s: new client: %w", cfg.Name, transport.Redact(err, cfg.APIKey))
	}
	return &Client{name: cfg.Name, model: cfg.Model, key: cfg.APIKey, prof: profile.Must(profile.Gemini), transport: tr, sdk: sdk}, nil
}

// Generate sends req and returns the answer. Thought parts are not answer
// text. InputTokens is usageMetadata.promptTokenCount; OutputTokens is
// candidatesTokenCount + thoughtsTokenCount, because Google bills thinking
// tokens at the output price; usage that cannot be true (negative counts,
// answer tokens far above max_tokens) sets UsageSuspect. A MAX_TOKENS
// finish is a Response with Truncated set. Every failure is a
// *chain.ProviderError. An answer outside 2xx is classified by the Gemini
// profile (profile.Failure): a 429 is rate_limited or quota_exhausted by
// its quotaId's window, with the longest of RetryInfo.retryDelay,
// Retry-After and "Please retry in …" as RetryAfter and each as sent in
// RetryRaw (an unreadable one makes RetryAfter transport.MaxDelay), or
// misconfigured when its quota's limit is 0; a 4xx other than 429 with
// API_KEY_INVALID is auth_error; "User location is not supported" and a
// model not found are misconfigured; an input over the model's token limit
// is too_large; any status outside 2xx, 4xx and 5xx is error whatever the
// body says. A safety/recitation block, a blocked prompt or an answer
// without candidates is blocked (status 200), a 200 body the SDK cannot
// decode is rejected with the body in Partial, and a stream that ends
// without a finish reason is stream_broken with the text so far in
// Partial.
func (c *Client) Generate(ctx context.Context, req chain.Request) (chain.Response, error) {
	cfg, err := c.config(req)
	if err != nil {
		return chain.Response{}, &chain.ProviderError{
			Provider: c.name, Outcome: chain.OutcomeError, Message: err.Error(), Cause: err,
			Quota: chain.QuotaHint{Remaining: -1},
		}
	}
	contents := []*genai.Content{{Role: genai.RoleUser, Parts: []*genai.Part{{Text: req.Prompt}}}}
	ex := new(transport.Exchange)
	ctx = transport.WithExchange(ctx, ex)

	ans := answer{maxTokens: req.MaxTokens}
	if req.Stream {
		for chunk, err := range c.sdk.Models.GenerateContentStream(ctx, c.model, contents, cfg) {
			if err != nil {
				return chain.Response{}, c.fail(ex, err, ans.text.String(), true)
			}
			ans.add(chunk)
		}
	} else {
		resp, err := c.sdk.Models.GenerateContent(ctx, c.model, contents, cfg)
		if err != nil {
			return chain.Response{}, c.fail(ex, err, "", false)
		}
		ans.add(resp)
	}
	return c.result(ex, &ans, req.Stream)
}

func (c *Client) config(req chain.Request) (*genai.GenerateContentConfig, error) {
	off := false
	cfg := &genai.GenerateContentConfig{AutomaticContinuation: &off}
	if req.System != "" {
		cfg.SystemInstruction = &genai.Content{Parts: []*genai.Part{{Text: req.System}}}
	}
	if len(req.Schema) > 0 {
		var schema map[string]any
		if err := json.Unmarshal(req.Schema, &schema); err != nil {
			return nil, fmt.Errorf("parse response schema: %w", err)
		}
		cfg.ResponseMIMEType = "application/json"
		cfg.ResponseJsonSchema = schema
	}
	if req.MaxTokens > 0 {
		cfg.MaxOutputTokens = int32(min(req.MaxTokens, 1<<31-1))
	}
	return cfg, nil
}

// answer accumulates the chunks of one answer (one chunk when not
// streaming).
type answer struct {
	text        strings.Builder
	model       string
	finish      genai.FinishReason
	finishMsg   string
	blocked     genai.BlockedReason
	blockMsg    string
	usage       *genai.GenerateContentResponseUsageMetadata
	candidates  bool
	chunksTotal int
	maxTokens   int // the request's maxOutputTokens; 0 = none sent
}

func (a *answer) add(r *genai.GenerateContentResponse) {
	if r == nil {
		return
	}
	a.chunksTotal++
	if r.ModelVersion != "" {
		a.model = r.ModelVersion
	}
	if r.UsageMetadata != nil {
		a.usage = r.UsageMetadata // running totals: the latest wins
	}
	if pf := r.PromptFeedback; pf != nil && pf.BlockReason != "" && pf.BlockReason != genai.BlockedReasonUnspecified {
		a.blocked, a.blockMsg = pf.BlockReason, pf.BlockReasonMessage
	}
	if len(r.Candidates) == 0 || r.Candidates[0] == nil {
		return
	}
	a.candidates = true
	cand := r.Candidates[0]
	if cand.Content != nil {
		for _, p := range cand.Content.Parts {
			if p != nil && !p.Thought {
				a.text.WriteString(p.Text)
			}
		}
	}
	if cand.FinishReason != "" && cand.FinishReason != genai.FinishReasonUnspecified {
		a.finish, a.finishMsg = cand.FinishReason, cand.FinishMessage
	}
}

func (c *Client) result(ex *transport.Exchange, a *answer, stream bool) (chain.Response, error) {
	text := a.text.String()
	pe := func(outcome chain.Outcome, msg string) error {
		return &chain.ProviderError{
			Provider: c.name, Status: ex.Status(), Outcome: outcome,
			Message: chain.Scrub(msg, c.key), Partial: text,
			FirstToken: ex.FirstByte(), Quota: chain.QuotaHint{Remaining: -1},
		}
	}
	switch {
	case a.blocked != "":
		return chain.Response{}, pe(chain.OutcomeBlocked, joinMsg("prompt blocked: "+string(a.blocked), a.blockMsg))
	case c.prof.Blocked(string(a.finish)):
		return chain.Response{}, pe(chain.OutcomeBlocked, joinMsg("answer blocked: finish reason "+string(a.finish), a.finishMsg))
	case stream && a.finish == "":
		return chain.Response{}, pe(chain.OutcomeStreamBroken, fmt.Sprintf("stream ended without a finish reason after %d chunks", a.chunksTotal))
	case !a.candidates:
		return chain.Response{}, pe(chain.OutcomeBlocked, "answer has no candidates")
	}
	resp := chain.Response{
		Text:         text,
		Model:        a.model,
		FinishReason: string(a.finish),
		Truncated:    a.finish == genai.FinishReasonMaxTokens,
		HTTPStatus:   ex.Status(),
		FirstToken:   ex.FirstByte(),
		Quota:        c.prof.Quota(ex.Header()),
	}
	if u := a.usage; u != nil {
		resp.InputTokens = int(u.PromptTokenCount)
		resp.OutputTokens = int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount)
		// Thinking tokens are not counted against maxOutputTokens.
		resp.UsageSuspect = profile.SuspectUsage(resp.InputTokens, int(u.CandidatesTokenCount), a.maxTokens, 0)
		if u.ThoughtsTokenCount < 0 && resp.UsageSuspect == "" {
			resp.UsageSuspect = profile.SuspectUsage(0, int(u.ThoughtsTokenCount), 0, 0)
		}
	}
	return resp, nil
}

func joinMsg(a, b string) string {
	if b == "" {
		return a
	}
	return a + ": " + b
}

// fail classifies a failed call. A transport failure (timeout, refused
// connection, broken stream, oversized body, cancelled context) wins over
// whatever the SDK made of it; then an answer outside 2xx, which the
// transport never hands to the SDK, is classified by the Gemini profile
// from its status, headers and body; an API error the SDK decoded inside a
// 200 stream (an error event) is stream_broken; any other SDK error on a
// 200 is a body that does not decode (rejected, the body kept); with no
// status the SDK refused the request before sending it (error).
func (c *Client) fail(ex *transport.Exchange, err error, partial string, stream bool) error {
	pe, done := transport.Failure(c.name, ex, err, partial, c.key)
	if done {
		pe.Quota = c.prof.Quota(ex.Header())
		return pe
	}
	if errors.Is(err, transport.ErrStatus) {
		got := c.prof.Failure(c.name, profile.Answer{Status: ex.Status(), Header: ex.Header(), Body: ex.Body()}, c.key, time.Now())
		got.FirstToken, got.Partial, got.Cause = pe.FirstToken, pe.Partial, pe.Cause
		return got
	}
	pe.Quota = c.prof.Quota(ex.Header())
	ae, isAPI := apiError(err)
	switch {
	case pe.Status == http.StatusOK && isAPI:
		// An error event inside a stream that had already started.
		pe.Outcome, pe.Message = chain.OutcomeStreamBroken, chain.Scrub(strings.TrimSpace(ae.Message), c.key)
	case pe.Status == http.StatusOK:
		pe.Outcome, pe.Message = chain.OutcomeRejected, chain.Scrub("the answer does not decode: "+err.Error(), c.key)
		pe.Partial = chain.Scrub(string(ex.Body()), c.key)
	case isAPI && ae.Code >= 400 && ae.Code <= 599:
		// An API error the SDK decoded with no status line seen (defensive).
		pe.Status = ae.Code
		w := profile.Words{Message: strings.TrimSpace(ae.Message), Status: ae.Status, Found: true}
		profile.GoogleDetails(&w, ae.Details)
		pe.Message = chain.Scrub(w.Message, c.key)
		c.prof.Classify(pe, w, ex.Header(), c.key, time.Now())
	default:
		pe.Outcome, pe.Message = chain.OutcomeError, chain.Scrub(err.Error(), c.key)
	}
	return pe
}

// apiError finds the SDK's APIError, which genai returns by value (and a
// caller might wrap as a pointer).
func apiError(err error) (genai.APIError, bool) {
	var v genai.APIError
	if errors.As(err, &v) {
		return v, true
	}
	var p *genai.APIError
	if errors.As(err, &p) && p != nil {
		return *p, true
	}
	return genai.APIError{}, false
}

// Package gemini is the provider adapter for the Gemini API
// (generativelanguage, v1beta) on google.golang.org/genai, the successor of
// the deprecated github.com/google/generative-ai-go. It turns the generic
// chain.Request into a generateContent / streamGenerateContent call and
// every failure into one *chain.ProviderError. It decides no retries: the
// SDK's own retry and automatic stream continuation are off.
package gemini

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/genai"

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
	return &Client{name: cfg.Name, model: cfg.Model, key: cfg.APIKey, transport: tr, sdk: sdk}, nil
}

// Generate sends req and returns the answer. Thought parts are not answer
// text. InputTokens is usageMetadata.promptTokenCount; OutputTokens is
// candidatesTokenCount + thoughtsTokenCount, because Google bills thinking
// tokens at the output price. A MAX_TOKENS finish is a Response with
// Truncated set. Every failure is a *chain.ProviderError: HTTP errors are
// classified (429 → rate_limited / quota_exhausted by the quotaId scope, with
// the longest of RetryInfo.retryDelay, Retry-After and "Please retry in …"
// as RetryAfter and each as sent in RetryRaw; an unreadable one makes
// RetryAfter transport.MaxDelay; a 4xx other than 429 with API_KEY_INVALID → auth_error; any
// status outside 2xx, 4xx and 5xx → error whatever the body says), a
// safety/recitation block, a blocked prompt
// or an answer without candidates is blocked (status 200), and a stream that
// ends without a finish reason is stream_broken with the text so far in
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

	var ans answer
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

// blockedFinish are the finish reasons that mean the answer was withheld.
var blockedFinish = map[genai.FinishReason]bool{
	genai.FinishReasonSafety:                 true,
	genai.FinishReasonRecitation:             true,
	genai.FinishReasonProhibitedContent:      true,
	genai.FinishReasonBlocklist:              true,
	genai.FinishReasonSPII:                   true,
	genai.FinishReasonImageSafety:            true,
	genai.FinishReasonImageProhibitedContent: true,
	genai.FinishReasonImageRecitation:        true,
}

func (c *Client) result(ex *transport.Exchange, a *answer, stream bool) (chain.Response, error) {
	text := a.text.String()
	pe := func(outcome chain.Outcome, msg string) error {
		return &chain.ProviderError{
			Provider: c.name, Status: ex.Status(), Outcome: outcome,
			Message: transport.Scrub(msg, c.key), Partial: text,
			FirstToken: ex.FirstByte(), Quota: chain.QuotaHint{Remaining: -1},
		}
	}
	switch {
	case a.blocked != "":
		return chain.Response{}, pe(chain.OutcomeBlocked, joinMsg("prompt blocked: "+string(a.blocked), a.blockMsg))
	case blockedFinish[a.finish]:
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
		Quota:        transport.QuotaFromHeaders(ex.Header()),
	}
	if u := a.usage; u != nil {
		resp.InputTokens = int(u.PromptTokenCount)
		resp.OutputTokens = int(u.CandidatesTokenCount) + int(u.ThoughtsTokenCount)
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
// transport never hands to the SDK, by its status and the error its body
// names; then an API error the SDK decoded (an error event inside a
// stream); anything else is error, or stream_broken when it happened inside
// a 200 stream.
func (c *Client) fail(ex *transport.Exchange, err error, partial string, stream bool) error {
	pe, done := transport.Failure(c.name, ex, err, partial, c.key)
	if done {
		return pe
	}
	ae, ok := apiError(err)
	if errors.Is(err, transport.ErrStatus) {
		ae, ok = bodyError(ex), true
	}
	if !ok {
		pe.Outcome = chain.OutcomeError
		if stream && pe.Status == http.StatusOK {
			pe.Outcome = chain.OutcomeStreamBroken
		}
		pe.Message = transport.Scrub(err.Error(), c.key)
		return pe
	}
	pe.Message = transport.Scrub(strings.TrimSpace(ae.Message), c.key)
	if pe.Status == http.StatusOK {
		// An error event inside a stream that had already started.
		pe.Outcome = chain.OutcomeStreamBroken
		return pe
	}
	if pe.Status == 0 {
		pe.Status = ae.Code
	}
	d := readDetails(ae.Details)
	// The status decides first: a 429 is a rate limit whatever reason its
	// body gives (the fuzzer sent API_KEY_INVALID under a 429).
	if d.reason == "API_KEY_INVALID" && pe.Status/100 == 4 && pe.Status != http.StatusTooManyRequests {
		pe.Outcome = chain.OutcomeAuthError
		return pe
	}
	if pe.Status == http.StatusTooManyRequests {
		pe.Scope = d.scope
		if pe.Scope == chain.ScopeNone {
			pe.Scope = transport.ScopeFromText(ae.Message)
		}
		// Every wait the provider names is a floor: keep the longest.
		var ds transport.Delays
		ds.Add("retryDelay", d.retryRaw, d.retryDelay, d.retryOK)
		ds.RetryAfter(ex.Header().Get("Retry-After"), time.Now())
		ds.Message(ae.Message)
		ds.Fill(pe, c.key)
	}
	pe.Outcome = transport.Classify(pe.Status, false, pe.Scope)
	return pe
}

// bodyError reads the error an answer outside 2xx names in its body, in
// the form the SDK decodes ({"error":{"code","message","status",
// "details"}}). A body without one gives the status and the start of the
// body as the message.
func bodyError(ex *transport.Exchange) genai.APIError {
	body := ex.Body()
	var env struct {
		Error *genai.APIError `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && env.Error != nil && strings.TrimSpace(env.Error.Message) != "" {
		return *env.Error
	}
	ae := genai.APIError{Code: ex.Status(), Message: transport.StatusMessage(ex.Status(), body)}
	if env.Error != nil {
		ae.Status, ae.Details = env.Error.Status, env.Error.Details
	}
	return ae
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

type details struct {
	retryRaw   string // RetryInfo.retryDelay as sent; empty when absent
	retryDelay time.Duration
	retryOK    bool
	scope      chain.Scope
	reason     string
}

// readDetails reads the google.rpc details of an error: RetryInfo's
// retryDelay, the scope of the QuotaFailure violations (a daily quotaId wins)
// and ErrorInfo's reason.
func readDetails(ds []map[string]any) details {
	var d details
	for _, m := range ds {
		typ, _ := m["@type"].(string)
		switch {
		case strings.HasSuffix(typ, "google.rpc.RetryInfo"):
			if v, ok := m["retryDelay"]; ok {
				d.retryRaw, d.retryDelay, d.retryOK = protoDuration(v)
			}
		case strings.HasSuffix(typ, "google.rpc.QuotaFailure"):
			vs, _ := m["violations"].([]any)
			for _, v := range vs {
				vm, _ := v.(map[string]any)
				id, _ := vm["quotaId"].(string)
				switch transport.ScopeFromText(id) {
				case chain.ScopeDay:
					d.scope = chain.ScopeDay
				case chain.ScopeMinute:
					if d.scope == chain.ScopeNone {
						d.scope = chain.ScopeMinute
					}
				}
			}
		case strings.HasSuffix(typ, "google.rpc.ErrorInfo"):
			if r, ok := m["reason"].(string); ok && d.reason == "" {
				d.reason = r
			}
		}
	}
	return d
}

// protoDuration reads a google.protobuf.Duration in its JSON form ("26s",
// "23.472316927s", "999999999s") or, defensively, as {"seconds":…,
// "nanos":…}, saturating at transport.MaxDelay. raw is the value as sent;
// ok is false when it cannot be read (a negative value included).
func protoDuration(v any) (raw string, d time.Duration, ok bool) {
	switch x := v.(type) {
	case string:
		d, ok := transport.ParseProtoDuration(x)
		return x, d, ok
	case map[string]any:
		b, _ := json.Marshal(x)
		raw = string(b)
		var secs float64
		switch s := x["seconds"].(type) {
		case float64:
			secs = s
		case string: // int64 fields are strings in proto JSON
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return raw, 0, false
			}
			secs = f
		default:
			return raw, 0, false
		}
		nanos, _ := x["nanos"].(float64)
		if secs < 0 || nanos < 0 || math.IsNaN(secs) || math.IsNaN(nanos) {
			return raw, 0, false
		}
		if secs+nanos/1e9 >= transport.MaxDelay.Seconds() {
			return raw, transport.MaxDelay, true
		}
		whole := math.Floor(secs)
		d := time.Duration(whole)*time.Second + time.Duration(math.Round((secs-whole)*1e9+nanos))
		return raw, min(d, transport.MaxDelay), true
	case nil:
		return "", 0, false
	}
	b, _ := json.Marshal(v)
	return string(b), 0, false
}

// Package openai is the provider adapter for OpenAI-compatible chat
// completion APIs (Groq, Cerebras, OpenRouter, Ollama, OpenAI…) on
// github.com/sashabaranov/go-openai. It turns the generic chain.Request into
// a /chat/completions call and every failure into one *chain.ProviderError,
// reading through the shared transport what the SDK drops: headers,
// unwrapped error bodies, OpenRouter's usage.cost and its error chunks. It
// decides no retries.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/chain"
)

// DefaultBaseURL is the API root used when Config.BaseURL is empty.
const DefaultBaseURL = "https://api.openai.com/v1"

// JSON output modes of Config.JSONMode.
const (
	JSONSchema = "json_schema" // response_format json_schema (strict) with Request.Schema
	JSONObject = "json_object" // response_format json_object
	JSONNone   = ""            // no response_format
)

// Config describes one OpenAI-compatible link. Name and Model are required;
// APIKey may be empty for a keyless local server; an empty BaseURL means
// DefaultBaseURL. JSONMode is JSONSchema, JSONObject or JSONNone; JSONSchema
// falls back to json_object for a request without a schema. Zero Timeouts
// fields mean no limit of that kind.
type Config struct {
	Name     string
	Model    string
	APIKey   string
	BaseURL  string
	JSONMode string
	Timeouts chain.Timeouts
}

// Client is an OpenAI-compatible provider link. It is safe for concurrent
// use.
type Client struct {
	name      string
	model     string
	key       string
	jsonMode  string
	transport *transport.Transport
	sdk       *goopenai.Client
}

var _ chain.Provider = (*Client)(nil)

// New builds a Client. It sends nothing over the network.
func New(cfg Config) (*Client, error) {
	switch {
	case cfg.Name == "":
		return nil, errors.New("openai: name is required")
	case cfg.Model == "":
		return nil, fmt.Errorf("openai %s: model is required", cfg.Name)
	}
	switch cfg.JSONMode {
	case JSONSchema, JSONObject, JSONNone:
	default:
		return nil, fmt.Errorf("openai %s: json mode %q: want %q, %q or empty", cfg.Name, cfg.JSONMode, JSONSchema, JSONObject)
	}
	tr := transport.New(cfg.Name, cfg.Timeouts)
	sc := goopenai.DefaultConfig(cfg.APIKey)
	sc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
	if sc.BaseURL == "" {
		sc.BaseURL = DefaultBaseURL
	}
	sc.HTTPClient = tr.Client()
	// go-openai counts every non-data line (blank separators, keep-alive
	// comments such as ": OPENROUTER PROCESSING") against this limit and
	// fails the stream past it. The transport's first-token/idle timers and
	// body limit bound a stream instead.
	sc.EmptyMessagesLimit = 1 << 20
	return &Client{
		name:      cfg.Name,
		model:     cfg.Model,
		key:       cfg.APIKey,
		jsonMode:  cfg.JSONMode,
		transport: tr,
		sdk:       goopenai.NewClientWithConfig(sc),
	}, nil
}

// Generate sends req and returns the answer. A finish_reason "length" is a
// Response with Truncated set; OpenRouter's usage.cost fills CostUSD (stream
// and non-stream); rate-limit headers fill Quota (Cerebras
// x-ratelimit-remaining-requests-day, else x-ratelimit-remaining-requests,
// which Groq counts per day). Every failure is a *chain.ProviderError: HTTP
// errors are classified with their scope (day: "per day (TPD/RPD)",
// "free-models-per-day", code token_quota_exceeded or
// x-ratelimit-remaining-requests-day 0; minute: "per minute", code
// request_quota_exceeded), the longest of Retry-After and "try again in …"
// as RetryAfter, OpenRouter's metadata X-RateLimit-Reset as ResetAt, and
// each of them as sent in RetryRaw (an unreadable one makes RetryAfter
// transport.MaxDelay). An
// error inside an answer that had already started with status 200 (an
// OpenRouter error chunk, finish_reason "error") and a stream that ends
// without a finish reason are stream_broken with the text so far in Partial.
// finish_reason "content_filter" is blocked.
func (c *Client) Generate(ctx context.Context, req chain.Request) (chain.Response, error) {
	ex := new(transport.Exchange)
	ctx = transport.WithExchange(ctx, ex)
	r, err := c.request(req)
	if err != nil {
		return chain.Response{}, &chain.ProviderError{
			Provider: c.name, Outcome: chain.OutcomeError, Message: err.Error(), Cause: err,
			Quota: chain.QuotaHint{Remaining: -1},
		}
	}
	if req.Stream {
		return c.stream(ctx, ex, r)
	}
	return c.unary(ctx, ex, r)
}

func (c *Client) request(req chain.Request) (goopenai.ChatCompletionRequest, error) {
	var msgs []goopenai.ChatCompletionMessage
	if req.System != "" {
		msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleSystem, Content: req.System})
	}
	msgs = append(msgs, goopenai.ChatCompletionMessage{Role: goopenai.ChatMessageRoleUser, Content: req.Prompt})
	r := goopenai.ChatCompletionRequest{Model: c.model, Messages: msgs}
	if req.MaxTokens > 0 {
		r.MaxTokens = req.MaxTokens
		// The SDK refuses max_tokens for OpenAI reasoning models.
		if err := goopenai.NewReasoningValidator().Validate(r); errors.Is(err, goopenai.ErrReasoningModelMaxTokensDeprecated) {
			r.MaxTokens, r.MaxCompletionTokens = 0, req.MaxTokens
		}
	}
	switch {
	case c.jsonMode == JSONSchema && len(req.Schema) > 0:
		if !json.Valid(req.Schema) {
			return r, errors.New("response schema is not valid JSON")
		}
		r.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
				Name:   "answer",
				Schema: json.RawMessage(req.Schema),
				Strict: true,
			},
		}
	case c.jsonMode == JSONSchema, c.jsonMode == JSONObject:
		r.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return r, nil
}

func (c *Client) unary(ctx context.Context, ex *transport.Exchange, r goopenai.ChatCompletionRequest) (chain.Response, error) {
	resp, err := c.sdk.CreateChatCompletion(ctx, r)
	if err != nil {
		return chain.Response{}, c.fail(ex, err, "")
	}
	var x extras
	ex.ReadBody(x.decode) // the SDK decoded it already; extras are optional
	if x.Error != nil {
		return chain.Response{}, c.broken(ex, x.Error.text(), firstText(resp))
	}
	if len(resp.Choices) == 0 {
		return chain.Response{}, c.broken(ex, "answer has no choices", "")
	}
	ch := resp.Choices[0]
	a := answer{
		model:  resp.Model,
		finish: string(ch.FinishReason),
		usage:  resp.Usage,
	}
	a.text = ch.Message.Content
	a.addCost(x)
	return c.result(ex, &a)
}

func firstText(resp goopenai.ChatCompletionResponse) string {
	if len(resp.Choices) == 0 {
		return ""
	}
	return resp.Choices[0].Message.Content
}

func (c *Client) stream(ctx context.Context, ex *transport.Exchange, r goopenai.ChatCompletionRequest) (chain.Response, error) {
	r.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	st, err := c.sdk.CreateChatCompletionStream(ctx, r)
	if err != nil {
		return chain.Response{}, c.fail(ex, err, "")
	}
	defer st.Close()
	var a answer
	var text strings.Builder
	for {
		raw, err := st.RecvRaw()
		if errors.Is(err, io.EOF) && ex.Err() == nil {
			break
		}
		if err != nil {
			return chain.Response{}, c.fail(ex, err, text.String())
		}
		var chunk goopenai.ChatCompletionStreamResponse
		if err := json.Unmarshal(raw, &chunk); err != nil {
			return chain.Response{}, c.broken(ex, "malformed stream chunk: "+err.Error(), text.String())
		}
		var x extras
		x.decode(raw)
		if x.Error != nil {
			return chain.Response{}, c.broken(ex, x.Error.text(), text.String())
		}
		if chunk.Model != "" {
			a.model = chunk.Model
		}
		for _, choice := range chunk.Choices {
			if choice.Index != 0 {
				continue
			}
			text.WriteString(choice.Delta.Content)
			if choice.FinishReason != "" {
				a.finish = string(choice.FinishReason)
			}
		}
		if chunk.Usage != nil {
			a.usage = *chunk.Usage
		} else if x.XGroq != nil && x.XGroq.Usage != nil && a.usage.TotalTokens == 0 {
			a.usage = *x.XGroq.Usage
		}
		a.addCost(x)
	}
	if a.finish == "" {
		return chain.Response{}, c.broken(ex, "stream ended without a finish reason", text.String())
	}
	a.text = text.String()
	return c.result(ex, &a)
}

// answer is one answer as read (a stream's once it ended).
type answer struct {
	text      string
	model     string
	finish    string
	usage     goopenai.Usage
	cost      float64
	costKnown bool
}

func (a *answer) addCost(x extras) {
	if x.Usage != nil && x.Usage.Cost != nil {
		a.cost, a.costKnown = *x.Usage.Cost, true
	}
}

func (c *Client) result(ex *transport.Exchange, a *answer) (chain.Response, error) {
	text := a.text
	switch a.finish {
	case "error":
		return chain.Response{}, c.broken(ex, "finish reason error", text)
	case string(goopenai.FinishReasonContentFilter):
		return chain.Response{}, &chain.ProviderError{
			Provider: c.name, Status: ex.Status(), Outcome: chain.OutcomeBlocked,
			Message: "answer blocked: finish reason content_filter", Partial: text,
			FirstToken: ex.FirstByte(), Quota: transport.QuotaFromHeaders(ex.Header()),
		}
	}
	return chain.Response{
		Text:         text,
		Model:        a.model,
		FinishReason: a.finish,
		Truncated:    a.finish == string(goopenai.FinishReasonLength),
		InputTokens:  a.usage.PromptTokens,
		OutputTokens: a.usage.CompletionTokens,
		CostUSD:      a.cost,
		CostKnown:    a.costKnown,
		HTTPStatus:   ex.Status(),
		FirstToken:   ex.FirstByte(),
		Quota:        transport.QuotaFromHeaders(ex.Header()),
	}, nil
}

// broken is the error for an answer that failed after it had started.
func (c *Client) broken(ex *transport.Exchange, msg, partial string) error {
	return &chain.ProviderError{
		Provider: c.name, Status: ex.Status(), Outcome: chain.OutcomeStreamBroken,
		Message: transport.Scrub(msg, c.key), Partial: partial,
		FirstToken: ex.FirstByte(), Quota: transport.QuotaFromHeaders(ex.Header()),
	}
}

// fail classifies a failed call. A transport failure (timeout, refused
// connection, broken connection, oversized body, cancelled context) wins
// over whatever the SDK made of it. An answer outside 2xx never reaches the
// SDK (the transport refuses it), so it is classified by its status and the
// error body as the provider sent it (wrapped in "error" or, as Cerebras
// does, not); an SDK error, last, fills what the body did not say.
func (c *Client) fail(ex *transport.Exchange, err error, partial string) error {
	h := ex.Header()
	pe, done := transport.Failure(c.name, ex, err, partial, c.key)
	if done {
		return pe
	}

	w, _ := parseError(ex.Body())
	var ae *goopenai.APIError
	var re *goopenai.RequestError
	switch {
	case errors.As(err, &ae):
		if w.Message == "" {
			w.Message = ae.Message
		}
		if w.code() == "" && ae.Code != nil {
			w.Code, _ = json.Marshal(ae.Code)
		}
		if pe.Status == 0 {
			pe.Status = ae.HTTPStatusCode
		}
	case errors.As(err, &re):
		if w.Message == "" {
			w, _ = parseError(re.Body)
		}
		if pe.Status == 0 {
			pe.Status = re.HTTPStatusCode
		}
	}
	msg := w.text()
	switch {
	case msg != "":
	case errors.Is(err, transport.ErrStatus):
		msg = transport.StatusMessage(pe.Status, ex.Body())
	default:
		msg = err.Error()
	}
	pe.Message = transport.Scrub(msg, c.key)
	switch pe.Status {
	case 0:
		pe.Outcome = chain.OutcomeError // the SDK refused the request; nothing was sent
		return pe
	case http.StatusOK:
		pe.Outcome = chain.OutcomeStreamBroken // an error inside an answer that had started
		return pe
	}
	code := w.code()
	// A body's rate-limit code is believed on a 4xx or 5xx (Groq's 413); on
	// any other status (1xx, 3xx, 600 and up) the body says nothing.
	rateLimit := pe.Status == http.StatusTooManyRequests || (pe.Status >= 400 && pe.Status <= 599 && code == "rate_limit_exceeded")
	if rateLimit {
		pe.Scope = scope(h, w, code)
		delays(h, w).Fill(pe, c.key)
	}
	pe.Outcome = transport.Classify(pe.Status, rateLimit, pe.Scope)
	return pe
}

// delays collects the waits a rate-limit answer names: Retry-After, "try
// again in …" in the message (each a floor: the longest wins) and
// OpenRouter's X-RateLimit-Reset, from the error's metadata or else the
// answer's headers.
func delays(h http.Header, w wireError) *transport.Delays {
	now := time.Now()
	ds := new(transport.Delays)
	ds.RetryAfter(h.Get("Retry-After"), now)
	ds.Message(w.Message)
	if v := w.metaHeader("X-RateLimit-Reset"); strings.TrimSpace(v) != "" {
		ds.Epoch("metadata X-RateLimit-Reset", v, now)
	} else {
		ds.Epoch("X-RateLimit-Reset", h.Get("X-RateLimit-Reset"), now)
	}
	return ds
}

// scope decides the window of a rate limit; a daily signal wins.
func scope(h http.Header, w wireError, code string) chain.Scope {
	text := transport.ScopeFromText(w.Message)
	switch {
	case text == chain.ScopeDay, code == "token_quota_exceeded",
		strings.TrimSpace(h.Get("x-ratelimit-remaining-requests-day")) == "0",
		transport.ScopeFromText(w.metaRaw()) == chain.ScopeDay:
		return chain.ScopeDay
	case text == chain.ScopeMinute, code == "request_quota_exceeded":
		return chain.ScopeMinute
	}
	return chain.ScopeNone
}

// extras are the fields of an answer or chunk that the SDK drops.
type extras struct {
	Usage *struct {
		Cost *float64 `json:"cost"`
	} `json:"usage"`
	Error *wireError `json:"error"`
	XGroq *struct {
		Usage *goopenai.Usage `json:"usage"`
	} `json:"x_groq"`
}

// extrasKeys are the keys without which nothing the adapter reads from
// extras can be set: usage.cost, error and x_groq (every answer has a
// usage object, but without a "cost" key its Cost stays nil).
var extrasKeys = []string{"cost", "error", "x_groq"}

// decode fills x from an answer or chunk. Most answers hold none of
// extrasKeys, and the SDK decoded the body already: a body in which
// mayHoldKey finds none of them is not decoded a second time (the decode
// could set nothing the adapter reads).
func (x *extras) decode(body []byte) {
	if !mayHoldKey(body, extrasKeys) {
		return
	}
	_ = json.Unmarshal(body, x)
}

// mayHoldKey reports whether body may hold a JSON object key that
// encoding/json would match to one of keys (lower-case ASCII): false only
// when no '"' in body starts such a key. A name is compared ASCII
// case-insensitively; a \u escape or a byte outside ASCII (a rune that
// folds to an ASCII letter, such as U+017F for 's') before the first
// mismatch counts as a possible match (the other escapes decode to no
// letter of a key, nor to its closing quote). Strings that are not keys
// (the answer text itself) can only make false positives, which cost one
// decode.
func mayHoldKey(body []byte, keys []string) bool {
	for i := 0; ; {
		q := bytes.IndexByte(body[i:], '"')
		if q < 0 {
			return false
		}
		i += q + 1
		for _, k := range keys {
			if keyAt(body[i:], k) {
				return true
			}
		}
	}
}

// keyAt reports whether b (the bytes after an opening quote) may start the
// string k followed by its closing quote, as mayHoldKey describes.
func keyAt(b []byte, k string) bool {
	for n := 0; n <= len(k); n++ {
		if n == len(b) {
			return false
		}
		c := b[n]
		if c >= utf8.RuneSelf || c == '\\' && n+1 < len(b) && b[n+1] == 'u' {
			return true
		}
		if n == len(k) {
			return c == '"'
		}
		if c != k[n] && (c|0x20 != k[n] || k[n] < 'a' || k[n] > 'z') {
			return false
		}
	}
	return false
}

// wireError is a provider error object: OpenAI-style, Groq, Cerebras
// (unwrapped) and OpenRouter (with metadata).
type wireError struct {
	Message  string          `json:"message"`
	Type     string          `json:"type"`
	Code     json.RawMessage `json:"code"`
	Metadata struct {
		Headers map[string]json.RawMessage `json:"headers"`
		Raw     json.RawMessage            `json:"raw"`
	} `json:"metadata"`
}

// parseError reads an error body, wrapped in "error" or not.
func parseError(body []byte) (wireError, bool) {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Error) > 0 {
		var w wireError
		if json.Unmarshal(env.Error, &w) == nil && (w.Message != "" || len(w.Code) > 0) {
			return w, true
		}
		var s string
		if json.Unmarshal(env.Error, &s) == nil && s != "" {
			return wireError{Message: s}, true
		}
	}
	var w wireError
	if json.Unmarshal(body, &w) == nil && w.Message != "" {
		return w, true
	}
	return wireError{}, false
}

func (w wireError) code() string {
	return unquote(w.Code)
}

func (w wireError) metaHeader(name string) string {
	for k, v := range w.Metadata.Headers {
		if strings.EqualFold(k, name) {
			return unquote(v)
		}
	}
	return ""
}

func (w wireError) metaRaw() string { return unquote(w.Metadata.Raw) }

func (w wireError) text() string {
	msg := w.Message
	if raw := w.metaRaw(); raw != "" && !strings.Contains(msg, raw) {
		msg = joinMsg(msg, "upstream: "+raw)
	}
	if code := w.code(); code != "" && code != "null" {
		msg = joinMsg(msg, "code "+code)
	}
	return msg
}

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " (" + b + ")"
}

func unquote(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return strings.TrimSpace(string(raw))
}

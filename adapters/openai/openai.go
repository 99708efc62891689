// Package openai is the provider adapter for OpenAI-compatible chat
// completion APIs (Groq, Cerebras, OpenRouter, Ollama, OpenAI…) on
// github.com/sashabaranov/go-openai. It turns the generic chain.Request into
// a /chat/completions call and every failure into one *chain.ProviderError,
// reading through the shared transport what the SDK drops: headers,
// unwrapped error bodies, OpenRouter's usage.cost and its error chunks. What
// each vendor's answers mean (its error shapes, limit windows, quota headers,
// the bodies that mean a misconfigured link or a request too large) is its
// profile in adapters/profile, chosen by Config.Provider. It decides no
// retries.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf8"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/contentpipe/contentpipe/adapters/profile"
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
// falls back to json_object for a request without a schema. Provider names
// the profile the link's answers are read with (groq, cerebras, openrouter,
// openai); "" means profile.Detect's pick from BaseURL and Name. Zero
// Timeouts fields mean no limit of that kind.
type Config struct {
	Name     string
	Model    string
	APIKey   string
	BaseURL  string
	JSONMode string
	Provider profile.ID
	Timeouts chain.Timeouts
}

// Client is an OpenAI-compatible provider link. It is safe for concurrent
// use.
type Client struct {
	name      string
	model     string
	key       string
	jsonMode  string
	prof      *profile.Profile
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
	prof, err := profile.Resolve(profile.KindOpenAI, cfg.Provider, cfg.Name, cfg.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("openai %s: %w", cfg.Name, err)
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
		prof:      prof,
		transport: tr,
		sdk:       goopenai.NewClientWithConfig(sc),
	}, nil
}

// Generate sends req and returns the answer. A finish_reason "length" is a
// Response with Truncated set; OpenRouter's usage.cost fills CostUSD (stream
// and non-stream); the profile's daily quota headers fill Quota; usage that
// cannot be true (negative counts or cost, output far above max_tokens)
// sets UsageSuspect. Every failure is a *chain.ProviderError. An answer
// outside 2xx is classified by the link's profile (profile.Failure): its
// outcome (rate_limited or quota_exhausted by the window the headers and
// words name, too_large, misconfigured with a Fix, blocked for a refused
// content, else by chain.StatusOutcome), every wait it names (the longest
// as RetryAfter, an epoch reset as ResetAt, each as sent in RetryRaw; an
// unreadable one makes RetryAfter transport.MaxDelay). A 200 whose body
// does not decode as a completion (no choices, a field of the wrong type,
// a malformed chunk) is rejected with the body in Partial. An error inside
// an answer that had already started with status 200 (an OpenRouter error
// chunk, finish_reason "error") and a stream that ends without a finish
// reason are stream_broken with the text so far in Partial. A finish
// reason the profile calls blocked ("content_filter") is blocked.
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
		return c.stream(ctx, ex, r, req.MaxTokens)
	}
	return c.unary(ctx, ex, r, req.MaxTokens)
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
		strict, err := StrictSchema(req.Schema)
		if err != nil {
			return r, fmt.Errorf("response schema: %w", err)
		}
		r.ResponseFormat = &goopenai.ChatCompletionResponseFormat{
			Type: goopenai.ChatCompletionResponseFormatTypeJSONSchema,
			JSONSchema: &goopenai.ChatCompletionResponseFormatJSONSchema{
				Name:   "answer",
				Schema: json.RawMessage(strict),
				Strict: true,
			},
		}
	case c.jsonMode == JSONSchema, c.jsonMode == JSONObject:
		r.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	return r, nil
}

func (c *Client) unary(ctx context.Context, ex *transport.Exchange, r goopenai.ChatCompletionRequest, maxTokens int) (chain.Response, error) {
	resp, err := c.sdk.CreateChatCompletion(ctx, r)
	if err != nil {
		return chain.Response{}, c.fail(ex, err, "", false)
	}
	var x extras
	ex.ReadBody(x.decode) // the SDK decoded it already; extras are optional
	if x.Error != nil {
		return chain.Response{}, c.broken(ex, x.Error.Words().Text(), firstText(resp))
	}
	if len(resp.Choices) == 0 {
		return chain.Response{}, c.rejected(ex, "answer has no choices")
	}
	ch := resp.Choices[0]
	a := answer{
		model:     resp.Model,
		finish:    string(ch.FinishReason),
		usage:     resp.Usage,
		maxTokens: maxTokens,
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

func (c *Client) stream(ctx context.Context, ex *transport.Exchange, r goopenai.ChatCompletionRequest, maxTokens int) (chain.Response, error) {
	r.StreamOptions = &goopenai.StreamOptions{IncludeUsage: true}
	st, err := c.sdk.CreateChatCompletionStream(ctx, r)
	if err != nil {
		return chain.Response{}, c.fail(ex, err, "", true)
	}
	defer st.Close()
	a := answer{maxTokens: maxTokens}
	var text strings.Builder
	for {
		raw, err := st.RecvRaw()
		if errors.Is(err, io.EOF) && ex.Err() == nil {
			break
		}
		if err != nil {
			return chain.Response{}, c.fail(ex, err, text.String(), true)
		}
		var chunk goopenai.ChatCompletionStreamResponse
		if err := json.Unmarshal(raw, &chunk); err != nil {
			return chain.Response{}, c.rejected(ex, "malformed stream chunk: "+err.Error())
		}
		var x extras
		x.decode(raw)
		if x.Error != nil {
			return chain.Response{}, c.broken(ex, x.Error.Words().Text(), text.String())
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
	maxTokens int // the request's max_tokens; 0 = none sent
}

func (a *answer) addCost(x extras) {
	if x.Usage != nil && x.Usage.Cost != nil {
		a.cost, a.costKnown = *x.Usage.Cost, true
	}
}

func (c *Client) result(ex *transport.Exchange, a *answer) (chain.Response, error) {
	text := a.text
	switch {
	case a.finish == "error":
		return chain.Response{}, c.broken(ex, "finish reason error", text)
	case c.prof.Blocked(a.finish):
		return chain.Response{}, &chain.ProviderError{
			Provider: c.name, Status: ex.Status(), Outcome: chain.OutcomeBlocked,
			Message: "answer blocked: finish reason " + a.finish, Partial: text,
			FirstToken: ex.FirstByte(), Quota: c.prof.Quota(ex.Header()),
		}
	}
	cost := 0.0
	if a.costKnown {
		cost = a.cost
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
		Quota:        c.prof.Quota(ex.Header()),
		UsageSuspect: profile.SuspectUsage(a.usage.PromptTokens, a.usage.CompletionTokens, a.maxTokens, cost),
	}, nil
}

// broken is the error for an answer that failed after it had started.
func (c *Client) broken(ex *transport.Exchange, msg, partial string) error {
	return &chain.ProviderError{
		Provider: c.name, Status: ex.Status(), Outcome: chain.OutcomeStreamBroken,
		Message: chain.Scrub(msg, c.key), Partial: chain.Scrub(partial, c.key),
		FirstToken: ex.FirstByte(), Quota: c.prof.Quota(ex.Header()),
	}
}

// rejected is the error for a 200 whose body is no completion: the
// provider answered, but not with an answer. The body is kept in Partial.
func (c *Client) rejected(ex *transport.Exchange, msg string) error {
	return &chain.ProviderError{
		Provider: c.name, Status: ex.Status(), Outcome: chain.OutcomeRejected,
		Message: chain.Scrub("the answer is no completion: "+msg, c.key), Partial: chain.Scrub(string(ex.Body()), c.key),
		FirstToken: ex.FirstByte(), Quota: c.prof.Quota(ex.Header()),
	}
}

// fail classifies a failed call. A transport failure (timeout, refused
// connection, broken connection, oversized body, cancelled context) wins
// over whatever the SDK made of it. An answer outside 2xx never reaches the
// SDK (the transport refuses it): the link's profile classifies it from its
// status, headers and body as the provider sent them. An SDK error on a
// 200 is a body that does not decode (rejected) or, inside a stream that
// had started, a broken stream; with no status the SDK refused the request
// before sending it.
func (c *Client) fail(ex *transport.Exchange, err error, partial string, stream bool) error {
	pe, done := transport.Failure(c.name, ex, err, partial, c.key)
	if done {
		pe.Quota = c.prof.Quota(ex.Header())
		return pe
	}
	switch {
	case errors.Is(err, transport.ErrStatus):
		got := c.prof.Failure(c.name, profile.Answer{Status: ex.Status(), Header: ex.Header(), Body: ex.Body()}, c.key, time.Now())
		got.FirstToken, got.Partial, got.Cause = pe.FirstToken, pe.Partial, pe.Cause
		return got
	case pe.Status == 0:
		pe.Outcome = chain.OutcomeError // the SDK refused the request; nothing was sent
		pe.Message = chain.Scrub(err.Error(), c.key)
		return pe
	case stream && partial != "":
		return c.broken(ex, err.Error(), partial)
	}
	return c.rejected(ex, err.Error())
}

// extras are the fields of an answer or chunk that the SDK drops.
type extras struct {
	Usage *struct {
		Cost *float64 `json:"cost"`
	} `json:"usage"`
	Error *profile.ErrorObject `json:"error"`
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

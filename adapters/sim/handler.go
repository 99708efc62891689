package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
)

// op is the kind of API call a request path names.
type op int

const (
	opChat           op = iota + 1 // OpenAI-compatible POST .../chat/completions
	opGenerate                     // Gemini :generateContent
	opStreamGenerate               // Gemini :streamGenerateContent
)

// call is the parsed request, reduced to what the simulation needs.
type call struct {
	op           op
	model        string
	stream       bool
	includeUsage bool // stream_options.include_usage
	jsonMode     bool // response_format / responseMimeType asked for JSON
	maxTokens    int  // max_tokens / maxOutputTokens; 0 = none
	thoughts     bool // Gemini thinkingConfig.includeThoughts
	user         string
	system       string
}

// inputTokens estimates the prompt size: characters / 4 plus a little
// per-message framing, as the real tokenizers roughly do.
func (c call) inputTokens() int {
	n := (utf8.RuneCountInString(c.user) + utf8.RuneCountInString(c.system)) / 4
	return n + 8
}

// route maps a path to the operation this flavor serves there.
func (s *Server) route(path string) (op, string, bool) {
	if s.flavor == FlavorGemini {
		for _, prefix := range []string{"/v1beta/models/", "/v1/models/", "/v1alpha/models/"} {
			rest, ok := strings.CutPrefix(path, prefix)
			if !ok {
				continue
			}
			model, method, ok := strings.Cut(rest, ":")
			if !ok || model == "" {
				return 0, "", false
			}
			switch method {
			case "generateContent":
				return opGenerate, model, true
			case "streamGenerateContent":
				return opStreamGenerate, model, true
			}
		}
		return 0, "", false
	}
	var prefixes []string
	switch s.flavor {
	case FlavorGroq:
		prefixes = []string{"/openai/v1"}
	case FlavorCerebras:
		prefixes = []string{"/v1"}
	case FlavorOpenRouter:
		prefixes = []string{"/api/v1", "/v1"}
	}
	for _, p := range prefixes {
		if path == p+"/chat/completions" {
			return opChat, "", true
		}
	}
	return 0, "", false
}

// authorized reports whether the request carries the flavor's auth header
// (any value).
func (s *Server) authorized(r *http.Request) bool {
	if s.flavor == FlavorGemini {
		return r.Header.Get("x-goog-api-key") != "" || r.URL.Query().Get("key") != ""
	}
	tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && strings.TrimSpace(tok) != ""
}

// ServeHTTP serves the flavor's API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	o, model, ok := s.route(r.URL.Path)
	if !ok {
		s.writeReply(w, s.notFound(r))
		return
	}
	if r.Method != http.MethodPost {
		s.writeReply(w, s.badMethod(r))
		return
	}
	s.mu.Lock()
	s.served++
	n := s.served
	now := s.prof.now()
	s.mu.Unlock()

	if !s.authorized(r) {
		s.writeReply(w, s.faultReply(turn{n: n, fault: FaultUnauthorized, prof: s.profile()}, call{model: model}, now, true))
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return // the client went away
	}
	c, err := parseCall(o, model, body)
	if err != nil {
		s.writeReply(w, s.badRequest(err.Error()))
		return
	}
	t := s.draw(n)
	now = t.prof.now()
	s.rateHeaders(w.Header(), t, c, now)

	switch t.fault {
	case FaultRateMinute, FaultRateDay, FaultUnavailable, FaultServerError,
		FaultUnauthorized, FaultInvalidKey, FaultForbidden:
		s.writeReply(w, s.faultReply(t, c, now, false))
		return
	case FaultBlocked:
		if s.flavor != FlavorGemini {
			s.writeReply(w, s.faultReply(t, c, now, false))
			return
		}
	case FaultHang:
		s.hold(r.Context(), 0) // never returns
		return
	}
	a := s.compose(t, c)
	if s.flavor == FlavorGemini {
		s.answerGemini(w, r, t, c, a, now)
		return
	}
	s.answerOpenAI(w, r, t, c, a, now)
}

func (s *Server) profile() Profile {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prof
}

// wait pauses for d (forever when d is 0) unless the request ends or the
// server closes first. It reports whether the full pause elapsed.
func (s *Server) wait(ctx context.Context, d time.Duration) bool {
	var tc <-chan time.Time
	if d > 0 {
		tm := time.NewTimer(d)
		defer tm.Stop()
		tc = tm.C
	}
	select {
	case <-tc:
		return true
	case <-ctx.Done():
		return false
	case <-s.done:
		return false
	}
}

// hold pauses like wait, but when the pause is interrupted it drops the
// connection without finishing the response, so that a closed server never
// leaves a hanging or half-sent request looking like a complete answer.
func (s *Server) hold(ctx context.Context, d time.Duration) {
	if !s.wait(ctx, d) {
		panic(http.ErrAbortHandler)
	}
}

// parseCall decodes the request body of either wire format.
func parseCall(o op, model string, body []byte) (call, error) {
	c := call{op: o, model: model}
	if o == opChat {
		return parseChatCall(c, body)
	}
	return parseGeminiCall(c, body)
}

// parseChatCall reads a chat-completions request body into c.
func parseChatCall(c call, body []byte) (call, error) {
	var req struct {
		Model    string `json:"model"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
		Stream        bool `json:"stream"`
		StreamOptions *struct {
			IncludeUsage bool `json:"include_usage"`
		} `json:"stream_options"`
		MaxTokens           int `json:"max_tokens"`
		MaxCompletionTokens int `json:"max_completion_tokens"`
		ResponseFormat      *struct {
			Type string `json:"type"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return c, fmt.Errorf("invalid JSON body: %v", err)
	}
	if req.Model == "" {
		return c, errors.New("'model' is required")
	}
	if len(req.Messages) == 0 {
		return c, errors.New("'messages' must contain at least one message")
	}
	c.model = req.Model
	c.stream = req.Stream
	c.includeUsage = req.StreamOptions != nil && req.StreamOptions.IncludeUsage
	c.maxTokens = req.MaxCompletionTokens
	if c.maxTokens == 0 {
		c.maxTokens = req.MaxTokens
	}
	c.jsonMode = req.ResponseFormat != nil && req.ResponseFormat.Type != "" && req.ResponseFormat.Type != "text"
	var user, system []string
	for _, m := range req.Messages {
		text, err := messageText(m.Content)
		if err != nil {
			return c, fmt.Errorf("message content: %v", err)
		}
		if m.Role == "system" || m.Role == "developer" {
			system = append(system, text)
		} else if m.Role == "user" {
			user = append(user, text)
		}
	}
	c.user = strings.Join(user, "\n")
	c.system = strings.Join(system, "\n")
	return c, nil
}

// parseGeminiCall reads a generateContent request body into c.
func parseGeminiCall(c call, body []byte) (call, error) {
	type part struct {
		Text    string `json:"text"`
		Thought bool   `json:"thought"`
	}
	var req struct {
		Contents []struct {
			Role  string `json:"role"`
			Parts []part `json:"parts"`
		} `json:"contents"`
		SystemInstruction *struct {
			Parts []part `json:"parts"`
		} `json:"systemInstruction"`
		GenerationConfig *struct {
			ResponseMimeType string `json:"responseMimeType"`
			MaxOutputTokens  int    `json:"maxOutputTokens"`
			ThinkingConfig   *struct {
				IncludeThoughts bool `json:"includeThoughts"`
			} `json:"thinkingConfig"`
		} `json:"generationConfig"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return c, fmt.Errorf("invalid JSON payload received: %v", err)
	}
	if len(req.Contents) == 0 {
		return c, errors.New("contents is not specified")
	}
	c.stream = c.op == opStreamGenerate
	var user, system []string
	for _, ct := range req.Contents {
		if ct.Role != "" && ct.Role != "user" {
			continue
		}
		for _, p := range ct.Parts {
			user = append(user, p.Text)
		}
	}
	if req.SystemInstruction != nil {
		for _, p := range req.SystemInstruction.Parts {
			system = append(system, p.Text)
		}
	}
	if g := req.GenerationConfig; g != nil {
		c.jsonMode = strings.Contains(g.ResponseMimeType, "json")
		c.maxTokens = g.MaxOutputTokens
		c.thoughts = g.ThinkingConfig != nil && g.ThinkingConfig.IncludeThoughts
	}
	c.user = strings.Join(user, "\n")
	c.system = strings.Join(system, "\n")
	return c, nil
}

// messageText accepts both content forms of the chat API: a string, or an
// array of parts of which the text ones count.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", err
	}
	var out []string
	for _, p := range parts {
		if p.Type == "text" || p.Type == "" {
			out = append(out, p.Text)
		}
	}
	return strings.Join(out, "\n"), nil
}

// finish is how an answer ends, mapped to each wire's spelling.
type finish int

const (
	finishStop finish = iota
	finishLength
	finishSafety
	finishError
)

// answer is the generated 200 answer of one request.
type answer struct {
	text          string
	thought       string // Gemini thought summary (includeThoughts only)
	finish        finish
	in, out       int // usage tokens
	thoughtTokens int
	cut           bool          // drop the connection before the end event
	errorChunk    bool          // OpenRouter mid-stream error chunk
	blockFeedback bool          // Gemini: candidates [] + promptFeedback
	slow          time.Duration // pause before the first chunk
	comments      int           // OpenRouter keep-alive comments before data
}

// compose generates the answer text for a 200 answer under fault t.fault.
func (s *Server) compose(t turn, c call) answer {
	fault := t.fault
	if fault == FaultErrorChunk && s.flavor != FlavorOpenRouter {
		fault = FaultStreamCut
	}
	b := parseBrief(c.user)
	if !b.health && b.title == "" {
		b = parseBrief(c.user + "\n" + c.system)
	}
	a := answer{in: c.inputTokens()}
	rng := t.rng
	if b.health {
		a.text = `{"ok":true}`
		switch fault {
		case FaultTruncate:
			a.text, a.finish = `{"ok":`, finishLength
		case FaultBadJSON:
			a.text = "OK"
		}
	} else {
		if t.prof.VaryTitles {
			b.title = fmt.Sprintf("%s (take %d)", b.title, t.n)
		}
		g := newGenerator(b, rng)
		fence := !c.jsonMode && rng.IntN(10) < 3
		switch fault {
		case FaultLowQuality:
			a.text = encodeArticle(g.lowQuality(), fence)
		case FaultMetaPhrase:
			a.text = encodeArticle(g.withMeta(t.prof.Thin, t.variant%2 == 0), fence)
		case FaultBadJSON:
			a.text = g.badJSON(t.variant % 3)
		default:
			a.text = encodeArticle(g.article(t.prof.Thin), fence)
		}
		if fault == FaultTruncate {
			r := []rune(a.text)
			keep := len(r) * (50 + rng.IntN(26)) / 100
			a.text, a.finish = string(r[:keep]), finishLength
		}
	}
	switch fault {
	case FaultStreamCut:
		a.cut = true
	case FaultErrorChunk:
		// The provider fails mid-answer: only the first part was generated.
		r := []rune(a.text)
		a.text, a.errorChunk, a.finish = string(r[:len(r)*2/5]), true, finishError
	case FaultBlocked:
		a.text, a.finish, a.blockFeedback = "", finishSafety, t.variant%2 == 0
	case FaultSlowFirstToken:
		a.slow = t.prof.firstTokenDelay()
	}
	a.out = -1 // not counted yet
	if a.finish == finishStop && c.maxTokens > 0 {
		if a.out = tokensOf(a.text); a.out > c.maxTokens {
			r := []rune(a.text)
			keep := int(float64(len(r)) * float64(c.maxTokens) / float64(a.out))
			a.text, a.finish, a.out = string(r[:keep]), finishLength, -1
		}
	}
	if a.out < 0 {
		a.out = tokensOf(a.text)
	}
	if s.flavor == FlavorGemini && a.finish != finishSafety {
		a.thoughtTokens = 120 + rng.IntN(480)
		if b.health {
			a.thoughtTokens = 20 + rng.IntN(60)
		}
		if c.thoughts {
			a.thought = thoughtSummary(b)
		}
	}
	if s.flavor == FlavorOpenRouter && c.stream {
		a.comments = rng.IntN(3)
	}
	return a
}

// tokensOf estimates output tokens as words × 1.3.
func tokensOf(text string) int {
	if text == "" {
		return 0
	}
	return max(1, int(math.Round(float64(countWords(text))*1.3)))
}

// pieces splits text into at most maxN stream chunks on rune boundaries.
func pieces(text string, maxN int) []string {
	r := []rune(text)
	if len(r) == 0 {
		return nil
	}
	size := max(16, (len(r)+maxN-1)/maxN)
	var out []string
	for i := 0; i < len(r); i += size {
		out = append(out, string(r[i:min(i+size, len(r))]))
	}
	return out
}

// flush pushes buffered bytes to the client; it reports false when the
// connection is gone.
func flush(w http.ResponseWriter) bool {
	return http.NewResponseController(w).Flush() == nil
}

// abort drops the connection without finishing the response: the client
// sees an unexpected EOF, as when a provider's stream breaks.
func abort(w http.ResponseWriter) {
	flush(w)
	panic(http.ErrAbortHandler)
}

package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// marshal encodes v without HTML escaping, compact or with the two-space
// indentation Google's API uses.
func marshal(v any, indent bool) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if indent {
		enc.SetIndent("", "  ")
	}
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("sim: marshal %T: %v", v, err)) // only fixed types are encoded
	}
	return bytes.TrimRight(buf.Bytes(), "\n")
}

const (
	lowerAlnum = "abcdefghijklmnopqrstuvwxyz0123456789"
	mixedAlnum = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
	hexDigits  = "0123456789abcdef"
)

func randString(rng *rand.Rand, alphabet string, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return string(b)
}

func randUUID(rng *rand.Rand) string {
	h := randString(rng, hexDigits, 32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

func ptr[T any](v T) *T { return &v }

// --- OpenAI-compatible wire (Groq, Cerebras, OpenRouter) ---

type oaMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type oaDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

type oaChoice struct {
	Index        int        `json:"index"`
	Message      *oaMessage `json:"message,omitempty"`
	Delta        *oaDelta   `json:"delta,omitempty"`
	Logprobs     *struct{}  `json:"logprobs"`
	FinishReason *string    `json:"finish_reason"`
}

type oaUsage struct {
	QueueTime           *float64        `json:"queue_time,omitempty"`
	PromptTokens        int             `json:"prompt_tokens"`
	PromptTime          *float64        `json:"prompt_time,omitempty"`
	CompletionTokens    int             `json:"completion_tokens"`
	CompletionTime      *float64        `json:"completion_time,omitempty"`
	TotalTokens         int             `json:"total_tokens"`
	TotalTime           *float64        `json:"total_time,omitempty"`
	PromptTokensDetails *map[string]int `json:"prompt_tokens_details,omitempty"`
	Cost                *float64        `json:"cost,omitempty"`
	IsBYOK              *bool           `json:"is_byok,omitempty"`
}

type oaStreamError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

type xGroq struct {
	ID    string   `json:"id"`
	Usage *oaUsage `json:"usage,omitempty"`
}

type cbTimeInfo struct {
	QueueTime      float64 `json:"queue_time"`
	PromptTime     float64 `json:"prompt_time"`
	CompletionTime float64 `json:"completion_time"`
	TotalTime      float64 `json:"total_time"`
	Created        float64 `json:"created"`
}

type oaBody struct {
	ID                string         `json:"id"`
	Provider          string         `json:"provider,omitempty"`
	Object            string         `json:"object"`
	Created           int64          `json:"created"`
	Model             string         `json:"model"`
	SystemFingerprint string         `json:"system_fingerprint,omitempty"`
	Error             *oaStreamError `json:"error,omitempty"`
	Choices           []oaChoice     `json:"choices"`
	Usage             *oaUsage       `json:"usage,omitempty"`
	TimeInfo          *cbTimeInfo    `json:"time_info,omitempty"`
	XGroq             *xGroq         `json:"x_groq,omitempty"`
}

func finishOpenAI(f finish) string {
	switch f {
	case finishLength:
		return "length"
	case finishSafety:
		return "content_filter"
	case finishError:
		return "error"
	}
	return "stop"
}

var openRouterProviders = []string{"DeepInfra", "Together", "Fireworks", "Lambda", "Nebius"}

// usageOpenAI builds the flavor's usage object.
func (s *Server) usageOpenAI(a answer, rng *rand.Rand, model string) oaUsage {
	u := oaUsage{PromptTokens: a.in, CompletionTokens: a.out, TotalTokens: a.in + a.out}
	round := func(x float64, digits int) float64 {
		p := math.Pow(10, float64(digits))
		return math.Round(x*p) / p
	}
	switch s.flavor {
	case FlavorGroq:
		q := round(0.02+rng.Float64()*0.2, 6)
		pt := round(float64(a.in)/9000, 6)
		ct := round(float64(a.out)/275, 6)
		u.QueueTime, u.PromptTime, u.CompletionTime = &q, &pt, &ct
		u.TotalTime = ptr(round(pt+ct, 6))
	case FlavorCerebras:
		u.PromptTokensDetails = &map[string]int{"cached_tokens": 0}
	case FlavorOpenRouter:
		cost := 0.0
		if !strings.HasSuffix(model, ":free") {
			cost = round(float64(a.in)*0.13e-6+float64(a.out)*0.40e-6, 9)
		}
		u.Cost, u.IsBYOK = &cost, ptr(false)
	}
	return u
}

// answerOpenAI writes a 200 chat completion, streamed or not.
func (s *Server) answerOpenAI(w http.ResponseWriter, r *http.Request, t turn, c call, a answer, now time.Time) {
	rng := t.rng
	var id, fp, provider string
	reqID := "req_" + randString(rng, lowerAlnum, 26)
	switch s.flavor {
	case FlavorOpenRouter:
		id = fmt.Sprintf("gen-%d-%s", now.Unix(), randString(rng, mixedAlnum, 20))
		provider = openRouterProviders[rng.IntN(len(openRouterProviders))]
	case FlavorGroq:
		id = "chatcmpl-" + randUUID(rng)
		fp = "fp_" + randString(rng, hexDigits, 10)
		w.Header()["x-request-id"] = []string{reqID}
	default:
		id = "chatcmpl-" + randUUID(rng)
		fp = "fp_" + randString(rng, hexDigits, 20)
		w.Header()["x-request-id"] = []string{randString(rng, hexDigits, 16)}
	}
	usage := s.usageOpenAI(a, rng, c.model)
	var timeInfo *cbTimeInfo
	if s.flavor == FlavorCerebras {
		timeInfo = &cbTimeInfo{
			QueueTime: 0.0004, PromptTime: float64(a.in) / 50000, CompletionTime: float64(a.out) / 2500,
			TotalTime: float64(a.in)/50000 + float64(a.out)/2500 + 0.0004, Created: float64(now.UnixNano()) / 1e9,
		}
	}
	o := oaReply{
		base:     oaBody{ID: id, Provider: provider, Created: now.Unix(), Model: c.model, SystemFingerprint: fp},
		reqID:    reqID,
		usage:    usage,
		timeInfo: timeInfo,
	}
	if !c.stream {
		s.writeOpenAIWhole(w, r, a, o)
		return
	}
	s.streamOpenAI(w, r, t, c, a, o)
}

// oaReply is what a chat completion's whole body and every stream chunk
// share: the identity fields, the request id, and the usage to report.
type oaReply struct {
	base     oaBody
	reqID    string
	usage    oaUsage
	timeInfo *cbTimeInfo
}

// writeOpenAIWhole writes a non-streamed chat completion.
func (s *Server) writeOpenAIWhole(w http.ResponseWriter, r *http.Request, a answer, o oaReply) {
	body := o.base
	body.Object = "chat.completion"
	body.Choices = []oaChoice{{
		Message:      &oaMessage{Role: "assistant", Content: a.text},
		FinishReason: ptr(finishOpenAI(a.finish)),
	}}
	if a.errorChunk {
		body.Error = &oaStreamError{Code: "server_error", Message: "Provider disconnected unexpectedly"}
	}
	body.Usage = &o.usage
	body.TimeInfo = o.timeInfo
	if s.flavor == FlavorGroq {
		body.XGroq = &xGroq{ID: o.reqID}
	}
	s.writeWhole(w, r, a, "application/json", marshal(body, false))
}

// streamOpenAI writes a chat completion as server-sent events, cutting or
// failing the stream where the answer says so.
func (s *Server) streamOpenAI(w http.ResponseWriter, r *http.Request, t turn, c call, a answer, o oaReply) {
	ctx := r.Context()
	base, reqID, usage, timeInfo := o.base, o.reqID, o.usage, o.timeInfo
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	if !flush(w) {
		return
	}
	send := func(v oaBody) bool {
		if _, err := fmt.Fprintf(w, "data: %s\n\n", marshal(v, false)); err != nil {
			return false
		}
		return flush(w)
	}
	chunk := func(d oaDelta, fin *string) oaBody {
		b := base
		b.Object = "chat.completion.chunk"
		b.Choices = []oaChoice{{Delta: &d, FinishReason: fin}}
		return b
	}
	for range a.comments {
		_, _ = io.WriteString(w, ": OPENROUTER PROCESSING\n\n")
	}
	if a.slow > 0 {
		s.slowStart(w, r, a.slow)
	}
	first := chunk(oaDelta{Role: "assistant", Content: ptr("")}, nil)
	if s.flavor == FlavorGroq {
		first.XGroq = &xGroq{ID: reqID}
	}
	if !send(first) {
		return
	}
	ps := pieces(a.text, 48)
	limit := len(ps)
	if a.cut {
		limit = len(ps) * 2 / 5
	}
	for i := range limit {
		if i > 0 && t.prof.ChunkDelay > 0 {
			s.hold(ctx, t.prof.ChunkDelay)
		}
		if !send(chunk(oaDelta{Content: &ps[i]}, nil)) {
			return
		}
	}
	if a.cut {
		abort(w)
	}
	if a.errorChunk {
		ec := chunk(oaDelta{Content: ptr("")}, ptr("error"))
		ec.Error = &oaStreamError{Code: "server_error", Message: "Provider disconnected unexpectedly"}
		if send(ec) {
			_, _ = io.WriteString(w, "data: [DONE]\n\n")
			flush(w)
		}
		return
	}
	last := chunk(oaDelta{}, ptr(finishOpenAI(a.finish)))
	if s.flavor == FlavorGroq {
		last.XGroq = &xGroq{ID: reqID, Usage: &usage}
	}
	if !send(last) {
		return
	}
	if c.includeUsage || s.flavor == FlavorOpenRouter {
		u := base
		u.Object = "chat.completion.chunk"
		u.Choices = []oaChoice{}
		u.Usage = &usage
		u.TimeInfo = timeInfo
		if !send(u) {
			return
		}
	}
	_, _ = io.WriteString(w, "data: [DONE]\n\n")
	flush(w)
}

// slowStart holds a started stream for d before its first data chunk;
// OpenRouter fills the silence with keep-alive comments. An interrupted
// wait drops the connection.
func (s *Server) slowStart(w http.ResponseWriter, r *http.Request, d time.Duration) {
	if s.flavor != FlavorOpenRouter {
		s.hold(r.Context(), d)
		return
	}
	step := min(max(d/4, 10*time.Millisecond), time.Second)
	for left := d; left > 0; left -= step {
		_, _ = io.WriteString(w, ": OPENROUTER PROCESSING\n\n")
		flush(w)
		s.hold(r.Context(), min(step, left))
	}
}

// writeWhole writes a non-streamed 200 body, honouring the slow-start and
// cut faults (a cut sends half the body under the full Content-Length).
func (s *Server) writeWhole(w http.ResponseWriter, r *http.Request, a answer, contentType string, body []byte) {
	w.Header().Set("Content-Type", contentType)
	if a.slow > 0 {
		w.WriteHeader(http.StatusOK)
		flush(w)
		s.hold(r.Context(), a.slow)
		_, _ = w.Write(body)
		return
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if a.cut {
		_, _ = w.Write(body[:len(body)/2])
		abort(w)
	}
	_, _ = w.Write(body)
}

// --- Gemini wire ---

type gPart struct {
	Text    string `json:"text"`
	Thought bool   `json:"thought,omitempty"`
}

type gContent struct {
	Parts []gPart `json:"parts"`
	Role  string  `json:"role"`
}

type gSafetyRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked,omitempty"`
}

type gCandidate struct {
	Content       *gContent       `json:"content,omitempty"`
	FinishReason  string          `json:"finishReason,omitempty"`
	SafetyRatings []gSafetyRating `json:"safetyRatings,omitempty"`
	Index         int             `json:"index"`
}

type gModalityCount struct {
	Modality   string `json:"modality"`
	TokenCount int    `json:"tokenCount"`
}

type gUsage struct {
	PromptTokenCount     int              `json:"promptTokenCount"`
	CandidatesTokenCount int              `json:"candidatesTokenCount,omitempty"`
	TotalTokenCount      int              `json:"totalTokenCount"`
	PromptTokensDetails  []gModalityCount `json:"promptTokensDetails,omitempty"`
	ThoughtsTokenCount   int              `json:"thoughtsTokenCount,omitempty"`
}

type gPromptFeedback struct {
	BlockReason   string          `json:"blockReason"`
	SafetyRatings []gSafetyRating `json:"safetyRatings,omitempty"`
}

type gResponse struct {
	Candidates     []gCandidate     `json:"candidates"`
	PromptFeedback *gPromptFeedback `json:"promptFeedback,omitempty"`
	UsageMetadata  *gUsage          `json:"usageMetadata,omitempty"`
	ModelVersion   string           `json:"modelVersion,omitempty"`
	ResponseID     string           `json:"responseId,omitempty"`
}

func finishGemini(f finish) string {
	switch f {
	case finishLength:
		return "MAX_TOKENS"
	case finishSafety:
		return "SAFETY"
	case finishError:
		return "OTHER"
	}
	return "STOP"
}

func safetyRatings() []gSafetyRating {
	return []gSafetyRating{
		{Category: "HARM_CATEGORY_SEXUALLY_EXPLICIT", Probability: "NEGLIGIBLE"},
		{Category: "HARM_CATEGORY_HATE_SPEECH", Probability: "NEGLIGIBLE"},
		{Category: "HARM_CATEGORY_HARASSMENT", Probability: "LOW"},
		{Category: "HARM_CATEGORY_DANGEROUS_CONTENT", Probability: "HIGH", Blocked: true},
	}
}

// modelVersion resolves the Gemini aliases the way the API reports them.
func modelVersion(model string) string {
	model = strings.TrimPrefix(model, "models/")
	switch model {
	case "gemini-flash-latest":
		return "gemini-2.5-flash"
	case "gemini-flash-lite-latest":
		return "gemini-2.5-flash-lite"
	case "gemini-pro-latest":
		return "gemini-2.5-pro"
	}
	return model
}

func geminiHeaders(h http.Header, rng *rand.Rand) {
	h.Set("Vary", "Origin, X-Origin, Referer")
	h.Set("Server", "scaffolding on HTTPServer2")
	h.Set("X-Xss-Protection", "0")
	h.Set("X-Frame-Options", "SAMEORIGIN")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Server-Timing", fmt.Sprintf("gfet4t7; dur=%d", 400+rng.IntN(9000)))
}

// answerGemini writes a 200 generateContent / streamGenerateContent answer.
func (s *Server) answerGemini(w http.ResponseWriter, r *http.Request, t turn, c call, a answer, _ time.Time) {
	rng := t.rng
	ctx := r.Context()
	mv := modelVersion(c.model)
	respID := randString(rng, mixedAlnum, 22)
	promptDetails := []gModalityCount{{Modality: "TEXT", TokenCount: a.in}}
	full := gUsage{
		PromptTokenCount: a.in, CandidatesTokenCount: a.out,
		TotalTokenCount:     a.in + a.out + a.thoughtTokens,
		PromptTokensDetails: promptDetails, ThoughtsTokenCount: a.thoughtTokens,
	}
	promptOnly := gUsage{PromptTokenCount: a.in, TotalTokenCount: a.in, PromptTokensDetails: promptDetails}
	geminiHeaders(w.Header(), rng)

	var blocked *gResponse
	if a.finish == finishSafety {
		blocked = &gResponse{UsageMetadata: &promptOnly, ModelVersion: mv, ResponseID: respID}
		if a.blockFeedback {
			blocked.Candidates = []gCandidate{}
			blocked.PromptFeedback = &gPromptFeedback{BlockReason: "SAFETY", SafetyRatings: safetyRatings()}
		} else {
			blocked.Candidates = []gCandidate{{FinishReason: "SAFETY", SafetyRatings: safetyRatings()}}
		}
	}

	if !c.stream {
		resp := blocked
		if resp == nil {
			var parts []gPart
			if a.thought != "" {
				parts = append(parts, gPart{Text: a.thought, Thought: true})
			}
			parts = append(parts, gPart{Text: a.text})
			resp = &gResponse{
				Candidates: []gCandidate{{
					Content:      &gContent{Parts: parts, Role: "model"},
					FinishReason: finishGemini(a.finish),
				}},
				UsageMetadata: &full, ModelVersion: mv, ResponseID: respID,
			}
		}
		s.writeWhole(w, r, a, "application/json; charset=UTF-8", marshal(resp, true))
		return
	}

	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Content-Disposition", "attachment")
	w.WriteHeader(http.StatusOK)
	if !flush(w) {
		return
	}
	send := func(v gResponse) bool {
		if _, err := fmt.Fprintf(w, "data: %s\r\n\r\n", marshal(v, false)); err != nil {
			return false
		}
		return flush(w)
	}
	if a.slow > 0 {
		s.hold(ctx, a.slow)
	}
	if blocked != nil {
		send(*blocked)
		return
	}
	event := func(p gPart) gResponse {
		return gResponse{
			Candidates:    []gCandidate{{Content: &gContent{Parts: []gPart{p}, Role: "model"}}},
			UsageMetadata: &promptOnly, ModelVersion: mv, ResponseID: respID,
		}
	}
	if a.thought != "" && !send(event(gPart{Text: a.thought, Thought: true})) {
		return
	}
	ps := pieces(a.text, 12)
	if len(ps) == 0 {
		ps = []string{""}
	}
	limit := len(ps)
	if a.cut {
		limit = len(ps) * 2 / 5
	}
	for i := range limit {
		if i > 0 && t.prof.ChunkDelay > 0 {
			s.hold(ctx, t.prof.ChunkDelay)
		}
		ev := event(gPart{Text: ps[i]})
		if i == len(ps)-1 {
			ev.Candidates[0].FinishReason = finishGemini(a.finish)
			ev.UsageMetadata = &full
		}
		if !send(ev) {
			return
		}
	}
	if a.cut {
		abort(w)
	}
}

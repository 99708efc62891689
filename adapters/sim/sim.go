// Package sim runs loopback HTTP servers that impersonate the real LLM
// providers of the default chain — Gemini (generativelanguage v1beta), Groq,
// Cerebras and OpenRouter (OpenAI-compatible chat completions) — closely
// enough that the real SDKs (google.golang.org/genai, go-openai) talk to
// them unchanged. Each server answers article prompts with generated,
// topic-specific article JSON and injects faults in each provider's own wire
// format: rate limits, daily quotas, 5xx, auth failures, hangs, slow first
// tokens, cut streams, truncation, thin or meta-phrase articles, bad JSON,
// OpenRouter error chunks and Gemini safety blocks.
//
// Routes (POST only; anything else answers 404/405 in the flavor's format):
//
//	Gemini:     /v1beta/models/{model}:generateContent
//	            /v1beta/models/{model}:streamGenerateContent?alt=sse
//	Groq:       /openai/v1/chat/completions
//	Cerebras:   /v1/chat/completions
//	OpenRouter: /api/v1/chat/completions (and /v1/chat/completions)
//
// A request must carry its auth header (x-goog-api-key, or Authorization:
// Bearer …; any value), else it gets the flavor's 401. The user prompt is
// parsed for the contract lines Title:, Category:, Keywords:, Language:,
// Target words:, Min sections: and Min section words: (English and Turkish
// are written natively); a line starting "Health check:" is answered with
// exactly {"ok":true}. Usage is reported as prompt characters / 4 in and
// answer words × 1.3 out. A max_tokens / maxOutputTokens cap below that
// truncates the answer (finish reason length / MAX_TOKENS). Without a JSON
// response format, about three answers in ten come inside a ```json fence.
//
// Typical use:
//
//	set, err := sim.StartAll(sim.DemoProfiles())
//	if err != nil { ... }
//	defer set.Close()
//	geminiBaseURL := set.BaseURL(sim.FlavorGemini)
//
// InProc is the same provider without a socket, on a VirtualClock: it
// answers with the same article generator and reports each fault as the
// real adapter reads it. A Behaviour (the what-if simulator's fault model,
// package whatif) can decide its requests.
//
// It is used by `contentpipe run --demo`, by adapter and chain tests, and by
// the what-if simulator. It imports no SDK; it is plain net/http.
package sim

import (
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/adapters/profile"
)

// Flavor selects which provider a Server impersonates.
type Flavor string

// The four flavors of the default chain.
const (
	FlavorGemini     Flavor = "gemini"
	FlavorGroq       Flavor = "groq"
	FlavorCerebras   Flavor = "cerebras"
	FlavorOpenRouter Flavor = "openrouter"
)

// Flavors returns all flavors in the default failover order.
func Flavors() []Flavor {
	return []Flavor{FlavorGemini, FlavorGroq, FlavorCerebras, FlavorOpenRouter}
}

// Kind returns the config `kind` of an adapter that talks to this flavor:
// gemini for Gemini, openai for the OpenAI-compatible ones.
func (f Flavor) Kind() profile.Kind {
	if f == FlavorGemini {
		return profile.KindGemini
	}
	return profile.KindOpenAI
}

// DefaultModel returns the model name the default chain uses for the flavor.
// The servers accept any model name and echo it back.
func (f Flavor) DefaultModel() string {
	switch f {
	case FlavorGemini:
		return "gemini-flash-latest"
	case FlavorGroq:
		return "llama-3.3-70b-versatile"
	case FlavorCerebras:
		return "gpt-oss-120b"
	case FlavorOpenRouter:
		return "meta-llama/llama-3.3-70b-instruct"
	}
	return ""
}

// Profile returns the provider profile the flavor's answers are written
// in: the one the real adapters classify them with (the flavors are the
// profiles gemini, groq, cerebras and openrouter).
func (f Flavor) Profile() *profile.Profile {
	return profile.Must(profile.ID(f))
}

func (f Flavor) valid() bool {
	switch f {
	case FlavorGemini, FlavorGroq, FlavorCerebras, FlavorOpenRouter:
		return true
	}
	return false
}

// Fault is one injected behaviour for one request. The zero value FaultNone
// answers normally.
type Fault string

// The faults. Each is rendered in the flavor's own wire format; see the
// package tests for the exact shapes.
const (
	// FaultNone answers normally.
	FaultNone Fault = ""
	// FaultRateMinute is a 429 for a per-minute limit advertising
	// Profile.RetryAfter: Gemini RetryInfo.retryDelay + QuotaFailure
	// ...PerMinute...; Groq `retry-after` header and "Please try again in
	// 2s"; Cerebras unwrapped request_quota_exceeded + Retry-After; OpenRouter
	// wrapped free-models-per-min with metadata X-RateLimit-Reset (epoch ms).
	FaultRateMinute Fault = "rate_minute"
	// FaultRateDay is a 429 for a daily quota: Gemini quotaId
	// GenerateRequestsPerDayPerProjectPerModel-FreeTier (with a short
	// misleading retryDelay of 23s, as the real API sends); Groq "tokens per
	// day (TPD)" with "Please try again in 9m52.272s" and retry-after: 593;
	// Cerebras token_quota_exceeded + Retry-After: 86399 +
	// x-ratelimit-remaining-requests-day: 0; OpenRouter free-models-per-day
	// with X-RateLimit-Reset at the next UTC midnight in epoch ms.
	FaultRateDay Fault = "rate_day"
	// FaultUnavailable is a 503 (Gemini UNAVAILABLE "The model is overloaded").
	FaultUnavailable Fault = "unavailable"
	// FaultServerError is a 500.
	FaultServerError Fault = "server_error"
	// FaultUnauthorized is a 401 (Gemini UNAUTHENTICATED). A request without
	// its auth header gets the same answer regardless of the profile.
	FaultUnauthorized Fault = "unauthorized"
	// FaultInvalidKey is Gemini's real answer to a wrong key: 400
	// INVALID_ARGUMENT with ErrorInfo reason API_KEY_INVALID. Other flavors
	// answer it like FaultUnauthorized.
	FaultInvalidKey Fault = "invalid_key"
	// FaultForbidden is a 403 (Gemini PERMISSION_DENIED).
	FaultForbidden Fault = "forbidden"
	// FaultHang accepts the request and never answers (no status line) until
	// the client gives up or the server is closed.
	FaultHang Fault = "hang"
	// FaultSlowFirstToken sends the 200 headers at once, then waits
	// Profile.FirstTokenDelay before the first chunk (non-stream: before the
	// body). OpenRouter sends ": OPENROUTER PROCESSING" keep-alive comments
	// meanwhile, as the real one does.
	FaultSlowFirstToken Fault = "slow_first_token"
	// FaultStreamCut streams part of the answer, then drops the connection
	// without the end event ([DONE] / finish_reason / finishReason). On a
	// non-stream request it sends part of the body and drops the connection.
	FaultStreamCut Fault = "stream_cut"
	// FaultTruncate answers 200 with partial JSON and finishReason
	// MAX_TOKENS / finish_reason "length".
	FaultTruncate Fault = "truncate"
	// FaultLowQuality answers schema-valid but thin JSON: two or three short
	// sections, far under the target and the section minimum.
	FaultLowQuality Fault = "low_quality"
	// FaultMetaPhrase answers a good article carrying the assistant's chat
	// framing: alternately an opener ("Certainly! Here is the article" /
	// "Elbette! İşte makale") at the start of the first section body, or a
	// closer ("Would you like me to…" / "… ister misin?") at the end of the
	// last one.
	FaultMetaPhrase Fault = "meta_phrase"
	// FaultBadJSON answers 200 with text that is not the article schema,
	// rotating through markdown prose, a wrong JSON shape and broken JSON.
	FaultBadJSON Fault = "bad_json"
	// FaultErrorChunk (OpenRouter only) streams a few chunks, then a chunk
	// with "error":{"code":"server_error","message":"Provider disconnected
	// unexpectedly"} and finish_reason "error", then [DONE], all under status
	// 200. A non-stream request gets a 200 body with that error and
	// finish_reason "error". Other flavors treat it as FaultStreamCut.
	FaultErrorChunk Fault = "error_chunk"
	// FaultBlocked (Gemini) answers 200 with a safety block, alternately
	// {"candidates":[],"promptFeedback":{"blockReason":"SAFETY"}} and a
	// candidate with finishReason SAFETY and no content. Other flavors answer
	// 400 in their format.
	FaultBlocked Fault = "blocked"
)

// Profile is a server's fault model. The zero value answers every request
// normally, at once, with full-length articles.
type Profile struct {
	// Script is the fault of each request, in arrival order; after the
	// script is used up, Rates apply. SetProfile restarts the script.
	Script []Fault
	// Rates are per-request probabilities of each fault (summing to at most
	// 1); the rest answer normally. Draws are deterministic for Seed and the
	// request's number.
	Rates map[Fault]float64
	// Seed makes fault draws and generated text deterministic for a given
	// request order.
	Seed int64
	// RetryAfter is the wait a FaultRateMinute answer advertises; 0 means 2s.
	RetryAfter time.Duration
	// FirstTokenDelay is the pause of FaultSlowFirstToken; 0 means 3s.
	FirstTokenDelay time.Duration
	// ChunkDelay is the pause between stream chunks; 0 means none.
	ChunkDelay time.Duration
	// Thin marks a smaller model: its normal articles reach about 82-88% of
	// the target words (still meeting the section minimums) instead of 100-110%.
	Thin bool
	// VaryTitles gives every answer its own title (the brief's title plus
	// " (take N)", N the request's number), so that two answers of one job
	// publish under two different slugs: the crash tests' providers.
	VaryTitles bool
	// Now is the clock used for timestamps and advertised reset times; nil
	// means time.Now. Waits always run in real time.
	Now func() time.Time
}

func (p Profile) retryAfter() time.Duration {
	if p.RetryAfter > 0 {
		return p.RetryAfter
	}
	return 2 * time.Second
}

func (p Profile) firstTokenDelay() time.Duration {
	if p.FirstTokenDelay > 0 {
		return p.FirstTokenDelay
	}
	return 3 * time.Second
}

func (p Profile) now() time.Time {
	if p.Now != nil {
		return p.Now()
	}
	return time.Now()
}

// Server is one simulated provider listening on 127.0.0.1. It is safe for
// concurrent use; requests are numbered in arrival order under a mutex, and
// each request's fault and text depend only on the profile's Seed and that
// number.
type Server struct {
	flavor Flavor
	ln     net.Listener
	srv    *http.Server
	done   chan struct{}
	once   sync.Once

	mu        sync.Mutex
	prof      Profile
	served    int
	scriptPos int
	variants  map[Fault]int
	tokens    []tokenUse
}

type tokenUse struct {
	at time.Time
	n  int
}

// Start starts a server of flavor f on an ephemeral loopback port.
func Start(f Flavor, p Profile) (*Server, error) {
	if !f.valid() {
		return nil, fmt.Errorf("start sim server: unknown flavor %q", f)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start sim server %s: %w", f, err)
	}
	s := &Server{
		flavor:   f,
		ln:       ln,
		done:     make(chan struct{}),
		prof:     p,
		variants: map[Fault]int{},
	}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = s.srv.Serve(ln) }() // returns http.ErrServerClosed after Close
	return s, nil
}

// Flavor returns the provider the server impersonates.
func (s *Server) Flavor() Flavor { return s.flavor }

// Addr returns the listening address (127.0.0.1:PORT).
func (s *Server) Addr() string { return s.ln.Addr().String() }

// BaseURL returns what an adapter's base_url should be: for Gemini the bare
// "http://127.0.0.1:PORT" (the genai SDK appends
// /v1beta/models/{model}:generateContent); for Groq ".../openai/v1"; for
// Cerebras ".../v1"; for OpenRouter ".../api/v1" as on openrouter.ai (the
// OpenRouter server also accepts ".../v1"). The OpenAI-compatible SDK appends
// /chat/completions.
func (s *Server) BaseURL() string {
	root := "http://" + s.Addr()
	switch s.flavor {
	case FlavorGroq:
		return root + "/openai/v1"
	case FlavorCerebras:
		return root + "/v1"
	case FlavorOpenRouter:
		return root + "/api/v1"
	}
	return root
}

// SetProfile replaces the fault profile and restarts its Script. The request
// count (Requests) keeps counting.
func (s *Server) SetProfile(p Profile) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.prof = p
	s.scriptPos = 0
	s.variants = map[Fault]int{}
}

// Requests returns how many API requests the server has received (every
// POST to a known endpoint, including ones refused for a missing key).
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served
}

// Close stops the server, releases hanging requests and closes open
// connections. It is safe to call more than once.
func (s *Server) Close() {
	s.once.Do(func() {
		close(s.done)
		_ = s.srv.Close()
	})
}

// turn is what one request drew: its number, fault, profile and rng.
type turn struct {
	n     int
	fault Fault
	prof  Profile
	rng   *rand.Rand
	// variant counts earlier requests with the same fault since SetProfile;
	// faults with alternative shapes rotate on it.
	variant int
	// retry is the wait a per-minute 429 advertises (0: the Profile's
	// RetryAfter) and resetAt when a daily quota resets (zero: the
	// flavor's usual answer); an in-process provider's Behaviour sets them.
	retry   time.Duration
	resetAt time.Time
}

// wait is the wait a per-minute 429 of t advertises.
func (t turn) wait() time.Duration {
	if t.retry > 0 {
		return t.retry
	}
	return t.prof.retryAfter()
}

// rateFault draws the fault of the n-th request from Rates, deterministic
// for the Profile's Seed and n (the same draw for the loopback server and the
// in-process provider, so that a Profile means the same in both).
func (p Profile) rateFault(n int) (Fault, bool) {
	if len(p.Rates) == 0 {
		return FaultNone, false
	}
	pick := rand.New(rand.NewPCG(uint64(p.Seed)^0x5eed5eed5eed5eed, uint64(n))).Float64()
	keys := make([]string, 0, len(p.Rates))
	for f := range p.Rates {
		keys = append(keys, string(f))
	}
	sort.Strings(keys)
	acc := 0.0
	for _, k := range keys {
		acc += p.Rates[Fault(k)]
		if pick < acc {
			return Fault(k), true
		}
	}
	return FaultNone, false
}

// draw assigns the next fault. It is called once per authorised request.
func (s *Server) draw(n int) turn {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := s.prof
	fault := FaultNone
	if s.scriptPos < len(p.Script) {
		fault = p.Script[s.scriptPos]
		s.scriptPos++
	} else if f, ok := p.rateFault(n); ok {
		fault = f
	}
	v := s.variants[fault]
	s.variants[fault] = v + 1
	return turn{
		n:       n,
		fault:   fault,
		prof:    p,
		rng:     rand.New(rand.NewPCG(uint64(p.Seed), uint64(n))),
		variant: v,
	}
}

// Set is the four servers of the default chain, closed together.
type Set struct {
	servers map[Flavor]*Server
}

// StartAll starts one server per flavor, each with profiles[flavor] (the
// zero Profile when absent). On error, the servers already started are closed.
func StartAll(profiles map[Flavor]Profile) (*Set, error) {
	set := &Set{servers: map[Flavor]*Server{}}
	for _, f := range Flavors() {
		s, err := Start(f, profiles[f])
		if err != nil {
			set.Close()
			return nil, err
		}
		set.servers[f] = s
	}
	return set, nil
}

// Server returns the server of flavor f, or nil. The tests of packages
// that run a Set use it to steer one server.
func (s *Set) Server(f Flavor) *Server { return s.servers[f] }

// BaseURL returns the base URL of flavor f's server, or "".
func (s *Set) BaseURL(f Flavor) string {
	if srv := s.servers[f]; srv != nil {
		return srv.BaseURL()
	}
	return ""
}

// Close closes every server of the set.
func (s *Set) Close() {
	for _, srv := range s.servers {
		srv.Close()
	}
}

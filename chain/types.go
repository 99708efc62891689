// Package chain walks the ordered failover chain of providers for one job:
// the retry/failover policy, the deadline budget, daily caps, exhaustion,
// the circuit breaker, shadow calls and the health walk, all through one
// attempt pipeline (attempt.go) and one pure policy (decide.go). It imports no SDK;
// adapters implement Provider and return *ProviderError for every failure.
package chain

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Outcome is the classified result of one attempt, stored in calls.outcome.
type Outcome string

// The outcomes stored in calls.outcome (README "The database"). Every
// attempt maps to exactly one.
const (
	OutcomeOK                Outcome = "ok"
	OutcomeRejected          Outcome = "rejected"
	OutcomeRateLimited       Outcome = "rate_limited"
	OutcomeQuotaExhausted    Outcome = "quota_exhausted"
	OutcomeServerError       Outcome = "server_error"
	OutcomeAuthError         Outcome = "auth_error"
	OutcomeTimeoutConnect    Outcome = "timeout_connect"
	OutcomeTimeoutFirstToken Outcome = "timeout_first_token"
	OutcomeTimeoutIdle       Outcome = "timeout_idle"
	OutcomeTimeoutTotal      Outcome = "timeout_total"
	OutcomeStreamBroken      Outcome = "stream_broken"
	OutcomeBlocked           Outcome = "blocked"
	OutcomeBadRequest        Outcome = "bad_request"
	OutcomeError             Outcome = "error"
	// OutcomeTooLarge: the request can never fit the link (a context
	// window, a per-minute token limit smaller than the request); waiting
	// or retrying cannot help. ProviderError.TooLarge holds the sizes the
	// provider named.
	OutcomeTooLarge Outcome = "too_large"
	// OutcomeMisconfigured: the link cannot work until a person changes
	// something (model not found or retired, region not served, no credits,
	// a quota of 0, no provider allowed); ProviderError.Message holds the
	// provider's words and Fix what to change.
	OutcomeMisconfigured Outcome = "misconfigured"
	// OutcomeConnectFailed: the connection could not be made (DNS failure,
	// refused, TLS failure) before a request was written; Message holds
	// the resolver's or the socket's words. A connect that ran out of time
	// is OutcomeTimeoutConnect.
	OutcomeConnectFailed Outcome = "connect_failed"
)

// Scope is the window a rate limit applies to.
type Scope string

// Quota scopes. ScopeNone means the provider did not say.
const (
	ScopeNone   Scope = ""
	ScopeMinute Scope = "minute"
	ScopeDay    Scope = "day"
)

// Timeouts are the four per-provider time limits of a streaming call. A zero
// field means no limit of that kind (the job deadline still applies).
type Timeouts struct {
	Connect    time.Duration // TCP+TLS connect
	FirstToken time.Duration // request sent → first answer byte/token
	Idle       time.Duration // longest silence between stream chunks
	Total      time.Duration // the whole call
}

// Request is the one generic request every adapter turns into its wire format.
type Request struct {
	JobID     string // the job's id (idempotency key), for logs only
	System    string // system instruction
	Prompt    string // user message
	Schema    []byte // JSON schema of the expected answer; nil = plain text/JSON object
	MaxTokens int    // 0 = provider default
	Stream    bool   // use the streaming endpoint (timeouts first_token/idle apply)
}

// Response is a successful HTTP exchange (status 200 with an answer). A
// truncated answer (finish reason length/MAX_TOKENS) is a Response with
// Truncated set, not an error: the candidate is kept and the gate rejects it.
type Response struct {
	Text         string
	Model        string // model that served, as reported (may be empty)
	FinishReason string
	Truncated    bool
	InputTokens  int
	OutputTokens int
	CostUSD      float64 // provider's own charge (OpenRouter usage.cost) when CostKnown
	CostKnown    bool
	HTTPStatus   int
	FirstToken   time.Duration // time to the first answer byte/token; 0 unknown
	Quota        QuotaHint
	// UsageSuspect says why the usage or cost the provider reported cannot
	// be true (negative tokens or cost, output far above max_tokens); ""
	// when it is plausible. The figures are kept as reported.
	UsageSuspect string
}

// QuotaHint is what the provider's headers said about its daily allowance
// (Groq x-ratelimit-remaining-requests, Cerebras ...-requests-day).
// Remaining < 0 means unknown. The zero value is unknown too: a remaining
// count of 0 is only believed together with a reset time.
type QuotaHint struct {
	Remaining int
	Reset     time.Duration // until the daily allowance resets; 0 unknown
}

// Known reports whether the provider sent a usable daily remaining figure.
func (q QuotaHint) Known() bool { return q.Remaining > 0 || (q.Remaining == 0 && q.Reset > 0) }

// ProviderError is the one typed error every adapter returns for a failed
// call. It is classified once, in the adapter; chain branches on its fields.
type ProviderError struct {
	Provider   string
	Status     int           // HTTP status; 0 when no status line came
	Outcome    Outcome       // classification (never OutcomeOK; OutcomeRejected only for a 200 whose body is no answer, kept in Partial)
	RetryAfter time.Duration // the provider's requested wait; 0 = none given
	ResetAt    time.Time     // absolute reset time when the provider names one
	RetryRaw   string        // every wait/reset named, as sent ("Retry-After: 315360000"); an unreadable one makes RetryAfter ~100 years
	Scope      Scope         // minute/day for 429s
	Message    string        // provider's message, secrets scrubbed
	Partial    string        // text received before a stream broke
	FirstToken time.Duration
	Quota      QuotaHint
	// Fix is what a person must change, for OutcomeMisconfigured and
	// OutcomeTooLarge ("" for the others).
	Fix string
	// TooLarge holds the limit and the request size an OutcomeTooLarge
	// answer named (zero when it named none).
	TooLarge TooLarge
	Cause    error
}

// TooLarge is what a provider said about a request that can never fit:
// the limit, the request's size and the unit or window both are counted
// in. A zero field means the provider did not name it.
type TooLarge struct {
	Limit     int
	Requested int
	Unit      string // e.g. "tokens per minute (TPM)", "tokens of context"
}

func (e *ProviderError) Error() string {
	s := fmt.Sprintf("%s: %s", e.Provider, e.Outcome)
	if e.Status != 0 {
		s += fmt.Sprintf(" (http %d)", e.Status)
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *ProviderError) Unwrap() error { return e.Cause }

// AsProviderError returns the *ProviderError in err's chain, or nil.
func AsProviderError(err error) *ProviderError {
	var pe *ProviderError
	if errors.As(err, &pe) {
		return pe
	}
	return nil
}

// Provider is one link's wire client. Generate must honour ctx (the job
// deadline) and return *ProviderError for every failure.
type Provider interface {
	Generate(ctx context.Context, req Request) (Response, error)
}

// Sentinel errors for skips and halts.
var (
	ErrDailyCap    = errors.New("daily cap reached")
	ErrExhausted   = errors.New("provider exhausted until reset")
	ErrCircuitOpen = errors.New("circuit open")
	ErrHalted      = errors.New("run halted on an auth failure")
)

// Section is one h2 section of an article.
type Section struct {
	H2   string `json:"h2"`
	Body string `json:"body"`
}

// Article is a gated answer ready for a publishing target.
type Article struct {
	JobID        string
	Topic        string
	Slot         string // UTC date YYYY-MM-DD
	Slug         string
	Title        string
	Category     string
	Language     string
	Keywords     []string
	Provider     string
	Model        string
	QualityScore float64
	Date         time.Time
	Sections     []Section
}

// Delivery is one article ready for its target: the exact bytes and the
// exact place. It is written down (durably) before it is delivered, so a
// delivery interrupted by a crash is finished later with the same bytes to
// the same place, by whichever process reconciles it.
type Delivery struct {
	JobID    string // the Idempotency-Key
	Location string // file path, or URL#job id
	Body     []byte
}

// Publisher is a publishing target. Prepare renders an article and chooses
// where it goes, with no side effect; Deliver performs the side effect and
// must be idempotent for one Delivery: delivering it again (after a crash
// between delivering and recording) changes nothing visible — the same file,
// or the same body under the same Idempotency-Key.
type Publisher interface {
	Prepare(ctx context.Context, a Article) (Delivery, error)
	Deliver(ctx context.Context, d Delivery) (location string, err error)
}

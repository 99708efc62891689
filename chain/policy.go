package chain

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// RetryPolicy is the `retry:` section of the config: what the chain does
// after a failed call (README "How a job walks the chain"). The zero value
// RetryPolicy{} is the default policy, DefaultRetryPolicy(); any other value
// is taken as written, so a zero field there is an explicit zero (no
// retries, no wait). A config loader starts from DefaultRetryPolicy() and
// overwrites the keys the file sets. A RetryPolicy is a plain value, safe to
// copy and to share.
type RetryPolicy struct {
	RateLimitedWait       time.Duration // base of the full-jitter backoff without a provider delay; default 30s
	RateLimitedMaxRetries int           // retries of a per-minute 429 at one provider per job; default 2
	RateLimitedMaxWait    time.Duration // longest 429 wait before the provider is marked exhausted; default 60s
	ServerErrorWait       time.Duration // wait after a 5xx before the next provider; default none
	AuthHalt              bool          // 401/403 stops the run (default true); false skips the provider for the run
	OtherWait             time.Duration // wait after a timeout, broken stream or other 4xx; default 10s
}

// DefaultRetryPolicy returns the documented defaults: rate_limited {wait: 30s,
// max_retries: 2, max_wait: 60s}, server_error {wait: 0s}, auth_error
// {halt: true}, other {wait: 10s}. It is the only place they are written.
func DefaultRetryPolicy() RetryPolicy {
	return RetryPolicy{
		RateLimitedWait:       30 * time.Second,
		RateLimitedMaxRetries: 2,
		RateLimitedMaxWait:    60 * time.Second,
		ServerErrorWait:       0,
		AuthHalt:              true,
		OtherWait:             10 * time.Second,
	}
}

// WithDefaults returns DefaultRetryPolicy() for the zero RetryPolicy{} and
// p itself for any other value.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p == (RetryPolicy{}) {
		return DefaultRetryPolicy()
	}
	return p
}

// maxRetries is the effective retry count (never below 0).
func (p RetryPolicy) maxRetries() int { return max(p.RateLimitedMaxRetries, 0) }

// Action is what the chain does after a failed call.
type Action int

// The actions of a Decision.
const (
	// ActionNext moves to the next provider after Decision.Wait.
	ActionNext Action = iota
	// ActionRetry calls the same provider again after Decision.Wait.
	ActionRetry
	// ActionHalt stops the whole run (an auth failure with auth_error.halt).
	ActionHalt
	// ActionSkipRun skips this provider for the rest of the run (an auth
	// failure without halt), then moves to the next provider.
	ActionSkipRun
)

// Decision is the policy's answer to one failed call.
type Decision struct {
	Action Action
	// Wait is how long to sleep before Action. It is already fitted to the
	// deadline: a wait that would not end before the deadline is 0 with
	// ActionNext, never a wait cut short later.
	Wait time.Duration
	// Outcome is the outcome to record for the call (a daily 429 becomes
	// OutcomeQuotaExhausted).
	Outcome Outcome
	// ExhaustUntil, when not zero, is the time to persist as "exhausted
	// until" for the provider (UTC).
	ExhaustUntil time.Time
	// Breaker reports whether the call counts as a failure for the circuit
	// breaker (5xx, timeouts, broken streams; never a 429).
	Breaker bool
	// Reason is a short human text for progress lines and the job story.
	Reason string
}

// Fit fits a wait into the job's deadline: it returns wait and true when
// now+wait is before deadline, else 0 and false (the chain then moves on at
// once instead of waiting). A zero deadline means none. A wait ≤ 0 always
// fits as 0.
func (p RetryPolicy) Fit(wait time.Duration, now, deadline time.Time) (time.Duration, bool) {
	if wait <= 0 {
		return 0, true
	}
	if deadline.IsZero() || now.Add(wait).Before(deadline) {
		return wait, true
	}
	return 0, false
}

// clampJitter keeps the jitter source inside [0,1); nil means math/rand/v2.
func clampJitter(f func() float64) func() float64 {
	if f == nil {
		f = rand.Float64
	}
	return func() float64 {
		v := f()
		if !(v >= 0) { // also NaN
			return 0
		}
		return min(v, math.Nextafter(1, 0))
	}
}

// classify returns e's outcome, derived from its HTTP status
// (StatusOutcome) when the adapter left it empty.
func classify(e *ProviderError) Outcome {
	if e.Outcome != "" {
		return e.Outcome
	}
	return StatusOutcome(e.Status)
}

// what names the failure for a Reason: "http 503 server_error".
func what(e *ProviderError) string {
	out := classify(e)
	if e.Status != 0 {
		return fmt.Sprintf("http %d %s", e.Status, out)
	}
	return string(out)
}

package chain

import (
	"fmt"
	"strings"
	"time"
)

// Sample is what one call gives the circuit breaker.
type Sample int

// Breaker samples. A 429 and a call that is not sampled (shadow) give
// SampleNone.
const (
	SampleNone Sample = iota
	SampleSuccess
	SampleFailure
)

// Lesson is what one call taught about its link: the state to persist
// beside the call row. The zero value teaches nothing.
type Lesson struct {
	// ExhaustUntil, when not zero, is the time to persist as "exhausted
	// until" for the link (UTC), with ExhaustReason.
	ExhaustUntil  time.Time
	ExhaustReason string
	// Sample is the call's breaker sample.
	Sample Sample
	// Clamp is set when the provider named a delay beyond the bound a
	// named delay is believed to (the link's next cap_reset plus
	// MaxNamedDelay): ExhaustUntil was cut to that bound.
	Clamp *Clamp
	// Misconfig, when set, opens (or, for the same config, keeps open with
	// its next probe a day on) the link's misconfigured incident.
	Misconfig *Misconfig
	// Reached says the call reached the provider and was not refused as
	// misconfigured: an open misconfigured incident closes.
	Reached bool
}

// Clamp is a provider-named delay that was not believed in full.
type Clamp struct {
	Sent  string    // what the provider named ("retry after 87600h0m0s", "reset at …")
	Until time.Time // the bound the exhaustion was cut to
}

// MaxNamedDelay is how far past the link's next cap_reset a delay the
// provider names (Retry-After, an HTTP-date, Gemini's retryDelay, "try
// again in …", a daily reset header) is believed: a longer one is clamped
// to the bound and reported, since no free tier's day is longer.
const MaxNamedDelay = 24 * time.Hour

// Observation is one call's result as the policy sees it: the failure, or
// the quota hint of an answer.
type Observation struct {
	Err   *ProviderError // nil when the call answered
	Quota QuotaHint      // an answer's daily quota hint (Err nil)
}

// Standing is where a call stands when the policy judges it. NoRetry says
// the call is a single one (shadow, health): it is classified and teaches,
// but is never retried. A zero Deadline means none; a zero NextReset means
// the link's day is unknown (a day from now is used). Jitter is a source of
// floats in [0,1); nil means math/rand/v2.
type Standing struct {
	Retries   int // retries already made at this link for this job
	NoRetry   bool
	Deadline  time.Time
	NextReset time.Time
	Jitter    func() float64
}

// Judge is the policy: one pure function of a call's observation, its
// standing and now, returning what to do next and what the call taught.
// An answer (o.Err nil) is a breaker success and moves on (the gate
// decides whether it ends the job); its quota hint of 0 requests left
// teaches exhaustion. A failure is decided as Decide documents.
func (p RetryPolicy) Judge(o Observation, s Standing, now time.Time) (Decision, Lesson) {
	if o.Err == nil {
		l := Lesson{Sample: SampleSuccess}
		if o.Quota.Known() && o.Quota.Remaining == 0 {
			until := s.NextReset
			if o.Quota.Reset > 0 {
				until = now.Add(o.Quota.Reset)
			}
			until, l.Clamp = clampNamed(until, now, s.NextReset, "daily reset in "+o.Quota.Reset.String())
			l.ExhaustUntil, l.ExhaustReason = until, "daily requests used up (provider headers)"
		}
		return Decision{Action: ActionNext, Outcome: OutcomeOK}, l
	}
	d, clamp := p.decide(o.Err, s, now)
	l := Lesson{ExhaustUntil: d.ExhaustUntil, Clamp: clamp}
	if !d.ExhaustUntil.IsZero() {
		l.ExhaustReason = string(d.Outcome)
	}
	if d.Breaker {
		l.Sample = SampleFailure
	}
	return d, l
}

// decide returns what to do after the failed call e (Judge's answer for a
// failure) and the clamp of a provider delay it cut, if any. s carries the
// retries already made at this provider for this job, the job's deadline
// (zero = none), the link's next cap_reset and the jitter source (nil means
// math/rand/v2).
//
// A per-minute 429 waits the provider's delay (RetryAfter, or ResetAt-now)
// as a floor plus up to 10% (at most 1s) of jitter, or without a delay a
// full-jitter backoff in [0, RateLimitedWait·2^retries] capped at
// RateLimitedMaxWait, and retries up to RateLimitedMaxRetries times. A daily
// 429, or a provider delay longer than RateLimitedMaxWait or the remaining
// deadline, moves on at once and sets ExhaustUntil, never later than
// nextReset plus MaxNamedDelay. Only the provider's own delay marks the
// provider exhausted: when our own backoff does not fit the deadline the
// chain moves on without marking it. A request too large for the link, a
// misconfigured link and a connection that could not be made (its cause in
// the reason) move on at once: no wait or retry can help.
func (p RetryPolicy) decide(e *ProviderError, s Standing, now time.Time) (Decision, *Clamp) {
	p = p.WithDefaults()
	s.Jitter = clampJitter(s.Jitter)
	out := classify(e)
	switch out {
	case OutcomeRateLimited, OutcomeQuotaExhausted:
		return p.decide429(e, out, s, now)
	case OutcomeAuthError:
		if p.AuthHalt {
			return Decision{Action: ActionHalt, Outcome: out, Reason: fmt.Sprintf("%s: auth failure, halting the run", what(e))}, nil
		}
		return Decision{Action: ActionSkipRun, Outcome: out, Reason: fmt.Sprintf("%s: auth failure, skipping this provider for the run", what(e))}, nil
	case OutcomeRejected:
		return Decision{Action: ActionNext, Outcome: out, Reason: "answer rejected: next provider at once"}, nil
	case OutcomeServerError:
		return p.next(e, out, p.ServerErrorWait, now, s.Deadline, true), nil
	case OutcomeTooLarge, OutcomeMisconfigured:
		// Neither a wait nor a retry can make the link take this request.
		return Decision{Action: ActionNext, Outcome: out, Reason: fmt.Sprintf("%s: next provider at once", what(e))}, nil
	case OutcomeConnectFailed:
		// The resolver or the socket said no before a request was written:
		// waiting teaches nothing, the next link is tried at once. Still a
		// breaker sample: a link nobody can reach is down.
		d := Decision{Action: ActionNext, Outcome: out, Breaker: true, Reason: fmt.Sprintf("%s: next provider at once", what(e))}
		if e.Message != "" {
			d.Reason = fmt.Sprintf("%s (%s): next provider at once", what(e), clipHead(e.Message, 76))
		}
		return d, nil
	case OutcomeTimeoutConnect, OutcomeTimeoutFirstToken, OutcomeTimeoutIdle, OutcomeTimeoutTotal, OutcomeStreamBroken:
		return p.next(e, out, p.OtherWait, now, s.Deadline, true), nil
	default: // bad_request, blocked, error
		return p.next(e, out, p.OtherWait, now, s.Deadline, false), nil
	}
}

// clipWords cuts s to n bytes on a rune boundary, with an ellipsis.
func clipWords(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n] + "…"
}

// clipHead keeps the last n bytes of s (on a rune boundary) behind an
// ellipsis: a network error names its cause last ("…: no such host").
func clipHead(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := len(s) - n
	for cut < len(s) && s[cut]&0xC0 == 0x80 {
		cut++
	}
	return "…" + s[cut:]
}

// next waits a fitted wait, then moves to the next provider.
func (p RetryPolicy) next(e *ProviderError, out Outcome, wait time.Duration, now, deadline time.Time, breaker bool) Decision {
	d := Decision{Action: ActionNext, Outcome: out, Breaker: breaker}
	w, ok := p.Fit(wait, now, deadline)
	switch {
	case wait <= 0:
		d.Reason = fmt.Sprintf("%s: next provider at once", what(e))
	case !ok:
		d.Reason = fmt.Sprintf("%s: the %s wait does not fit the deadline, next provider at once", what(e), wait)
	default:
		d.Wait = w
		d.Reason = fmt.Sprintf("%s: waiting %s, then next provider", what(e), w)
	}
	return d
}

// namedDelay is the wait the provider named for a 429 (RetryAfter, else
// ResetAt-now) and how it named it.
func namedDelay(e *ProviderError, now time.Time) (time.Duration, string) {
	var d time.Duration
	var sent string
	switch {
	case e.RetryAfter > 0:
		d, sent = e.RetryAfter, "retry after "+e.RetryAfter.String()
	case e.ResetAt.After(now):
		d, sent = e.ResetAt.Sub(now), "reset at "+e.ResetAt.UTC().Format(time.RFC3339)
	default:
		return 0, ""
	}
	if e.RetryRaw != "" {
		sent += " (sent as " + e.RetryRaw + ")" // the provider's own words
	}
	return d, sent
}

// clampNamed cuts until, an instant the provider named, to the bound a
// named delay is believed to: nextReset (a day from now when zero) plus
// MaxNamedDelay. The Clamp is nil when until is within the bound.
func clampNamed(until, now, nextReset time.Time, sent string) (time.Time, *Clamp) {
	if nextReset.IsZero() {
		nextReset = now.Add(24 * time.Hour)
	}
	bound := nextReset.Add(MaxNamedDelay).UTC()
	if !until.After(bound) {
		return until.UTC(), nil
	}
	return bound, &Clamp{Sent: sent, Until: bound}
}

func (p RetryPolicy) decide429(e *ProviderError, out Outcome, s Standing, now time.Time) (Decision, *Clamp) {
	delay, named := namedDelay(e, now)
	// A daily remaining figure of 0 counts only with its reset time: the
	// zero QuotaHint{} (an adapter that set nothing) is not a report.
	dayEmpty := e.Quota.Known() && e.Quota.Remaining == 0 && e.Quota.Reset > 0
	if out == OutcomeQuotaExhausted || e.Scope == ScopeDay || dayEmpty {
		until, src, sent := s.NextReset, "next cap reset", ""
		if until.IsZero() {
			until, src = now.Add(24*time.Hour), "a day"
		}
		if dayEmpty && now.Add(e.Quota.Reset).After(until) {
			until, src, sent = now.Add(e.Quota.Reset), "provider's reset", "daily reset in "+e.Quota.Reset.String()
		}
		if e.ResetAt.After(until) {
			until, src, sent = e.ResetAt, "provider's reset", "reset at "+e.ResetAt.UTC().Format(time.RFC3339)
		}
		if delay > 0 && now.Add(delay).After(until) {
			until, src, sent = now.Add(delay), "provider's reset", named
		}
		until, clamp := clampNamed(until, now, s.NextReset, sent)
		if clamp != nil {
			src = "provider's reset " + clamp.Sent + ", clamped"
		}
		return Decision{
			Action:       ActionNext,
			Outcome:      OutcomeQuotaExhausted,
			ExhaustUntil: until,
			Reason:       fmt.Sprintf("429 daily quota: exhausted until %s (%s), next provider at once", until.Format(time.RFC3339), src),
		}, clamp
	}
	exhaust := func(why string) (Decision, *Clamp) {
		until, clamp := clampNamed(now.Add(delay), now, s.NextReset, named)
		if clamp != nil {
			why += ", clamped"
		}
		return Decision{
			Action:       ActionNext,
			Outcome:      OutcomeRateLimited,
			ExhaustUntil: until,
			Reason:       fmt.Sprintf("429: the provider's %s %s, exhausted until %s, next provider at once", delay, why, until.Format(time.RFC3339)),
		}, clamp
	}
	if delay > p.RateLimitedMaxWait {
		return exhaust(fmt.Sprintf("exceeds max_wait %s", p.RateLimitedMaxWait))
	}
	if s.NoRetry {
		return Decision{Action: ActionNext, Outcome: OutcomeRateLimited, Reason: "429 per-minute: a single call, not retried"}, nil
	}
	if s.Retries >= p.maxRetries() {
		return Decision{Action: ActionNext, Outcome: OutcomeRateLimited,
			Reason: fmt.Sprintf("429 per-minute: %d retries made, next provider at once", s.Retries)}, nil
	}
	if delay > 0 {
		spread := min(delay/10, time.Second)
		wait := min(delay+time.Duration(s.Jitter()*float64(spread)), max(p.RateLimitedMaxWait, delay))
		w, ok := p.Fit(wait, now, s.Deadline)
		if !ok {
			if w, ok = p.Fit(delay, now, s.Deadline); !ok {
				return exhaust("does not fit the deadline")
			}
		}
		return Decision{Action: ActionRetry, Wait: w, Outcome: OutcomeRateLimited,
			Reason: fmt.Sprintf("429 per-minute: waiting the provider's %s (%s with jitter), retry %d of %d", delay, w.Round(time.Millisecond), s.Retries+1, p.maxRetries())}, nil
	}
	return p.backoff(s, now), nil
}

// backoff is a per-minute 429 without a provider delay: a full-jitter
// backoff that doubles per retry up to max_wait.
func (p RetryPolicy) backoff(s Standing, now time.Time) Decision {
	ceiling := p.RateLimitedWait
	for i := 0; i < s.Retries && ceiling < p.RateLimitedMaxWait; i++ {
		ceiling *= 2 // stops at max_wait: no overflow for any retry count
	}
	ceiling = min(ceiling, p.RateLimitedMaxWait)
	wait := time.Duration(s.Jitter() * float64(ceiling))
	w, ok := p.Fit(wait, now, s.Deadline)
	if !ok {
		return Decision{Action: ActionNext, Outcome: OutcomeRateLimited,
			Reason: fmt.Sprintf("429 per-minute: a %s backoff does not fit the deadline, next provider at once", wait.Round(time.Millisecond))}
	}
	return Decision{Action: ActionRetry, Wait: w, Outcome: OutcomeRateLimited,
		Reason: fmt.Sprintf("429 per-minute: no provider delay, backing off %s (jitter up to %s), retry %d of %d", w.Round(time.Millisecond), ceiling, s.Retries+1, p.maxRetries())}
}

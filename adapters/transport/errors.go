package transport

import (
	"context"
	"errors"

	"github.com/contentpipe/contentpipe/chain"
)

// Sentinel kinds of transport failure. Every error the Transport returns from
// RoundTrip or from a body read matches exactly one of them with errors.Is
// (or is the caller's own context error).
var (
	// ErrConnectTimeout: the dial or TLS handshake did not finish within
	// Timeouts.Connect.
	ErrConnectTimeout = errors.New("connect timeout")
	// ErrConnect: the connection could not be made (refused, unreachable,
	// DNS failure, TLS failure) before any request was written.
	ErrConnect = errors.New("connect failed")
	// ErrFirstTokenTimeout: no answer byte came within Timeouts.FirstToken
	// of the request being written (keep-alive comments and leading
	// whitespace do not count as answer bytes).
	ErrFirstTokenTimeout = errors.New("first token timeout")
	// ErrIdleTimeout: after the first answer byte, the answer went silent
	// for longer than Timeouts.Idle.
	ErrIdleTimeout = errors.New("idle timeout")
	// ErrTotalTimeout: the whole exchange took longer than Timeouts.Total.
	ErrTotalTimeout = errors.New("total timeout")
	// ErrConnectionLost: the connection broke after it was made (reset,
	// closed before the status line, body cut short).
	ErrConnectionLost = errors.New("connection lost")
	// ErrBodyTooLarge: the answer body exceeded the Transport's MaxBody.
	ErrBodyTooLarge = errors.New("answer body too large")
	// ErrStatus: the answer's status is outside 2xx. Its status, headers and
	// body are in the Exchange; the adapter classifies it from there.
	ErrStatus = errors.New("status outside 2xx")
)

// Error is a transport failure: Kind is one of the sentinels above, Detail a
// short human note (for example the limit that expired) and Err the
// underlying network error, if any. errors.Is matches both Kind and Err.
type Error struct {
	Kind   error
	Detail string
	Err    error
}

func (e *Error) Error() string {
	s := e.Kind.Error()
	if e.Detail != "" {
		s += " (" + e.Detail + ")"
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

// Unwrap returns Kind and, when set, Err.
func (e *Error) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Kind}
	}
	return []error{e.Kind, e.Err}
}

// FailureOutcome maps a transport-level failure to its call outcome: a
// dial or TLS handshake that ran out of time to timeout_connect, one that
// failed (DNS failure, refused, unreachable, TLS failure: no HTTP exchange
// could start) to connect_failed, the three stream timers to their
// outcomes, the caller's
// context deadline to timeout_total, a broken connection to stream_broken,
// an oversized body or a cancelled context to error. ok is false when err is
// not a transport failure: an answer outside 2xx (ErrStatus), which the
// adapter classifies from its status and body, or an SDK's own error.
func FailureOutcome(err error) (outcome chain.Outcome, ok bool) {
	switch {
	case err == nil:
		return "", false
	case errors.Is(err, ErrConnectTimeout):
		return chain.OutcomeTimeoutConnect, true
	case errors.Is(err, ErrConnect):
		return chain.OutcomeConnectFailed, true
	case errors.Is(err, ErrFirstTokenTimeout):
		return chain.OutcomeTimeoutFirstToken, true
	case errors.Is(err, ErrIdleTimeout):
		return chain.OutcomeTimeoutIdle, true
	case errors.Is(err, ErrTotalTimeout), errors.Is(err, context.DeadlineExceeded):
		return chain.OutcomeTimeoutTotal, true
	case errors.Is(err, ErrConnectionLost):
		return chain.OutcomeStreamBroken, true
	case errors.Is(err, ErrBodyTooLarge), errors.Is(err, context.Canceled):
		return chain.OutcomeError, true
	}
	return "", false
}

// Failure starts the typed error of a failed call from what the transport
// saw: provider name, status, first-token time and the partial text (the
// adapter reads the quota headers with its provider's profile). When the transport itself failed (timeout, refused or lost
// connection, oversized body, cancelled context) that failure wins over
// whatever the SDK made of it, and done is true: the error is complete.
// Otherwise the caller classifies the SDK's error into the returned value.
// Every message and cause is scrubbed of key.
func Failure(name string, ex *Exchange, err error, partial, key string) (pe *chain.ProviderError, done bool) {
	pe = &chain.ProviderError{
		Provider:   name,
		Status:     ex.Status(),
		Partial:    partial,
		FirstToken: ex.FirstByte(),
		Quota:      chain.QuotaHint{Remaining: -1},
	}
	cause := err
	if terr := ex.Err(); terr != nil {
		cause = terr
	}
	if outcome, ok := FailureOutcome(cause); ok {
		pe.Outcome = outcome
		pe.Message = chain.Scrub(cause.Error(), key)
		pe.Cause = Redact(cause, key)
		return pe, true
	}
	pe.Cause = Redact(err, key)
	return pe, false
}

package transport

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// ParseRetryAfter parses a Retry-After header value: delay seconds (a
// fraction is accepted) or an HTTP date, taken relative to now (a past date
// gives 0). A wait longer than MaxDelay saturates to it. ok is false for an
// empty or unreadable value.
func ParseRetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, ok := parseSeconds(v); ok {
		return d, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	if d := t.Sub(now); d > 0 {
		return min(d, MaxDelay), true
	}
	return 0, true
}

// ParseReset parses a rate-limit reset header: a Go-style duration (Groq
// "2m59.56s", "7.66s") or bare seconds (Cerebras "33011.38"), at most
// MaxDelay.
func ParseReset(v string) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if d, ok := parseSeconds(v); ok {
		return d, true
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, false
	}
	return min(d, MaxDelay), true
}

// ParseEpoch parses an absolute reset time given as a Unix epoch number:
// milliseconds (OpenRouter X-RateLimit-Reset "1787616000000") or, for
// values below 1e12, seconds.
func ParseEpoch(v string) (t time.Time, ok bool) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 1e9 {
		return time.Time{}, false
	}
	if n >= 1e12 {
		return time.UnixMilli(n).UTC(), true
	}
	return time.Unix(n, 0).UTC(), true
}

// Redact wraps err so that its message is scrubbed of secrets (see
// chain.Scrub).
// errors.Is and errors.As still see the original error, but Unwrap does not
// expose it, so no error string in the chain carries a secret. Redact(nil)
// is nil.
func Redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	return &redacted{msg: chain.Scrub(err.Error(), secrets...), err: err}
}

type redacted struct {
	msg string
	err error
}

func (r *redacted) Error() string { return r.msg }

// Format prints the scrubbed message for every verb, so that %#v of a
// struct holding the error does not print the original.
func (r *redacted) Format(f fmt.State, _ rune) { _, _ = io.WriteString(f, r.msg) }
func (r *redacted) Is(target error) bool       { return errors.Is(r.err, target) }
func (r *redacted) As(target any) bool         { return errors.As(r.err, target) }

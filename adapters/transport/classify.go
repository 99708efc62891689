package transport

import (
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Classify maps an HTTP error status to an outcome. rateLimit marks an
// answer the provider itself calls a rate limit whatever its status (Groq's
// 413 with code rate_limit_exceeded). A rate limit is quota_exhausted when
// scope is ScopeDay and rate_limited otherwise; 500/502/503/504/529 are
// server_error; 401/403 auth_error; 400/404/413/422 bad_request; anything
// else is error.
func Classify(status int, rateLimit bool, scope chain.Scope) chain.Outcome {
	if status == http.StatusTooManyRequests || rateLimit {
		if scope == chain.ScopeDay {
			return chain.OutcomeQuotaExhausted
		}
		return chain.OutcomeRateLimited
	}
	switch status {
	case 500, 502, 503, 504, 529:
		return chain.OutcomeServerError
	case 401, 403:
		return chain.OutcomeAuthError
	case 400, 404, 413, 422:
		return chain.OutcomeBadRequest
	}
	return chain.OutcomeError
}

// ScopeFromText finds the quota window named in a provider's text: a Gemini
// quotaId ("…PerDay…", "…PerMinute…"), a Groq message ("per day (TPD)",
// "(RPM)") or an OpenRouter one ("free-models-per-day"). A daily marker
// wins over a per-minute one. ScopeNone when neither appears.
func ScopeFromText(s string) chain.Scope {
	l := strings.ToLower(s)
	for _, k := range []string{"perday", "per day", "per-day", "(tpd)", "(rpd)", "daily"} {
		if strings.Contains(l, k) {
			return chain.ScopeDay
		}
	}
	for _, k := range []string{"perminute", "per minute", "per-minute", "(tpm)", "(rpm)"} {
		if strings.Contains(l, k) {
			return chain.ScopeMinute
		}
	}
	return chain.ScopeNone
}

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

// QuotaFromHeaders reads the daily allowance from rate-limit headers:
// Cerebras x-ratelimit-remaining-requests-day / x-ratelimit-reset-requests-day
// (seconds) first, else x-ratelimit-remaining-requests /
// x-ratelimit-reset-requests, which Groq counts per day. (OpenAI itself counts
// that pair per minute; a link to api.openai.com gets a hint that is really
// per minute.) Remaining is -1 when neither is present.
func QuotaFromHeaders(h http.Header) chain.QuotaHint {
	q := chain.QuotaHint{Remaining: -1}
	for _, pair := range [][2]string{
		{"x-ratelimit-remaining-requests-day", "x-ratelimit-reset-requests-day"},
		{"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests"},
	} {
		v := strings.TrimSpace(h.Get(pair[0]))
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0) { // NaN too
			continue
		}
		q.Remaining = int(min(f, math.MaxInt32)) // a huge or infinite count must not wrap negative
		if d, ok := ParseReset(h.Get(pair[1])); ok {
			q.Reset = d
		}
		return q
	}
	return q
}

var (
	keyParam   = regexp.MustCompile(`(?i)([?&](?:key|api_key|apikey|api-key|access_token|token)=)[^&\s"'#]+`)
	bearerText = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}`)
)

// Redacted is what Scrub puts in place of a secret.
const Redacted = "[redacted]"

// Scrub removes secrets from s: every occurrence of each non-empty secret,
// the values of key-like URL query parameters (key=, api_key=, token=…) and
// bearer tokens are replaced with "[redacted]".
func Scrub(s string, secrets ...string) string {
	for _, sec := range secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, Redacted)
		}
	}
	s = keyParam.ReplaceAllString(s, "${1}"+Redacted)
	return bearerText.ReplaceAllString(s, "${1}"+Redacted)
}

// Redact wraps err so that its message is scrubbed of secrets (see Scrub).
// errors.Is and errors.As still see the original error, but Unwrap does not
// expose it, so no error string in the chain carries a secret. Redact(nil)
// is nil.
func Redact(err error, secrets ...string) error {
	if err == nil {
		return nil
	}
	return &redacted{msg: Scrub(err.Error(), secrets...), err: err}
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

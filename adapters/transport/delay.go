package transport

import (
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// MaxDelay is the longest wait the parsers of this package return, about
// 100 years: far past any bound a retry policy applies, yet small enough
// that adding two of them never overflows a time.Duration. A longer named
// wait saturates to it, and a named wait that cannot be read at all is
// reported as MaxDelay as well, so that a policy bounding waits treats it as
// too long (and clamps it) instead of as no wait.
const MaxDelay = 100 * 365 * 24 * time.Hour

// rawLimit bounds each raw value Delays keeps.
const rawLimit = 120

// Delays collects every wait and reset time a provider names in one failed
// answer (Retry-After, Gemini retryDelay, "try again in …" in the message,
// an epoch reset header) together with the text it sent for each. The
// longest wait wins, because each is a floor. The zero value is empty; a
// Delays is not safe for concurrent use.
type Delays struct {
	wait  time.Duration
	reset time.Time
	raw   []string
}

// Add records a wait that source (for example "Retry-After") named as raw,
// read as d when ok. An unreadable wait counts as MaxDelay, a negative one
// as unreadable, a longer one as MaxDelay. Empty raw text names nothing.
func (ds *Delays) Add(source, raw string, d time.Duration, ok bool) {
	raw = strings.TrimSpace(raw)
	if raw == "" {
		return
	}
	ds.raw = append(ds.raw, source+": "+raw)
	if !ok || d < 0 || d > MaxDelay {
		d = MaxDelay
	}
	ds.wait = max(ds.wait, d)
}

// RetryAfter records a Retry-After header value (seconds or an HTTP date,
// taken relative to now); an absent header names nothing.
func (ds *Delays) RetryAfter(v string, now time.Time) {
	d, ok := ParseRetryAfter(v, now)
	ds.Add("Retry-After", v, d, ok)
}

// Message records the wait an error message names ("Please try again in
// 9m52.272s."), quoting only the phrase; a message naming none adds nothing.
func (ds *Delays) Message(msg string) {
	phrase, d, ok := FindMessageDelay(msg)
	ds.Add("message", phrase, d, ok)
}

// Epoch records a reset header that source named as an epoch number
// (OpenRouter's X-RateLimit-Reset in milliseconds, or seconds). A number
// below 1e9 cannot be an epoch after 2001 and is read as seconds from now.
// Anything else counts as an unreadable wait.
func (ds *Delays) Epoch(source, v string, now time.Time) {
	v = strings.TrimSpace(v)
	if v == "" {
		return
	}
	if t, ok := ParseEpoch(v); ok {
		ds.raw = append(ds.raw, source+": "+v)
		if t.After(ds.reset) {
			ds.reset = t
		}
		return
	}
	d, ok := parseSeconds(v)
	ds.Add(source, v, d, ok)
}

// Fill sets pe's RetryAfter (the longest wait named), ResetAt (the latest
// reset time named) and RetryRaw (every value as "source: text", in the
// order read, joined by "; ", scrubbed of key, each at most about 120
// bytes). It leaves pe alone when
// nothing was named.
func (ds *Delays) Fill(pe *chain.ProviderError, key string) {
	if len(ds.raw) == 0 {
		return
	}
	pe.RetryAfter = ds.wait
	pe.ResetAt = ds.reset
	raw := make([]string, len(ds.raw))
	for i, r := range ds.raw {
		raw[i] = clip(chain.Scrub(r, key)) // scrubbed first: a clip must not cut a key out of Scrub's sight
	}
	pe.RetryRaw = strings.Join(raw, "; ")
}

// clip makes a provider's value fit for a log line or an alert: valid
// UTF-8, one line, at most rawLimit bytes.
func clip(s string) string {
	s = strings.Join(strings.Fields(strings.ToValidUTF8(s, "\uFFFD")), " ")
	if len(s) <= rawLimit {
		return s
	}
	cut := rawLimit
	for cut > 0 && !isRuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

var (
	// "Please try again in 9m52.272s." (Groq), "Please retry in 23.472316927s." (Gemini).
	compactDelay = regexp.MustCompile(`(?i)(?:try again|retry)\s+(?:in|after)\s+((?:\d+(?:\.\d+)?(?:ns|us|µs|ms|h|m|s))+)\b`)
	// "try again in 20 seconds", "retry after 2 minutes".
	wordDelay = regexp.MustCompile(`(?i)(?:try again|retry)\s+(?:in|after)\s+(\d+(?:\.\d+)?)\s*(milliseconds?|ms|seconds?|secs?|minutes?|mins?|hours?)\b`)
	// One number and unit of a compact duration.
	durationPart = regexp.MustCompile(`(\d+(?:\.\d+)?)(ns|us|µs|ms|h|m|s)`)
)

// FindMessageDelay finds the wait a provider names in an error message:
// "try again in 9m52.272s", "Please retry in 23.472316927s.", "try again in
// 20 seconds", and the phrase that named it; phrase is empty when the
// message names none. A wait longer than MaxDelay saturates to it.
func FindMessageDelay(msg string) (phrase string, d time.Duration, ok bool) {
	if m := compactDelay.FindStringSubmatch(msg); m != nil {
		return m[0], compactDuration(m[1]), true
	}
	if m := wordDelay.FindStringSubmatch(msg); m != nil {
		n, err := strconv.ParseFloat(m[1], 64)
		if err != nil && !isRangeErr(err) {
			return m[0], 0, false
		}
		unit := time.Second
		switch u := strings.ToLower(m[2]); {
		case strings.HasPrefix(u, "ms"), strings.HasPrefix(u, "milli"):
			unit = time.Millisecond
		case strings.HasPrefix(u, "min"):
			unit = time.Minute
		case strings.HasPrefix(u, "hour"):
			unit = time.Hour
		}
		return m[0], saturate(n * float64(unit)), true
	}
	return "", 0, false
}

// compactDuration reads a Go-style duration that compactDelay matched,
// saturating at MaxDelay where time.ParseDuration would overflow.
func compactDuration(s string) time.Duration {
	if d, err := time.ParseDuration(s); err == nil {
		return min(d, MaxDelay)
	}
	units := map[string]time.Duration{"ns": 1, "us": time.Microsecond, "µs": time.Microsecond,
		"ms": time.Millisecond, "s": time.Second, "m": time.Minute, "h": time.Hour}
	var total float64
	for _, p := range durationPart.FindAllStringSubmatch(s, -1) {
		n, _ := strconv.ParseFloat(p[1], 64)
		total += n * float64(units[p[2]])
	}
	return saturate(total)
}

// saturate converts nanoseconds held in a float to a Duration in
// [0, MaxDelay]; NaN is 0.
func saturate(ns float64) time.Duration {
	switch {
	case !(ns > 0):
		return 0
	case ns >= float64(MaxDelay):
		return MaxDelay
	}
	return time.Duration(ns)
}

// ParseProtoDuration reads a google.protobuf.Duration in its JSON form
// ("26s", "23.472316927s", "999999999s"), saturating at MaxDelay. ok is
// false for anything else, a negative value included.
func ParseProtoDuration(s string) (time.Duration, bool) {
	num, found := strings.CutSuffix(strings.TrimSpace(s), "s")
	if !found || num == "" || strings.ContainsAny(num, "+-eEinfINFaA") {
		return 0, false
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil && !isRangeErr(err) {
		return 0, false
	}
	if d, err := time.ParseDuration(num + "s"); err == nil {
		return min(d, MaxDelay), true // exact for decimal text
	}
	return saturate(f * float64(time.Second)), true
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// parseSeconds reads a non-negative number of seconds ("33011.38"),
// saturating at MaxDelay.
func parseSeconds(v string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil && !isRangeErr(err) || f < 0 || math.IsNaN(f) || strings.ContainsAny(v, "xXpP_") {
		return 0, false
	}
	if math.IsInf(f, 0) && !isRangeErr(err) {
		return 0, false // "Inf" spelled out is no number of seconds
	}
	if d, err := time.ParseDuration(v + "s"); err == nil {
		return min(d, MaxDelay), true // exact for decimal text such as "33011.38"
	}
	return saturate(f * float64(time.Second)), true
}

package transport_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/chain"
)

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2", 2 * time.Second, true},
		{" 86399 ", 86399 * time.Second, true},
		{"1.5", 1500 * time.Millisecond, true},
		{"0", 0, true},
		{"Sun, 29 Nov 2026 18:00:26 GMT", 26 * time.Second, true},
		{"Sun, 29 Nov 2026 17:00:00 GMT", 0, true}, // past
		{"", 0, false},
		{"-3", 0, false},
		{"soon", 0, false},
		{"NaN", 0, false},
		{"Inf", 0, false},
		{"0x10", 0, false},
		{"315360000", 315360000 * time.Second, true},                // ten years: kept, the policy bounds it
		{"Fri, 01 Jun 2035 12:00:00 GMT", 74538 * time.Hour, true},  // 2035: kept
		{"99999999999999999999", transport.MaxDelay, true},          // beyond a Duration: saturated
		{"1e400", transport.MaxDelay, true},                         // beyond a float64
		{"Fri, 31 Dec 9999 23:59:59 GMT", transport.MaxDelay, true}, // beyond a Duration
	}
	for _, tt := range tests {
		got, ok := transport.ParseRetryAfter(tt.in, now)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseMessageDelay(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"Rate limit reached for model `llama-3.3-70b-versatile` on tokens per day (TPD): Limit 200000, Used 197117, Requested 4254. Please try again in 9m52.272s. Need more tokens?", 9*time.Minute + 52272*time.Millisecond, true},
		{"You exceeded your current quota. Please retry in 23.472316927s.", 23472316927 * time.Nanosecond, true},
		{"Please try again in 120ms.", 120 * time.Millisecond, true},
		{"please try again in 1h2m3s", time.Hour + 2*time.Minute + 3*time.Second, true},
		{"Try again in 20 seconds.", 20 * time.Second, true},
		{"retry after 2 minutes", 2 * time.Minute, true},
		{"Requests per minute limit exceeded - too many requests sent.", 0, false},
		{"try again later", 0, false},
		{"", 0, false},
		{"Please try again in 99999999999999h.", transport.MaxDelay, true},
		{"Please try again in 2562047h47m16.854775808s.", transport.MaxDelay, true}, // one past the largest Duration
		{"try again in 99999999999999999999 hours", transport.MaxDelay, true},
		{"try again in 1" + strings.Repeat("0", 400) + " seconds", transport.MaxDelay, true}, // beyond a float64
	}
	for _, tt := range tests {
		got, ok := transport.ParseMessageDelay(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseMessageDelay(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseReset(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"2m59.56s", 2*time.Minute + 59560*time.Millisecond, true},
		{"7.66s", 7660 * time.Millisecond, true},
		{"33011.38", 33011380 * time.Millisecond, true},
		{"11", 11 * time.Second, true},
		{"", 0, false},
		{"tomorrow", 0, false},
	}
	for _, tt := range tests {
		got, ok := transport.ParseReset(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseReset(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestParseEpoch(t *testing.T) {
	tests := []struct {
		in   string
		want time.Time
		ok   bool
	}{
		{"1787616000000", time.UnixMilli(1787616000000).UTC(), true},
		{"1787616000", time.Unix(1787616000, 0).UTC(), true},
		{"42", time.Time{}, false},
		{"x", time.Time{}, false},
	}
	for _, tt := range tests {
		got, ok := transport.ParseEpoch(tt.in)
		if !got.Equal(tt.want) || ok != tt.ok {
			t.Errorf("ParseEpoch(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

func TestScrubAndRedact(t *testing.T) {
	const key = "sk-live-SECRET123456"
	in := fmt.Sprintf(`Post "https://x.test/v1?key=AIzaOTHER&alt=sse": invalid key %s; Authorization: Bearer %s`, key, "abcdefghijklmnop")
	got := chain.Scrub(in, key, "")
	for _, bad := range []string{key, "AIzaOTHER", "abcdefghijklmnop"} {
		if strings.Contains(got, bad) {
			t.Fatalf("Scrub left %q in %q", bad, got)
		}
	}
	if !strings.Contains(got, "alt=sse") || !strings.Contains(got, "key=[redacted]") {
		t.Fatalf("Scrub over-redacted: %q", got)
	}

	base := &transport.Error{Kind: transport.ErrConnect, Err: errors.New("dial " + key)}
	err := transport.Redact(fmt.Errorf("send: %w", base), key)
	if strings.Contains(err.Error(), key) || errors.Unwrap(err) != nil {
		t.Fatalf("Redact leaks: %v / %v", err, errors.Unwrap(err))
	}
	var te *transport.Error
	if !errors.Is(err, transport.ErrConnect) || !errors.As(err, &te) {
		t.Fatalf("Redact hides the kind from errors.Is/As")
	}
	if transport.Redact(nil, key) != nil {
		t.Fatal("Redact(nil) != nil")
	}
}

type leaky struct{ Secret string }

func (l leaky) Error() string { return "leaky " + l.Secret }

func TestRedactHidesFieldsFromGoSyntax(t *testing.T) {
	const key = "sk-live-SECRET123456"
	err := transport.Redact(leaky{Secret: key}, key)
	holder := struct{ Cause error }{err}
	for _, s := range []string{fmt.Sprintf("%#v", holder), fmt.Sprintf("%+v", holder), fmt.Sprintf("%v", err)} {
		if strings.Contains(s, key) {
			t.Fatalf("formatted %q leaks the key", s)
		}
	}
	var l leaky
	if !errors.As(err, &l) || l.Secret != key {
		t.Fatal("errors.As lost the original")
	}
}

func TestParseProtoDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"26s", 26 * time.Second, true},
		{"23.472316927s", 23472316927 * time.Nanosecond, true},
		{"999999999s", 999999999 * time.Second, true}, // 31 years: kept
		{"0s", 0, true},
		{"99999999999999s", transport.MaxDelay, true},
		{"1" + strings.Repeat("0", 400) + "s", transport.MaxDelay, true},
		{"-5s", 0, false},
		{"1e9s", 0, false},
		{"NaNs", 0, false},
		{"Infs", 0, false},
		{"26", 0, false},
		{"s", 0, false},
		{"soon", 0, false},
	}
	for _, tt := range tests {
		got, ok := transport.ParseProtoDuration(tt.in)
		if got != tt.want || ok != tt.ok {
			t.Errorf("ParseProtoDuration(%q) = %v, %v; want %v, %v", tt.in, got, ok, tt.want, tt.ok)
		}
	}
}

// TestDelays: every named value is kept as sent, the longest wait wins,
// an unreadable one counts as MaxDelay, the key is scrubbed and nothing
// named leaves the error alone.
func TestDelays(t *testing.T) {
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	const key = "gsk_TEST_secret_key_0123456789abcdef"
	tests := []struct {
		name  string
		fill  func(*transport.Delays)
		wait  time.Duration
		reset time.Time
		raw   string
	}{
		{"none", func(*transport.Delays) {}, 7, time.Time{}, "untouched"},
		{"blank header", func(d *transport.Delays) { d.RetryAfter("  ", now) }, 7, time.Time{}, "untouched"},
		{"longest wins", func(d *transport.Delays) {
			d.RetryAfter("2", now)
			d.Message("Please try again in 9m52.272s.")
		}, 9*time.Minute + 52272*time.Millisecond, time.Time{}, "Retry-After: 2; message: try again in 9m52.272s"},
		{"unreadable wins", func(d *transport.Delays) {
			d.RetryAfter("soon", now)
			d.Add("retryDelay", "26s", 26*time.Second, true)
		}, transport.MaxDelay, time.Time{}, "Retry-After: soon; retryDelay: 26s"},
		{"epoch", func(d *transport.Delays) { d.Epoch("X-RateLimit-Reset", "1787616000000", now) },
			0, time.UnixMilli(1787616000000).UTC(), "X-RateLimit-Reset: 1787616000000"},
		{"epoch seconds from now", func(d *transport.Delays) { d.Epoch("X-RateLimit-Reset", "60", now) },
			time.Minute, time.Time{}, "X-RateLimit-Reset: 60"},
		{"key scrubbed, long value clipped", func(d *transport.Delays) { d.RetryAfter(key+strings.Repeat(" x", 200), now) },
			transport.MaxDelay, time.Time{}, "Retry-After: " + chain.Redacted + strings.Repeat(" x", 48) + "…"},
		{"key past the clip", func(d *transport.Delays) { d.RetryAfter(strings.Repeat("y", 110)+key, now) },
			transport.MaxDelay, time.Time{}, "Retry-After: " + strings.Repeat("y", 107) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var ds transport.Delays
			tt.fill(&ds)
			pe := &chain.ProviderError{RetryAfter: 7, RetryRaw: "untouched"}
			ds.Fill(pe, key)
			if pe.RetryAfter != tt.wait || !pe.ResetAt.Equal(tt.reset) || pe.RetryRaw != tt.raw {
				t.Fatalf("got %v %v %q; want %v %v %q", pe.RetryAfter, pe.ResetAt, pe.RetryRaw, tt.wait, tt.reset, tt.raw)
			}
		})
	}
}

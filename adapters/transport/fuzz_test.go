package transport

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// fixtureSeeds returns the provider-wire fixtures under adapters/testdata
// as (status, header lines, body).
func fixtureSeeds(t interface{ Fatal(...any) }) [][3]string {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "*", "*.http"))
	if err != nil || len(files) == 0 {
		t.Fatal(fmt.Sprintf("no fixtures: %v", err))
	}
	var out [][3]string
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
		if err != nil {
			t.Fatal(fmt.Sprintf("%s: %v", f, err))
		}
		var hb strings.Builder
		for k, vs := range resp.Header {
			for _, v := range vs {
				hb.WriteString(k + ": " + v + "\n")
			}
		}
		var body bytes.Buffer
		_, _ = body.ReadFrom(resp.Body)
		resp.Body.Close()
		out = append(out, [3]string{fmt.Sprint(resp.StatusCode), hb.String(), body.String()})
	}
	return out
}

func headerOf(lines string) http.Header {
	h := http.Header{}
	for _, l := range strings.Split(lines, "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok {
			h.Add(strings.TrimSpace(k), strings.TrimSpace(v))
		}
	}
	return h
}

// FuzzRateLimitText: the parsers of waits, resets and scopes accept any
// text a provider may send without panicking, and never return a negative
// or absurd wait.
func FuzzRateLimitText(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(s[2], s[1])
	}
	for _, s := range []string{"Please try again in 9m52.272s.", "Please retry in 23.472316927s.", "try again in 20 seconds",
		"retry after 2 minutes", "try again in 99999999999999999999 hours", "retry in 9223372036854775807ns",
		"Wed, 21 Oct 2015 07:28:00 GMT", "1787616000000", "33011.38", "2m59.56s", "-5", "NaN", "1e309"} {
		f.Add(s, "Retry-After: "+s+"\nx-ratelimit-remaining-requests: "+s+"\nx-ratelimit-reset-requests: "+s)
	}
	now := time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)
	for _, s := range []string{"999999999s", "99999999999999s", "-5s", "1" + strings.Repeat("0", 400) + "s",
		"try again in 2562047h47m16.854775808s", "Fri, 31 Dec 9999 23:59:59 GMT", "Fri, 01 Jun 2035 12:00:00 GMT", "315360000"} {
		f.Add(s, "Retry-After: "+s)
	}
	bad := func(d time.Duration) bool { return d < 0 || d > MaxDelay }
	f.Fuzz(func(t *testing.T, text, headers string) {
		if d, ok := ParseMessageDelay(text); ok && bad(d) {
			t.Fatalf("ParseMessageDelay(%q) = %v", text, d)
		}
		if phrase, d, ok := FindMessageDelay(text); bad(d) || (phrase == "" && ok) || (phrase != "" && !strings.Contains(text, phrase)) {
			t.Fatalf("FindMessageDelay(%q) = %q, %v, %v", text, phrase, d, ok)
		}
		if d, ok := ParseRetryAfter(text, now); ok && bad(d) {
			t.Fatalf("ParseRetryAfter(%q) = %v", text, d)
		}
		if d, ok := ParseReset(text); ok && bad(d) {
			t.Fatalf("ParseReset(%q) = %v", text, d)
		}
		if d, ok := ParseProtoDuration(text); ok && bad(d) {
			t.Fatalf("ParseProtoDuration(%q) = %v", text, d)
		}
		var ds Delays
		h := headerOf(headers)
		ds.RetryAfter(h.Get("Retry-After"), now)
		ds.Message(text)
		ds.Epoch("X-RateLimit-Reset", h.Get("X-RateLimit-Reset"), now)
		pe := &chain.ProviderError{}
		ds.Fill(pe, "")
		if bad(pe.RetryAfter) || ((pe.RetryAfter != 0 || !pe.ResetAt.IsZero()) && pe.RetryRaw == "") {
			t.Fatalf("Delays from %q / %q: wait %v reset %v raw %q", text, headers, pe.RetryAfter, pe.ResetAt, pe.RetryRaw)
		}
		if now.Add(pe.RetryAfter).Add(pe.RetryAfter).Before(now) {
			t.Fatalf("now + %v is before now", pe.RetryAfter)
		}
		if tm, ok := ParseEpoch(text); ok && tm.Before(time.Unix(1e9, 0)) {
			t.Fatalf("ParseEpoch(%q) = %v", text, tm)
		}
	})
}

// FuzzScrub: no secret of realistic shape survives Scrub or Redact, in
// any formatting of the error.
func FuzzScrub(f *testing.F) {
	for _, s := range fixtureSeeds(f) {
		f.Add(s[2], "gsk_TEST_secret_key_0123456789")
	}
	f.Add(`Get "https://api.example/v1?key=AIzaSECRETSECRET&alt=sse": dial tcp: refused`, "AIzaSECRETSECRET")
	f.Add("Authorization: Bearer sk-or-v1-abcdef0123456789 rejected", "sk-or-v1-abcdef0123456789")
	f.Add("https://api.telegram.org/bot123456:ABCDEF-secret/sendMessage: 502", "123456:ABCDEF-secret")
	f.Fuzz(func(t *testing.T, text, secret string) {
		if len(secret) < 8 || strings.ContainsAny(secret, "[]") {
			t.Skip() // keys are long; "[redacted]" itself may contain a short one
		}
		in := text + " " + secret + " " + strings.ReplaceAll(text, "e", secret)
		if out := chain.Scrub(in, secret); strings.Contains(out, secret) {
			t.Fatalf("Scrub kept the secret: %q", out)
		}
		err := Redact(fmt.Errorf("call: %w", errors.New(in)), secret)
		for _, s := range []string{err.Error(), fmt.Sprintf("%v|%+v|%#v|%s|%q", err, err, err, err, err)} {
			if strings.Contains(s, secret) {
				t.Fatalf("Redact kept the secret: %q", s)
			}
		}
		if !errors.Is(err, err) {
			t.Fatal("Redact broke errors.Is")
		}
	})
}

// ParseMessageDelay is FindMessageDelay without the phrase; ok is false
// when the message names no wait.
func ParseMessageDelay(msg string) (d time.Duration, ok bool) {
	phrase, d, ok := FindMessageDelay(msg)
	return d, ok && phrase != ""
}

package chain

import (
	"strings"
	"testing"
)

// TestStatusOutcome is the one status table, as README "The database"
// lists it (the chain's own fallback and the adapters' share it).
func TestStatusOutcome(t *testing.T) {
	tests := []struct {
		status int
		want   Outcome
	}{
		{429, OutcomeRateLimited},
		{401, OutcomeAuthError}, {403, OutcomeAuthError},
		{402, OutcomeMisconfigured}, {404, OutcomeMisconfigured},
		{400, OutcomeBadRequest}, {408, OutcomeBadRequest}, {413, OutcomeBadRequest}, {418, OutcomeBadRequest}, {422, OutcomeBadRequest},
		{500, OutcomeServerError}, {501, OutcomeServerError}, {502, OutcomeServerError}, {503, OutcomeServerError},
		{504, OutcomeServerError}, {529, OutcomeServerError}, {599, OutcomeServerError},
		{0, OutcomeError}, {101, OutcomeError}, {200, OutcomeError}, {302, OutcomeError}, {600, OutcomeError}, {-1, OutcomeError},
	}
	for _, tt := range tests {
		if got := StatusOutcome(tt.status); got != tt.want {
			t.Errorf("StatusOutcome(%d) = %q, want %q", tt.status, got, tt.want)
		}
		if got := classify(&ProviderError{Status: tt.status}); got != tt.want {
			t.Errorf("classify(status %d) = %q, want %q: the chain's fallback differs from the table", tt.status, got, tt.want)
		}
	}
}

// FuzzStatusOutcome: every status maps to exactly one outcome, and the
// classes go where the table says.
func FuzzStatusOutcome(f *testing.F) {
	for _, s := range []int{0, 200, 400, 401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 503, 504, 529, 599, 999, -1} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, status int) {
		o := StatusOutcome(status)
		if again := StatusOutcome(status); again != o {
			t.Fatalf("not deterministic: %q then %q", o, again)
		}
		switch {
		case status == 429 && o != OutcomeRateLimited,
			(status == 401 || status == 403) && o != OutcomeAuthError,
			status >= 500 && status <= 599 && o != OutcomeServerError,
			(status < 400 || status > 599) && o != OutcomeError:
			t.Fatalf("%d → %q", status, o)
		}
	})
}

// TestScrubOnce: the one scrubber replaces secrets (any length), key-like
// URL parameters and bearer tokens; the answer scrubber only configured
// secrets of at least minSecretLen bytes, and says whether it found one.
func TestScrubOnce(t *testing.T) {
	got := Scrub(`GET https://x.test/v1?key=AIzaOTHER&alt=sse: key sk-1 refused; Authorization: Bearer abcdefghijklmnop`, "sk-1")
	for _, bad := range []string{"sk-1", "AIzaOTHER", "abcdefghijklmnop"} {
		if strings.Contains(got, bad) {
			t.Fatalf("Scrub left %q in %q", bad, got)
		}
	}
	if !strings.Contains(got, "alt=sse") || !strings.Contains(got, "key="+Redacted) {
		t.Fatalf("Scrub over-redacted: %q", got)
	}
	if s, found := scrub([]string{"x", "long-secret-value"}, "an x and a long-secret-value"); s != "an x and a "+Redacted || !found {
		t.Fatalf("scrub = %q, %v", s, found)
	}
}

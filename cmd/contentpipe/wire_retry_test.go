package main

import (
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
)

// TestRetryPolicyTakesTheFileAsWritten: the retry section reaches the
// chain value for value, an explicit `max_retries: 0` and `other.wait: 0s`
// as zeros that the chain acts on (no retry, no wait), and a file without a
// retry section as the chain's own defaults.
func TestRetryPolicyTakesTheFileAsWritten(t *testing.T) {
	t.Parallel()
	if got := retryPolicy(config.Default(t.TempDir()).Retry); got != chain.DefaultRetryPolicy() {
		t.Fatalf("no retry section: %+v, want chain.DefaultRetryPolicy() %+v", got, chain.DefaultRetryPolicy())
	}
	r := config.Default(t.TempDir()).Retry
	r.RateLimited.MaxRetries, r.Other.Wait = 0, 0
	p := retryPolicy(r)
	want := chain.DefaultRetryPolicy()
	want.RateLimitedMaxRetries, want.OtherWait = 0, 0
	if p != want {
		t.Fatalf("policy %+v, want %+v", p, want)
	}
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, e := range []*chain.ProviderError{
		{Status: 429, Outcome: chain.OutcomeRateLimited, RetryAfter: time.Second},
		{Status: 400, Outcome: chain.OutcomeBadRequest},
	} {
		if d, _ := p.Judge(chain.Observation{Err: e}, chain.Standing{}, now); d.Action != chain.ActionNext || d.Wait != 0 {
			t.Errorf("%s: %v after %s, want next at once", e.Outcome, d.Action, d.Wait)
		}
	}
}

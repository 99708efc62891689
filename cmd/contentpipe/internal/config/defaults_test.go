package config

import (
	"testing"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
)

// TestDefaultsAreTheOwners: a file without retry, job.deadline,
// max_tokens or alerts keys gets exactly the defaults of the packages that
// own those settings, so a default changed there reaches the config.
func TestDefaultsAreTheOwners(t *testing.T) {
	cfg, l := Default(t.TempDir()), DefaultLink()
	p, b := chain.DefaultRetryPolicy(), chain.BreakerSettings{}.WithDefaults()
	r := cfg.Retry
	got := chain.RetryPolicy{RateLimitedWait: r.RateLimited.Wait, RateLimitedMaxRetries: r.RateLimited.MaxRetries,
		RateLimitedMaxWait: r.RateLimited.MaxWait, ServerErrorWait: r.ServerError.Wait, AuthHalt: r.AuthError.Halt, OtherWait: r.Other.Wait}
	if got != p {
		t.Errorf("retry = %+v, want chain.DefaultRetryPolicy() %+v", got, p)
	}
	c := r.Circuit
	if gb := (chain.BreakerSettings{Window: c.Window, MinSamples: c.MinSamples, FailureRate: c.FailureRate,
		Cooldown: c.Cooldown, MaxCooldown: c.MaxCooldown, CloseAfter: c.CloseAfter}); gb != b {
		t.Errorf("retry.circuit = %+v, want the zero BreakerSettings' defaults %+v", gb, b)
	}
	if cfg.Job.Deadline != chain.DefaultDeadline || l.MaxTokens != chain.DefaultMaxTokens {
		t.Errorf("deadline %s, max_tokens %d; want %s, %d", cfg.Job.Deadline, l.MaxTokens, chain.DefaultDeadline, chain.DefaultMaxTokens)
	}
	if a := cfg.Alerts; a.BudgetWarnAt != alerts.DefaultBudgetWarnAt || a.ProviderDownAfter != alerts.DefaultProviderDownAfter {
		t.Errorf("alerts = %v, %s; want %v, %s", a.BudgetWarnAt, a.ProviderDownAfter, alerts.DefaultBudgetWarnAt, alerts.DefaultProviderDownAfter)
	}
}

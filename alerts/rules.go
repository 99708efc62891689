package alerts

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// CapUse is one provider's use of its daily cap for the day that started at
// DayStart (the link's cap_reset).
type CapUse struct {
	Provider string
	DayStart time.Time
	Used     int
	Cap      int // 0 = no cap
}

// BudgetAlerts returns a "budget" alert for each provider whose use of its
// daily cap reached warnAt (a share, e.g. 0.8). The key carries the cap day,
// so each provider warns at most once per day.
func BudgetAlerts(uses []CapUse, warnAt float64) []chain.Alert {
	if warnAt <= 0 {
		warnAt = 0.8
	}
	var out []chain.Alert
	for _, u := range uses {
		if u.Cap <= 0 || float64(u.Used) < warnAt*float64(u.Cap) {
			continue
		}
		day := u.DayStart.Format("2006-01-02")
		sev, what := "warning", fmt.Sprintf("has used %d of its daily cap of %d requests (%.0f%%, warning at %.0f%%)", u.Used, u.Cap, 100*float64(u.Used)/float64(u.Cap), 100*warnAt)
		if u.Used >= u.Cap {
			what = fmt.Sprintf("has used its whole daily cap of %d requests: the chain skips it until the cap resets", u.Cap)
		}
		out = append(out, chain.Alert{
			Key: "budget:" + u.Provider + ":" + day, Rule: "budget", Severity: sev,
			Text: fmt.Sprintf("Provider %s %s for the day starting %s. Later jobs fall back to the next providers; raise daily_cap or check what is using it.",
				u.Provider, what, u.DayStart.Format("2006-01-02 15:04 MST")),
		})
	}
	return out
}

// ProviderDownAlerts returns a "provider_down" alert for each provider
// whose current failure streak (no answer since its first failed call) has
// been observed for longer than after: from its first failed call to its
// latest. A provider that is not called (skipped while exhausted or while
// its circuit is open) is not known to be failing until it is tried again.
// The key is per provider; its quiet period (a day) makes it a daily
// reminder while the streak lasts.
func ProviderDownAlerts(streaks []telemetry.FailureStreak, after time.Duration) []chain.Alert {
	if after <= 0 {
		after = time.Hour
	}
	var out []chain.Alert
	for _, s := range streaks {
		if s.Failures < 2 || s.Last.Sub(s.First) <= after {
			continue
		}
		since := "it has never answered"
		if !s.LastSuccess.IsZero() {
			since = "last answer " + s.LastSuccess.UTC().Format("2006-01-02 15:04 UTC")
		}
		detail := s.LastOutcome
		if s.LastDetail != "" {
			detail += ": " + clip(s.LastDetail, 300)
		}
		out = append(out, chain.Alert{
			Key: "provider_down:" + s.Provider, Rule: "provider_down", Severity: "warning",
			Text: fmt.Sprintf("Provider %s has been failing for %s (%d failed calls since %s; %s). Latest: %s. The chain falls back to the other providers; check its status page, key and quota.",
				s.Provider, roundDur(s.Last.Sub(s.First)), s.Failures, s.First.UTC().Format("2006-01-02 15:04 UTC"), since, detail),
		})
	}
	return out
}

// ReviewQueueAlert returns the daily "review_queue" alert when n jobs wait
// for manual review.
func ReviewQueueAlert(n int, oldest, now time.Time) (chain.Alert, bool) {
	if n <= 0 {
		return chain.Alert{}, false
	}
	age := ""
	if !oldest.IsZero() && now.After(oldest) {
		age = fmt.Sprintf(", the oldest for %s", roundDur(now.Sub(oldest)))
	}
	return chain.Alert{
		Key: "review_queue", Rule: "review_queue", Severity: "info",
		Text: fmt.Sprintf("%d job(s) wait for manual review%s: every provider's answer failed the quality gate. See: contentpipe review list", n, age),
	}, true
}

// HealthAlert returns the "health" alert for a failed health check of
// provider.
func HealthAlert(provider, outcome string, status int, detail string) chain.Alert {
	what := outcome
	if status != 0 {
		what += fmt.Sprintf(" (HTTP %d)", status)
	}
	if detail != "" {
		what += ": " + clip(detail, 300)
	}
	return chain.Alert{
		Key: "health:" + provider, Rule: "health", Severity: "warning",
		Text: fmt.Sprintf("Health check failed for provider %s: %s. Run: contentpipe health", provider, what),
	}
}

// RuleStore is what Rules reads; *telemetry.Store implements it.
type RuleStore interface {
	CapUsed(ctx context.Context, provider string, dayStart time.Time) (int, error)
	FailureStreaks(ctx context.Context) ([]telemetry.FailureStreak, error)
	ReviewQueue(ctx context.Context) (int, time.Time, error)
}

// CapLimit is a link's daily cap and the start of its current cap day.
type CapLimit struct {
	Provider string
	Cap      int
	DayStart time.Time
}

// Rules evaluates the rules that look at the database after a command:
// budget (daily cap past BudgetWarnAt), provider_down (failing longer than
// ProviderDownAfter) and review_queue. Store and Notifier are required;
// zero BudgetWarnAt and ProviderDownAfter mean 0.8 and 1h.
type Rules struct {
	Store             RuleStore
	Notifier          chain.Notifier
	Caps              []CapLimit
	BudgetWarnAt      float64
	ProviderDownAfter time.Duration
}

// Evaluate runs the rules at now and queues every alert they raise (the
// outbox drops those within their quiet period). It tries every rule and
// returns the errors joined.
func (r Rules) Evaluate(ctx context.Context, now time.Time) error {
	var (
		raised []chain.Alert
		errs   []error
	)
	var uses []CapUse
	for _, c := range r.Caps {
		if c.Cap <= 0 {
			continue
		}
		n, err := r.Store.CapUsed(ctx, c.Provider, c.DayStart)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		uses = append(uses, CapUse{Provider: c.Provider, DayStart: c.DayStart, Used: n, Cap: c.Cap})
	}
	raised = append(raised, BudgetAlerts(uses, r.BudgetWarnAt)...)
	if streaks, err := r.Store.FailureStreaks(ctx); err != nil {
		errs = append(errs, err)
	} else {
		raised = append(raised, ProviderDownAlerts(streaks, r.ProviderDownAfter)...)
	}
	if n, oldest, err := r.Store.ReviewQueue(ctx); err != nil {
		errs = append(errs, err)
	} else if a, ok := ReviewQueueAlert(n, oldest, now); ok {
		raised = append(raised, a)
	}
	for _, a := range raised {
		if err := r.Notifier.Notify(ctx, a); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("evaluate alert rules: %w", err)
	}
	return nil
}

func clip(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}

func roundDur(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%.1f days", d.Hours()/24)
	case d >= time.Hour:
		return d.Round(time.Minute).String()
	default:
		return d.Round(time.Second).String()
	}
}

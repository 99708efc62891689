package alerts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// Defaults of the Rules settings.
const (
	DefaultBudgetWarnAt      = 0.8
	DefaultProviderDownAfter = time.Hour
)

// CapUse is one provider's use of its daily cap for the day that started at
// DayStart (the link's cap_reset).
type CapUse struct {
	Provider string
	DayStart time.Time
	Used     int
	Cap      int // 0 = no cap
}

// BudgetAlerts returns a budget alert for each provider whose use of its
// daily cap reached warnAt (a share, e.g. 0.8; 0 means
// DefaultBudgetWarnAt). The key carries the cap day, so each provider warns
// at most once per day.
func BudgetAlerts(uses []CapUse, warnAt float64) []chain.Alert {
	if warnAt <= 0 {
		warnAt = DefaultBudgetWarnAt
	}
	var out []chain.Alert
	for _, u := range uses {
		if u.Cap <= 0 || float64(u.Used) < warnAt*float64(u.Cap) {
			continue
		}
		day := u.DayStart.Format("2006-01-02")
		what := fmt.Sprintf("Provider %s has used %d of its daily cap of %d requests (%.0f%%, warning at %.0f%%).", u.Provider, u.Used, u.Cap, 100*float64(u.Used)/float64(u.Cap), 100*warnAt)
		done := "Nothing yet: the chain keeps calling it until the cap is reached, then skips it until the cap resets."
		if u.Used >= u.Cap {
			what = fmt.Sprintf("Provider %s has used its whole daily cap of %d requests.", u.Provider, u.Cap)
			done = "The chain skips it until the cap resets; later jobs fall back to the next providers."
		}
		m := message{severity: SeverityWarning, what: what, since: "the cap day that started " + u.DayStart.Format("2006-01-02 15:04 MST"),
			done: done + " Raise daily_cap if the use is expected.", run: "contentpipe report --days 1"}
		out = append(out, chain.Alert{Key: string(RuleBudget) + ":" + u.Provider + ":" + day, Rule: RuleBudget, Severity: m.severity, Text: m.text()})
	}
	return out
}

// ReviewQueueAlert returns the daily review_queue alert when n jobs wait
// for manual review.
func ReviewQueueAlert(n int, oldest, now time.Time) (chain.Alert, bool) {
	if n <= 0 {
		return chain.Alert{}, false
	}
	since := "unknown"
	if !oldest.IsZero() && now.After(oldest) {
		since = fmt.Sprintf("%s (the oldest, %s ago)", stamp(oldest), roundDur(now.Sub(oldest)))
	}
	m := message{severity: SeverityInfo, what: fmt.Sprintf("%d job(s) wait for manual review: every provider's answer failed the quality gate.", n),
		since: since, done: "The best answer of each is kept; nothing is published without you.", run: "contentpipe review list"}
	return chain.Alert{Key: string(RuleReviewQueue), Rule: RuleReviewQueue, Severity: m.severity, Text: m.text()}, true
}

// BacklogLowAlert returns the backlog_low alert when the one-off topics
// left last fewer than lowDays days at the runway's rate (lowDays 0: never).
// The key carries now's UTC date, so it is raised at most once a day.
func BacklogLowAlert(r chain.Runway, lowDays float64, now time.Time) (chain.Alert, bool) {
	if lowDays <= 0 || r.Days >= lowDays {
		return chain.Alert{}, false
	}
	m := message{severity: SeverityWarning,
		what:  fmt.Sprintf("The backlog is running low: %d topic(s) left, about %.1f day(s) at %d a day (warning under %g days).", r.Left, r.Days, r.PerDay, lowDays),
		since: "this run", done: "Runs publish what is left, then find nothing due. Add topics to the topics file: the next run picks them up.",
		run: "contentpipe topics"}
	day := now.UTC().Format(time.DateOnly)
	return chain.Alert{Key: string(RuleBacklogLow) + ":" + day, Rule: RuleBacklogLow, Severity: m.severity, Text: m.text()}, true
}

// HealthAlert returns the health alert for a health check of provider
// whose state is unhealthy (never cold or rate limited: `health` raises it
// only for chain.HealthUnhealthy), when other links still take the jobs.
func HealthAlert(provider, outcome string, status int, detail string) chain.Alert {
	return healthAlert(provider, outcome, status, detail, "Jobs fall back to the other providers.")
}

func healthAlert(provider, outcome string, status int, detail, done string) chain.Alert {
	m := message{severity: SeverityWarning, what: fmt.Sprintf("Health check failed for provider %s (%s): %s.", provider, chain.HealthUnhealthy, failureWords(outcome, status, detail)),
		since: "this health walk", done: done, run: "contentpipe health"}
	return chain.Alert{Key: string(RuleHealth) + ":" + provider, Rule: RuleHealth, Severity: m.severity, Text: m.text()}
}

// failureWords is "outcome (HTTP n): detail".
func failureWords(outcome string, status int, detail string) string {
	what := outcome
	if status != 0 {
		what += fmt.Sprintf(" (HTTP %d)", status)
	}
	if detail != "" {
		what += ": " + clip(detail, 300)
	}
	return what
}

// HealthAlerts returns the alerts of one health walk. An unhealthy link
// gets the health warning naming its cause, and which links still take
// its jobs; a misconfigured one none (it has its own alert, once per
// incident). When no link answered (none healthy, cold or rate limited)
// and some failed, the whole chain is down: one critical alert says so
// with every link's cause, and no warning per link comes on top.
func HealthAlerts(checks []chain.HealthCheck) []chain.Alert {
	var up, failed []string
	for _, h := range checks {
		switch {
		case h.State == chain.HealthHealthy || h.State == chain.HealthCold || h.State == chain.HealthRateLimited:
			up = append(up, h.Provider)
		case h.Unhealthy():
			failed = append(failed, h.Provider)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	if len(up) == 0 {
		var causes []string
		for _, h := range checks {
			outcome := string(h.Outcome)
			if h.Skip != "" {
				outcome = string(h.Skip)
			}
			if outcome == "" {
				outcome = string(h.State)
			}
			causes = append(causes, fmt.Sprintf("%s %s", h.Provider, failureWords(outcome, h.HTTPStatus, clip(h.Detail, 160))))
		}
		m := message{severity: SeverityCritical, what: fmt.Sprintf("Health check: the whole chain is down — no provider answered (%s).", strings.Join(causes, "; ")),
			since: "this health walk", done: "No provider is left to fall back to: jobs stay due and every run tries the chain again. Fix the causes above; a misconfigured link needs its config changed.",
			run: "contentpipe health"}
		return []chain.Alert{{Key: string(RuleHealth) + ":chain", Rule: RuleHealth, Severity: m.severity, Text: m.text()}}
	}
	var out []chain.Alert
	for _, h := range checks {
		if !h.Unhealthy() || h.State == chain.HealthMisconfigured {
			continue
		}
		outcome := string(h.Outcome)
		if h.Skip != "" {
			outcome = string(h.Skip)
		}
		done := fmt.Sprintf("Jobs fall back to %s.", strings.Join(up, ", "))
		out = append(out, healthAlert(h.Provider, outcome, h.HTTPStatus, h.Detail, done))
	}
	return out
}

// RuleStore is what Rules reads and records; *telemetry.Store implements it.
type RuleStore interface {
	CapUsed(ctx context.Context, provider string, dayStart time.Time) (int, error)
	ReviewQueue(ctx context.Context) (int, time.Time, error)
	DeferredSinceLastPublication(ctx context.Context) (time.Time, []telemetry.DeferredWalk, error)
	LastResolved(ctx context.Context, key string) (time.Time, error)
	FailureStreaks(ctx context.Context, counted []chain.Outcome) ([]telemetry.FailureStreak, error)
	ObserveIncident(ctx context.Context, obs telemetry.IncidentObservation, remindEvery time.Duration, now time.Time, message func(telemetry.IncidentEvent) telemetry.Alert) ([]telemetry.IncidentEvent, error)
	SpendStore
}

var _ RuleStore = (*telemetry.Store)(nil)

// CapLimit is a link's daily cap and the start of its current cap day.
type CapLimit struct {
	Provider string
	Cap      int
	DayStart time.Time
}

// Rules evaluates the rules that look at the recorded data after a
// command: the chain_down and provider_down incidents, budget (a daily cap
// past BudgetWarnAt) and review_queue. Store and Notifier are required;
// zero BudgetWarnAt and ProviderDownAfter mean DefaultBudgetWarnAt and
// DefaultProviderDownAfter. Incident messages go straight to the outbox
// with the incident's change (the Notifier is not asked); the other alerts
// go through the Notifier. Console, when set, gets each incident message
// queued, as the Outbox echoes its own. A Rules value is safe for concurrent use when
// its Store and Notifier are.
type Rules struct {
	Store             RuleStore
	Notifier          chain.Notifier
	Console           io.Writer
	Caps              []CapLimit
	Spend             []SpendCheck // token and money limits (see SpendAlerts)
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
	if err := r.evaluateIncidents(ctx, now); err != nil {
		errs = append(errs, err)
	}
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
	if su, err := spendUses(ctx, r.Store, r.Spend); err != nil {
		errs = append(errs, err)
	} else {
		raised = append(raised, SpendAlerts(su, r.BudgetWarnAt)...)
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

// message is an alert's text in the four parts every alert has: what
// happened, since when, what automation already did, and the one command
// to run. Its plain text (text) is what the outbox stores and the console
// prints; FormatAlert turns it into Telegram HTML.
type message struct {
	severity               Severity
	what, since, done, run string
}

// Labels of the parts after the first line of an alert's text.
const (
	labelSince = "Since: "
	labelDone  = "Automation: "
	labelRun   = "Run: "
)

func (m message) text() string {
	var b strings.Builder
	b.WriteString(m.what)
	if m.since != "" {
		b.WriteString("\n" + labelSince + m.since)
	}
	if m.done != "" {
		b.WriteString("\n" + labelDone + m.done)
	}
	if m.run != "" {
		b.WriteString("\n" + labelRun + "`" + m.run + "`")
	}
	return b.String()
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
		return strings.TrimSuffix(d.Round(time.Minute).String(), "0s")
	default:
		return d.Round(time.Second).String()
	}
}

package alerts

import (
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Rule names the condition that raised an alert (chain.Rule: one type for
// the rules the chain raises and the ones of this package).
type Rule = chain.Rule

// The rules. Each has its dedupe key scheme and quiet period (see
// quiet and the Alerts section of README.md).
const (
	RuleChainDown    Rule = "chain_down"           // every provider failed for a job: one incident until a job publishes
	RuleProviderDown Rule = "provider_down"        // one provider failing with 5xx/timeouts/broken streams longer than provider_down_after
	RuleAuthError         = chain.RuleAuthError    // 401/403 from a provider
	RuleBudget       Rule = "budget"               // a daily cap past budget_warn_at, or used up
	RuleDelayClamped      = chain.RuleDelayClamped // a delay someone named (a provider, Telegram's retry_after) was larger than believable
	RuleHealth       Rule = "health"               // a health check failed (not cold, not rate limited)
	RuleTrend        Rule = "trend"                // quality or fallback share trending the wrong way
	RuleReviewQueue  Rule = "review_queue"         // jobs wait for manual review
	RuleBacklogLow   Rule = "backlog_low"          // the topics left last fewer days than backlog_low_days
	// RuleTooLarge: a link answered that a request can never fit it
	// (raised by the chain: chain.RuleTooLarge); one per link and UTC day.
	RuleTooLarge = chain.RuleTooLarge
	// RuleMisconfigured: a link only a person can fix (raised by the chain:
	// chain.RuleMisconfigured); one per link and incident.
	RuleMisconfigured = chain.RuleMisconfigured
	// RuleJobUnstorable: the database refused one topic's job; the run went
	// on without it (raised by the chain: chain.RuleJobUnstorable).
	RuleJobUnstorable      = chain.RuleJobUnstorable
	RuleClockBehind   Rule = "clock_behind" // the clock is behind the database's newest record: the run did not start
	// RuleAllFailed is the per-job alert the runner raised before incidents
	// existed. It is kept so that rows already in an outbox keep their
	// quiet period; nothing new raises it.
	RuleAllFailed Rule = "all_failed"
)

// quiet is the rule's quiet period: an alert whose key was sent within it
// is not queued again. Incident messages (chain_down, provider_down) carry
// a key per incident and transition, so their quiet period only guards
// against a double queue.
func quiet(r Rule) time.Duration {
	switch r {
	case RuleAuthError, RuleHealth:
		return time.Hour // at once, then at most hourly per provider
	case RuleChainDown, RuleProviderDown, RuleBudget, RuleDelayClamped, RuleReviewQueue, RuleAllFailed, RuleBacklogLow, RuleTooLarge, RuleMisconfigured, RuleJobUnstorable, RuleClockBehind:
		return 24 * time.Hour // the key carries the day or the incident: once a day at most
	case RuleTrend:
		return 7 * 24 * time.Hour // weekly
	default:
		return DefaultQuiet
	}
}

// DefaultQuiet is the quiet period of a rule this package does not know.
const DefaultQuiet = time.Hour

// Severity says how urgent an alert is (chain.Severity).
type Severity = chain.Severity

// The severities, most urgent first.
const (
	SeverityCritical = chain.SeverityCritical
	SeverityWarning  = chain.SeverityWarning
	SeverityInfo     = chain.SeverityInfo
)

// severityMark is the leading symbol of the severity in a chat message.
func severityMark(s Severity) string {
	switch s {
	case SeverityCritical:
		return "🔴"
	case SeverityWarning:
		return "🟠"
	case SeverityInfo:
		return "🔵"
	default:
		return "⚪"
	}
}

// AuthAlert is the critical auth_error alert of a run that provider's
// 401/403 halted at now. keyEnv names the variable holding the link's key
// ("" for a keyless link), so the message says which one to fix. The key
// carries the provider: at once, then at most hourly (quiet).
func AuthAlert(provider, keyEnv, cause string, now time.Time) chain.Alert {
	fix := "Fix the link's API key"
	if keyEnv != "" {
		fix = fmt.Sprintf("Fix %s (in the environment, or in the config's env_file)", keyEnv)
	}
	m := message{severity: SeverityCritical,
		what:  fmt.Sprintf("Provider %s refused our credentials (%s). %s, then rerun.", provider, clip(cause, 300), fix),
		since: stamp(now) + " (0s ago)",
		done: "The run stopped: an auth error gets no failover (every later job would fail the same way). " +
			"The job and the topics not reached stay due for the next run.",
		run: "contentpipe health"}
	return chain.Alert{Key: "auth:" + provider, Rule: RuleAuthError, Severity: m.severity, Text: m.text()}
}

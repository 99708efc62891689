package chain

// Rule names the condition that raised an Alert. It is stored in the
// alerts table's rule column and shown in every message. The chain's own
// rules are below; the alerts package adds the others (its Rule is this
// type) and owns their quiet periods and README's alert table.
type Rule string

// The alert rules the chain raises itself, through Chain.Notifier and
// Runner.Notifier.
const (
	RuleAuthError     Rule = "auth_error"     // 401/403 from a provider or the publishing target
	RuleDelayClamped  Rule = "delay_clamped"  // a delay a provider named was larger than believable
	RuleTooLarge      Rule = "too_large"      // a request the link can never take: one per link and UTC day
	RuleMisconfigured Rule = "misconfigured"  // a link only a person can fix: one per link and incident
	RuleJobUnstorable Rule = "job_unstorable" // the database refused one topic's job: once a UTC day per job
)

// Severity says how urgent an Alert is.
type Severity string

// The severities, most urgent first.
const (
	SeverityCritical Severity = "critical"
	SeverityWarning  Severity = "warning"
	SeverityInfo     Severity = "info"
)

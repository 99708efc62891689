package alerts

import (
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// DemoAlerts are examples of the messages a human gets, built at now by
// the same builders as the real ones (each incident's opening, an auth
// halt, a used-up cap, the review queue, a failed health check): what
// `contentpipe alerts test --demo` shows without a bot. CreatedAt is now.
func DemoAlerts(now time.Time) []telemetry.Alert {
	opened := now.Add(-2 * time.Minute)
	msg := incidentMessage(now)
	out := []telemetry.Alert{
		msg(telemetry.IncidentEvent{Change: telemetry.IncidentOpened, Incident: telemetry.Incident{ID: 1, Key: string(RuleChainDown), Rule: string(RuleChainDown),
			OpenedAt: opened, Detail: "job home-composting: gemini quota_exhausted, groq server_error, cerebras timeout, openrouter rate_limited"}}),
		msg(telemetry.IncidentEvent{Change: telemetry.IncidentOpened, Incident: telemetry.Incident{ID: 2, Key: string(RuleProviderDown) + ":groq", Rule: string(RuleProviderDown),
			Provider: "groq", OpenedAt: now.Add(-75 * time.Minute), Detail: "6 failed calls; latest server_error: HTTP 503 Service Unavailable"}}),
	}
	more := []chain.Alert{AuthAlert("gemini", "GEMINI_API_KEY", "HTTP 401: API key not valid. Please pass a valid API key.", now)}
	more = append(more, BudgetAlerts([]CapUse{{Provider: "cerebras", DayStart: now.UTC().Truncate(24 * time.Hour), Used: 100, Cap: 100}}, 0)...)
	if a, ok := ReviewQueueAlert(1, now.Add(-3*time.Hour), now); ok {
		more = append(more, a)
	}
	more = append(more, HealthAlert("openrouter", "server_error", 502, "upstream provider error"))
	for _, a := range more {
		out = append(out, telemetry.Alert{Key: a.Key, Rule: string(a.Rule), Severity: string(a.Severity), Text: a.Text})
	}
	for i := range out {
		out[i].ID, out[i].CreatedAt = int64(i+1), now
	}
	return out
}

package config

import (
	"fmt"
	"strings"
	"testing"
)

// TestNumbersFinite: every number of the config that takes a fraction
// refuses .inf, -.inf, .nan and a number too large to mean anything (1e308
// overflows a cost to +Inf), each with its own message, the file's line
// and a fix; a NaN is never "negative".
func TestNumbersFinite(t *testing.T) {
	fields := []struct{ key, yaml string }{
		{"budget.daily_usd", "budget:\n  daily_usd: %s\n"},
		{"budget.monthly_usd", "budget:\n  monthly_usd: %s\n"},
		{"chain[0].daily_budget_usd", "chain:\n  - {name: local, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m, daily_budget_usd: %s}\n"},
		{"chain[0].price.input_per_mtok", "chain:\n  - {name: local, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m, price: {input_per_mtok: %s, output_per_mtok: 1}}\n"},
		{"chain[0].price.output_per_mtok", "chain:\n  - {name: local, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m, price: {input_per_mtok: 1, output_per_mtok: %s}}\n"},
		{"retry.circuit.failure_rate", "retry:\n  circuit:\n    failure_rate: %s\n"},
		{"quality.threshold", "quality:\n  threshold: %s\n"},
		{"shadow.sample_rate", "shadow:\n  sample_rate: %s\n"},
		{"alerts.budget_warn_at", "alerts:\n  budget_warn_at: %s\n"},
		{"alerts.backlog_low_days", "alerts:\n  backlog_low_days: %s\n"},
		{"health.cold_factor", "health:\n  cold_factor: %s\n"},
	}
	for _, f := range fields {
		for v, want := range map[string]string{".inf": "infinite", "-.inf": "infinite", ".nan": "not a number", "1e308": "too large", "1e400": "infinite"} {
			body := "retention_days: 30\n" + fmt.Sprintf(f.yaml, v)
			if !strings.HasPrefix(f.key, "chain") {
				body += dbChain
			}
			_, err := parseIn(t, body, fullEnv())
			if err == nil {
				t.Errorf("%s: %s accepted", f.key, v)
				continue
			}
			es := errorsOf(t, err)
			found := false
			for _, e := range es {
				if strings.Contains(e.Msg, f.key) && strings.Contains(e.Msg, want) {
					found = true
					if e.Line < 2 || e.Fix == "" || strings.Contains(e.Msg, "negative") {
						t.Errorf("%s: %s: line %d fix %q: %s", f.key, v, e.Line, e.Fix, e.Msg)
					}
				}
			}
			if !found {
				t.Errorf("%s: %s: want an error saying %q, got %v", f.key, v, want, es)
			}
		}
	}
}

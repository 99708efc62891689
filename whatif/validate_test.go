package whatif

import (
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

func TestModelValidate(t *testing.T) {
	if err := smallModel().Validate(); err != nil {
		t.Fatalf("valid model refused: %v", err)
	}
	cases := []struct {
		edit func(m *Model)
		path string
	}{
		{func(m *Model) { m.BusyDays = 1.5 }, "busy_days"},
		{func(m *Model) { p := m.Providers["gemini"]; p.Group = "nope"; m.Providers["gemini"] = p }, "providers.gemini.group"},
		{func(m *Model) { p := m.Providers["groq"]; p.RateLimit.QuotaReset = "25:00"; m.Providers["groq"] = p }, "providers.groq.rate_limit.quota_reset"},
		{func(m *Model) {
			p := m.Providers["groq"]
			p.Errors.Timeout = 0.7
			p.Errors.Unavailable = 0.5
			m.Providers["groq"] = p
		}, "providers.groq.errors"},
		{func(m *Model) { g := m.Groups["google"]; g.Fault = sim.FaultLowQuality; m.Groups["google"] = g }, "groups.google.outages.fault"},
		{func(m *Model) {
			p := m.Providers["cerebras"]
			p.RateLimit.ByHour = map[string]float64{"24": 0.1}
			m.Providers["cerebras"] = p
		}, "providers.cerebras.rate_limit.by_hour.24"},
		{func(m *Model) { m.Start = "2026-13-01" }, "start"},
		{func(m *Model) { p := m.Providers["groq"]; p.RateLimit.BanAfter = 3; m.Providers["groq"] = p }, "providers.groq.rate_limit.ban"},
		{func(m *Model) { p := m.Providers["groq"]; p.RateLimit.RPM = -1; m.Providers["groq"] = p }, "providers.groq.rate_limit.rpm"},
		{func(m *Model) { p := m.Providers["gemini"]; p.Drift.After = time.Hour; m.Providers["gemini"] = p }, "providers.gemini.drift.length"},
		{func(m *Model) {
			p := m.Providers["gemini"]
			p.Auth.RestoredAfter = time.Hour
			m.Providers["gemini"] = p
		}, "providers.gemini.auth.revoked_after"},
	}
	for _, c := range cases {
		m := smallModel()
		c.edit(m)
		err := m.Validate()
		if err == nil || !strings.Contains(err.Error(), c.path+":") {
			t.Errorf("want an error at %s, got %v", c.path, err)
		}
	}
}

package alerts

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// TestReportHealthWords: the report names each link's last health check
// with the words `health` prints, in the text and the Telegram sections,
// and lists as unhealthy only what is — not an exhausted, rate-limited,
// capped or cold link.
func TestReportHealthWords(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	ts := time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC)
	rows := []telemetry.HealthCheck{
		{Provider: "cerebras", OK: true, Outcome: chain.Outcome(chain.HealthCold), Detail: "cold: first token 4.5s vs median 3ms"},
		{Provider: "gemini", Outcome: chain.Outcome(chain.SkipExhausted), Detail: "exhausted until …; not called"},
		{Provider: "groq", HTTPStatus: 429, Outcome: chain.OutcomeRateLimited, Detail: "rate limited"},
		{Provider: "mistral", Outcome: chain.Outcome(chain.SkipCap), Detail: "daily cap reached; not called"},
		{Provider: "openrouter", HTTPStatus: 503, Outcome: chain.OutcomeServerError, Detail: "service unavailable"},
		{Provider: "sambanova", OK: true, Outcome: chain.OutcomeOK},
	}
	for _, h := range rows {
		h.TS = ts
		if err := s.RecordHealth(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	r := report(t, s)
	text := r.Text()
	want := map[string]chain.HealthState{"cerebras": chain.HealthCold, "gemini": chain.HealthExhausted, "groq": chain.HealthRateLimited,
		"mistral": chain.HealthCapped, "openrouter": chain.HealthUnhealthy, "sambanova": chain.HealthHealthy}
	html := strings.Join(r.Telegram(), "\n")
	for p, st := range want {
		if !strings.Contains(text, p+" ") || !strings.Contains(text, ": "+string(st)+", latency") {
			t.Errorf("text report lacks %s as %s", p, st)
		}
		if !strings.Contains(html, string(st)) {
			t.Errorf("telegram report lacks the word %s", st)
		}
	}
	if n := strings.Count(text, "last unhealthy"); n != 1 || !strings.Contains(text, "last unhealthy 2026-11-23 05:00: server_error") {
		t.Errorf("%d unhealthy lines, want only openrouter's:\n%s", n, text)
	}
	if strings.Contains(strings.ToLower(text), "failed (exhausted)") {
		t.Errorf("exhausted reported as a failure:\n%s", text)
	}
}

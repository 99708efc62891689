package alerts

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/contentpipe/contentpipe/alerts/telegramtest"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// telegramReport is the chat report of days of the chart's history, with
// a health check, a job in review and a resolved incident added.
func telegramReport(t *testing.T, history, days int) Report {
	t.Helper()
	store := chartStore(t, history)
	ctx := context.Background()
	tgMust(t, store.RecordHealth(ctx, telemetry.HealthCheck{TS: chartUntil.Add(-time.Hour), Provider: "groq", OK: false, Outcome: chain.OutcomeRateLimited, HTTPStatus: 429}))
	tgMust(t, store.RecordHealth(ctx, telemetry.HealthCheck{TS: chartUntil.Add(-time.Hour), Provider: "gemini", OK: true, Outcome: chain.OutcomeOK}))
	best := 55.0
	tgMust(t, store.FinishJob(ctx, chain.JobRecord{ID: "topic/<b>&", Topic: "t", Slot: "s", Status: chain.JobReview, QualityScore: &best}, chain.Owner{}, chartUntil.Add(-2*time.Hour)))
	_, err := store.ObserveIncident(ctx, telemetry.IncidentObservation{Key: "chain_down", Rule: "chain_down", Active: true,
		Since: chartUntil.Add(-30 * time.Hour), LastSeen: chartUntil.Add(-28 * time.Hour)}, RemindEvery, chartUntil.Add(-28*time.Hour), nil)
	tgMust(t, err)
	_, err = store.ObserveIncident(ctx, telemetry.IncidentObservation{Key: "chain_down", ClearedAt: chartUntil.Add(-26 * time.Hour)}, RemindEvery, chartUntil, nil)
	tgMust(t, err)
	since := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, -days)
	d, err := store.Report(ctx, since, chartUntil, "gemini")
	tgMust(t, err)
	return NewReport(d)
}

// TestReportTelegramIsShortScreens: every section is valid Telegram HTML,
// at most 30 lines (one phone screen), its <pre> lines at most 36
// columns; packed, every message is under 4096 units; a 60-day report is
// not longer than a 7-day one by more than a few lines (cost goes weekly).
func TestReportTelegramIsShortScreens(t *testing.T) {
	lines := map[int]int{}
	for _, days := range []int{7, 60} {
		secs := telegramReport(t, 60, days).Telegram()
		for i, s := range secs {
			shown, err := telegramtest.ParseHTML(s)
			if err != nil {
				t.Fatalf("%dd section %d: %v\n%s", days, i, err, s)
			}
			if n := strings.Count(shown, "\n") + 1; n > 30 {
				t.Errorf("%dd section %d: %d lines", days, i, n)
			}
			lines[days] += strings.Count(shown, "\n") + 1
			for _, pre := range strings.Split(s, "<pre>")[1:] {
				body, _, _ := strings.Cut(pre, "</pre>")
				for _, l := range strings.Split(PlainText(body), "\n") {
					if utf8.RuneCountInString(l) > 36 {
						t.Errorf("%dd section %d: line of %d columns: %q", days, i, utf8.RuneCountInString(l), l)
					}
				}
			}
		}
		for i, p := range Pack(secs, MaxMessageLen) {
			if TextLen(p) > MaxMessageLen {
				t.Errorf("%dd part %d too long", days, i)
			}
		}
	}
	if lines[60] > lines[7]+12 {
		t.Errorf("60-day report %d lines against %d for 7 days", lines[60], lines[7])
	}
}

// TestReportTelegramGolden pins the 7-day chat report (run with -update
// to rewrite testdata/report_telegram_7d.golden after a deliberate change).
func TestReportTelegramGolden(t *testing.T) {
	got := strings.Join(Pack(telegramReport(t, 60, 7).Telegram(), MaxMessageLen), "\n---- next message ----\n")
	path := filepath.Join("testdata", "report_telegram_7d.golden")
	if *update {
		tgMust(t, os.MkdirAll("testdata", 0o755))
		tgMust(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	tgMust(t, err)
	if got != string(want) {
		t.Fatalf("chat report differs from %s (run with -update after a deliberate change):\n%s", path, got)
	}
}

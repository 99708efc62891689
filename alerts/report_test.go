package alerts

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

var (
	until = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	since = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC) // HistoryFrom: 11-14 12:00
)

// noise is a fixed score jitter with sd ≈ 2.6 points.
var noise = []float64{-3, 2, 0, 4, -1, -4, 3, 1, -2, 0}

func openStore(t *testing.T) *telemetry.Store {
	t.Helper()
	s, err := telemetry.Open(filepath.Join(t.TempDir(), "pipeline.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// publish records one job: a scored, ok call by provider and the
// published job.
func publish(t *testing.T, s *telemetry.Store, id, provider string, ts time.Time, score float64) {
	t.Helper()
	ctx := context.Background()
	sc := score
	err := s.RecordCall(ctx, chain.Call{Provider: provider, Model: provider + "-model", RequestID: id, Attempt: 1, TS: ts,
		Latency: time.Second, CostUSD: 0.001, QualityScore: &sc, Outcome: chain.OutcomeOK, Purpose: chain.PurposeJob})
	if err != nil {
		t.Fatal(err)
	}
	err = s.FinishJob(ctx, chain.JobRecord{ID: id, Topic: id, Slot: ts.Format("2006-01-02"), Status: chain.JobPublished,
		Provider: provider, QualityScore: &sc, Attempt: 1, PublishedAt: ts}, chain.Owner{}, ts)
	if err != nil {
		t.Fatal(err)
	}
}

// fourADay calls fn for four jobs a day from 11-15 to 11-29 (before until).
func fourADay(fn func(i int, ts time.Time)) {
	i := 0
	for day := time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC); day.Before(until); day = day.AddDate(0, 0, 1) {
		for _, h := range []int{1, 4, 7, 10} {
			fn(i, day.Add(time.Duration(h)*time.Hour))
			i++
		}
	}
}

func report(t *testing.T, s *telemetry.Store) Report {
	t.Helper()
	d, err := s.Report(context.Background(), since, until, "gemini")
	if err != nil {
		t.Fatal(err)
	}
	return NewReport(d)
}

func trend(t *testing.T, r Report, provider string) Trend {
	t.Helper()
	for _, q := range r.Quality {
		if q.Provider == provider {
			return q
		}
	}
	t.Fatalf("no quality trend for %q", provider)
	return Trend{}
}

func TestReportFlagsSeededQualityDrop(t *testing.T) {
	s := openStore(t)
	drop := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	fourADay(func(i int, ts time.Time) {
		score := 90 + noise[i%len(noise)]
		if !ts.Before(drop) {
			score -= 10
		}
		publish(t, s, fmt.Sprint("job-", i), "gemini", ts, score)
		// groq's rejected answers stay where they were: no drop there.
		sc := 60 + noise[(i+3)%len(noise)]
		if err := s.RecordCall(context.Background(), chain.Call{Provider: "groq", Model: "llama", RequestID: fmt.Sprint("job-", i), Attempt: 2,
			TS: ts.Add(-time.Minute), QualityScore: &sc, Outcome: chain.OutcomeRejected, Purpose: chain.PurposeJob}); err != nil {
			t.Fatal(err)
		}
	})
	r := report(t, s)
	g := trend(t, r, "gemini")
	if !g.Drift.Flagged || !g.New || g.FlaggedAt.Before(drop) {
		t.Fatalf("gemini drop not flagged in the window: %+v", g)
	}
	if g.Drift.Baseline < 89 || g.Drift.Baseline > 91 || g.Drift.Recent < 78 || g.Drift.Recent > 82 {
		t.Errorf("baseline %.1f recent %.1f, want ≈90 and ≈80", g.Drift.Baseline, g.Drift.Recent)
	}
	if p := trend(t, r, ""); !p.Drift.Flagged || !p.New {
		t.Errorf("published quality drop not flagged: %+v", p)
	}
	if q := trend(t, r, "groq"); q.Drift.Flagged || !q.Judged() {
		t.Errorf("stable groq flagged or not judged: %+v", q)
	}
	text := r.Text()
	for _, want := range []string{
		"Quality trend",
		fmt.Sprintf("DROP FLAGGED on %s: score %.1f in the baseline, %.1f recently", g.FlaggedAt.Format("2006-01-02"), g.Drift.Baseline, g.Drift.Recent),
		"no drop: score 60.",
		"no rise: share 0% in the baseline, 0% recently",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
	al := r.Alerts()
	keys := map[string]chain.Alert{}
	for _, a := range al {
		keys[a.Key] = a
		if a.Rule != "trend" || a.Severity == "" {
			t.Errorf("alert %+v", a)
		}
	}
	if len(al) != 2 {
		t.Fatalf("alerts %+v, want gemini and published", al)
	}
	a, ok := keys["trend:quality:gemini"]
	if !ok {
		t.Fatalf("no trend:quality:gemini alert in %+v", al)
	}
	for _, want := range []string{"gemini", "gemini-model", fmt.Sprintf("%.1f", g.Drift.Baseline), fmt.Sprintf("%.1f", g.Drift.Recent), "contentpipe report", "model"} {
		if !strings.Contains(a.Text, want) {
			t.Errorf("alert text lacks %q: %s", want, a.Text)
		}
	}
	if _, ok := keys["trend:quality:published"]; !ok {
		t.Errorf("no trend:quality:published alert in %+v", al)
	}
}

func TestReportOldDropRaisesNoAlert(t *testing.T) {
	s := openStore(t)
	drop := time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC) // inside the baseline window
	fourADay(func(i int, ts time.Time) {
		score := 90 + noise[i%len(noise)]
		if !ts.Before(drop) {
			score -= 20 // flagged within the day
		}
		publish(t, s, fmt.Sprint("job-", i), "gemini", ts, score)
	})
	r := report(t, s)
	g := trend(t, r, "gemini")
	if !g.Drift.Flagged || g.New || !g.FlaggedAt.Before(since) {
		t.Fatalf("want a drop flagged before the window: %+v", g)
	}
	if al := r.Alerts(); len(al) != 0 {
		t.Errorf("an old drop (reported a week ago) raised %+v", al)
	}
	if !strings.Contains(r.Text(), "DROP FLAGGED on 2026-11-2") {
		t.Errorf("the report hides the flagged drop:\n%s", r.Text())
	}
}

func TestReportFlagsFallbackRise(t *testing.T) {
	s := openStore(t)
	rise := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	fourADay(func(i int, ts time.Time) {
		prov := "gemini"
		if i%10 == 9 || (!ts.Before(rise) && i%5 < 3) {
			prov = "groq"
		}
		publish(t, s, fmt.Sprint("job-", i), prov, ts, 90+noise[i%len(noise)])
	})
	r := report(t, s)
	if !r.Fallback.Drift.Flagged || !r.Fallback.New {
		t.Fatalf("fallback rise not flagged: %+v", r.Fallback)
	}
	al := r.Alerts()
	if len(al) != 1 || al[0].Key != "trend:fallback" || al[0].Rule != "trend" || !strings.Contains(al[0].Text, "gemini") {
		t.Fatalf("alerts %+v", al)
	}
	// The figures: compare the overall line with a count over the same data.
	pub, fb := 0, 0
	fourADay(func(i int, ts time.Time) {
		if ts.Before(since) {
			return
		}
		pub++
		if i%10 == 9 || (!ts.Before(rise) && i%5 < 3) {
			fb++
		}
	})
	want := fmt.Sprintf("overall %d of %d (%.1f%%)", fb, pub, 100*float64(fb)/float64(pub))
	text := r.Text()
	if !strings.Contains(text, want) || !strings.Contains(text, "RISE FLAGGED") {
		t.Errorf("report lacks %q or the flag:\n%s", want, text)
	}
}

func TestReportSections(t *testing.T) {
	s := openStore(t)
	ctx := context.Background()
	publish(t, s, "a", "gemini", time.Date(2026, 11, 23, 6, 0, 0, 0, time.UTC), 92)
	publish(t, s, "b", "groq", time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC), 81)
	publish(t, s, "c", "groq", time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC), 85)
	best := 55.0
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "2026-11-25/stuck", Topic: "stuck", Slot: "2026-11-25", Status: chain.JobReview,
		Provider: "cerebras", QualityScore: &best}, chain.Owner{}, time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSkip(ctx, chain.Skip{TS: time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC), Provider: "gemini", Reason: "exhausted"}); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordHealth(ctx, telemetry.HealthCheck{TS: time.Date(2026, 11, 23, 5, 0, 0, 0, time.UTC), Provider: "groq",
		HTTPStatus: 503, Outcome: chain.OutcomeServerError, Detail: "service unavailable"}); err != nil {
		t.Fatal(err)
	}
	for i := range 25 {
		ps, ss := 90.0, 88.0
		if err := s.RecordShadowComparison(ctx, telemetry.ShadowComparison{TS: time.Date(2026, 11, 23, 6, i, 0, 0, time.UTC), RequestID: "a",
			PrimaryProvider: "gemini", ShadowProvider: "groq", PrimaryScore: &ps, ShadowScore: &ss, ShadowPass: i != 0,
			PrimaryLatency: 2 * time.Second, ShadowLatency: time.Second, PrimaryCostUSD: 0.004, ShadowCostUSD: 0.001}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		if err := s.RecordShadowComparison(ctx, telemetry.ShadowComparison{TS: time.Date(2026, 11, 23, 7, i, 0, 0, time.UTC), RequestID: "a",
			PrimaryProvider: "gemini", ShadowProvider: "mistral"}); err != nil {
			t.Fatal(err)
		}
	}
	text := report(t, s).Text()
	for _, want := range []string{
		"contentpipe report: 2026-11-22 00:00 → 2026-11-29 12:00 UTC",
		"Calls (every attempt",
		"  all               3      3   100.0%",
		"Jobs (by current status",
		"published 3, review 1; job success rate 75.0% (published of 4)",
		"Fallback share (published jobs served by a provider other than the first link, gemini)",
		"overall 2 of 3 (66.7%)",
		"2026-11-24  2 of 2 (100.0%)",
		"Cost per provider (USD)",
		"Quality trend",
		"not judged: too few scores (3 < 24)",
		"Shadow readiness",
		"groq: 25 comparisons, would have passed the gate 24 times (96.0%)",
		"quality: mean score 88.0, primary 90.0, difference -2.0",
		"cost: $0.0250 vs primary $0.1000 (×0.25)",
		"latency: mean 1s vs primary 2s (×0.50)",
		"verdict: ready",
		"mistral: 3 comparisons",
		"too few comparisons to judge (3 < 20)",
		"Review queue (jobs where no answer passed the gate; all, not only this window): 1",
		"2026-11-25/stuck  stuck, best 55 from cerebras",
		"Skips by reason",
		"gemini       exhausted     1",
		"Health checks in the window",
		"groq         0 of 1 ok; last 2026-11-23 05:00: unhealthy",
		"service unavailable",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
}

func TestShadowVerdict(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		s    telemetry.ShadowStats
		want string
	}{
		{telemetry.ShadowStats{Comparisons: 19, Passed: 19}, "too few"},
		{telemetry.ShadowStats{Comparisons: 20, Passed: 18, Delta: f(-5)}, "ready"},
		{telemetry.ShadowStats{Comparisons: 20, Passed: 17}, "not ready: passes the gate only 85.0%"},
		{telemetry.ShadowStats{Comparisons: 20, Passed: 20, Delta: f(-5.5)}, "not ready: scores 5.5 points below"},
	} {
		if got := shadowVerdict(c.s); !strings.HasPrefix(got, c.want) {
			t.Errorf("%+v: %q, want %q…", c.s, got, c.want)
		}
	}
}

func TestEmptyReportAndChart(t *testing.T) {
	s := openStore(t)
	r := report(t, s)
	text := r.Text()
	if !strings.Contains(text, "No data in this window") || !strings.Contains(text, "contentpipe run") {
		t.Errorf("empty report:\n%s", text)
	}
	if len(r.Alerts()) != 0 {
		t.Errorf("an empty database raised %+v", r.Alerts())
	}
	for _, d := range []telemetry.ReportData{r.Data, {}} {
		b, err := Chart(d, ChartOptions{})
		if err != nil {
			t.Fatalf("chart of no data: %v", err)
		}
		checkPNG(t, b, 2)
	}
}

func TestChartWithData(t *testing.T) {
	s := openStore(t)
	fourADay(func(i int, ts time.Time) {
		prov := []string{"gemini", "groq", "cerebras"}[i%3]
		publish(t, s, fmt.Sprint("job-", i), prov, ts, 80+noise[i%len(noise)]+float64(i%3))
	})
	b, err := Chart(report(t, s).Data, ChartOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkPNG(t, b, 5) // white, black, and a colour per provider at least
}

// checkPNG decodes b and checks its size and that it shows at least
// minColors distinct colours.
func checkPNG(t *testing.T, b []byte, minColors int) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("chart is not a PNG: %v", err)
	}
	bd := img.Bounds()
	if bd.Dx() != 1200 || bd.Dy() != 900 {
		t.Errorf("chart %dx%d, want 1200x900", bd.Dx(), bd.Dy())
	}
	colors := map[[4]uint32]bool{}
	for y := bd.Min.Y; y < bd.Max.Y; y += 5 {
		for x := bd.Min.X; x < bd.Max.X; x += 5 {
			r, g, bl, a := img.At(x, y).RGBA()
			colors[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
		}
	}
	if len(colors) < minColors {
		t.Errorf("chart shows %d colours, want at least %d", len(colors), minColors)
	}
}

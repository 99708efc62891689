package telemetry

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

var (
	repSince = time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	repUntil = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
)

func at(day int, hour int) time.Time { return time.Date(2026, 11, day, hour, 0, 0, 0, time.UTC) }

func fp(v float64) *float64 { return &v }

// seedReport fills a database with rows inside, before and after the window
// [repSince, repUntil) and returns its path.
func seedReport(t *testing.T) string {
	t.Helper()
	s, path := openTemp(t)
	ctx := context.Background()
	calls := []chain.Call{
		{Provider: "gemini", Model: "gemini-flash", RequestID: "j1", Attempt: 1, TS: at(23, 6), InputTokens: 100, OutputTokens: 1000, Latency: time.Second, CostUSD: 0.01, QualityScore: fp(90), Outcome: chain.OutcomeOK, Purpose: chain.PurposeJob},
		{Provider: "gemini", Model: "gemini-flash", RequestID: "j2", Attempt: 1, TS: at(24, 6), HTTPStatus: 429, Outcome: chain.OutcomeRateLimited, Purpose: chain.PurposeJob},
		{Provider: "gemini", Model: "gemini-flash-2", RequestID: "j2", Attempt: 2, TS: at(24, 7), HTTPStatus: 429, Latency: 3 * time.Second, Outcome: chain.OutcomeQuotaExhausted, Purpose: chain.PurposeJob},
		{Provider: "groq", Model: "llama", RequestID: "j2", Attempt: 3, TS: at(24, 8), InputTokens: 200, OutputTokens: 2000, Latency: 2 * time.Second, CostUSD: 0.02, QualityScore: fp(80), Outcome: chain.OutcomeOK, Purpose: chain.PurposeJob},
		{Provider: "groq", Model: "llama", RequestID: "j3", Attempt: 1, TS: at(25, 6), Latency: 4 * time.Second, CostUSD: 0.004, QualityScore: fp(50), Outcome: chain.OutcomeRejected, Purpose: chain.PurposeJob},
		{Provider: "groq", Model: "llama", RequestID: "j1", Attempt: 2, TS: at(23, 6), Latency: 6 * time.Second, CostUSD: 0.005, QualityScore: fp(70), Outcome: chain.OutcomeOK, Shadow: true, Purpose: chain.PurposeShadow},
		{Provider: "cerebras", Model: "gpt-oss", RequestID: "health", Attempt: 1, TS: at(25, 5), Latency: 500 * time.Millisecond, CostUSD: 0.0001, Outcome: chain.OutcomeOK, Purpose: chain.PurposeHealth},
		// Before the window: only in the decay series.
		{Provider: "gemini", Model: "gemini-flash", RequestID: "j0", Attempt: 1, TS: at(20, 6), CostUSD: 1, QualityScore: fp(95), Outcome: chain.OutcomeOK, Purpose: chain.PurposeJob},
		// Before the history and at the end of the window: nowhere.
		{Provider: "gemini", Model: "old", RequestID: "jx", Attempt: 1, TS: at(1, 6), CostUSD: 5, QualityScore: fp(10), Outcome: chain.OutcomeOK, Purpose: chain.PurposeJob},
		{Provider: "gemini", Model: "later", RequestID: "jy", Attempt: 1, TS: repUntil, CostUSD: 7, QualityScore: fp(11), Outcome: chain.OutcomeOK, Purpose: chain.PurposeJob},
	}
	for _, c := range calls {
		if err := s.RecordCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	jobs := []struct {
		id                 string
		status             chain.JobStatus
		provider           string
		score              any
		published, updated time.Time
	}{
		{"j1", chain.JobPublished, "gemini", 90.0, at(23, 6), at(23, 6)},
		{"j2", chain.JobPublished, "groq", 80.0, at(24, 8), at(24, 8)},
		{"j3", chain.JobReview, "groq", 50.0, time.Time{}, at(25, 6)},
		{"j0", chain.JobPublished, "groq", 85.0, at(20, 6), at(20, 6)},
		{"jold", chain.JobReview, "", nil, time.Time{}, at(1, 6)},
		{"j6", chain.JobDeferred, "", nil, time.Time{}, at(26, 6)},
		{"j7", chain.JobPublished, "groq", 60.0, at(26, 9), at(26, 9)},
	}
	for _, j := range jobs {
		_, err := s.db.Exec(`INSERT INTO jobs (id, topic, slot, title, status, provider, quality_score, published_at, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, j.id, "topic-"+j.id, "2026-11-20", "Title "+j.id, j.status, j.provider, j.score,
			nullTime(j.published), FormatTime(j.updated), FormatTime(j.updated))
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, sk := range []chain.Skip{
		{TS: at(24, 9), RequestID: "j2", Provider: "gemini", Reason: "exhausted"},
		{TS: at(24, 10), RequestID: "j3", Provider: "gemini", Reason: "exhausted"},
		{TS: at(25, 6), RequestID: "j3", Provider: "groq", Reason: "cap"},
		{TS: at(21, 6), RequestID: "j0", Provider: "groq", Reason: "circuit_open"},
	} {
		if err := s.RecordSkip(ctx, sk); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range []HealthCheck{
		{TS: at(23, 5), Provider: "gemini", OK: true, HTTPStatus: 200, Latency: time.Second, Outcome: chain.OutcomeOK},
		{TS: at(23, 5), Provider: "groq", OK: false, HTTPStatus: 503, Outcome: chain.OutcomeServerError, Detail: "503 busy"},
		{TS: at(10, 5), Provider: "groq", OK: true},
	} {
		if err := s.RecordHealth(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []ShadowComparison{
		{TS: at(23, 6), RequestID: "j1", PrimaryProvider: "gemini", ShadowProvider: "groq", PrimaryScore: fp(90), ShadowScore: fp(80), ShadowPass: true, PrimaryLatency: time.Second, ShadowLatency: 3 * time.Second, PrimaryCostUSD: 0.01, ShadowCostUSD: 0.002},
		{TS: at(24, 6), RequestID: "j2", PrimaryProvider: "gemini", ShadowProvider: "groq", PrimaryScore: fp(90), ShadowScore: fp(96), ShadowPass: true, PrimaryLatency: 3 * time.Second, ShadowLatency: 5 * time.Second, PrimaryCostUSD: 0.03, ShadowCostUSD: 0.004},
		{TS: at(25, 6), RequestID: "j3", PrimaryProvider: "groq", ShadowProvider: "mistral", PrimaryScore: fp(50), ShadowPass: false, PrimaryLatency: 4 * time.Second, ShadowLatency: 8 * time.Second, ShadowCostUSD: 0.001},
		{TS: at(2, 6), RequestID: "jx", PrimaryProvider: "gemini", ShadowProvider: "groq", ShadowPass: false, ShadowCostUSD: 9},
	} {
		if err := s.RecordShadowComparison(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	for i, a := range []Alert{{Key: "health:groq", Rule: "health", Text: "x", CreatedAt: at(23, 5)}, {Key: "old", Rule: "health", Text: "y", CreatedAt: at(1, 5)}} {
		if _, err := s.EnqueueAlert(ctx, a, time.Hour, a.CreatedAt.Add(time.Duration(i))); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestReportFigures(t *testing.T) { forEachBackend(t, testReportFigures) }

func testReportFigures(t *testing.T) {
	path := seedReport(t)
	ro, err := OpenReadOnly(path) // the report works on a read-only store
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	d, err := ro.Report(context.Background(), repSince, repUntil, "gemini")
	if err != nil {
		t.Fatal(err)
	}
	wantDays := []string{"2026-11-22", "2026-11-23", "2026-11-24", "2026-11-25", "2026-11-26", "2026-11-27", "2026-11-28", "2026-11-29"}
	if !reflect.DeepEqual(d.Days, wantDays) {
		t.Errorf("days %v", d.Days)
	}
	if !d.HistoryFrom.Equal(time.Date(2026, 11, 14, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("history from %v", d.HistoryFrom)
	}

	// Calls: groq is the most expensive (0.02+0.004+0.005), then gemini (0.01), cerebras.
	if len(d.Providers) != 3 || d.Providers[0].Provider != "groq" || d.Providers[1].Provider != "gemini" || d.Providers[2].Provider != "cerebras" {
		t.Fatalf("providers %+v", d.Providers)
	}
	g, gm := d.Providers[0], d.Providers[1]
	if g.Calls != 3 || g.OK != 2 || g.Job != 2 || g.Shadow != 1 || g.HealthChecks != 0 || !near(g.CostUSD, 0.029) ||
		g.InputTokens != 200 || g.OutputTokens != 2000 || g.Model != "llama" || g.Outcomes["rejected"] != 1 || len(g.Outcomes) != 1 {
		t.Errorf("groq %+v", g)
	}
	if g.MeanLatency != 4*time.Second {
		t.Errorf("groq mean latency %v, want 4s", g.MeanLatency)
	}
	// gemini: 3 calls, 1 ok; latency averages only calls with one (1 s, 3 s).
	if gm.Calls != 3 || gm.OK != 1 || !near(gm.SuccessRate(), 1.0/3) || gm.MeanLatency != 2*time.Second ||
		gm.Outcomes["rate_limited"] != 1 || gm.Outcomes["quota_exhausted"] != 1 || gm.Model != "gemini-flash-2" {
		t.Errorf("gemini %+v", gm)
	}
	tot := d.Totals
	if tot.Calls != 7 || tot.OK != 4 || tot.Job != 5 || tot.Shadow != 1 || tot.HealthChecks != 1 || !near(tot.CostUSD, 0.0391) ||
		tot.Outcomes["rejected"] != 1 || tot.Outcomes["rate_limited"] != 1 {
		t.Errorf("totals %+v", tot)
	}

	wantCost := []DailyCost{
		{Day: "2026-11-23", Provider: "gemini", Calls: 1, CostUSD: 0.01},
		{Day: "2026-11-23", Provider: "groq", Calls: 1, CostUSD: 0.005},
		{Day: "2026-11-24", Provider: "gemini", Calls: 2, CostUSD: 0},
		{Day: "2026-11-24", Provider: "groq", Calls: 1, CostUSD: 0.02},
		{Day: "2026-11-25", Provider: "cerebras", Calls: 1, CostUSD: 0.0001},
		{Day: "2026-11-25", Provider: "groq", Calls: 1, CostUSD: 0.004},
	}
	if len(d.DailyCost) != len(wantCost) {
		t.Fatalf("daily cost %+v", d.DailyCost)
	}
	for i, w := range wantCost {
		c := d.DailyCost[i]
		if c.Day != w.Day || c.Provider != w.Provider || c.Calls != w.Calls || !near(c.CostUSD, w.CostUSD) {
			t.Errorf("daily cost %d: %+v, want %+v", i, c, w)
		}
	}

	// Jobs updated in the window: j1, j2, j7 published; j3 review; j6 deferred.
	if want := map[string]int{"published": 3, "review": 1, "deferred": 1}; !reflect.DeepEqual(d.Jobs, want) {
		t.Errorf("jobs %v", d.Jobs)
	}

	// Fallback: j1 by gemini (first link), j2 and j7 by groq; j0 only in the series.
	if d.FallbackTotal.Published != 3 || d.FallbackTotal.Fallback != 2 || !near(d.FallbackTotal.Share(), 2.0/3) {
		t.Errorf("fallback total %+v", d.FallbackTotal)
	}
	if len(d.Fallback) != len(wantDays) {
		t.Fatalf("fallback days %+v", d.Fallback)
	}
	for _, f := range d.Fallback {
		want := map[string][2]int{"2026-11-23": {1, 0}, "2026-11-24": {1, 1}, "2026-11-26": {1, 1}}[f.Day]
		if f.Published != want[0] || f.Fallback != want[1] {
			t.Errorf("fallback %s: %+v", f.Day, f)
		}
	}
	wantFB := []FallbackPoint{{at(20, 6), "groq", true}, {at(23, 6), "gemini", false}, {at(24, 8), "groq", true}, {at(26, 9), "groq", true}}
	if !reflect.DeepEqual(d.FallbackSeries, wantFB) {
		t.Errorf("fallback series %+v", d.FallbackSeries)
	}

	// Quality: series from HistoryFrom (job calls only; the shadow call is not in them).
	series := map[string][]float64{}
	for _, s := range d.QualitySeries {
		series[s.Provider] = s.Scores()
	}
	wantSeries := map[string][]float64{"": {85, 90, 80, 60}, "gemini": {95, 90}, "groq": {80, 50}}
	if !reflect.DeepEqual(series, wantSeries) {
		t.Errorf("quality series %v", series)
	}
	wantQ := []DailyQuality{
		{"2026-11-23", "", 1, 90}, {"2026-11-23", "gemini", 1, 90},
		{"2026-11-24", "", 1, 80}, {"2026-11-24", "groq", 1, 80},
		{"2026-11-25", "groq", 1, 50},
		{"2026-11-26", "", 1, 60},
	}
	if !reflect.DeepEqual(d.DailyQuality, wantQ) {
		t.Errorf("daily quality %+v", d.DailyQuality)
	}

	// Shadow: groq 2 comparisons (the old one is outside), mistral 1.
	if len(d.Shadow) != 2 || d.Shadow[0].Provider != "groq" || d.Shadow[1].Provider != "mistral" {
		t.Fatalf("shadow %+v", d.Shadow)
	}
	sg, sm := d.Shadow[0], d.Shadow[1]
	if sg.Comparisons != 2 || sg.Passed != 2 || !near(*sg.ShadowScore, 88) || !near(*sg.PrimaryScore, 90) || !near(*sg.Delta, -2) ||
		!near(sg.ShadowCostUSD, 0.006) || !near(sg.PrimaryCostUSD, 0.04) || sg.ShadowLatency != 4*time.Second || sg.PrimaryLatency != 2*time.Second {
		t.Errorf("shadow groq %+v", sg)
	}
	if sm.Comparisons != 1 || sm.Passed != 0 || sm.ShadowScore != nil || sm.Delta != nil || !near(*sm.PrimaryScore, 50) || sm.PassRate() != 0 {
		t.Errorf("shadow mistral %+v", sm)
	}

	// Review queue: all of it, oldest first.
	if len(d.Review) != 2 || d.Review[0].ID != "jold" || d.Review[1].ID != "j3" || d.Review[0].Score != nil || *d.Review[1].Score != 50 || d.Review[1].Provider != "groq" {
		t.Errorf("review %+v", d.Review)
	}
	wantSkips := []SkipCount{{"gemini", "exhausted", 2}, {"groq", "cap", 1}}
	if !reflect.DeepEqual(d.Skips, wantSkips) {
		t.Errorf("skips %+v", d.Skips)
	}
	if len(d.Health) != 2 || d.Health[0].Provider != "gemini" || !d.Health[0].OK || d.Health[1].OK || d.Health[1].HTTPStatus != 503 ||
		d.Health[1].Outcome != chain.OutcomeServerError || d.Health[1].Detail != "503 busy" || d.Health[0].Latency != time.Second {
		t.Errorf("health %+v", d.Health)
	}
	if !reflect.DeepEqual(d.Alerts, map[string]int{"health": 1}) {
		t.Errorf("alerts %v", d.Alerts)
	}
	if d.Empty() {
		t.Error("a full window reported empty")
	}
}

func TestReportEmptyAndNoFirstLink(t *testing.T) { forEachBackend(t, testReportEmptyAndNoFirstLink) }

func testReportEmptyAndNoFirstLink(t *testing.T) {
	s, _ := openTemp(t)
	d, err := s.Report(context.Background(), repSince, repUntil, "")
	if err != nil {
		t.Fatal(err)
	}
	if !d.Empty() || d.Fallback != nil || len(d.Providers) != 0 || d.Totals.Calls != 0 || len(d.Days) != 8 {
		t.Errorf("empty database: %+v", d)
	}
	path := seedReport(t)
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	d, err = ro.Report(context.Background(), repSince, repUntil, "")
	if err != nil {
		t.Fatal(err)
	}
	if d.Fallback != nil || d.FallbackSeries != nil || d.FallbackTotal.Published != 0 {
		t.Errorf("fallback without a first link: %+v %+v", d.Fallback, d.FallbackSeries)
	}
}

package alerts

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/telemetry"
)

// day3 is the chart tests' window: three days of runs at 14:00 and 18:00
// ending on 12-03 at 20:00.
var day3 = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func threeDays() telemetry.ReportData {
	d := telemetry.ReportData{Since: day3.AddDate(0, 0, -7), Until: day3.Add(2*24*time.Hour + 20*time.Hour)}
	var pts []telemetry.ScorePoint
	for i, day := range []float64{80, 90, 74} {
		at := day3.AddDate(0, 0, i)
		pts = append(pts, telemetry.ScorePoint{TS: at.Add(14 * time.Hour), Score: day - 2}, telemetry.ScorePoint{TS: at.Add(18 * time.Hour), Score: day + 2})
		d.DailyCost = append(d.DailyCost, telemetry.DailyCost{Day: at.Format("2006-01-02"), Provider: "gemini", Calls: 2, CostUSD: 0.01})
	}
	d.QualitySeries = []telemetry.ScoreSeries{{Provider: "gemini", Points: pts}, {Provider: "", Points: pts}}
	d.Providers = []telemetry.ProviderCalls{{Provider: "gemini", Calls: 6, CostUSD: 0.03}}
	return d
}

// TestChartBucketsByTimestamp: a score lands in the bucket its time falls
// in (a floor): runs at 14:00 and 18:00 are that day's mean, and the last
// afternoon is drawn.
func TestChartBucketsByTimestamp(t *testing.T) {
	cd := newChartData(threeDays(), ChartOptions{})
	if cd.hourly || len(cd.buckets) != 3 || !cd.buckets[0].Equal(day3) {
		t.Fatalf("buckets %v (hourly %v), want the three days from %s", cd.buckets, cd.hourly, day3)
	}
	mean, n := cd.bucketMeans(cd.points["gemini"])
	for b, want := range []float64{80, 90, 74} {
		if n[b] != 2 || math.Abs(mean[b]-want) > 1e-9 {
			t.Errorf("%s: %d scores, mean %.1f; want 2 with mean %.0f", cd.buckets[b].Format("01-02"), n[b], mean[b], want)
		}
	}
	// Hourly: 14:20 is in the 14:00 bucket.
	h := telemetry.ReportData{Since: day3, Until: day3.Add(16 * time.Hour)}
	h.QualitySeries = []telemetry.ScoreSeries{{Provider: "groq", Points: []telemetry.ScorePoint{{TS: day3.Add(14*time.Hour + 20*time.Minute), Score: 88}}}}
	hd := newChartData(h, ChartOptions{})
	mean, n = hd.bucketMeans(hd.points["groq"])
	for b, at := range hd.buckets {
		if (n[b] > 0) != (at.Hour() == 14) {
			t.Errorf("hourly: bucket %s has %d scores; the score is at 14:20", at.Format("15:04"), n[b])
		}
	}
}

// TestChartHourlyAxisEndsAtWindow: the hourly axis widened to six hours
// grows into the past, never past the hour the window ends in.
func TestChartHourlyAxisEndsAtWindow(t *testing.T) {
	until := day3.Add(16*time.Hour + 10*time.Minute)
	d := telemetry.ReportData{Since: day3, Until: until}
	d.QualitySeries = []telemetry.ScoreSeries{{Provider: "groq", Points: []telemetry.ScorePoint{{TS: until.Add(-20 * time.Minute), Score: 88}}}}
	cd := newChartData(d, ChartOptions{})
	last := cd.buckets[len(cd.buckets)-1]
	if !cd.hourly || len(cd.buckets) < 6 || last.After(until) {
		t.Fatalf("hourly %v, %d buckets, the last from %s; the window ends %s", cd.hourly, len(cd.buckets), last.Format("15:04"), until.Format("15:04"))
	}
}

// TestChartColourByName: a provider has one colour whatever else the
// window holds.
func TestChartColourByName(t *testing.T) {
	if providerColor("groq") != providerColor("groq") || providerColor("groq") == providerColor("gemini") {
		t.Fatal("colours not by name")
	}
	for _, name := range []string{"gemini", "groq", "cerebras", "openrouter", "mistral", "local"} {
		if providerColor(name) != providerColor(strings.Clone(name)) {
			t.Errorf("%s: two colours", name)
		}
	}
}

// TestChartLongWindowTicks: a 365-day window is labelled by month, with
// no tick per day.
func TestChartLongWindowTicks(t *testing.T) {
	d := threeDays()
	d.Since = d.Until.AddDate(-1, 0, 0)
	cd := newChartData(d, ChartOptions{FullWindow: true})
	ticks := bucketTicks{cd}.Ticks(0, 0)
	labels := 0
	for _, tk := range ticks {
		if tk.Label != "" {
			labels++
		}
	}
	if len(cd.buckets) < 365 || len(ticks) > 14 || labels < 6 || labels > 12 {
		t.Fatalf("%d buckets: %d ticks, %d labelled", len(cd.buckets), len(ticks), labels)
	}
	b, err := Chart(d, ChartOptions{FullWindow: true})
	tgMust(t, err)
	tgMust(t, os.WriteFile(filepath.Join(chartOut(t), "chart-365d.png"), b, 0o644))
}

// TestChartDrawOrder: the published line is drawn last (on top), and a
// sparse provider's after a dense one's.
func TestChartDrawOrder(t *testing.T) {
	d := threeDays()
	d.QualitySeries = append(d.QualitySeries, telemetry.ScoreSeries{Provider: "groq", Points: d.QualitySeries[0].Points[:1]})
	d.Providers = append(d.Providers, telemetry.ProviderCalls{Provider: "groq"})
	cd := newChartData(d, ChartOptions{})
	if got := strings.Join(cd.drawOrder(), ","); got != "gemini,groq," {
		t.Fatalf("draw order %q, want gemini, groq, then published", got)
	}
	b, err := Chart(d, ChartOptions{})
	tgMust(t, err)
	tgMust(t, os.WriteFile(filepath.Join(chartOut(t), "chart-3d.png"), b, 0o644))
}

// TestChartSkipsNonFinite: an infinite or NaN cost and a score out of
// 0..100 are not drawn, the chart says how many, and drawing ends.
func TestChartSkipsNonFinite(t *testing.T) {
	d := threeDays()
	d.DailyCost = append(d.DailyCost,
		telemetry.DailyCost{Day: day3.Format("2006-01-02"), Provider: "groq", CostUSD: math.Inf(1)},
		telemetry.DailyCost{Day: day3.Format("2006-01-02"), Provider: "cerebras", CostUSD: math.NaN()},
		telemetry.DailyCost{Day: day3.Format("2006-01-02"), Provider: "openrouter", CostUSD: 1e300})
	d.Providers = append(d.Providers, telemetry.ProviderCalls{Provider: "groq", CostUSD: math.Inf(1)})
	d.QualitySeries[0].Points = append(d.QualitySeries[0].Points, telemetry.ScorePoint{TS: day3.Add(time.Hour), Score: 1e308}, telemetry.ScorePoint{TS: day3.Add(time.Hour), Score: math.NaN()})
	cd := newChartData(d, ChartOptions{})
	if cd.omitted != 5 || !strings.Contains(cd.omittedNote(), "5 value(s) not drawn") {
		t.Fatalf("omitted %d (%q), want 5", cd.omitted, cd.omittedNote())
	}
	start := time.Now()
	b, err := Chart(d, ChartOptions{})
	tgMust(t, err)
	if time.Since(start) > 10*time.Second || len(b) == 0 {
		t.Fatalf("took %s", time.Since(start))
	}
	tgMust(t, os.WriteFile(filepath.Join(chartOut(t), "chart-nonfinite.png"), b, 0o644))
}

// TestChartTimeBound: a chart that takes longer than ChartTimeout is
// an error, not a wait.
func TestChartTimeBound(t *testing.T) {
	old := ChartTimeout
	ChartTimeout = time.Nanosecond
	defer func() { ChartTimeout = old }()
	if _, err := Chart(threeDays(), ChartOptions{}); err == nil || !strings.Contains(err.Error(), "took more than") {
		t.Fatalf("err %v", err)
	}
}

// TestReportNonFiniteCost: a provider whose stored cost sums to infinity
// (a row from before prices were bounded) reads as not finite in the text
// and Telegram reports, never as $+Inf or $NaN.
func TestReportNonFiniteCost(t *testing.T) {
	d := threeDays()
	d.Providers = append(d.Providers, telemetry.ProviderCalls{Provider: "groq", Calls: 3, CostUSD: math.Inf(1)},
		telemetry.ProviderCalls{Provider: "cerebras", Calls: 2, CostUSD: math.NaN()})
	d.Totals.Calls, d.Totals.CostUSD = 5, math.Inf(1)
	r := Report{Data: d}
	for name, text := range map[string]string{"text": r.Text(), "telegram": strings.Join(r.Telegram(), "\n")} {
		if strings.Contains(text, "Inf") || strings.Contains(text, "NaN") {
			t.Errorf("%s report shows a non-finite number:\n%s", name, text)
		}
		if !strings.Contains(text, "not finite") {
			t.Errorf("%s report does not say the cost is not finite:\n%s", name, text)
		}
	}
}

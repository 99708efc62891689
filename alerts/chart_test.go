package alerts

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// chartUntil is the end of the windows the chart tests draw.
var chartUntil = time.Date(2026, 12, 1, 18, 0, 0, 0, time.UTC)

// chartStore records days of simulated history ending at chartUntil: eight
// jobs a day; gemini serves most at a cost, fails with 503 one time in
// five, groq (free) takes over, cerebras now and then; scores around 86,
// 78 and 81, one answer in twenty rejected (score 0 or 55).
func chartStore(t *testing.T, days int) *telemetry.Store {
	t.Helper()
	store, _ := tgStore(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(uint64(days), 3))
	start := chartUntil.Add(-time.Duration(days) * 24 * time.Hour).Add(time.Hour)
	n := 0
	score := func(mean float64) *float64 {
		v := mean + rng.NormFloat64()*4
		if rng.IntN(20) == 0 {
			v = []float64{0, 55}[rng.IntN(2)]
		}
		v = min(100, v)
		return &v
	}
	call := func(job, p string, ts time.Time, o chain.Outcome, cost float64, q *float64) {
		n++
		tgMust(t, store.RecordCall(ctx, chain.Call{Provider: p, Model: "m", RequestID: job, Attempt: n, TS: ts, Outcome: o, CostUSD: cost, QualityScore: q, Purpose: chain.PurposeJob}))
	}
	for ts := start; ts.Before(chartUntil); ts = ts.Add(3 * time.Hour) {
		job := fmt.Sprintf("job-%d", n)
		served, s := "gemini", score(86)
		switch {
		case rng.IntN(5) == 0:
			call(job, "gemini", ts, chain.OutcomeServerError, 0, nil)
			served, s = "groq", score(78)
			if rng.IntN(3) == 0 {
				call(job, "groq", ts.Add(time.Second), chain.OutcomeRateLimited, 0, nil)
				served, s = "cerebras", score(81)
			}
		}
		cost := map[string]float64{"gemini": 0.004 + rng.Float64()*0.002, "groq": 0, "cerebras": 0.002}[served]
		o := chain.OutcomeOK
		if *s < 70 {
			o = chain.OutcomeRejected
		}
		call(job, served, ts.Add(2*time.Second), o, cost, s)
		if o == chain.OutcomeOK {
			rec := chain.JobRecord{ID: job, Topic: job, Slot: "s"}
			_, _, err := store.ClaimJob(ctx, rec, chain.Owner{Host: "h", PID: 1}, nil, time.Hour, ts)
			tgMust(t, err)
			rec.Status, rec.Provider, rec.QualityScore, rec.PublishedAt = chain.JobPublished, served, s, ts.Add(3*time.Second)
			tgMust(t, store.FinishJob(ctx, rec, chain.Owner{Host: "h", PID: 1}, ts.Add(3*time.Second)))
		}
	}
	return store
}

// chartOut is where the chart tests leave their PNGs: $CHART_OUT when set
// (to look at them), else the test's temporary directory.
func chartOut(t *testing.T) string {
	if d := os.Getenv("CHART_OUT"); d != "" {
		return d
	}
	return t.TempDir()
}

// TestChartAtOneSevenSixtyDays draws the chart for 1, 7 and 60 days of data
// and checks what the picture is made of: the window is the data's (hours
// for a day of data, days otherwise, 60 days even in a 365-day report), the
// cost bars stack to each bucket's total, the cost legend names only
// providers that cost something, and the PNG is 1200×900.
func TestChartAtOneSevenSixtyDays(t *testing.T) {
	for _, c := range []struct {
		days, window int
		hourly       bool
		buckets      int
	}{{1, 7, true, 22}, {7, 7, false, 7}, {60, 365, false, 60}} {
		t.Run(fmt.Sprint(c.days), func(t *testing.T) {
			store := chartStore(t, c.days)
			since := time.Date(chartUntil.Year(), chartUntil.Month(), chartUntil.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -c.window)
			d, err := store.Report(context.Background(), since, chartUntil, "gemini")
			tgMust(t, err)
			cd := newChartData(d, ChartOptions{})
			if cd.hourly != c.hourly || len(cd.buckets) < c.buckets || len(cd.buckets) > c.buckets+1 {
				t.Fatalf("hourly %v, %d buckets from %s; want hourly %v, %d", cd.hourly, len(cd.buckets), cd.buckets[0], c.hourly, c.buckets)
			}
			// The stack of each bucket is the sum of its providers' costs.
			total := 0.0
			for _, p := range d.Providers {
				total += p.CostUSD
			}
			drawn := 0.0
			for _, v := range cd.cost {
				for _, x := range v {
					drawn += x
				}
			}
			if diff := drawn - total; diff > 1e-9 || diff < -1e-9 {
				t.Errorf("bars sum to %f, the window cost %f", drawn, total)
			}
			cost, legend := cd.costPanel()
			_ = cost
			var names []string
			for _, e := range legendTexts(legend) {
				names = append(names, strings.Fields(e)[0])
			}
			if strings.Contains(fmt.Sprint(names), "groq") || !strings.Contains(fmt.Sprint(names), "gemini") {
				t.Errorf("cost legend %v: groq costs nothing, gemini does", names)
			}
			b, err := Chart(d, ChartOptions{Threshold: 70})
			tgMust(t, err)
			img, err := png.Decode(bytes.NewReader(b))
			tgMust(t, err)
			if r := img.Bounds(); r.Dx() != 1200 || r.Dy() != 900 {
				t.Fatalf("size %v", r)
			}
			tgMust(t, os.WriteFile(filepath.Join(chartOut(t), fmt.Sprintf("chart-%dd.png", c.days)), b, 0o644))
			full := newChartData(d, ChartOptions{FullWindow: true})
			if len(full.buckets) != c.window+1 {
				t.Errorf("full window: %d buckets, want %d", len(full.buckets), c.window+1)
			}
		})
	}
}

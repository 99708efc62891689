package quality

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

// scores returns n quality scores around mu with noise sd, clamped to
// 0..100; a share pOut of them are low outliers (a rejected answer scored
// 15 to 55 points below the level).
func scoreSeries(r *rand.Rand, n int, mu, sd, pOut float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		v := mu + sd*r.NormFloat64()
		if r.Float64() < pOut {
			v = mu - 15 - 40*r.Float64()
		}
		out[i] = math.Round(math.Max(0, math.Min(100, v))*10) / 10
	}
	return out
}

func shareSeries(r *rand.Rand, n int, p float64) []bool {
	out := make([]bool, n)
	for i := range out {
		out[i] = r.Float64() < p
	}
	return out
}

// dropDelays runs the drop scenario over seeds: 100 stable jobs at 82 then
// 40 jobs at 82−drop, σ 4. It fails the test on a missed drop or a flag
// before the change and returns the sorted delays (jobs after the change up
// to and including the flagged one).
func dropDelays(t *testing.T, drop float64, seeds int) []int {
	t.Helper()
	const change = 100
	var delays []int
	for seed := range seeds {
		r := rand.New(rand.NewPCG(uint64(seed), 1))
		xs := append(scoreSeries(r, change, 82, 4, 0), scoreSeries(r, 40, 82-drop, 4, 0)...)
		d := DetectQualityDrop(xs)
		if !d.Flagged {
			t.Fatalf("drop %.0f seed %d: not flagged: %s", drop, seed, d.Reason)
		}
		if d.At < change {
			t.Fatalf("drop %.0f seed %d: flagged at job %d, before the change at %d: %s", drop, seed, d.At, change, d.Reason)
		}
		if math.Abs(d.Baseline-82) > 2 || math.Abs(d.Recent-(82-drop)) > 5 {
			t.Errorf("drop %.0f seed %d: baseline %.1f, recent %.1f", drop, seed, d.Baseline, d.Recent)
		}
		delays = append(delays, d.At-change+1)
	}
	sort.Ints(delays)
	return delays
}

func within(delays []int, k int) float64 {
	return float64(sort.SearchInts(delays, k+1)) / float64(len(delays))
}

// TestQualityDropDetected: a 10-point drop (82 → 72, σ 4) over 300 seeds is
// always flagged, never early, about half the time within 4 jobs (median
// delay at most 5) and nearly always within 10. A 15-point drop is flagged
// within 4 jobs in ≥ 90 % of runs, a collapse always. See DetectQualityDrop
// for why "always within 4 jobs" is out of reach at this noise level.
func TestQualityDropDetected(t *testing.T) {
	d10 := dropDelays(t, 10, 300)
	t.Logf("10-point drop, σ 4: median delay %d jobs; flagged within 3: %.0f%%, 4: %.0f%%, 5: %.0f%%, 6: %.0f%%, 10: %.0f%%; max %d",
		d10[len(d10)/2], 100*within(d10, 3), 100*within(d10, 4), 100*within(d10, 5), 100*within(d10, 6), 100*within(d10, 10), d10[len(d10)-1])
	if med := d10[len(d10)/2]; med > 5 {
		t.Errorf("10-point drop: median delay %d jobs, want ≤ 5", med)
	}
	if w := within(d10, 4); w < 0.4 {
		t.Errorf("10-point drop: %.1f%% flagged within 4 jobs, want ≥ 40%%", 100*w)
	}
	if w := within(d10, 10); w < 0.97 {
		t.Errorf("10-point drop: %.1f%% flagged within 10 jobs, want ≥ 97%%", 100*w)
	}
	d15 := dropDelays(t, 15, 300)
	t.Logf("15-point drop, σ 4: median delay %d jobs; within 4: %.0f%%", d15[len(d15)/2], 100*within(d15, 4))
	if w := within(d15, 4); w < 0.9 {
		t.Errorf("15-point drop: %.1f%% flagged within 4 jobs, want ≥ 90%%", 100*w)
	}
	d40 := dropDelays(t, 40, 100) // a collapse: the outlier rule must not hide it
	if w := within(d40, 4); w < 1 {
		t.Errorf("40-point collapse: %.1f%% flagged within 4 jobs, want all", 100*w)
	}
}

// TestQualityStable: 1,000 stable jobs with σ 4 and 1 % low outliers raise
// no flag, for ten seeds at each of three levels.
func TestQualityStable(t *testing.T) {
	for _, mu := range []float64{75, 82, 90} {
		for seed := range 10 {
			r := rand.New(rand.NewPCG(uint64(seed), 2))
			xs := scoreSeries(r, 1000, mu, 4, 0.01)
			if d := DetectQualityDrop(xs); d.Flagged {
				t.Errorf("level %.0f seed %d: false alarm at job %d: %s", mu, seed, d.At, d.Reason)
			}
		}
	}
}

// TestQualityFalseAlarmRate measures the false-alarm rate over 300 stable
// 1,000-job series (σ 4, 1 % low outliers) and holds it under 3 %.
func TestQualityFalseAlarmRate(t *testing.T) {
	fa := 0
	const runs = 300
	for seed := range runs {
		r := rand.New(rand.NewPCG(uint64(seed), 6))
		if DetectQualityDrop(scoreSeries(r, 1000, 82, 4, 0.01)).Flagged {
			fa++
		}
	}
	rate := float64(fa) / runs
	t.Logf("false alarms: %d of %d stable 1,000-job series (%.1f%%)", fa, runs, 100*rate)
	if rate > 0.03 {
		t.Errorf("false-alarm rate %.1f%% per 1,000 jobs, want ≤ 3%%", 100*rate)
	}
}

// TestQualityStableAtCeiling: gate scores pile up on 100 with a few
// penalties and rare outright rejections (0). The trimmed-mean baseline and
// the σ floor keep most stable series of that shape quiet; clusters of
// penalties can still look like a drop, so the rate is bounded, not zero.
func TestQualityStableAtCeiling(t *testing.T) {
	fa := 0
	const runs = 200
	for seed := range runs {
		r := rand.New(rand.NewPCG(uint64(seed), 3))
		xs := make([]float64, 500)
		for i := range xs {
			xs[i] = 100
			switch u := r.Float64(); {
			case u < 0.15:
				xs[i] = 100 - 4 - 8*r.Float64() // a short section or two
			case u < 0.17:
				xs[i] = 0 // an outright rejection
			}
		}
		if DetectQualityDrop(xs).Flagged {
			fa++
		}
	}
	t.Logf("ceiling-shaped series: %d false alarms in %d runs of 500 jobs", fa, runs)
	if rate := float64(fa) / runs; rate > 0.15 {
		t.Errorf("false-alarm rate %.1f%% on ceiling-shaped series, want ≤ 15%%", 100*rate)
	}
}

func TestQualityDropInputs(t *testing.T) {
	if d := DetectQualityDrop(make([]float64, QualityMinSamples-1)); d.Flagged || d.At != -1 || d.Reason == "" {
		t.Errorf("short series: %+v", d)
	}
	// NaN and Inf are skipped, and At indexes the caller's slice.
	r := rand.New(rand.NewPCG(1, 1))
	xs := append(scoreSeries(r, 60, 82, 4, 0), scoreSeries(r, 20, 60, 4, 0)...)
	xs = append([]float64{math.NaN(), math.Inf(1)}, xs...)
	d := DetectQualityDrop(xs)
	if !d.Flagged || d.At < 62 || d.At > 65 {
		t.Errorf("20-point drop at index 62: %+v", d)
	}
	// A rise is not a drop.
	up := append(scoreSeries(r, 60, 72, 4, 0), scoreSeries(r, 40, 85, 4, 0)...)
	if d := DetectQualityDrop(up); d.Flagged {
		t.Errorf("a rise was flagged: %+v", d)
	}
}

// TestShareRise: the fallback share rising from 10 % to 50 % after 100 jobs
// is flagged in every one of 300 seeds, never before the change, with a
// median delay of at most 30 jobs.
func TestShareRise(t *testing.T) {
	var delays []int
	for seed := range 300 {
		r := rand.New(rand.NewPCG(uint64(seed), 4))
		xs := append(shareSeries(r, 100, 0.10), shareSeries(r, 150, 0.50)...)
		d := DetectShareRise(xs)
		if !d.Flagged || d.At < 100 {
			t.Fatalf("seed %d: want a flag after job 100, got %+v", seed, d)
		}
		delays = append(delays, d.At-100+1)
	}
	sort.Ints(delays)
	med := delays[len(delays)/2]
	t.Logf("share 10%% → 50%%: median delay %d jobs, 90th percentile %d, max %d", med, delays[len(delays)*9/10], delays[len(delays)-1])
	if med > 30 {
		t.Errorf("median delay %d jobs, want ≤ 30", med)
	}
}

// TestShareStable: a stable 10 % (and 30 %) fallback share over 1,000 jobs
// raises no flag for ten seeds, and the false-alarm rate over 300 seeds stays
// under 2 %.
func TestShareStable(t *testing.T) {
	for _, p := range []float64{0.10, 0.30} {
		fa := 0
		for seed := range 300 {
			r := rand.New(rand.NewPCG(uint64(seed), 5))
			d := DetectShareRise(shareSeries(r, 1000, p))
			if d.Flagged {
				fa++
				if seed < 10 {
					t.Errorf("p=%.2f seed %d: false alarm at job %d: %s", p, seed, d.At, d.Reason)
				}
			}
		}
		t.Logf("stable share %.0f%%: %d false alarms in 300 runs of 1,000 jobs", 100*p, fa)
		if rate := float64(fa) / 300; rate > 0.02 {
			t.Errorf("p=%.2f: false-alarm rate %.1f%%, want ≤ 2%%", p, 100*rate)
		}
	}
}

func TestShareRiseCounts(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 9))
	var fb, total []int
	for day := range 28 { // four weeks of 6 jobs a day; the share jumps on day 21
		p := 0.10
		if day >= 21 {
			p = 0.50
		}
		n, f := 6, 0
		for range n {
			if r.Float64() < p {
				f++
			}
		}
		fb, total = append(fb, f), append(total, n)
	}
	d := detectShareRiseCounts(fb, total)
	if !d.Flagged || d.At < 21 {
		t.Fatalf("daily share rise from day 21: %+v", d)
	}
	t.Logf("%s", d.Reason)
	if d := detectShareRiseCounts(fb[:3], total[:3]); d.Flagged || d.Reason == "" {
		t.Errorf("18 jobs is too few: %+v", d)
	}
	if d := detectShareRiseCounts(fb, total[:5]); d.Flagged {
		t.Errorf("mismatched lengths flagged: %+v", d)
	}
	if d := DetectShareRise(make([]bool, ShareMinSamples-1)); d.Flagged || d.Reason == "" {
		t.Errorf("short series: %+v", d)
	}
}

// TestQualityDropAtLowNoise: when a provider's scores are steadier (σ 2,
// a steady model at a fixed target), the same 10-point drop (90 → 80) is
// flagged within 4 jobs in most runs (~84 %) and within 7 in all, and 300 stable
// 1,000-job series at that noise (with 1 % outliers) raise no flag. The σ
// floor of 4 points caps how fast the CUSUM can react (k = 1.25σ0, h = 4σ0:
// a clean 2.5σ0 drop needs exactly 4 jobs); see DetectQualityDrop.
func TestQualityDropAtLowNoise(t *testing.T) {
	within4, within7, fa := 0, 0, 0
	const runs = 300
	for seed := range runs {
		r := rand.New(rand.NewPCG(uint64(seed), 9))
		xs := append(scoreSeries(r, 100, 90, 2, 0), scoreSeries(r, 40, 80, 2, 0)...)
		d := DetectQualityDrop(xs)
		if !d.Flagged || d.At < 100 {
			t.Fatalf("seed %d: drop not flagged after the change: %+v", seed, d)
		}
		if d.At-100+1 <= 4 {
			within4++
		}
		if d.At-100+1 <= 7 {
			within7++
		}
		if DetectQualityDrop(scoreSeries(r, 1000, 90, 2, 0.01)).Flagged {
			fa++
		}
	}
	t.Logf("σ 2: 10-point drop within 4 jobs %d/%d, within 7 %d/%d; false alarms %d/%d stable 1,000-job series", within4, runs, within7, runs, fa, runs)
	if float64(within4)/runs < 0.75 || within7 != runs {
		t.Errorf("σ 2: within 4 jobs %d/%d (want ≥ 75%%), within 7 %d/%d (want all)", within4, runs, within7, runs)
	}
	if fa != 0 {
		t.Errorf("σ 2: %d false alarms in %d stable series", fa, runs)
	}
}

// detectShareRiseCounts is DetectShareRise on daily aggregates: fallback[i]
// of total[i] jobs on day i were served by a fallback provider. Days with no
// jobs are skipped; the baseline and the minimum (40 jobs) count jobs, not
// days. At is a day index.
func detectShareRiseCounts(fallback, total []int) Drift {
	if len(fallback) != len(total) {
		return Drift{At: -1, Reason: fmt.Sprintf("mismatched series (%d fallback, %d total)", len(fallback), len(total))}
	}
	x := make([]int, len(total))
	n := make([]int, len(total))
	for i := range total {
		n[i] = max(total[i], 0)
		x[i] = min(max(fallback[i], 0), n[i])
	}
	return shareCUSUM(x, n, "day")
}

package quality

import (
	"fmt"
	"math"
	"sort"
)

// Drift is the verdict of a decay detector on a series.
type Drift struct {
	Flagged  bool    // a real shift was found
	At       int     // index of the sample (job or day) where it was flagged; -1 when not flagged
	Baseline float64 // the baseline level (quality score, or fallback share)
	Recent   float64 // the level since the estimated change point (or over the monitored part when not flagged)
	Stat     float64 // the CUSUM statistic at At (quality: in baseline standard deviations; share: log-likelihood ratio), or its maximum when not flagged
	Reason   string  // one line for the report; why it was or was not flagged
}

// Parameters of the quality-drop detector: a one-sided, lower CUSUM on
// standardised, clipped scores.
const (
	// QualityMinSamples is the shortest quality series judged; shorter
	// series return an unflagged Drift saying so.
	QualityMinSamples = 24
	qualityBaseMin    = 20  // baseline = the first half of the series, at least this many...
	qualityBaseMax    = 200 // ...and at most this many samples
	qualityK          = 1.25
	qualityH          = 4.5
	qualityClip       = 3.0
	qualitySigmaMin   = 2.5 // floor for the baseline sd, in score points
)

// DetectQualityDrop looks for a real downward shift in a series of quality
// scores (oldest first, one per job). It runs a one-sided CUSUM:
//
//	z_i = min((μ0 − x_i)/σ0, 3),  S_i = max(0, S_{i−1} + z_i − k),  flag when S_i > h
//
// with k = 1.25 and h = 4.5 (in σ0 units). k is half the shift it is tuned
// for — 2.5σ, a 10-point drop at the typical σ0 ≈ 4 — and h trades delay for
// false alarms: a 10-point drop is flagged after about 4 jobs (median; ≥ 95 %
// within 10), while a stable series with σ 4 and 1 % of jobs as low outliers
// raises a false alarm in well under 1 % of 1,000-job windows (measured in
// decay_test.go). The clip at 3σ0 keeps single outliers (a rejected answer
// scored 0) from triggering it: each adds at most 1.75σ0, so it takes three
// in a row.
//
// The baseline μ0, σ0 is estimated robustly from the earlier part of the
// window — the first half of the series, 20 to 200 samples: μ0 is the
// median, σ0 the standard deviation of the samples within 3 MADs of it (at
// least 2.5 points, since gate scores pile up on 100). The CUSUM runs over
// the whole series; NaN and infinite scores are ignored. At least
// QualityMinSamples (24) scores are needed.
func DetectQualityDrop(scores []float64) Drift {
	xs := make([]float64, 0, len(scores))
	idx := make([]int, 0, len(scores))
	for i, v := range scores {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			xs = append(xs, v)
			idx = append(idx, i)
		}
	}
	if len(xs) < QualityMinSamples {
		return Drift{At: -1, Reason: fmt.Sprintf("too few scores (%d < %d)", len(xs), QualityMinSamples)}
	}
	nb := min(max(len(xs)/2, qualityBaseMin), qualityBaseMax)
	mu, sd := robustLevel(xs[:nb])
	sd = math.Max(sd, qualitySigmaMin)
	s, maxS, start := 0.0, 0.0, 0
	for i, v := range xs {
		z := math.Min((mu-v)/sd, qualityClip)
		s = math.Max(0, s+z-qualityK)
		if s == 0 {
			start = i + 1
		}
		maxS = math.Max(maxS, s)
		if s > qualityH {
			recent := mean(xs[min(start, i):])
			return Drift{
				Flagged: true, At: idx[i], Baseline: mu, Recent: recent, Stat: s,
				Reason: fmt.Sprintf("quality fell from %.1f to %.1f since job %d (CUSUM %.1fσ > %.1fσ, σ=%.1f)",
					mu, recent, idx[min(start, i)], s, qualityH, sd),
			}
		}
	}
	recent := mean(xs[nb:])
	return Drift{At: -1, Baseline: mu, Recent: recent, Stat: maxS,
		Reason: fmt.Sprintf("stable: quality %.1f, recent %.1f (CUSUM max %.1fσ ≤ %.1fσ)", mu, recent, maxS, qualityH)}
}

// robustLevel returns the median of xs and the standard deviation of the
// values within 3 MADs of it.
func robustLevel(xs []float64) (float64, float64) {
	m := median(xs)
	dev := make([]float64, len(xs))
	for i, v := range xs {
		dev[i] = math.Abs(v - m)
	}
	mad := 1.4826 * median(dev)
	lim := 3 * math.Max(mad, qualitySigmaMin)
	var sum, sq, n float64
	for _, v := range xs {
		if math.Abs(v-m) <= lim {
			sum += v
			sq += v * v
			n++
		}
	}
	if n < 2 {
		return m, mad
	}
	mn := sum / n
	sd := math.Sqrt(math.Max(0, sq/n-mn*mn) * n / (n - 1))
	// Trimming at 3 MADs removes the far tails of a normal sample too;
	// 1.027 restores the sd of the untrimmed normal part.
	return m, sd * 1.027
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	t := 0.0
	for _, v := range xs {
		t += v
	}
	return t / float64(len(xs))
}

// Parameters of the fallback-share detector: a one-sided Bernoulli
// (binomial) CUSUM on the log-likelihood ratio of p1 against p0.
const (
	// ShareMinSamples is the fewest jobs a share series needs.
	ShareMinSamples = 40
	shareBaseMin    = 30  // baseline = first half, at least this many jobs...
	shareBaseMax    = 300 // ...and at most this many
	shareH          = 5.0 // flag when the log-likelihood ratio exceeds this (e^5 ≈ 150:1)
	shareP0Min      = 0.02
)

// DetectShareRise looks for a real upward shift in the share of jobs served
// by a fallback provider (one bool per job, oldest first; true = served by a
// fallback). It runs a Bernoulli CUSUM
//
//	S_i = max(0, S_{i−1} + x_i·ln(p1/p0) + (1−x_i)·ln((1−p1)/(1−p0))),  flag when S_i > 5
//
// where p0 is the baseline share and p1 = min(0.95, max(2·p0, p0+0.15)) the
// smallest rise worth reporting. p0 comes from the earlier part of the window
// (the first half, 30 to 300 jobs) as the upper one-sigma bound of the
// observed share, at least 0.02, so a baseline that happened to look low
// does not turn ordinary noise into an alarm. A rise from 10 % to 50 % is
// flagged after about 10 jobs; a stable 10 % share does not raise one over
// 1,000 jobs (decay_test.go). At least ShareMinSamples (40) jobs are needed.
func DetectShareRise(fallback []bool) Drift {
	x := make([]int, len(fallback))
	n := make([]int, len(fallback))
	for i, f := range fallback {
		n[i] = 1
		if f {
			x[i] = 1
		}
	}
	return shareCUSUM(x, n, "job")
}

// DetectShareRiseCounts is DetectShareRise on daily aggregates: fallback[i]
// of total[i] jobs on day i were served by a fallback provider. Days with no
// jobs are skipped; the baseline and the minimum (40 jobs) count jobs, not
// days. At is a day index.
func DetectShareRiseCounts(fallback, total []int) Drift {
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

func shareCUSUM(x, n []int, unit string) Drift {
	total := 0
	for _, v := range n {
		total += v
	}
	if total < ShareMinSamples {
		return Drift{At: -1, Reason: fmt.Sprintf("too few jobs (%d < %d)", total, ShareMinSamples)}
	}
	// Baseline: the leading points holding the first half of the jobs.
	want := min(max(total/2, shareBaseMin), shareBaseMax)
	bx, bn, end := 0, 0, 0
	for end < len(n) && bn < want {
		bx += x[end]
		bn += n[end]
		end++
	}
	phat := float64(bx) / float64(bn)
	p0 := phat + math.Sqrt(math.Max(phat*(1-phat), 0.25/float64(bn))/float64(bn))
	p0 = math.Min(math.Max(p0, shareP0Min), 0.9)
	p1 := math.Min(0.95, math.Max(2*p0, p0+0.15))
	if p1 <= p0 {
		return Drift{At: -1, Baseline: phat, Reason: fmt.Sprintf("baseline share %.0f%% leaves no room to rise", 100*phat)}
	}
	up, down := math.Log(p1/p0), math.Log((1-p1)/(1-p0))
	s, maxS, start := 0.0, 0.0, 0
	for i := range n {
		if n[i] == 0 {
			continue
		}
		s = math.Max(0, s+float64(x[i])*up+float64(n[i]-x[i])*down)
		if s == 0 {
			start = i + 1
		}
		maxS = math.Max(maxS, s)
		if s > shareH {
			rx, rn := 0, 0
			for j := min(start, i); j < len(n); j++ {
				rx += x[j]
				rn += n[j]
			}
			recent := float64(rx) / float64(rn)
			return Drift{
				Flagged: true, At: i, Baseline: phat, Recent: recent, Stat: s,
				Reason: fmt.Sprintf("fallback share rose from %.0f%% to %.0f%% since %s %d (CUSUM %.1f > %.1f)",
					100*phat, 100*recent, unit, min(start, i), s, shareH),
			}
		}
	}
	rx, rn := 0, 0
	for j := end; j < len(n); j++ {
		rx += x[j]
		rn += n[j]
	}
	recent := phat
	if rn > 0 {
		recent = float64(rx) / float64(rn)
	}
	return Drift{At: -1, Baseline: phat, Recent: recent, Stat: maxS,
		Reason: fmt.Sprintf("stable: fallback share %.0f%%, recent %.0f%% (CUSUM max %.1f ≤ %.1f)", 100*phat, 100*recent, maxS, shareH)}
}

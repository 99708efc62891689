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
	qualityH          = 4.0
	qualityClip       = 3.0 // a sample adds at most 3σ0 (less k)...
	qualityOutlier    = 4.0 // ...and one more than 4σ0 low after a normal one adds nothing
	qualitySigmaMin   = 4.0 // floor for the baseline sd, in score points
)

// DetectQualityDrop looks for a real downward shift in a series of quality
// scores (oldest first, one per job). It runs a one-sided lower CUSUM on
// standardised scores:
//
//	z_i = (μ0 − x_i)/σ0, clipped at 3;  S_i = max(0, S_{i−1} + z_i − k);  flag when S_i > h
//
// with k = 1.25 and h = 4 (in σ0 units). k is half the shift it is tuned
// for — 2.5σ0, a 10-point drop at σ0 = 4 — and h sets the trade between
// delay and false alarms. Outliers are handled twice: the clip means a sample
// adds at most 1.75σ0, and an isolated extreme sample (more than 4σ0 below
// μ0 right after a sample less than 1.5σ0 below it: a single rejected answer
// scored 0) adds nothing; the second extreme sample in a row counts, so a
// collapse is still flagged within four jobs.
//
// Measured in decay_test.go (300 seeds, 100 stable jobs then a drop, σ 4):
// every drop is flagged and none before it. A 10-point drop is flagged within
// 4 jobs in about half the runs (median delay 4–5 jobs), within 6 in about
// 80 % and within 10 in all; a 15-point drop within 4 jobs in about 94 %.
// Stable series (σ 4, 1 % low outliers, 1,000 jobs) raise a false alarm in
// about 1 % of runs; series piled up at 100 with 15 % small penalties and
// 2 % zeros (the shape of real gate scores) in about 6 % of 500-job runs,
// when penalties happen to cluster. No detector does much better at this signal-to-noise
// ratio: the mean of 4 jobs after a 2.5σ drop is itself only 5 ± 1 standard
// errors low, and even an oracle that knows μ0 and σ0 exactly flags only
// about 65 % of such drops within 4 jobs at a 1 % false-alarm rate. Raise
// qualityH for fewer false alarms (4.5: ≈ 0.3 %, about 40 % within 4 jobs),
// lower it for speed.
//
// The baseline μ0, σ0 is estimated robustly from the earlier part of the
// window — the first half of the series, 20 to 200 samples: μ0 is the mean
// and σ0 the standard deviation of the samples within 3 MADs of the median
// (the mean, not the median, because gate scores pile up at 100), and σ0 is
// at least 4 points (the granularity of the gate's penalties). The CUSUM
// runs over the whole series; NaN and infinite scores are ignored. At least
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
	s, maxS, start, prev := 0.0, 0.0, 0, 0.0
	for i, v := range xs {
		raw := (mu - v) / sd
		z := math.Min(raw, qualityClip)
		if raw > qualityOutlier && prev <= 1.5 {
			z = qualityK // an isolated outlier: neutral
		}
		prev = raw
		s = math.Max(0, s+z-qualityK)
		if s == 0 {
			start = i + 1
		}
		maxS = math.Max(maxS, s)
		if s > qualityH {
			from := min(start, i)
			recent := mean(xs[from:])
			return Drift{
				Flagged: true, At: idx[i], Baseline: mu, Recent: recent, Stat: s,
				Reason: fmt.Sprintf("quality fell from %.1f to %.1f since job %d (CUSUM %.1fσ > %.1fσ, σ=%.1f)",
					mu, recent, idx[from], s, qualityH, sd),
			}
		}
	}
	recent := mean(xs[nb:])
	return Drift{At: -1, Baseline: mu, Recent: recent, Stat: maxS,
		Reason: fmt.Sprintf("stable: quality %.1f, recent %.1f (CUSUM max %.1fσ ≤ %.1fσ)", mu, recent, maxS, qualityH)}
}

// robustLevel returns the mean and the standard deviation of the values of
// xs within 3 MADs (at least 3·qualitySigmaMin) of their median.
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
	return mn, sd * 1.027
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
	shareBaseMin    = 30   // baseline = first third, at least this many jobs...
	shareBaseMax    = 300  // ...and at most this many
	shareH          = 10.0 // flag when the log-likelihood ratio exceeds this (e^10 ≈ 22,000:1)
	shareP0Min      = 0.02
)

// DetectShareRise looks for a real upward shift in the share of jobs served
// by a fallback provider (one bool per job, oldest first; true = served by a
// fallback). It runs a Bernoulli CUSUM
//
//	S_i = max(0, S_{i−1} + x_i·ln(p1/p0) + (1−x_i)·ln((1−p1)/(1−p0))),  flag when S_i > 10
//
// where p0 is the baseline share and p1 = min(0.95, max(2·p0, p0+0.25)) the
// rise worth reporting. p0 comes from the earlier part of the window (the
// first third, 30 to 300 jobs) as the upper one-sigma bound of the observed
// share, at least 0.02, so a baseline that happened to look low does not
// turn ordinary noise into an alarm. Measured in decay_test.go: a rise from
// 10 % to 50 % is flagged after about 25 jobs (median; 4–6 days at 4–8 jobs a
// day), and stable 10 % and 30 % shares raise no alarm over 1,000 jobs
// (simulated rate ≈ 0.1–0.2 % per 1,000 jobs). The threshold is high because
// the share is only read weekly: a false alarm costs more than a day's delay.
// At least ShareMinSamples (40) jobs are needed.
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

func shareCUSUM(x, n []int, unit string) Drift {
	total := 0
	for _, v := range n {
		total += v
	}
	if total < ShareMinSamples {
		return Drift{At: -1, Reason: fmt.Sprintf("too few jobs (%d < %d)", total, ShareMinSamples)}
	}
	// Baseline: the leading points holding the first third of the jobs.
	want := min(max(total/3, shareBaseMin), shareBaseMax)
	bx, bn, end := 0, 0, 0
	for end < len(n) && bn < want {
		bx += x[end]
		bn += n[end]
		end++
	}
	phat := float64(bx) / float64(bn)
	p0 := phat + math.Sqrt(math.Max(phat*(1-phat), 0.25/float64(bn))/float64(bn))
	p0 = math.Min(math.Max(p0, shareP0Min), 0.9)
	p1 := math.Min(0.95, math.Max(2*p0, p0+0.25))
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
				Reason: fmt.Sprintf("fallback share rose from %.0f%% to %.0f%% since %s %d (CUSUM %.1f > %.0f)",
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

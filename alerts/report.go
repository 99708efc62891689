package alerts

import (
	"fmt"
	"sort"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/telemetry"
)

// Trend kinds.
const (
	TrendQuality  = "quality"  // a drop of the quality score
	TrendFallback = "fallback" // a rise of the fallback share
)

// Trend is a silent-decay detector's verdict on one series of the report.
type Trend struct {
	Kind     string // TrendQuality or TrendFallback
	Provider string // the provider; "" = the published articles (quality) or the whole chain (fallback)
	Samples  int    // length of the series judged
	Drift    quality.Drift
	// FlaggedAt is the time of the sample where the detector crossed its
	// threshold; zero when not flagged.
	FlaggedAt time.Time
	// New reports that the flag falls inside the report window, not in the
	// earlier window that serves as the baseline (that one was reported a
	// window ago).
	New bool
}

// Judged reports whether the series was long enough to be judged.
func (t Trend) Judged() bool {
	if t.Kind == TrendFallback {
		return t.Samples >= quality.ShareMinSamples
	}
	return t.Samples >= quality.QualityMinSamples
}

// Readiness thresholds of a shadow provider: it is called ready to join
// the chain after at least ShadowMinComparisons comparisons in the window
// when it would have passed the gate at least ShadowReadyPassRate of the
// time and its mean score is at most ShadowMaxQualityGap points below the
// primary's.
const (
	ShadowMinComparisons = 20
	ShadowReadyPassRate  = 0.9
	ShadowMaxQualityGap  = 5.0
)

// Report is a report ready to render: the figures and the decay verdicts.
type Report struct {
	Data     telemetry.ReportData
	Quality  []Trend // the published articles first, then each provider by name
	Fallback Trend
}

// NewReport runs the decay detectors (quality.DetectQualityDrop on each
// quality series, quality.DetectShareRise on the fallback series) over d.
func NewReport(d telemetry.ReportData) Report {
	r := Report{Data: d}
	series := append([]telemetry.ScoreSeries(nil), d.QualitySeries...)
	sort.SliceStable(series, func(i, j int) bool { return series[i].Provider < series[j].Provider }) // "" first
	for _, s := range series {
		t := Trend{Kind: TrendQuality, Provider: s.Provider, Samples: len(s.Points), Drift: quality.DetectQualityDrop(s.Scores())}
		if t.Drift.Flagged && t.Drift.At >= 0 && t.Drift.At < len(s.Points) {
			t.FlaggedAt = s.Points[t.Drift.At].TS
			t.New = !t.FlaggedAt.Before(d.Since)
		}
		r.Quality = append(r.Quality, t)
	}
	fb := make([]bool, len(d.FallbackSeries))
	for i, p := range d.FallbackSeries {
		fb[i] = p.Fallback
	}
	r.Fallback = Trend{Kind: TrendFallback, Samples: len(fb), Drift: quality.DetectShareRise(fb)}
	if d.FirstLink == "" {
		r.Fallback.Drift = quality.Drift{At: -1, Reason: "first link of the chain unknown"}
	}
	if f := r.Fallback; f.Drift.Flagged && f.Drift.At >= 0 && f.Drift.At < len(d.FallbackSeries) {
		r.Fallback.FlaggedAt = d.FallbackSeries[f.Drift.At].TS
		r.Fallback.New = !r.Fallback.FlaggedAt.Before(d.Since)
	}
	return r
}

// Flagged returns every trend the detectors flagged, quality first.
func (r Report) Flagged() []Trend {
	var out []Trend
	for _, t := range append(append([]Trend(nil), r.Quality...), r.Fallback) {
		if t.Drift.Flagged {
			out = append(out, t)
		}
	}
	return out
}

// Alerts returns the weekly trend alerts (rule trend) for the trends
// flagged inside the report window: key "trend:quality:<provider>"
// ("trend:quality:published" for the published articles) or
// "trend:fallback". A shift flagged in the baseline window was reported by
// the previous report and raises nothing.
func (r Report) Alerts() []chain.Alert {
	var out []chain.Alert
	for _, t := range r.Flagged() {
		if !t.New {
			continue
		}
		m := message{severity: SeverityWarning, since: "flagged " + t.FlaggedAt.UTC().Format("2006-01-02"),
			done: "Nothing: no rule changes the chain on a trend; the next weekly report says whether it goes on.", run: "contentpipe report --days 7"}
		key := string(RuleTrend) + ":"
		switch {
		case t.Kind == TrendFallback:
			key += "fallback"
			m.what = fmt.Sprintf("Silent decay: the fallback share is rising — %.0f%% of published jobs were served by a provider other than %s in the baseline, %.0f%% recently. "+
				"The first link is losing jobs: check %s's quota, daily cap, circuit and health checks.",
				100*t.Drift.Baseline, r.Data.FirstLink, 100*t.Drift.Recent, r.Data.FirstLink)
		case t.Provider == "":
			key += "quality:published"
			m.what = fmt.Sprintf("Silent decay: the quality of published articles is trending down — baseline score %.1f, recent %.1f. "+
				"Check which providers served them (fallback share) and whether a provider or model changed.", t.Drift.Baseline, t.Drift.Recent)
		default:
			key += "quality:" + t.Provider
			model := ""
			if mo := r.model(t.Provider); mo != "" {
				model = " (model " + mo + ")"
			}
			m.what = fmt.Sprintf("Silent decay: the quality of %s%s is trending down — baseline score %.1f, recent %.1f. "+
				"Check the provider and its model (a silent model update, a smaller fallback model, a changed prompt version).",
				t.Provider, model, t.Drift.Baseline, t.Drift.Recent)
		}
		out = append(out, chain.Alert{Key: key, Rule: RuleTrend, Severity: m.severity, Text: m.text()})
	}
	return out
}

func (r Report) model(provider string) string {
	for _, p := range r.Data.Providers {
		if p.Provider == provider {
			return p.Model
		}
	}
	return ""
}

// Caption is a one-line summary for the chart image.
func (r Report) Caption() string {
	d := r.Data
	s := fmt.Sprintf("contentpipe %s → %s: %d calls, %.1f%% ok, $%.4f",
		d.Since.Format("2006-01-02"), d.Until.Format("2006-01-02"), d.Totals.Calls, 100*d.Totals.SuccessRate(), d.Totals.CostUSD)
	if n := len(r.Flagged()); n > 0 {
		s += fmt.Sprintf(", %d decay flag(s)", n)
	}
	return s + ". Top: cost per provider; bottom: quality per provider (× = a rejected answer)."
}

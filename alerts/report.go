package alerts

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

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

// Alerts returns the weekly trend alerts (rule "trend", SPEC §8) for the
// trends flagged inside the report window: key "trend:quality:<provider>"
// ("trend:quality:published" for the published articles) or
// "trend:fallback". A shift flagged in the baseline window was reported by
// the previous report and raises nothing.
func (r Report) Alerts() []chain.Alert {
	var out []chain.Alert
	for _, t := range r.Flagged() {
		if !t.New {
			continue
		}
		a := chain.Alert{Rule: "trend", Severity: "warning"}
		day := t.FlaggedAt.UTC().Format("2006-01-02")
		switch {
		case t.Kind == TrendFallback:
			a.Key = "trend:fallback"
			a.Text = fmt.Sprintf("Silent decay: the fallback share is rising — %.0f%% of published jobs were served by a provider other than %s in the baseline, %.0f%% recently (flagged %s). "+
				"The first link is losing jobs: check %s's quota, daily cap, circuit and health checks (skips and health sections), and see `contentpipe report`.",
				100*t.Drift.Baseline, r.Data.FirstLink, 100*t.Drift.Recent, day, r.Data.FirstLink)
		case t.Provider == "":
			a.Key = "trend:quality:published"
			a.Text = fmt.Sprintf("Silent decay: the quality of published articles is trending down — baseline score %.1f, recent %.1f (flagged %s). "+
				"Check which providers served them (fallback share) and whether a provider or model changed, and see `contentpipe report`.",
				t.Drift.Baseline, t.Drift.Recent, day)
		default:
			a.Key = "trend:quality:" + t.Provider
			model := ""
			if m := r.model(t.Provider); m != "" {
				model = " (model " + m + ")"
			}
			a.Text = fmt.Sprintf("Silent decay: the quality of %s%s is trending down — baseline score %.1f, recent %.1f (flagged %s). "+
				"Check the provider and its model (a silent model update, a smaller fallback model, a changed prompt version), and see `contentpipe report`.",
				t.Provider, model, t.Drift.Baseline, t.Drift.Recent, day)
		}
		out = append(out, a)
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
	return s + ". Top: cost per provider per day; bottom: daily mean quality."
}

// Text renders the report as plain text for a terminal or a chat.
func (r Report) Text() string {
	d := r.Data
	var b strings.Builder
	days := int(d.Until.Sub(d.Since) / (24 * time.Hour))
	fmt.Fprintf(&b, "contentpipe report: %s → %s UTC (the last %d days and today so far)\n", d.Since.Format("2006-01-02 15:04"), d.Until.Format("2006-01-02 15:04"), days)
	if d.Empty() {
		fmt.Fprintf(&b, "\nNo data in this window: no calls, jobs, skips, shadow comparisons or health checks, and the review queue is empty.\n")
		fmt.Fprintf(&b, "Run `contentpipe run` (or `contentpipe run --demo`) first, or widen the window with --days.\n")
		return b.String()
	}
	r.writeCalls(&b)
	r.writeJobs(&b)
	r.writeFallback(&b)
	r.writeCost(&b)
	r.writeQuality(&b)
	r.writeShadow(&b)
	r.writeReview(&b)
	r.writeSkips(&b)
	r.writeHealth(&b)
	if len(d.Alerts) > 0 {
		fmt.Fprintf(&b, "\nAlerts raised in the window: %s\n", countList(d.Alerts))
	}
	return b.String()
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

func usd(x float64) string { return fmt.Sprintf("$%.4f", x) }

// countList renders counts as "a 3, b 1", largest first.
func countList(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if m[keys[i]] != m[keys[j]] {
			return m[keys[i]] > m[keys[j]]
		}
		return keys[i] < keys[j]
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

func (r Report) writeCalls(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nCalls (every attempt; a skip is not a call)\n")
	if d.Totals.Calls == 0 {
		fmt.Fprintf(b, "  no calls in the window\n")
		return
	}
	fmt.Fprintf(b, "  %-12s %6s %6s %8s %14s %10s %10s %9s %11s\n", "provider", "calls", "ok", "success", "job/shad/hlth", "tokens in", "tokens out", "latency", "cost")
	row := func(name string, p telemetry.ProviderCalls) {
		fmt.Fprintf(b, "  %-12s %6d %6d %8s %14s %10d %10d %9s %11s\n", name, p.Calls, p.OK, pct(p.SuccessRate()),
			fmt.Sprintf("%d/%d/%d", p.Job, p.Shadow, p.HealthChecks), p.InputTokens, p.OutputTokens, p.MeanLatency, usd(p.CostUSD))
	}
	for _, p := range d.Providers {
		row(p.Provider, p)
	}
	row("all", d.Totals)
	var fails []string
	for _, p := range d.Providers {
		if len(p.Outcomes) > 0 {
			fails = append(fails, p.Provider+": "+countList(p.Outcomes))
		}
	}
	if len(fails) > 0 {
		fmt.Fprintf(b, "  failed calls by outcome: %s\n", strings.Join(fails, "; "))
	}
}

func (r Report) writeJobs(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nJobs (by current status, among jobs updated in the window)\n")
	if len(d.Jobs) == 0 {
		fmt.Fprintf(b, "  no jobs in the window\n")
		return
	}
	total := 0
	for _, n := range d.Jobs {
		total += n
	}
	fmt.Fprintf(b, "  %s; job success rate %s (published of %d)\n", countList(d.Jobs), pct(float64(d.Jobs[chain.JobPublished])/float64(total)), total)
}

func (r Report) writeFallback(b *strings.Builder) {
	d := r.Data
	if d.FirstLink == "" {
		fmt.Fprintf(b, "\nFallback share: unknown (no chain order: pass --config)\n")
		return
	}
	fmt.Fprintf(b, "\nFallback share (published jobs served by a provider other than the first link, %s)\n", d.FirstLink)
	t := d.FallbackTotal
	if t.Published == 0 {
		fmt.Fprintf(b, "  nothing published in the window\n")
	} else {
		fmt.Fprintf(b, "  overall %d of %d (%s)\n", t.Fallback, t.Published, pct(t.Share()))
		for _, s := range d.Fallback {
			if s.Published == 0 {
				fmt.Fprintf(b, "  %s  -\n", s.Day)
				continue
			}
			fmt.Fprintf(b, "  %s  %d of %d (%s)\n", s.Day, s.Fallback, s.Published, pct(s.Share()))
		}
	}
	fmt.Fprintf(b, "  trend: %s\n", r.verdict(r.Fallback))
}

func (r Report) writeCost(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nCost per provider (USD)\n")
	if len(d.DailyCost) == 0 {
		fmt.Fprintf(b, "  no calls in the window\n")
		return
	}
	var names []string
	for _, p := range d.Providers {
		names = append(names, p.Provider)
	}
	cell := map[[2]string]float64{}
	dayTotal := map[string]float64{}
	for _, c := range d.DailyCost {
		cell[[2]string{c.Day, c.Provider}] = c.CostUSD
		dayTotal[c.Day] += c.CostUSD
	}
	fmt.Fprintf(b, "  %-10s", "day")
	for _, n := range names {
		fmt.Fprintf(b, " %11s", n)
	}
	fmt.Fprintf(b, " %11s\n", "total")
	for _, day := range d.Days {
		fmt.Fprintf(b, "  %-10s", day)
		for _, n := range names {
			fmt.Fprintf(b, " %11s", usd(cell[[2]string{day, n}]))
		}
		fmt.Fprintf(b, " %11s\n", usd(dayTotal[day]))
	}
	fmt.Fprintf(b, "  %-10s", "total")
	for _, p := range d.Providers {
		fmt.Fprintf(b, " %11s", usd(p.CostUSD))
	}
	fmt.Fprintf(b, " %11s\n", usd(d.Totals.CostUSD))
}

// verdict says in words what the detector found on t.
func (r Report) verdict(t Trend) string {
	dr := t.Drift
	if !t.Judged() {
		return "not judged: " + dr.Reason
	}
	if t.Kind == TrendFallback {
		if dr.Flagged {
			return fmt.Sprintf("RISE FLAGGED on %s: share %.0f%% in the baseline, %.0f%% recently — %s", t.FlaggedAt.Format("2006-01-02"), 100*dr.Baseline, 100*dr.Recent, dr.Reason)
		}
		return fmt.Sprintf("no rise: share %.0f%% in the baseline, %.0f%% recently (%s)", 100*dr.Baseline, 100*dr.Recent, dr.Reason)
	}
	if dr.Flagged {
		return fmt.Sprintf("DROP FLAGGED on %s: score %.1f in the baseline, %.1f recently — %s", t.FlaggedAt.Format("2006-01-02"), dr.Baseline, dr.Recent, dr.Reason)
	}
	return fmt.Sprintf("no drop: score %.1f in the baseline, %.1f recently (%s)", dr.Baseline, dr.Recent, dr.Reason)
}

func (r Report) writeQuality(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nQuality trend (silent decay; series from %s, the earlier half is the baseline)\n", d.HistoryFrom.Format("2006-01-02"))
	if len(r.Quality) == 0 {
		fmt.Fprintf(b, "  no scored answers\n")
		return
	}
	daily := map[string][]string{}
	for _, q := range d.DailyQuality {
		daily[q.Provider] = append(daily[q.Provider], fmt.Sprintf("%s %.1f (%d)", q.Day[5:], q.Mean, q.N))
	}
	for _, t := range r.Quality {
		name := t.Provider
		if name == "" {
			name = "published"
		}
		var sum float64
		var n int
		for _, q := range d.DailyQuality {
			if q.Provider == t.Provider {
				sum += q.Mean * float64(q.N)
				n += q.N
			}
		}
		if n > 0 {
			fmt.Fprintf(b, "  %-12s mean %.1f over %d scores in the window\n", name, sum/float64(n), n)
		} else {
			fmt.Fprintf(b, "  %-12s no scores in the window\n", name)
		}
		if len(daily[t.Provider]) > 0 {
			fmt.Fprintf(b, "  %-12s daily: %s\n", "", strings.Join(daily[t.Provider], ", "))
		}
		fmt.Fprintf(b, "  %-12s trend: %s\n", "", r.verdict(t))
	}
}

func (r Report) writeShadow(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nShadow readiness (shadow answers compared with the primary, never published)\n")
	if len(d.Shadow) == 0 {
		fmt.Fprintf(b, "  no shadow comparisons in the window (shadow.providers is empty, or no job ran)\n")
		return
	}
	for _, s := range d.Shadow {
		fmt.Fprintf(b, "  %s: %d comparisons, would have passed the gate %d times (%s)\n", s.Provider, s.Comparisons, s.Passed, pct(s.PassRate()))
		var q []string
		if s.ShadowScore != nil {
			q = append(q, fmt.Sprintf("mean score %.1f", *s.ShadowScore))
		}
		if s.PrimaryScore != nil {
			q = append(q, fmt.Sprintf("primary %.1f", *s.PrimaryScore))
		}
		if s.Delta != nil {
			q = append(q, fmt.Sprintf("difference %+.1f", *s.Delta))
		}
		if len(q) > 0 {
			fmt.Fprintf(b, "    quality: %s\n", strings.Join(q, ", "))
		}
		fmt.Fprintf(b, "    cost: %s vs primary %s%s\n", usd(s.ShadowCostUSD), usd(s.PrimaryCostUSD), ratio(s.ShadowCostUSD, s.PrimaryCostUSD))
		fmt.Fprintf(b, "    latency: mean %s vs primary %s%s\n", s.ShadowLatency, s.PrimaryLatency, ratio(s.ShadowLatency.Seconds(), s.PrimaryLatency.Seconds()))
		fmt.Fprintf(b, "    verdict: %s\n", shadowVerdict(s))
	}
}

func ratio(a, b float64) string {
	if b <= 0 {
		return ""
	}
	return fmt.Sprintf(" (×%.2f)", a/b)
}

// shadowVerdict says whether a shadow provider could join the chain.
func shadowVerdict(s telemetry.ShadowStats) string {
	if s.Comparisons < ShadowMinComparisons {
		return fmt.Sprintf("too few comparisons to judge (%d < %d)", s.Comparisons, ShadowMinComparisons)
	}
	var why []string
	if s.PassRate() < ShadowReadyPassRate {
		why = append(why, fmt.Sprintf("passes the gate only %s of the time (needs %s)", pct(s.PassRate()), pct(ShadowReadyPassRate)))
	}
	if s.Delta != nil && *s.Delta < -ShadowMaxQualityGap {
		why = append(why, fmt.Sprintf("scores %.1f points below the primary (at most %.0f allowed)", -*s.Delta, ShadowMaxQualityGap))
	}
	if len(why) > 0 {
		return "not ready: " + strings.Join(why, "; ")
	}
	return "ready: it could take a place in the chain"
}

func (r Report) writeReview(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nReview queue (jobs where no answer passed the gate; all, not only this window): %d\n", len(d.Review))
	const show = 20
	for i, j := range d.Review {
		if i == show {
			fmt.Fprintf(b, "  … and %d more: contentpipe review list\n", len(d.Review)-show)
			break
		}
		score := "no score"
		if j.Score != nil {
			score = fmt.Sprintf("best %.0f", *j.Score)
		}
		prov := j.Provider
		if prov == "" {
			prov = "-"
		}
		fmt.Fprintf(b, "  %s  %s, %s from %s, waiting since %s\n", j.ID, j.Topic, score, prov, j.UpdatedAt.Format("2006-01-02 15:04"))
	}
	if len(d.Review) > 0 {
		fmt.Fprintf(b, "  decide with: contentpipe review show ID, then review approve ID or review reject ID\n")
	}
}

func (r Report) writeSkips(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nSkips by reason (providers passed over without a call)\n")
	if len(d.Skips) == 0 {
		fmt.Fprintf(b, "  none\n")
		return
	}
	reasons := map[string]int{}
	for _, s := range d.Skips {
		reasons[s.Reason] += s.Count
	}
	fmt.Fprintf(b, "  %s\n", countList(reasons))
	for _, s := range d.Skips {
		fmt.Fprintf(b, "  %-12s %-13s %d\n", s.Provider, s.Reason, s.Count)
	}
}

func (r Report) writeHealth(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nHealth checks in the window\n")
	if len(d.Health) == 0 {
		fmt.Fprintf(b, "  none (contentpipe health walks the chain; weekly in `serve`)\n")
		return
	}
	type agg struct {
		n, ok int
		last  telemetry.HealthCheck
		fail  *telemetry.HealthCheck
	}
	by := map[string]*agg{}
	var names []string
	for _, h := range d.Health {
		a := by[h.Provider]
		if a == nil {
			a = &agg{}
			by[h.Provider] = a
			names = append(names, h.Provider)
		}
		a.n++
		if h.OK {
			a.ok++
		} else {
			h := h
			a.fail = &h
		}
		a.last = h
	}
	sort.Strings(names)
	for _, n := range names {
		a := by[n]
		state := "ok"
		if !a.last.OK {
			state = "FAILED (" + string(a.last.Outcome) + ")"
		}
		fmt.Fprintf(b, "  %-12s %d of %d ok; last %s: %s, latency %s\n", n, a.ok, a.n, a.last.TS.Format("2006-01-02 15:04"), state, a.last.Latency)
		if a.fail != nil {
			detail := a.fail.Detail
			if rs := []rune(detail); len(rs) > 160 {
				detail = string(rs[:160]) + "…"
			}
			fmt.Fprintf(b, "  %-12s last failure %s: %s http %d %s\n", "", a.fail.TS.Format("2006-01-02 15:04"), a.fail.Outcome, a.fail.HTTPStatus, detail)
		}
	}
}

// Chart draws the report's chart as a PNG (900×1000 px): on top the cost
// of each provider per day as stacked bars, below the daily mean quality
// score of each provider and of the published articles as lines. A panel
// without data says so instead of drawing nothing.
func Chart(d telemetry.ReportData) ([]byte, error) {
	cost, err := costPanel(d)
	if err != nil {
		return nil, fmt.Errorf("chart cost panel: %w", err)
	}
	qual, err := qualityPanel(d)
	if err != nil {
		return nil, fmt.Errorf("chart quality panel: %w", err)
	}
	const w, h = 900, 1000 // pixels at the canvas' default 96 dpi
	c := vgimg.NewWith(vgimg.UseWH(vg.Length(w)*vg.Inch/96, vg.Length(h)*vg.Inch/96), vgimg.UseDPI(96),
		vgimg.UseBackgroundColor(color.White))
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(8), PadBottom: vg.Points(8), PadLeft: vg.Points(8), PadRight: vg.Points(12), PadY: vg.Points(24)}
	canvases := plot.Align([][]*plot.Plot{{cost}, {qual}}, tiles, dc)
	cost.Draw(canvases[0][0])
	qual.Draw(canvases[1][0])
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: c}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("encode chart png: %w", err)
	}
	return buf.Bytes(), nil
}

// dayLabels returns the x tick labels (MM-DD) of the window's days; in a
// long window only every k-th day is labelled, so that about 15 remain.
func dayLabels(d telemetry.ReportData) []string {
	out := make([]string, len(d.Days))
	step := max(1, (len(d.Days)+14)/15)
	for i, day := range d.Days {
		if (len(d.Days)-1-i)%step != 0 {
			continue // the last day is always labelled
		}
		out[i] = day
		if len(day) == 10 {
			out[i] = day[5:]
		}
	}
	return out
}

// noData writes a centred "no data" note on an empty panel.
func noData(p *plot.Plot, x float64, what string) error {
	l, err := plotter.NewLabels(plotter.XYLabels{XYs: plotter.XYs{{X: x, Y: 0.5}}, Labels: []string{what}})
	if err != nil {
		return err
	}
	l.TextStyle[0].XAlign = draw.XCenter
	p.Add(l)
	p.Y.Min, p.Y.Max = 0, 1
	return nil
}

// dayPanel starts a chart panel with one nominal x position per day of the
// window. When there are no days, or has is false (no data to draw), the
// panel says so in its middle and dayIdx is nil.
func dayPanel(d telemetry.ReportData, title, ylabel string, has bool, empty string) (p *plot.Plot, dayIdx map[string]int, err error) {
	p = plot.New()
	p.Title.Text = title
	p.Y.Label.Text = ylabel
	p.Legend.Top = true
	p.Legend.Left = true
	if len(d.Days) == 0 {
		return p, nil, noData(p, 0, "no days in this window")
	}
	p.NominalX(dayLabels(d)...)
	p.X.Min, p.X.Max = -0.5, float64(len(d.Days))-0.5
	if !has {
		return p, nil, noData(p, float64(len(d.Days)-1)/2, empty)
	}
	dayIdx = map[string]int{}
	for i, day := range d.Days {
		dayIdx[day] = i
	}
	return p, dayIdx, nil
}

func costPanel(d telemetry.ReportData) (*plot.Plot, error) {
	p, dayIdx, err := dayPanel(d, "Cost per provider per day (USD)", "USD", len(d.DailyCost) > 0, "no calls in this window")
	if dayIdx == nil {
		return p, err
	}
	p.Y.Min = 0
	names := chartProviders(d)
	width := vg.Points(math.Max(4, math.Min(40, 500/float64(len(d.Days)))))
	top := 0.0
	dayTotal := map[string]float64{}
	for _, c := range d.DailyCost {
		dayTotal[c.Day] += c.CostUSD
		top = math.Max(top, dayTotal[c.Day])
	}
	var below *plotter.BarChart
	for i, name := range names {
		vals := make(plotter.Values, len(d.Days))
		for _, c := range d.DailyCost {
			if c.Provider == name {
				if j, ok := dayIdx[c.Day]; ok {
					vals[j] = c.CostUSD
				}
			}
		}
		bars, err := plotter.NewBarChart(vals, width)
		if err != nil {
			return nil, err
		}
		bars.Color = plotutil.Color(i)
		bars.LineStyle.Width = 0
		if below != nil {
			bars.StackOn(below)
		}
		p.Add(bars)
		p.Legend.Add(name, bars)
		below = bars
	}
	if top > 0 {
		p.Y.Max = top * 1.35 // room for the legend
	}
	return p, nil
}

// chartProviders returns the providers of the window by name; a
// provider's index is its colour in both panels.
func chartProviders(d telemetry.ReportData) []string {
	seen := map[string]bool{}
	var names []string
	for _, pc := range d.Providers {
		if !seen[pc.Provider] {
			seen[pc.Provider] = true
			names = append(names, pc.Provider)
		}
	}
	for _, q := range d.DailyQuality {
		if q.Provider != "" && !seen[q.Provider] {
			seen[q.Provider] = true
			names = append(names, q.Provider)
		}
	}
	sort.Strings(names)
	return names
}

func qualityPanel(d telemetry.ReportData) (*plot.Plot, error) {
	p, dayIdx, err := dayPanel(d, "Quality trend: daily mean score", "score", len(d.DailyQuality) > 0, "no scored answers in this window")
	if dayIdx == nil {
		return p, err
	}
	pts := map[string]plotter.XYs{}
	for _, q := range d.DailyQuality {
		if j, ok := dayIdx[q.Day]; ok {
			pts[q.Provider] = append(pts[q.Provider], plotter.XY{X: float64(j), Y: q.Mean})
		}
	}
	names := append([]string{""}, chartProviders(d)...) // the published articles first
	lo := 100.0
	for i, n := range names {
		if len(pts[n]) == 0 {
			continue
		}
		line, scatter, err := plotter.NewLinePoints(pts[n])
		if err != nil {
			return nil, err
		}
		label := n
		var col color.Color = color.Black
		if n == "" {
			label = "published (all)"
			line.Width = vg.Points(2.5)
		} else {
			col = plotutil.Color(i - 1)
		}
		line.Color, scatter.Color = col, col
		scatter.Shape = plotutil.Shape(i)
		p.Add(line, scatter)
		p.Legend.Add(label, line, scatter)
		for _, xy := range pts[n] {
			lo = math.Min(lo, xy.Y)
		}
	}
	p.Y.Min = math.Max(0, math.Floor(lo/10)*10-10)
	p.Y.Max = 100 + (100-p.Y.Min)*0.25 // room for the legend
	return p, nil
}

package alerts

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// HealthWord is the state of a recorded health check in the words that
// health, report, alerts and the metrics share (chain.HealthState):
// healthy, cold, rate_limited, capped, over_budget, exhausted, or
// unhealthy.
func HealthWord(h telemetry.HealthCheck) string { return string(HealthState(h)) }

// HealthState is the state of a recorded health check.
func HealthState(h telemetry.HealthCheck) chain.HealthState {
	return chain.RecordedHealthState(string(h.Outcome), h.OK)
}

// Telegram renders the report for a chat: a few short sections of HTML,
// each one phone screen, tables in <pre> no wider than a phone shows
// (about 34 columns). Long lists are cut with the command that shows the
// rest; the full report is Text. Pack the sections to send them.
func (r Report) Telegram() []string {
	d := r.Data
	days := int(d.Until.Sub(d.Since) / (24 * time.Hour))
	head := fmt.Sprintf("<b>contentpipe report</b> · %s → %s UTC (%d days)\n", d.Since.Format("01-02"), d.Until.Format("01-02 15:04"), days)
	if d.Empty() {
		return []string{head + "No data in this window. Run <code>contentpipe run</code> first, or widen it with <code>--days</code>."}
	}
	secs := []string{head + r.summaryHTML()}
	for _, s := range []string{r.incidentsHTML(), r.callsHTML(), r.costHTML(), r.qualityHTML(), r.shadowHTML(), r.reviewHTML(), r.healthHTML()} {
		if s != "" {
			secs = append(secs, s)
		}
	}
	return append(secs, "Full report: <code>contentpipe report --days "+fmt.Sprint(days)+"</code>")
}

func (r Report) summaryHTML() string {
	d := r.Data
	total := 0
	for _, n := range d.Jobs {
		total += n
	}
	s := fmt.Sprintf("%d calls, %s ok, %s\n", d.Totals.Calls, pct(d.Totals.SuccessRate()), usd2(d.Totals.CostUSD))
	if total > 0 {
		s += "Jobs: " + EscapeHTML(countList(d.Jobs)) + "\n"
	}
	if d.FirstLink != "" && d.FallbackTotal.Published > 0 {
		s += fmt.Sprintf("Fallback share: %s (%d of %d)\n", pct(d.FallbackTotal.Share()), d.FallbackTotal.Fallback, d.FallbackTotal.Published)
	}
	if n := len(r.Flagged()); n > 0 {
		s += fmt.Sprintf("⚠️ <b>%d decay flag(s)</b>: see Quality\n", n)
	}
	if len(d.Alerts) > 0 {
		s += "Alerts: " + EscapeHTML(countList(d.Alerts))
	}
	return strings.TrimRight(s, "\n")
}

func usd2(x float64) string {
	if !finiteUSD(x) {
		return nonFiniteUSD
	}
	if x >= 1 {
		return fmt.Sprintf("$%.2f", x)
	}
	return fmt.Sprintf("$%.4f", x)
}

func (r Report) incidentsHTML() string {
	if len(r.Data.Incidents) == 0 {
		return ""
	}
	var b strings.Builder
	for _, in := range r.Data.Incidents {
		end := "still open"
		if !in.Open() {
			end = in.ResolvedAt.UTC().Format("01-02 15:04") + fmt.Sprintf(" (%s)", roundDur(in.ResolvedAt.Sub(in.OpenedAt)))
		}
		fmt.Fprintf(&b, "%s\n  %s → %s\n", clip(in.Key, 34), in.OpenedAt.UTC().Format("01-02 15:04"), end)
	}
	return "<b>Incidents</b>\n" + Pre(b.String())
}

func (r Report) callsHTML() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %5s %6s %9s\n", "provider", "calls", "ok", "cost")
	for _, p := range r.Data.Providers {
		fmt.Fprintf(&b, "%-11s %5d %6s %9s\n", clipName(p.Provider), p.Calls, pct(p.SuccessRate()), usd2(p.CostUSD))
	}
	var fails []string
	for _, p := range r.Data.Providers {
		if len(p.Outcomes) > 0 {
			fails = append(fails, p.Provider+": "+countList(p.Outcomes))
		}
	}
	out := "<b>Calls</b>\n" + Pre(b.String())
	if len(fails) > 0 {
		out += "\nNot ok: " + EscapeHTML(clip(strings.Join(fails, "; "), 600))
	}
	return out
}

func clipName(s string) string {
	if r := []rune(s); len(r) > 11 {
		return string(r[:10]) + "…"
	}
	return s
}

// costHTML is the cost per day (per week in a window over 14 days), with
// the provider that cost most in each row.
func (r Report) costHTML() string {
	d := r.Data
	if len(d.DailyCost) == 0 {
		return ""
	}
	type row struct {
		label string
		total float64
		by    map[string]float64
	}
	var rows []*row
	index := map[string]*row{}
	weekly := len(d.Days) > 14
	for _, c := range d.DailyCost {
		label := c.Day[5:]
		if t, err := time.Parse("2006-01-02", c.Day); err == nil && weekly {
			y, w := t.ISOWeek()
			label = fmt.Sprintf("%d-W%02d", y, w)
		}
		rw := index[label]
		if rw == nil {
			rw = &row{label: label, by: map[string]float64{}}
			index[label] = rw
			rows = append(rows, rw)
		}
		rw.total += c.CostUSD
		rw.by[c.Provider] += c.CostUSD
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %9s  %s\n", map[bool]string{true: "week", false: "day"}[weekly], "total", "most")
	for _, rw := range rows {
		top, topV := "-", 0.0
		for p, v := range rw.by {
			if v > topV || (v == topV && p < top) {
				top, topV = p, v
			}
		}
		fmt.Fprintf(&b, "%-8s %9s  %s\n", rw.label, usd2(rw.total), clipName(top))
	}
	return "<b>Cost</b>\n" + Pre(b.String())
}

// qualityHTML is each provider's mean score in the window and its decay
// verdict in one word.
func (r Report) qualityHTML() string {
	d := r.Data
	if len(r.Quality) == 0 {
		return ""
	}
	sum, n := map[string]float64{}, map[string]int{}
	for _, q := range d.DailyQuality {
		sum[q.Provider] += q.Mean * float64(q.N)
		n[q.Provider] += q.N
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %5s %5s  %s\n", "provider", "mean", "n", "trend")
	for _, t := range r.Quality {
		name := t.Provider
		if name == "" {
			name = "published"
		}
		mean := "-"
		if n[t.Provider] > 0 {
			mean = fmt.Sprintf("%.1f", sum[t.Provider]/float64(n[t.Provider]))
		}
		fmt.Fprintf(&b, "%-11s %5s %5d  %s\n", clipName(name), mean, n[t.Provider], trendWord(t))
	}
	fmt.Fprintf(&b, "%-11s %5s %5s  %s\n", "fallback", "", "", trendWord(r.Fallback))
	out := "<b>Quality</b> (silent decay)\n" + Pre(b.String())
	for _, t := range r.Flagged() {
		if t.New {
			out += "\n⚠️ " + EscapeHTML(r.verdict(t))
		}
	}
	return out
}

// trendWord says a detector's verdict in one word.
func trendWord(t Trend) string {
	switch {
	case !t.Judged():
		return "too few"
	case t.Drift.Flagged && t.Kind == TrendFallback:
		return "RISING"
	case t.Drift.Flagged:
		return "DROPPING"
	}
	return "steady"
}

func (r Report) shadowHTML() string {
	if len(r.Data.Shadow) == 0 {
		return ""
	}
	var b strings.Builder
	for _, s := range r.Data.Shadow {
		v := shadowVerdict(s)
		word, _, _ := strings.Cut(v, ":")
		fmt.Fprintf(&b, "%-11s %4d cmp %6s pass  %s\n", clipName(s.Provider), s.Comparisons, pct(s.PassRate()), word)
	}
	return "<b>Shadow</b>\n" + Pre(b.String())
}

func (r Report) reviewHTML() string {
	rv := r.Data.Review
	if len(rv) == 0 {
		return ""
	}
	var b strings.Builder
	for i, j := range rv {
		if i == 5 {
			fmt.Fprintf(&b, "… and %d more\n", len(rv)-5)
			break
		}
		fmt.Fprintf(&b, "%s\n", clip(j.ID, 34))
	}
	return fmt.Sprintf("<b>Review queue</b>: %d job(s)\n", len(rv)) + Pre(b.String()) + "\nDecide: <code>contentpipe review list</code>"
}

// healthHTML is each provider's last health check state and the skips of
// the window.
func (r Report) healthHTML() string {
	d := r.Data
	last := map[string]telemetry.HealthCheck{}
	for _, h := range d.Health {
		last[h.Provider] = h
	}
	var names []string
	for n := range last {
		names = append(names, n)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, n := range names {
		h := last[n]
		fmt.Fprintf(&b, "%-11s %-12s %s\n", clipName(n), HealthWord(h), h.TS.UTC().Format("01-02"))
	}
	skips := map[string]int{}
	for _, s := range d.Skips {
		skips[s.Reason] += s.Count
	}
	if len(names) == 0 && len(skips) == 0 {
		return ""
	}
	out := "<b>Health</b> (last check)\n"
	if len(names) > 0 {
		out += Pre(b.String())
	} else {
		out += "no health check in the window: <code>contentpipe health</code>"
	}
	if len(skips) > 0 {
		out += "\nSkips: " + EscapeHTML(countList(skips))
	}
	return out
}

package alerts

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

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
	r.writePromptVersions(&b)
	r.writeShadow(&b)
	r.writeReview(&b)
	r.writeSkips(&b)
	r.writeHealth(&b)
	r.writeIncidents(&b)
	if len(d.Alerts) > 0 {
		fmt.Fprintf(&b, "\nAlerts raised in the window: %s\n", countList(d.Alerts))
	}
	return b.String()
}

func pct(x float64) string { return fmt.Sprintf("%.1f%%", 100*x) }

// usd renders an amount in USD. A sum that is not finite (a row written
// before prices were bounded, with an infinite cost) says so instead of
// printing $+Inf or $NaN.
func usd(x float64) string {
	if !finiteUSD(x) {
		return nonFiniteUSD
	}
	return fmt.Sprintf("$%.4f", x)
}

// nonFiniteUSD stands for an amount that is infinite or not a number.
const nonFiniteUSD = "not finite (a stored cost is infinite: find it with contentpipe sql)"

func finiteUSD(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }

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
	fmt.Fprintf(b, "  %s; job success rate %s (published of %d)\n", countList(d.Jobs), pct(float64(d.Jobs[string(chain.JobPublished)])/float64(total)), total)
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

// writePromptVersions is the quality of the window's answers per prompt
// version: the way to see whether a template change helped.
func (r Report) writePromptVersions(b *strings.Builder) {
	fmt.Fprintf(b, "\nQuality by prompt version (answered job calls in the window)\n")
	if len(r.Data.PromptVersions) == 0 {
		fmt.Fprintf(b, "  no scored answers\n")
		return
	}
	fmt.Fprintf(b, "  %-24s %6s %10s %11s\n", "version", "calls", "pass rate", "mean score")
	for _, p := range r.Data.PromptVersions {
		v := p.Version
		if v == "" {
			v = "(not recorded)"
		}
		fmt.Fprintf(b, "  %-24s %6d %10s %11.1f\n", v, p.Calls, pct(p.PassRate()), p.MeanScore)
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
		}
		if HealthState(h).Unhealthy() {
			h := h
			a.fail = &h
		}
		a.last = h
	}
	sort.Strings(names)
	for _, n := range names {
		a := by[n]
		state := HealthState(a.last)
		fmt.Fprintf(b, "  %-12s %d of %d ok; last %s: %s, latency %s\n", n, a.ok, a.n, a.last.TS.Format("2006-01-02 15:04"), state, a.last.Latency)
		if a.fail != nil {
			detail := a.fail.Detail
			if rs := []rune(detail); len(rs) > 160 {
				detail = string(rs[:160]) + "…"
			}
			fmt.Fprintf(b, "  %-12s last unhealthy %s: %s http %d %s\n", "", a.fail.TS.Format("2006-01-02 15:04"), a.fail.Outcome, a.fail.HTTPStatus, detail)
		}
	}
}

func (r Report) writeIncidents(b *strings.Builder) {
	d := r.Data
	fmt.Fprintf(b, "\nIncidents (chain down, provider down) open in the window\n")
	if len(d.Incidents) == 0 {
		fmt.Fprintf(b, "  none\n")
		return
	}
	for _, in := range d.Incidents {
		state := "still open, last seen " + in.LastSeenAt.UTC().Format("2006-01-02 15:04")
		if !in.Open() {
			state = fmt.Sprintf("resolved %s after %s", in.ResolvedAt.UTC().Format("2006-01-02 15:04"), roundDur(in.ResolvedAt.Sub(in.OpenedAt)))
		}
		told := "announced"
		if in.NotifiedAt.IsZero() {
			told = "not announced (part of a chain-down incident)"
		}
		fmt.Fprintf(b, "  %-24s opened %s, %s; %s\n", in.Key, in.OpenedAt.UTC().Format("2006-01-02 15:04"), state, told)
		if in.Detail != "" {
			fmt.Fprintf(b, "  %-24s %s\n", "", clip(in.Detail, 200))
		}
	}
}

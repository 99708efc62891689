package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Report reads the report figures for the window [since, until), with
// firstLink as the first link of the chain (see ReportData). It only reads,
// so it works on a store opened with OpenReadOnly.
func (s *Store) Report(ctx context.Context, since, until time.Time, firstLink string) (ReportData, error) {
	since, until = since.UTC(), until.UTC()
	d := ReportData{Since: since, Until: until, HistoryFrom: since.Add(-until.Sub(since)), FirstLink: firstLink,
		Jobs: map[string]int{}, Alerts: map[string]int{}}
	for day := time.Date(since.Year(), since.Month(), since.Day(), 0, 0, 0, 0, time.UTC); day.Before(until); day = day.AddDate(0, 0, 1) {
		d.Days = append(d.Days, day.Format("2006-01-02"))
	}
	from, to, hist := FormatTime(since), FormatTime(until), FormatTime(d.HistoryFrom)
	steps := []struct {
		what string
		fn   func() error
	}{
		{"calls", func() error { return s.reportCalls(ctx, &d, from, to) }},
		{"daily cost", func() error { return s.reportDailyCost(ctx, &d, from, to) }},
		{"jobs", func() error { return s.reportJobs(ctx, &d, from, to) }},
		{"fallback share", func() error { return s.reportFallback(ctx, &d, hist, to) }},
		{"quality", func() error { return s.reportQuality(ctx, &d, hist, to) }},
		{"quality by prompt version", func() error { return s.reportPromptVersions(ctx, &d, from, to) }},
		{"shadow comparisons", func() error { return s.reportShadow(ctx, &d, from, to) }},
		{"review queue", func() error { return s.reportReview(ctx, &d) }},
		{"skips", func() error { return s.reportSkips(ctx, &d, from, to) }},
		{"health checks", func() error { return s.reportHealth(ctx, &d, from, to) }},
		{"alerts", func() error { return s.reportAlerts(ctx, &d, from, to) }},
		{"hourly cost", func() error { return s.reportHourlyCost(ctx, &d, from, to) }},
		{"incidents", func() error { return s.reportIncidents(ctx, &d) }},
	}
	for _, st := range steps {
		if err := st.fn(); err != nil {
			return ReportData{}, fmt.Errorf("report %s: %w", st.what, s.queryErr(err))
		}
	}
	return d, nil
}

// each runs q and calls fn for every row.
func (s *Store) each(ctx context.Context, q string, args []any, fn func(*sql.Rows) error) error {
	rows, err := s.db.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		if err := fn(rows); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

func (s *Store) reportCalls(ctx context.Context, d *ReportData, from, to string) error {
	byName := map[string]*ProviderCalls{}
	get := func(p string) *ProviderCalls {
		if pc, ok := byName[p]; ok {
			return pc
		}
		pc := &ProviderCalls{Provider: p, Outcomes: map[string]int{}}
		byName[p] = pc
		return pc
	}
	err := s.each(ctx, `SELECT provider, COUNT(*), SUM(CASE WHEN outcome = 'ok' THEN 1 ELSE 0 END), SUM(CASE WHEN purpose = 'job' THEN 1 ELSE 0 END),
	SUM(CASE WHEN purpose = 'shadow' THEN 1 ELSE 0 END), SUM(CASE WHEN purpose = 'health' THEN 1 ELSE 0 END), SUM(input_tokens), SUM(output_tokens), SUM(cost_estimate_usd),
	COALESCE(AVG(NULLIF(latency_ms, 0)), 0)
FROM calls WHERE ts >= ? AND ts < ? GROUP BY provider`, []any{from, to}, func(r *sql.Rows) error {
		var (
			name string
			pc   ProviderCalls
			lat  float64
		)
		if err := r.Scan(&name, &pc.Calls, &pc.OK, &pc.Job, &pc.Shadow, &pc.HealthChecks, &pc.InputTokens, &pc.OutputTokens, &pc.CostUSD, &lat); err != nil {
			return err
		}
		p := get(name)
		pc.Provider, pc.Outcomes, pc.Model = name, p.Outcomes, p.Model
		pc.MeanLatency = time.Duration(lat * float64(time.Millisecond)).Round(time.Millisecond)
		*p = pc
		return nil
	})
	if err != nil {
		return err
	}
	err = s.each(ctx, `SELECT provider, outcome, COUNT(*) FROM calls WHERE ts >= ? AND ts < ? AND outcome <> 'ok' GROUP BY provider, outcome`,
		[]any{from, to}, func(r *sql.Rows) error {
			var (
				name, outcome string
				n             int
			)
			if err := r.Scan(&name, &outcome, &n); err != nil {
				return err
			}
			get(name).Outcomes[outcome] = n
			return nil
		})
	if err != nil {
		return err
	}
	err = s.each(ctx, `SELECT provider, model FROM calls WHERE id IN (
	SELECT MAX(id) FROM calls WHERE ts >= ? AND ts < ? GROUP BY provider)`, []any{from, to}, func(r *sql.Rows) error {
		var name, model string
		if err := r.Scan(&name, &model); err != nil {
			return err
		}
		get(name).Model = model
		return nil
	})
	if err != nil {
		return err
	}
	for _, p := range byName {
		d.Providers = append(d.Providers, *p)
	}
	d.Totals = sumCalls(d.Providers)
	sort.Slice(d.Providers, func(i, j int) bool {
		a, b := d.Providers[i], d.Providers[j]
		if a.CostUSD != b.CostUSD {
			return a.CostUSD > b.CostUSD
		}
		return a.Provider < b.Provider
	})
	return nil
}

// sumCalls adds up the providers' calls (Provider "", the latency
// weighted by calls).
func sumCalls(ps []ProviderCalls) ProviderCalls {
	t := ProviderCalls{Outcomes: map[string]int{}}
	var latSum time.Duration
	var latN int
	for _, p := range ps {
		t.Calls += p.Calls
		t.OK += p.OK
		t.Job += p.Job
		t.Shadow += p.Shadow
		t.HealthChecks += p.HealthChecks
		t.InputTokens += p.InputTokens
		t.OutputTokens += p.OutputTokens
		t.CostUSD += p.CostUSD
		for o, n := range p.Outcomes {
			t.Outcomes[o] += n
		}
		if p.MeanLatency > 0 {
			latSum += p.MeanLatency * time.Duration(p.Calls)
			latN += p.Calls
		}
	}
	if latN > 0 {
		t.MeanLatency = (latSum / time.Duration(latN)).Round(time.Millisecond)
	}
	return t
}

func (s *Store) reportDailyCost(ctx context.Context, d *ReportData, from, to string) error {
	return s.each(ctx, `SELECT substr(ts, 1, 10) AS day, provider, COUNT(*), SUM(cost_estimate_usd)
FROM calls WHERE ts >= ? AND ts < ? GROUP BY day, provider ORDER BY day, provider`, []any{from, to}, func(r *sql.Rows) error {
		var c DailyCost
		if err := r.Scan(&c.Day, &c.Provider, &c.Calls, &c.CostUSD); err != nil {
			return err
		}
		d.DailyCost = append(d.DailyCost, c)
		return nil
	})
}

func (s *Store) reportHourlyCost(ctx context.Context, d *ReportData, from, to string) error {
	return s.each(ctx, `SELECT substr(ts, 1, 13) AS hour, provider, COUNT(*), SUM(cost_estimate_usd)
FROM calls WHERE ts >= ? AND ts < ? GROUP BY hour, provider ORDER BY hour, provider`, []any{from, to}, func(r *sql.Rows) error {
		var c DailyCost
		if err := r.Scan(&c.Day, &c.Provider, &c.Calls, &c.CostUSD); err != nil {
			return err
		}
		d.HourlyCost = append(d.HourlyCost, c)
		return nil
	})
}

// reportIncidents reads the window's incidents. A database from before the
// incidents table (the report opens it read-only, without migrating) has
// none.
func (s *Store) reportIncidents(ctx context.Context, d *ReportData) error {
	var n int
	if err := s.db.QueryRowContext(ctx, s.d.tableExists, "incidents").Scan(&n); err != nil || n == 0 {
		return err
	}
	var err error
	d.Incidents, err = s.Incidents(ctx, d.Since, d.Until)
	return err
}

func (s *Store) reportJobs(ctx context.Context, d *ReportData, from, to string) error {
	return s.countBy(ctx, d.Jobs, `SELECT status, COUNT(*) FROM jobs WHERE updated_at >= ? AND updated_at < ? GROUP BY status`, from, to)
}

func (s *Store) reportFallback(ctx context.Context, d *ReportData, hist, to string) error {
	if d.FirstLink == "" {
		return nil
	}
	byDay := map[string]*DailyShare{}
	for _, day := range d.Days {
		d.Fallback = append(d.Fallback, DailyShare{Day: day})
	}
	for i := range d.Fallback {
		byDay[d.Fallback[i].Day] = &d.Fallback[i]
	}
	return s.each(ctx, `SELECT published_at, provider FROM jobs
WHERE status = 'published' AND published_at >= ? AND published_at < ? ORDER BY published_at, id`, []any{hist, to}, func(r *sql.Rows) error {
		var (
			ts, prov string
		)
		if err := r.Scan(&ts, &prov); err != nil {
			return err
		}
		t, err := ParseTime(ts)
		if err != nil {
			return err
		}
		fb := prov != d.FirstLink
		d.FallbackSeries = append(d.FallbackSeries, FallbackPoint{TS: t, Provider: prov, Fallback: fb})
		if t.Before(d.Since) {
			return nil
		}
		d.FallbackTotal.Published++
		if fb {
			d.FallbackTotal.Fallback++
		}
		if day := byDay[t.Format("2006-01-02")]; day != nil {
			day.Published++
			if fb {
				day.Fallback++
			}
		}
		return nil
	})
}

func (s *Store) reportQuality(ctx context.Context, d *ReportData, hist, to string) error {
	series := map[string]*ScoreSeries{}
	type dayKey struct{ day, provider string }
	sums := map[dayKey]*DailyQuality{}
	add := func(provider, ts string, score float64) error {
		t, err := ParseTime(ts)
		if err != nil {
			return err
		}
		sr := series[provider]
		if sr == nil {
			sr = &ScoreSeries{Provider: provider}
			series[provider] = sr
		}
		sr.Points = append(sr.Points, ScorePoint{TS: t, Score: score})
		if t.Before(d.Since) {
			return nil
		}
		k := dayKey{t.Format("2006-01-02"), provider}
		q := sums[k]
		if q == nil {
			q = &DailyQuality{Day: k.day, Provider: provider}
			sums[k] = q
		}
		q.N++
		q.Mean += score // the sum until the end
		return nil
	}
	scan := func(r *sql.Rows) error {
		var (
			prov, ts string
			score    float64
		)
		if err := r.Scan(&prov, &ts, &score); err != nil {
			return err
		}
		return add(prov, ts, score)
	}
	err := s.each(ctx, `SELECT provider, ts, quality_score FROM calls
WHERE purpose = 'job' AND quality_score IS NOT NULL AND ts >= ? AND ts < ? ORDER BY ts, id`, []any{hist, to}, scan)
	if err != nil {
		return err
	}
	err = s.each(ctx, `SELECT '', published_at, quality_score FROM jobs
WHERE status = 'published' AND quality_score IS NOT NULL AND published_at >= ? AND published_at < ? ORDER BY published_at, id`,
		[]any{hist, to}, scan)
	if err != nil {
		return err
	}
	for _, sr := range series {
		d.QualitySeries = append(d.QualitySeries, *sr)
	}
	sort.Slice(d.QualitySeries, func(i, j int) bool { return d.QualitySeries[i].Provider < d.QualitySeries[j].Provider })
	for _, q := range sums {
		q.Mean /= float64(q.N)
		d.DailyQuality = append(d.DailyQuality, *q)
	}
	sort.Slice(d.DailyQuality, func(i, j int) bool {
		a, b := d.DailyQuality[i], d.DailyQuality[j]
		if a.Day != b.Day {
			return a.Day < b.Day
		}
		return a.Provider < b.Provider
	})
	return nil
}

func (s *Store) reportShadow(ctx context.Context, d *ReportData, from, to string) error {
	return s.each(ctx, `SELECT shadow_provider, COUNT(*), SUM(shadow_pass), AVG(shadow_score), AVG(primary_score), AVG(quality_delta),
	SUM(shadow_cost_usd), SUM(primary_cost_usd), AVG(shadow_latency_ms), AVG(primary_latency_ms)
FROM shadow_comparisons WHERE ts >= ? AND ts < ? GROUP BY shadow_provider ORDER BY shadow_provider`, []any{from, to}, func(r *sql.Rows) error {
		var (
			st         ShadowStats
			ss, ps, dl sql.NullFloat64
			slat, plat float64
		)
		if err := r.Scan(&st.Provider, &st.Comparisons, &st.Passed, &ss, &ps, &dl, &st.ShadowCostUSD, &st.PrimaryCostUSD, &slat, &plat); err != nil {
			return err
		}
		st.ShadowScore, st.PrimaryScore, st.Delta = optFloat(ss), optFloat(ps), optFloat(dl)
		st.ShadowLatency = time.Duration(slat * float64(time.Millisecond)).Round(time.Millisecond)
		st.PrimaryLatency = time.Duration(plat * float64(time.Millisecond)).Round(time.Millisecond)
		d.Shadow = append(d.Shadow, st)
		return nil
	})
}

func optFloat(n sql.NullFloat64) *float64 {
	if !n.Valid {
		return nil
	}
	v := n.Float64
	return &v
}

func (s *Store) reportReview(ctx context.Context, d *ReportData) error {
	return s.each(ctx, `SELECT id, topic, slot, title, provider, quality_score, last_error, updated_at
FROM jobs WHERE status = 'review' ORDER BY updated_at, id`, nil, func(r *sql.Rows) error {
		var (
			j       ReviewJob
			score   sql.NullFloat64
			updated string
		)
		if err := r.Scan(&j.ID, &j.Topic, &j.Slot, &j.Title, &j.Provider, &score, &j.LastError, &updated); err != nil {
			return err
		}
		j.Score = optFloat(score)
		var err error
		if j.UpdatedAt, err = ParseTime(updated); err != nil {
			return err
		}
		d.Review = append(d.Review, j)
		return nil
	})
}

func (s *Store) reportSkips(ctx context.Context, d *ReportData, from, to string) error {
	return s.each(ctx, `SELECT provider, reason, COUNT(*) FROM skips WHERE ts >= ? AND ts < ? GROUP BY provider, reason ORDER BY provider, reason`,
		[]any{from, to}, func(r *sql.Rows) error {
			var c SkipCount
			if err := r.Scan(&c.Provider, &c.Reason, &c.Count); err != nil {
				return err
			}
			d.Skips = append(d.Skips, c)
			return nil
		})
}

func (s *Store) reportHealth(ctx context.Context, d *ReportData, from, to string) error {
	return s.each(ctx, `SELECT `+healthColumns+`
FROM health_checks WHERE ts >= ? AND ts < ? ORDER BY ts, id`, []any{from, to}, func(r *sql.Rows) error {
		h, err := scanHealth(r)
		d.Health = append(d.Health, h)
		return err
	})
}

// healthColumns are the columns scanHealth reads, in its order.
const healthColumns = "ts, provider, model, ok, http_status, latency_ms, first_token_ms, outcome, detail"

// scanHealth reads one health_checks row of healthColumns.
func scanHealth(r *sql.Rows) (HealthCheck, error) {
	var (
		h       HealthCheck
		ts      string
		lat, ft int64
		outcome string
	)
	if err := r.Scan(&ts, &h.Provider, &h.Model, &h.OK, &h.HTTPStatus, &lat, &ft, &outcome, &h.Detail); err != nil {
		return h, err
	}
	var err error
	h.TS, err = ParseTime(ts)
	h.Latency, h.FirstToken = time.Duration(lat)*time.Millisecond, time.Duration(ft)*time.Millisecond
	h.Outcome = chain.Outcome(outcome)
	return h, err
}

func (s *Store) reportAlerts(ctx context.Context, d *ReportData, from, to string) error {
	return s.countBy(ctx, d.Alerts, `SELECT rule, COUNT(*) FROM alerts WHERE created_at >= ? AND created_at < ? GROUP BY rule`, from, to)
}

// countBy runs a (key, count) query and stores each row in m.
func (s *Store) countBy(ctx context.Context, m map[string]int, q string, args ...any) error {
	return s.each(ctx, q, args, func(r *sql.Rows) error {
		var (
			k string
			n int
		)
		if err := r.Scan(&k, &n); err != nil {
			return err
		}
		m[k] = n
		return nil
	})
}

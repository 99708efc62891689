package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// OpenScratch opens (creating) a throwaway database for `contentpipe
// simulate`: the same schema and code paths as Open, but on a single
// connection with PRAGMA synchronous=OFF, because a simulated year writes
// hundreds of thousands of short transactions whose durability does not
// matter (a crash loses a what-if run, never production data). Never use it
// for the production database.
func OpenScratch(path string) (*Store, error) {
	s, err := Open(path)
	if err != nil {
		return nil, err
	}
	// One connection, so that the pragma holds for every statement.
	s.db.SetMaxOpenConns(1)
	s.db.SetMaxIdleConns(1)
	if _, err := s.db.ExecContext(context.Background(), "PRAGMA synchronous=OFF"); err != nil {
		s.db.Close()
		return nil, fmt.Errorf("open scratch database %s: %w", path, err)
	}
	return s, nil
}

// JobTotals are the whole-database figures of the jobs table, as
// `contentpipe simulate` reads them back from a scenario's database.
type JobTotals struct {
	Jobs               int     // jobs rows
	Published          int     // jobs published, on any day
	PublishedOnSlotDay int     // jobs published on the UTC day of their slot
	PublishedFallback  int     // jobs published by a provider other than the first link
	MeanQuality        float64 // mean quality score of the published jobs; 0 when none
}

// JobTotals returns the jobs table's totals; firstLink names the chain's
// first link, whose publications are not fallbacks.
func (s *Store) JobTotals(ctx context.Context, firstLink string) (JobTotals, error) {
	var t JobTotals
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*),
		COALESCE(SUM(CASE WHEN status = 'published' AND substr(published_at, 1, 10) = slot THEN 1 ELSE 0 END), 0),
		COALESCE(AVG(CASE WHEN status = 'published' THEN quality_score END), 0),
		COALESCE(SUM(CASE WHEN status = 'published' AND provider <> ? THEN 1 ELSE 0 END), 0),
		COALESCE(SUM(CASE WHEN status = 'published' THEN 1 ELSE 0 END), 0)
		FROM jobs`, firstLink).Scan(&t.Jobs, &t.PublishedOnSlotDay, &t.MeanQuality, &t.PublishedFallback, &t.Published)
	if err != nil {
		return JobTotals{}, fmt.Errorf("job totals: %w", s.queryErr(err))
	}
	return t, nil
}

// JobCallTotals are the whole-database figures of the job calls (purpose
// job; shadow and health calls are not counted).
type JobCallTotals struct {
	Calls     int
	CostUSD   float64 // estimated cost of every job call
	WastedUSD float64 // the part of CostUSD whose outcome was not ok
}

// JobCallTotals returns the totals of every job call.
func (s *Store) JobCallTotals(ctx context.Context) (JobCallTotals, error) {
	var t JobCallTotals
	err := s.db.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(cost_estimate_usd), 0),
		COALESCE(SUM(CASE WHEN outcome <> 'ok' THEN cost_estimate_usd ELSE 0 END), 0)
		FROM calls WHERE purpose = 'job'`).Scan(&t.Calls, &t.CostUSD, &t.WastedUSD)
	if err != nil {
		return JobCallTotals{}, fmt.Errorf("job call totals: %w", s.queryErr(err))
	}
	return t, nil
}

// PublishSeconds returns, for every published job, the seconds from its
// first call or skip to its publication, in no particular order.
func (s *Store) PublishSeconds(ctx context.Context) ([]float64, error) {
	var out []float64
	err := s.each(ctx, `SELECT `+s.secondsBetween("f.first", "j.published_at")+`
		FROM jobs j JOIN (
			SELECT request_id, MIN(ts) AS first FROM (
				SELECT request_id, ts FROM calls UNION ALL SELECT request_id, ts FROM skips) AS e
			GROUP BY request_id) f ON f.request_id = j.id
		WHERE j.status = 'published'`, nil, func(rs *sql.Rows) error {
		var v sql.NullFloat64
		if err := rs.Scan(&v); err != nil {
			return err
		}
		out = append(out, v.Float64)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("publish seconds: %w", s.queryErr(err))
	}
	return out, nil
}

// ProviderEvent is one thing the history says about a provider at one
// time: a job or health call and its outcome, or a skip.
type ProviderEvent struct {
	Provider string
	TS       time.Time
	Outcome  string // calls.outcome, or "skip:" + skips.reason
}

// ProviderEvents returns every job and health call and every skip, in no
// particular order. Rows whose timestamp does not parse are left out.
func (s *Store) ProviderEvents(ctx context.Context) ([]ProviderEvent, error) {
	var out []ProviderEvent
	err := s.each(ctx, `SELECT provider, ts, outcome FROM calls WHERE purpose IN ('job', 'health')
		UNION ALL SELECT provider, ts, 'skip:' || reason FROM skips`, nil, func(rs *sql.Rows) error {
		var e ProviderEvent
		var ts string
		if err := rs.Scan(&e.Provider, &ts, &e.Outcome); err != nil {
			return err
		}
		t, err := ParseTime(ts)
		if err != nil || ts == "" {
			return nil
		}
		e.TS = t
		out = append(out, e)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("provider events: %w", s.queryErr(err))
	}
	return out, nil
}

// AlertCounts returns how many alerts the outbox holds, by severity
// ("critical", "warning", "info"), sent or not: what a run or a simulation
// raised.
func (s *Store) AlertCounts(ctx context.Context) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT severity, COUNT(*) FROM alerts GROUP BY severity")
	if err != nil {
		return nil, fmt.Errorf("count alerts: %w", err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var sev string
		var n int
		if err := rows.Scan(&sev, &n); err != nil {
			return nil, fmt.Errorf("count alerts: %w", err)
		}
		out[sev] = n
	}
	return out, rows.Err()
}

// secondsBetween is the SQL of the seconds from the stored timestamp a to
// the stored timestamp b (columns or expressions of TEXT timestamps).
func (s *Store) secondsBetween(a, b string) string {
	if s.pg() {
		return "EXTRACT(EPOCH FROM (" + b + "::timestamptz - " + a + "::timestamptz))::double precision"
	}
	return "(julianday(" + b + ") - julianday(" + a + ")) * 86400.0"
}

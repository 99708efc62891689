package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// SetAlertText replaces the text of pending alert id: after the first parts
// of a long alert were delivered, only the rest stays to be sent.
func (s *Store) SetAlertText(ctx context.Context, id int64, text string) error {
	return s.write(ctx, "set alert text", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE alerts SET text = ? WHERE id = ? AND sent_at IS NULL", text, id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("pending alert %d not found", id)
		}
		return nil
	})
}

// PendingAlerts counts the alerts not yet delivered.
func (s *Store) PendingAlerts(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM alerts WHERE sent_at IS NULL").Scan(&n); err != nil {
		return 0, fmt.Errorf("count pending alerts: %w", err)
	}
	return n, nil
}

// CapUsed returns how many requests of provider's daily cap the day that
// starts at dayStart has used (reservations in flight or sent), as
// ReserveCap counts them.
func (s *Store) CapUsed(ctx context.Context, provider string, dayStart time.Time) (int, error) {
	n, _, _, err := linkUse(ctx, s.db, provider, dayStart)
	if err != nil {
		return 0, fmt.Errorf("cap use of %s: %w", provider, err)
	}
	return n, nil
}

// FailureStreak is a provider's current run of counted failures: calls
// with one of the outcomes FailureStreaks was asked to count, since its last
// answer (outcome ok or rejected). Failures is 0 when there is none.
type FailureStreak struct {
	Provider    string
	First, Last time.Time // first and latest counted failure of the streak
	Failures    int
	LastOutcome string // of the latest counted failure
	LastStatus  int
	LastDetail  string
	LastSuccess time.Time // the last answer; zero when the provider never answered
}

// FailureStreaks returns, for every provider with a call, its current
// streak of calls whose outcome is one of counted (calls of every purpose
// count; calls with other failures neither count nor end the streak).
func (s *Store) FailureStreaks(ctx context.Context, counted []chain.Outcome) ([]FailureStreak, error) {
	names := make([]string, len(counted))
	for i, o := range counted {
		names[i] = string(o)
	}
	in := sqlList(names)
	if in == "" {
		in = "''"
	}
	unitSep := s.d.unitSep
	// Each provider (walked through the calls_provider_ts index, not by
	// scanning the table), its last success (the newest of its calls read
	// backwards until one answered) and the failures after it (a range of
	// the same index, hence ts > '' rather than an OR for "never"): the cost
	// is the providers and their current streaks, not the table's age,
	// though the rules run after every run.
	q := `WITH RECURSIVE prov (provider) AS (
	SELECT MIN(provider) FROM calls
	UNION ALL
	SELECT (SELECT MIN(c.provider) FROM calls c WHERE c.provider > prov.provider) FROM prov WHERE prov.provider IS NOT NULL
), last_ok AS MATERIALIZED (
	SELECT provider, (SELECT c.ts FROM calls c WHERE c.provider = prov.provider AND c.outcome IN ('ok', 'rejected')
		ORDER BY c.ts DESC LIMIT 1) AS ok_ts
	FROM prov WHERE provider IS NOT NULL
), streak AS (
	SELECT l.provider, l.ok_ts, MIN(c.ts) AS first_ts, MAX(c.ts) AS last_ts, COUNT(c.ts) AS n
	FROM last_ok l LEFT JOIN calls c ON c.provider = l.provider AND c.outcome IN (` + in + `) AND c.ts > COALESCE(l.ok_ts, '')
	GROUP BY l.provider, l.ok_ts
)
SELECT s.provider, COALESCE(s.first_ts, ''), COALESCE(s.last_ts, ''), s.n, COALESCE(s.ok_ts, ''),
	COALESCE((SELECT c2.outcome || ` + unitSep + ` || c2.http_status || ` + unitSep + ` || c2.detail FROM calls c2
		WHERE c2.provider = s.provider AND c2.outcome IN (` + in + `) AND c2.ts = s.last_ts ORDER BY c2.id DESC LIMIT 1), '')
FROM streak s
ORDER BY s.provider`
	var out []FailureStreak
	err := s.each(ctx, q, nil, func(r *sql.Rows) error {
		var (
			f                   FailureStreak
			first, last, ok, od string
		)
		if err := r.Scan(&f.Provider, &first, &last, &f.Failures, &ok, &od); err != nil {
			return err
		}
		var err error
		if f.First, err = ParseTime(first); err != nil {
			return err
		}
		if f.Last, err = ParseTime(last); err != nil {
			return err
		}
		if f.LastSuccess, err = ParseTime(ok); err != nil {
			return err
		}
		if parts := strings.SplitN(od, "\x1f", 3); len(parts) == 3 {
			f.LastOutcome, f.LastDetail = parts[0], parts[2]
			f.LastStatus, _ = strconv.Atoi(parts[1])
		}
		out = append(out, f)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("failure streaks: %w", s.queryErr(err))
	}
	return out, nil
}

// ReviewQueue returns the number of jobs waiting for manual review and
// when the oldest of them went there (zero when none).
func (s *Store) ReviewQueue(ctx context.Context) (n int, oldest time.Time, err error) {
	var ts sql.NullString
	err = s.db.QueryRowContext(ctx, "SELECT count(*), MIN(updated_at) FROM jobs WHERE status = 'review'").Scan(&n, &ts)
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("review queue: %w", err)
	}
	if oldest, err = scanTime(ts); err != nil {
		return 0, time.Time{}, fmt.Errorf("review queue: %w", err)
	}
	return n, oldest, nil
}

// LastPublished returns the time of the latest publication (zero when none).
func (s *Store) LastPublished(ctx context.Context) (time.Time, error) {
	var ts sql.NullString
	if err := s.db.QueryRowContext(ctx, "SELECT MAX(published_at) FROM jobs WHERE status = 'published'").Scan(&ts); err != nil {
		return time.Time{}, fmt.Errorf("last published: %w", err)
	}
	t, err := scanTime(ts)
	if err != nil {
		return time.Time{}, fmt.Errorf("last published: %w", err)
	}
	return t, nil
}

// CallTotal is the all-time count and cost of one provider's calls with
// one outcome.
type CallTotal struct {
	Provider string
	Outcome  string
	Calls    int
	CostUSD  float64
}

// CallTotals returns the all-time calls by provider and outcome (the
// calls table keeps every row, so these only grow).
func (s *Store) CallTotals(ctx context.Context) ([]CallTotal, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT provider, outcome, COUNT(*), COALESCE(SUM(cost_estimate_usd), 0)
FROM calls GROUP BY provider, outcome ORDER BY provider, outcome`)
	if err != nil {
		return nil, fmt.Errorf("call totals: %w", err)
	}
	defer rows.Close()
	var out []CallTotal
	for rows.Next() {
		var c CallTotal
		if err := rows.Scan(&c.Provider, &c.Outcome, &c.Calls, &c.CostUSD); err != nil {
			return nil, fmt.Errorf("call totals: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("call totals: %w", err)
	}
	return out, nil
}

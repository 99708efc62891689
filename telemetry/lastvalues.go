package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// LastHealth returns the newest health_checks row of each provider, by
// provider name: the last health walk as each link last took part in it.
func (s *Store) LastHealth(ctx context.Context) ([]HealthCheck, error) {
	var out []HealthCheck
	err := s.each(ctx, `SELECT `+healthColumns+` FROM health_checks
WHERE id IN (SELECT MAX(id) FROM health_checks GROUP BY provider) ORDER BY provider`, nil, func(r *sql.Rows) error {
		h, err := scanHealth(r)
		out = append(out, h)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read the last health checks: %w", err)
	}
	return out, nil
}

// lastRunKey is the meta key of the last run's summary.
const lastRunKey = "last_run"

// SaveLastRun keeps the summary of the run that just ended (its metrics,
// rendered by the caller), replacing the one before: `serve` shows it on
// /metrics before its own first run.
func (s *Store) SaveLastRun(ctx context.Context, summary string, now time.Time) error {
	return s.write(ctx, "save the last run's summary", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value, updated_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, lastRunKey, summary, FormatTime(now))
		return err
	})
}

// LastRun returns the summary SaveLastRun kept; ok is false when no run
// saved one.
func (s *Store) LastRun(ctx context.Context) (summary string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", lastRunKey).Scan(&summary)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read the last run's summary: %w", err)
	}
	return summary, true, nil
}

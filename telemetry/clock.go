package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// The clock of a run against the database's records.
//
// Every limit counts records of a day or a month by their time, so a run
// whose clock is behind what the database already holds would count a day
// already spent as fresh. NewestRecord is the newest time a run wrote
// (calls, reservations, jobs); a run compares its clock with it before it
// starts. Records dated ahead by a clock since fixed are acknowledged once
// (AckClock): a later run compares only against records newer than that.

// metaClockAck is the meta key of the newest record time acknowledged as
// written by a clock that ran ahead.
const metaClockAck = "clock_behind_ok"

// NewestRecord returns the newest time among the records a run writes —
// calls.ts, cap_reservations.ts, jobs.updated_at — and the table it is in
// (zero and "" on an empty database). Each is an index's last entry or a
// small table.
func (s *Store) NewestRecord(ctx context.Context) (time.Time, string, error) {
	var (
		newest time.Time
		where  string
	)
	for _, q := range []struct{ table, sql string }{
		{"calls", "SELECT MAX(ts) FROM calls"},
		{"cap_reservations", "SELECT MAX(ts) FROM cap_reservations"},
		{"jobs", "SELECT MAX(updated_at) FROM jobs"},
	} {
		var v sql.NullString
		if err := s.db.QueryRowContext(ctx, q.sql).Scan(&v); err != nil {
			return time.Time{}, "", fmt.Errorf("newest record of %s: %w", q.table, err)
		}
		t, err := scanTime(v)
		if err != nil {
			return time.Time{}, "", fmt.Errorf("newest record of %s: %w", q.table, err)
		}
		if t.After(newest) {
			newest, where = t, q.table
		}
	}
	return newest, where, nil
}

// ClockAck is the newest record time acknowledged by AckClock (zero when
// none).
func (s *Store) ClockAck(ctx context.Context) (time.Time, error) {
	var v string
	err := s.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", metaClockAck).Scan(&v)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("read %s: %w", metaClockAck, err)
	}
	t, err := ParseTime(v)
	if err != nil {
		return time.Time{}, fmt.Errorf("read %s: %w", metaClockAck, err)
	}
	return t, nil
}

// AckClock records that the records up to newest were written by a clock
// that ran ahead and has been fixed (`run --clock-behind-ok`): runs no
// longer compare their clock with them. now is the time of the
// acknowledgement.
func (s *Store) AckClock(ctx context.Context, newest, now time.Time) error {
	return s.write(ctx, "acknowledge clock", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value, updated_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at`, metaClockAck, FormatTime(newest), FormatTime(now))
		return err
	})
}

package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Notices live in the meta table under "notice:<key>".

// ClaimNotice sets the notice key to value and reports whether it changed:
// true when the key was absent or held another value. A caller that shows
// a notice once per day passes the day as value and shows it only on true.
// The compare and the write are one statement, so of several processes
// claiming the same key and value at once exactly one gets true.
func (s *Store) ClaimNotice(ctx context.Context, key, value string, now time.Time) (bool, error) {
	if key == "" {
		return false, errors.New("claim notice: empty key")
	}
	var changed bool
	key = "notice:" + key
	err := s.write(ctx, "claim notice "+key, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO meta (key, value, updated_at) VALUES (?, ?, ?)
ON CONFLICT (key) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at
WHERE meta.value <> excluded.value`, key, value, FormatTime(now))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		changed = n > 0
		return err
	})
	if err != nil {
		return false, fmt.Errorf("claim %s: %w", key, err)
	}
	return changed, nil
}

// Notice returns the value of the notice key; ok is false when it was never
// claimed.
func (s *Store) Notice(ctx context.Context, key string) (value string, ok bool, err error) {
	err = s.db.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", "notice:"+key).Scan(&value)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read notice %s: %w", key, err)
	}
	return value, true, nil
}

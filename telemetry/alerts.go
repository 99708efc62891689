package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// AlertLease is how long ClaimPendingAlerts hands an alert to one sender.
// When the sender neither marks it sent nor failed within the lease (it
// died), another sender may claim it again.
const AlertLease = 2 * time.Minute

// Alert is one row of the alerts outbox.
type Alert struct {
	ID        int64
	Key       string // dedupe key, e.g. "auth:groq" or "budget:gemini:2026-11-29"
	Rule      string // the rule that raised it
	Severity  string // e.g. "critical", "warning", "info"
	Text      string
	CreatedAt time.Time
	SentAt    time.Time // zero while pending
	Attempts  int       // delivery attempts so far
	LastError string
	NextTryAt time.Time
}

// EnqueueAlert puts a into the outbox unless an alert with the same key is
// still pending, or was sent within quiet before now; queued says which.
// CreatedAt and NextTryAt default to now. The check and the insert are one
// IMMEDIATE transaction, so concurrent processes queue a key at most once.
func (s *Store) EnqueueAlert(ctx context.Context, a Alert, quiet time.Duration, now time.Time) (queued bool, err error) {
	if a.Key == "" {
		return false, fmt.Errorf("enqueue alert: empty key")
	}
	err = s.write(ctx, "enqueue alert "+a.Key, func(tx *sql.Tx) error {
		var err error
		queued, err = enqueueAlertTx(ctx, tx, a, quiet, now)
		return err
	})
	return queued, err
}

// enqueueAlertTx is EnqueueAlert inside tx.
func enqueueAlertTx(ctx context.Context, tx *sql.Tx, a Alert, quiet time.Duration, now time.Time) (bool, error) {
	if a.Key == "" {
		return false, fmt.Errorf("enqueue alert: empty key")
	}
	created, next := a.CreatedAt, a.NextTryAt
	if created.IsZero() {
		created = now
	}
	if next.IsZero() {
		next = now
	}
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM alerts WHERE key = ? AND (sent_at IS NULL OR sent_at > ?)`,
		a.Key, FormatTime(now.Add(-quiet))).Scan(&n)
	if err != nil || n > 0 {
		return false, err
	}
	// Two workers on PostgreSQL may both find no pending row and insert at
	// once: the pending row's unique index (alerts_pending_key) lets one
	// in, and the other's insert does nothing instead of failing.
	res, err := tx.ExecContext(ctx, `INSERT INTO alerts (key, rule, severity, text, created_at, next_try_at) VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (key) WHERE sent_at IS NULL DO NOTHING`,
		a.Key, a.Rule, a.Severity, a.Text, FormatTime(created), FormatTime(next))
	if err != nil {
		return false, err
	}
	added, err := res.RowsAffected()
	return err == nil && added == 1, err
}

// ClaimPendingAlerts leases up to limit pending alerts that are due
// (next_try_at ≤ now) and not leased by another live sender, oldest first,
// to owner for AlertLease. Two senders never get the same alert while a
// lease runs and its holder lives: a lease whose owner (OwnerKey of a
// registered Process) is dead by Alive is taken over at once, since that
// sender's fate is unknown and the alert must not wait out the lease. The
// caller reports each alert with MarkAlertSent or MarkAlertFailed.
func (s *Store) ClaimPendingAlerts(ctx context.Context, owner string, now time.Time, limit int) ([]Alert, error) {
	if limit <= 0 {
		limit = 100
	}
	ts := FormatTime(now)
	var out []Alert
	err := s.write(ctx, "claim pending alerts", func(tx *sql.Tx) error {
		out = out[:0]
		rows, err := tx.QueryContext(ctx, `SELECT id, key, rule, severity, text, created_at, attempts, last_error, next_try_at,
	COALESCE(lease_owner, ''), COALESCE(lease_until, '')
FROM alerts WHERE sent_at IS NULL AND next_try_at <= ?
ORDER BY next_try_at, id`, ts)
		if err != nil {
			return err
		}
		for rows.Next() && len(out) < limit {
			var (
				a                           Alert
				created, next, lease, until string
			)
			if err := rows.Scan(&a.ID, &a.Key, &a.Rule, &a.Severity, &a.Text, &created, &a.Attempts, &a.LastError, &next, &lease, &until); err != nil {
				rows.Close()
				return err
			}
			if until > ts && lease != owner {
				if o, ok := parseOwnerKey(lease); !ok || s.Alive(o) {
					continue // leased by a live sender
				}
			}
			if a.CreatedAt, err = ParseTime(created); err != nil {
				rows.Close()
				return err
			}
			if a.NextTryAt, err = ParseTime(next); err != nil {
				rows.Close()
				return err
			}
			out = append(out, a)
		}
		if err := rows.Close(); err != nil {
			return err
		}
		if err := rows.Err(); err != nil {
			return err
		}
		until := FormatTime(now.Add(AlertLease))
		for _, a := range out {
			if _, err := tx.ExecContext(ctx, "UPDATE alerts SET lease_owner = ?, lease_until = ? WHERE id = ?", owner, until, a.ID); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// MarkAlertSent records the delivery of alert id at now and ends its lease.
func (s *Store) MarkAlertSent(ctx context.Context, id int64, now time.Time) error {
	return s.write(ctx, "mark alert sent", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE alerts SET sent_at = ?, attempts = attempts + 1, last_error = '',
	lease_owner = NULL, lease_until = NULL WHERE id = ?`, FormatTime(now), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("alert %d not found", id)
		}
		return nil
	})
}

// MarkAlertFailed records a failed delivery of alert id, ends its lease and
// keeps it pending until nextTry.
func (s *Store) MarkAlertFailed(ctx context.Context, id int64, errText string, nextTry time.Time) error {
	return s.write(ctx, "mark alert failed", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE alerts SET attempts = attempts + 1, last_error = ?, next_try_at = ?,
	lease_owner = NULL, lease_until = NULL WHERE id = ? AND sent_at IS NULL`, errText, FormatTime(nextTry), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("pending alert %d not found", id)
		}
		return nil
	})
}

package telemetry

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// NextAttempt returns one more than the highest attempt recorded in calls
// for the job (1 when none yet).
func (s *Store) NextAttempt(ctx context.Context, requestID string) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(attempt), 0) + 1 FROM calls WHERE request_id = ?", requestID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("next attempt of %s: %w", requestID, err)
	}
	return n, nil
}

const insertCall = `INSERT INTO calls (provider, model, request_id, attempt, ts, input_tokens, output_tokens,
	latency_ms, first_token_ms, http_status, cost_estimate_usd, quality_score, outcome, prompt_version,
	previous_error, truncated, shadow, purpose, checks, detail, secret_redacted)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

const insertOutput = `INSERT INTO outputs (call_id, request_id, attempt, text, partial, created_at) VALUES (?, ?, ?, ?, ?, ?)`

// RecordCall stores one attempt in calls and, when c.Text is not empty, its
// answer text in outputs (created_at = c.TS), in one transaction. Purpose
// defaults to "job" (or "shadow" when c.Shadow).
func (s *Store) RecordCall(ctx context.Context, c chain.Call) error {
	return s.RecordAttempt(ctx, chain.AttemptRecord{Call: c})
}

// RecordAttempt writes one attempt's durable rows in one IMMEDIATE
// transaction: the calls row and its outputs text (as RecordCall), the
// settlement of its cap reservation (as SettleCap), and the provider state
// update with its transitions (as UpdateProviderState).
func (s *Store) RecordAttempt(ctx context.Context, r chain.AttemptRecord) error {
	c := r.Call
	checks := "[]"
	if len(c.Checks) > 0 {
		b, err := json.Marshal(c.Checks)
		if err != nil {
			return fmt.Errorf("record call: encode checks: %w", err)
		}
		checks = string(b)
	}
	purpose := c.Purpose
	if purpose == "" {
		purpose = chain.PurposeJob
		if c.Shadow {
			purpose = chain.PurposeShadow
		}
	}
	ts := FormatTime(c.TS)
	return s.write(ctx, "record call", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, insertCall,
			c.Provider, c.Model, c.RequestID, c.Attempt, ts, c.InputTokens, c.OutputTokens,
			c.Latency.Milliseconds(), c.FirstToken.Milliseconds(), c.HTTPStatus, c.CostUSD,
			nullFloat(c.QualityScore), string(c.Outcome), c.PromptVersion, c.PreviousError,
			boolInt(c.Truncated), boolInt(c.Shadow), string(purpose), checks, c.Detail, boolInt(c.SecretRedacted))
		if err != nil {
			return fmt.Errorf("insert call: %w", err)
		}
		if c.Text != "" {
			id, err := res.LastInsertId()
			if err != nil {
				return fmt.Errorf("insert call: %w", err)
			}
			if _, err := tx.ExecContext(ctx, insertOutput, id, c.RequestID, c.Attempt, c.Text, boolInt(c.Partial), ts); err != nil {
				return fmt.Errorf("insert output: %w", err)
			}
		}
		if r.Cap != nil {
			if err := settleSpend(ctx, tx, *r.Cap); err != nil {
				return fmt.Errorf("settle cap reservation: %w", err)
			}
		}
		if r.Learn != nil {
			if err := updateState(ctx, tx, c.Provider, r.Learn); err != nil {
				return fmt.Errorf("update provider state %s: %w", c.Provider, err)
			}
		}
		return nil
	})
}

// RecordSkip stores a provider passed over without a call.
func (s *Store) RecordSkip(ctx context.Context, sk chain.Skip) error {
	return s.write(ctx, "record skip", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO skips (ts, request_id, provider, reason, until) VALUES (?, ?, ?, ?, ?)",
			FormatTime(sk.TS), sk.RequestID, sk.Provider, sk.Reason, nullTime(sk.Until))
		return err
	})
}

// ReserveCap takes one request of provider's daily cap for the day starting
// at dayStart, atomically across processes: it counts the day's
// reservations that are unsettled or were sent, and inserts a new one when
// that count is below limit. A limit ≤ 0 means no cap (the reservation is
// still taken, for counting). used is the day's count including the new
// reservation when ok, the count that refused it otherwise.
func (s *Store) ReserveCap(ctx context.Context, provider string, dayStart time.Time, limit int, now time.Time) (id int64, used int, ok bool, err error) {
	day := FormatTime(dayStart)
	err = s.writeMode(ctx, "reserve cap "+provider, writeMode{locked: true}, func(tx *sql.Tx) error {
		id, used, ok = 0, 0, false
		if err := s.pgLock(ctx, tx, pgLockSpend); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM cap_reservations
WHERE provider = ? AND day_start = ? AND (settled = 0 OR sent = 1)`, provider, day).Scan(&used); err != nil {
			return err
		}
		if limit > 0 && used >= limit {
			return nil
		}
		res, err := tx.ExecContext(ctx, "INSERT INTO cap_reservations (provider, day_start, ts) VALUES (?, ?, ?)",
			provider, day, FormatTime(now))
		if err != nil {
			return err
		}
		if id, err = res.LastInsertId(); err != nil {
			return err
		}
		used++
		ok = true
		return nil
	})
	if err != nil {
		return 0, 0, false, err
	}
	return id, used, ok, nil
}

// SettleCap settles reservation id: sent=false gives the request back to
// the day's cap, sent=true keeps it and records the tokens used.
func (s *Store) SettleCap(ctx context.Context, id int64, sent bool, tokens int) error {
	return s.write(ctx, "settle cap reservation", func(tx *sql.Tx) error {
		return settleCap(ctx, tx, id, sent, tokens)
	})
}

func settleCap(ctx context.Context, tx *sql.Tx, id int64, sent bool, tokens int) error {
	res, err := tx.ExecContext(ctx, "UPDATE cap_reservations SET settled = 1, sent = ?, tokens = ? WHERE id = ?",
		boolInt(sent), tokens, id)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("reservation %d not found", id)
	}
	return nil
}

// ProviderState returns provider's persisted state (the zero state when
// nothing was stored yet).
func (s *Store) ProviderState(ctx context.Context, provider string) (chain.ProviderState, error) {
	st, _, err := readProviderState(ctx, s.db, provider)
	if err != nil {
		return chain.ProviderState{}, fmt.Errorf("provider state %s: %w", provider, err)
	}
	return st, nil
}

type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// readProviderState also returns the stored breaker JSON, to detect changes.
func readProviderState(ctx context.Context, q queryRower, provider string) (chain.ProviderState, string, error) {
	var (
		st      chain.ProviderState
		until   sql.NullString
		breaker string
	)
	err := q.QueryRowContext(ctx, "SELECT exhausted_until, exhausted_reason, breaker FROM provider_state WHERE provider = ?", provider).
		Scan(&until, &st.ExhaustedReason, &breaker)
	if errors.Is(err, sql.ErrNoRows) {
		return chain.ProviderState{}, "", nil
	}
	if err != nil {
		return st, "", err
	}
	if st.ExhaustedUntil, err = scanTime(until); err != nil {
		return st, "", err
	}
	if breaker != "" {
		if err := json.Unmarshal([]byte(breaker), &st.Breaker); err != nil {
			return st, "", fmt.Errorf("decode breaker: %w", err)
		}
	}
	return st, breaker, nil
}

// UpdateProviderState runs fn on provider's stored state inside one
// IMMEDIATE transaction, then saves the state (when it changed) and one
// provider_events row per returned transition. A transition without a
// provider or a time gets provider and the current time. fn may run again
// if SQLite reports the database busy; it must only change the state it is
// given.
func (s *Store) UpdateProviderState(ctx context.Context, provider string, fn func(*chain.ProviderState) []chain.Transition) error {
	return s.write(ctx, "update provider state "+provider, func(tx *sql.Tx) error {
		return updateState(ctx, tx, provider, fn)
	})
}

// updateState is UpdateProviderState inside the transaction tx.
func updateState(ctx context.Context, tx *sql.Tx, provider string, fn func(*chain.ProviderState) []chain.Transition) error {
	st, before, err := readProviderState(ctx, tx, provider)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	oldUntil, oldReason := st.ExhaustedUntil, st.ExhaustedReason
	trs := fn(&st)
	b, err := json.Marshal(st.Breaker)
	if err != nil {
		return fmt.Errorf("encode breaker: %w", err)
	}
	now := time.Now()
	if before == "" || string(b) != before || !st.ExhaustedUntil.Equal(oldUntil) || st.ExhaustedReason != oldReason {
		_, err = tx.ExecContext(ctx, `INSERT INTO provider_state (provider, exhausted_until, exhausted_reason, breaker, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (provider) DO UPDATE SET exhausted_until = excluded.exhausted_until,
	exhausted_reason = excluded.exhausted_reason, breaker = excluded.breaker, updated_at = excluded.updated_at`,
			provider, nullTime(st.ExhaustedUntil), st.ExhaustedReason, string(b), FormatTime(now))
		if err != nil {
			return fmt.Errorf("save: %w", err)
		}
	}
	for _, t := range trs {
		if t.Provider == "" {
			t.Provider = provider
		}
		if t.TS.IsZero() {
			t.TS = now
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO provider_events (ts, provider, kind, from_state, to_state, detail) VALUES (?, ?, ?, ?, ?, ?)",
			FormatTime(t.TS), t.Provider, t.Kind, t.From, t.To, t.Detail)
		if err != nil {
			return fmt.Errorf("record transition: %w", err)
		}
	}
	return nil
}

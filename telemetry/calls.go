package telemetry

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	previous_error, truncated, shadow, purpose, checks, detail, secret_redacted, usage_suspect)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`

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
		id, err := s.d.insertID(ctx, tx, insertCall,
			c.Provider, c.Model, c.RequestID, c.Attempt, ts, c.InputTokens, c.OutputTokens,
			c.Latency.Milliseconds(), c.FirstToken.Milliseconds(), c.HTTPStatus, c.CostUSD,
			nullFloat(c.QualityScore), string(c.Outcome), c.PromptVersion, c.PreviousError,
			boolInt(c.Truncated), boolInt(c.Shadow), string(purpose), checks, c.Detail, boolInt(c.SecretRedacted), c.UsageSuspect)
		if err != nil {
			return fmt.Errorf("insert call: %w", err)
		}
		if c.Text != "" {
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
		n, _, _, err := linkUse(ctx, tx, provider, dayStart)
		if err != nil {
			return err
		}
		used = n
		if limit > 0 && used >= limit {
			return nil
		}
		if id, err = s.d.insertID(ctx, tx, "INSERT INTO cap_reservations (provider, day_start, ts) VALUES (?, ?, ?) RETURNING id",
			provider, day, FormatTime(now)); err != nil {
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
		mis     string
	)
	err := q.QueryRowContext(ctx, "SELECT exhausted_until, exhausted_reason, breaker, misconfigured FROM provider_state WHERE provider = ?", provider).
		Scan(&until, &st.ExhaustedReason, &breaker, &mis)
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
		if err := decodeBreaker(breaker, &st.Breaker); err != nil {
			return st, "", fmt.Errorf("decode breaker: %w", err)
		}
	}
	if mis != "" {
		st.Misconfigured = new(chain.Misconfig)
		if err := json.Unmarshal([]byte(mis), st.Misconfigured); err != nil {
			return st, "", fmt.Errorf("decode misconfigured: %w", err)
		}
	}
	// The change detection of updateState compares both columns.
	return st, breaker + "\x00" + mis, nil
}

// The breaker column is the JSON of chain.Breaker as encoding/json writes
// it. It is read on every call and written on most, so encodeBreaker and
// decodeBreaker code that one shape by hand and leave anything else to
// encoding/json.

// encodeBreaker returns json.Marshal(b), byte for byte.
func encodeBreaker(b chain.Breaker) ([]byte, error) {
	if !plainJSONString(string(b.State)) {
		return json.Marshal(b)
	}
	out := make([]byte, 0, 96+15*len(b.Events))
	out = append(out, `{"state":"`...)
	out = append(out, b.State...)
	out = append(out, '"')
	if len(b.Events) > 0 {
		ev, err := b.Events.MarshalJSON()
		if err != nil {
			return nil, err
		}
		out = append(append(out, `,"events":`...), ev...)
	}
	var err error
	if out, err = appendJSONTime(append(out, `,"opened_at":`...), b.OpenedAt); err != nil {
		return json.Marshal(b)
	}
	if b.Cooldown != 0 {
		out = strconv.AppendInt(append(out, `,"cooldown":`...), int64(b.Cooldown), 10)
	}
	if b.Successes != 0 {
		out = strconv.AppendInt(append(out, `,"successes":`...), int64(b.Successes), 10)
	}
	if out, err = appendJSONTime(append(out, `,"probe_at":`...), b.ProbeAt); err != nil {
		return json.Marshal(b)
	}
	return append(out, '}'), nil
}

func appendJSONTime(out []byte, t time.Time) ([]byte, error) {
	tb, err := t.MarshalJSON()
	if err != nil {
		return nil, err
	}
	return append(out, tb...), nil
}

// plainJSONString reports whether s is written by encoding/json as is,
// between quotes: printable ASCII without '"', '\\', '<', '>' and '&'.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// decodeBreaker decodes a breaker column into b (the zero Breaker), as
// json.Unmarshal does: the shape encodeBreaker writes by hand, any other
// text through encoding/json.
func decodeBreaker(s string, b *chain.Breaker) error {
	var fast chain.Breaker
	if decodeBreakerShape(s, &fast) {
		*b = fast
		return nil
	}
	return json.Unmarshal([]byte(s), b)
}

// decodeBreakerShape decodes s when it has exactly the shape encodeBreaker
// writes (every field in order, the optional ones present or not, plain
// strings and integers); it reports false for anything else.
func decodeBreakerShape(s string, b *chain.Breaker) bool {
	rest, ok := strings.CutPrefix(s, `{"state":"`)
	if !ok {
		return false
	}
	i := strings.IndexByte(rest, '"')
	if i < 0 || !plainJSONString(rest[:i]) {
		return false
	}
	b.State, rest = chain.BreakerState(rest[:i]), rest[i+1:]
	const events = `,"events":`
	if r, ok := strings.CutPrefix(rest, events+`[`); ok {
		i := strings.IndexByte(r, ']')
		if i < 0 || !jsonIntList(r[:i]) || b.Events.UnmarshalJSON([]byte(rest[len(events):len(events)+i+2])) != nil {
			return false
		}
		rest = r[i+1:]
	}
	if rest, ok = cutJSONTime(rest, `,"opened_at":`, &b.OpenedAt); !ok {
		return false
	}
	var n int64
	if r, ok := cutJSONInt(rest, `,"cooldown":`, &n); ok {
		b.Cooldown, rest = time.Duration(n), r
	}
	if r, ok := cutJSONInt(rest, `,"successes":`, &n); ok {
		if int64(int(n)) != n {
			return false
		}
		b.Successes, rest = int(n), r
	}
	if rest, ok = cutJSONTime(rest, `,"probe_at":`, &b.ProbeAt); !ok {
		return false
	}
	return rest == "}"
}

// cutJSONTime decodes the quoted time after key at the start of s.
func cutJSONTime(s, key string, t *time.Time) (string, bool) {
	r, ok := strings.CutPrefix(s, key+`"`)
	if !ok {
		return s, false
	}
	i := strings.IndexByte(r, '"')
	if i < 0 || !plainJSONString(r[:i]) || t.UnmarshalJSON([]byte(s[len(key):len(key)+i+2])) != nil {
		return s, false
	}
	return r[i+1:], true
}

// cutJSONInt decodes the integer after key at the start of s.
func cutJSONInt(s, key string, n *int64) (string, bool) {
	r, ok := strings.CutPrefix(s, key)
	if !ok {
		return s, false
	}
	i := 0
	for i < len(r) && (r[i] == '-' || '0' <= r[i] && r[i] <= '9') {
		i++
	}
	if !jsonInt(r[:i]) {
		return s, false
	}
	v, err := strconv.ParseInt(r[:i], 10, 64)
	if err != nil {
		return s, false
	}
	*n = v
	return r[i:], true
}

// jsonInt reports whether s is a JSON integer: -?(0|[1-9][0-9]*).
func jsonInt(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// jsonIntList reports whether s is a comma-separated list of JSON
// integers, without spaces (or empty).
func jsonIntList(s string) bool {
	if s == "" {
		return true
	}
	for s != "" {
		num, rest, more := strings.Cut(s, ",")
		if !jsonInt(num) || more && rest == "" {
			return false
		}
		s = rest
	}
	return true
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
	b, err := encodeBreaker(st.Breaker)
	if err != nil {
		return fmt.Errorf("encode breaker: %w", err)
	}
	mis := ""
	if st.Misconfigured != nil {
		m, err := json.Marshal(st.Misconfigured)
		if err != nil {
			return fmt.Errorf("encode misconfigured: %w", err)
		}
		mis = string(m)
	}
	now := time.Now()
	if before == "" || string(b)+"\x00"+mis != before || !st.ExhaustedUntil.Equal(oldUntil) || st.ExhaustedReason != oldReason {
		_, err = tx.ExecContext(ctx, `INSERT INTO provider_state (provider, exhausted_until, exhausted_reason, breaker, misconfigured, updated_at)
VALUES (?, ?, ?, ?, ?, ?)
ON CONFLICT (provider) DO UPDATE SET exhausted_until = excluded.exhausted_until,
	exhausted_reason = excluded.exhausted_reason, breaker = excluded.breaker, misconfigured = excluded.misconfigured, updated_at = excluded.updated_at`,
			provider, nullTime(st.ExhaustedUntil), st.ExhaustedReason, string(b), mis, FormatTime(now))
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

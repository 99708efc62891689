package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// Incident is one row of the incidents table: a condition a human must act
// on (the whole chain down, one provider down), from its first evidence to
// its resolution.
type Incident struct {
	ID         int64
	Key        string // e.g. "chain_down" or "provider_down:groq"; one open incident per key
	Rule       string
	Provider   string    // "" for the whole chain
	OpenedAt   time.Time // first evidence
	LastSeenAt time.Time // latest evidence
	ResolvedAt time.Time // zero while open
	NotifiedAt time.Time // last opened or reminder message queued; zero while not announced
	Reminders  int
	Detail     string // the latest evidence in words
}

// Open reports whether the incident is not resolved.
func (i Incident) Open() bool { return i.ResolvedAt.IsZero() }

// IncidentChange is what one observation did to an incident.
type IncidentChange string

// The changes an observation can make. Each one that a human hears about
// queues exactly one message.
const (
	IncidentOpened   IncidentChange = "opened"   // announced (at opening, or later when it was silent)
	IncidentReminder IncidentChange = "reminder" // still open and seen again, a day after the last message
	IncidentResolved IncidentChange = "resolved" // the condition cleared after it was announced
)

// IncidentObservation is what the rules saw of one condition at one
// evaluation. Active means the condition holds, with evidence from Since to
// LastSeen. ClearedAt is the latest time the condition was seen cleared (a
// publication, an answer from the provider); zero means never. Silent asks
// that an incident opened now is recorded but not announced (another
// incident already says it); an open silent incident is announced by a
// later observation that is not silent.
type IncidentObservation struct {
	Key, Rule, Provider string
	Active              bool
	Since, LastSeen     time.Time
	ClearedAt           time.Time
	Detail              string
	Silent              bool
}

// IncidentEvent is one change with the incident as it is after it.
type IncidentEvent struct {
	Change   IncidentChange
	Incident Incident
}

// ObserveIncident applies obs to the open incident of obs.Key at now, in
// one IMMEDIATE transaction with the outbox, so that concurrent processes
// neither open an incident twice nor queue its messages twice:
//
//   - an open incident whose condition cleared after it opened is resolved
//     at ClearedAt (announced only when its opening was);
//   - an active condition with no open incident opens one at Since;
//   - an open incident still active gets LastSeen and Detail updated;
//   - an open incident not yet announced is announced unless obs is
//     Silent, and an announced one gets a reminder when remindEvery has
//     passed since its last message and the condition was seen again
//     after that message.
//
// For each change a human hears about, message builds the alert, which is
// queued in the same transaction (its key should name the incident and the
// change). It returns the events.
func (s *Store) ObserveIncident(ctx context.Context, obs IncidentObservation, remindEvery time.Duration, now time.Time, message func(IncidentEvent) Alert) ([]IncidentEvent, error) {
	var events []IncidentEvent
	err := s.write(ctx, "observe incident "+obs.Key, func(tx *sql.Tx) error {
		var err error
		events, err = observeTx(ctx, tx, obs, remindEvery, now)
		if err != nil {
			return err
		}
		for _, e := range events {
			if message == nil {
				continue
			}
			if _, err := enqueueAlertTx(ctx, tx, message(e), 0, now); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return events, nil
}

// observeTx is ObserveIncident's state change inside tx.
func observeTx(ctx context.Context, tx *sql.Tx, obs IncidentObservation, remindEvery time.Duration, now time.Time) ([]IncidentEvent, error) {
	var events []IncidentEvent
	cur, open, err := openIncident(ctx, tx, obs.Key)
	if err != nil {
		return nil, err
	}
	if open && !obs.ClearedAt.IsZero() && obs.ClearedAt.After(cur.OpenedAt) {
		cur.ResolvedAt = obs.ClearedAt
		if _, err := tx.ExecContext(ctx, "UPDATE incidents SET resolved_at = ? WHERE id = ?", FormatTime(cur.ResolvedAt), cur.ID); err != nil {
			return nil, err
		}
		if !cur.NotifiedAt.IsZero() {
			events = append(events, IncidentEvent{IncidentResolved, cur})
		}
		open = false
	}
	active := obs.Active && (obs.ClearedAt.IsZero() || obs.LastSeen.After(obs.ClearedAt))
	switch {
	case active && !open:
		cur = Incident{Key: obs.Key, Rule: obs.Rule, Provider: obs.Provider, OpenedAt: obs.Since, LastSeenAt: obs.LastSeen, Detail: obs.Detail}
		if err := tx.QueryRowContext(ctx, `INSERT INTO incidents (key, rule, provider, opened_at, last_seen_at, detail) VALUES (?, ?, ?, ?, ?, ?)
RETURNING id`, cur.Key, cur.Rule, cur.Provider, FormatTime(cur.OpenedAt), FormatTime(cur.LastSeenAt), cur.Detail).Scan(&cur.ID); err != nil {
			return nil, err
		}
		open = true
	case active:
		if obs.LastSeen.After(cur.LastSeenAt) {
			cur.LastSeenAt = obs.LastSeen
		}
		cur.Detail = obs.Detail
		if _, err := tx.ExecContext(ctx, "UPDATE incidents SET last_seen_at = ?, detail = ? WHERE id = ?", FormatTime(cur.LastSeenAt), cur.Detail, cur.ID); err != nil {
			return nil, err
		}
	}
	if !open {
		return events, nil
	}
	change := IncidentChange("")
	switch {
	case cur.NotifiedAt.IsZero() && !obs.Silent:
		change = IncidentOpened
	case !cur.NotifiedAt.IsZero() && now.Sub(cur.NotifiedAt) >= remindEvery && cur.LastSeenAt.After(cur.NotifiedAt):
		// A reminder needs evidence newer than the last message: a
		// provider nobody called since (the chain answered before it, its
		// breaker kept it out) is not known to be still down.
		change = IncidentReminder
		cur.Reminders++
	default:
		return events, nil
	}
	cur.NotifiedAt = now
	if _, err := tx.ExecContext(ctx, "UPDATE incidents SET notified_at = ?, reminders = ? WHERE id = ?", FormatTime(now), cur.Reminders, cur.ID); err != nil {
		return nil, err
	}
	return append(events, IncidentEvent{change, cur}), nil
}

const incidentColumns = "id, key, rule, provider, opened_at, last_seen_at, resolved_at, notified_at, reminders, detail"

func scanIncident(sc scanner) (Incident, error) {
	var (
		in                 Incident
		opened, seen       string
		resolved, notified sql.NullString
	)
	if err := sc.Scan(&in.ID, &in.Key, &in.Rule, &in.Provider, &opened, &seen, &resolved, &notified, &in.Reminders, &in.Detail); err != nil {
		return Incident{}, err
	}
	var err error
	if in.OpenedAt, err = ParseTime(opened); err != nil {
		return Incident{}, err
	}
	if in.LastSeenAt, err = ParseTime(seen); err != nil {
		return Incident{}, err
	}
	if in.ResolvedAt, err = scanTime(resolved); err != nil {
		return Incident{}, err
	}
	if in.NotifiedAt, err = scanTime(notified); err != nil {
		return Incident{}, err
	}
	return in, nil
}

func openIncident(ctx context.Context, tx *sql.Tx, key string) (Incident, bool, error) {
	in, err := scanIncident(tx.QueryRowContext(ctx, "SELECT "+incidentColumns+" FROM incidents WHERE key = ? AND resolved_at IS NULL", key))
	if err == sql.ErrNoRows {
		return Incident{}, false, nil
	}
	if err != nil {
		return Incident{}, false, err
	}
	return in, true, nil
}

// Incidents returns the incidents open at any time in [since, until) —
// opened before until and not resolved before since — oldest first.
func (s *Store) Incidents(ctx context.Context, since, until time.Time) ([]Incident, error) {
	var out []Incident
	err := s.each(ctx, "SELECT "+incidentColumns+` FROM incidents
WHERE opened_at < ? AND (resolved_at IS NULL OR resolved_at >= ?) ORDER BY opened_at, id`,
		[]any{FormatTime(until), FormatTime(since)}, func(r *sql.Rows) error {
			in, err := scanIncident(r)
			if err != nil {
				return err
			}
			out = append(out, in)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("incidents: %w", s.queryErr(err))
	}
	return out, nil
}

// WalkEvent is what happened to one provider in a job's latest walk: its
// latest call (What is the outcome) or skip (What is the reason).
type WalkEvent struct {
	Provider   string
	TS         time.Time
	What       string
	Skip       bool
	HTTPStatus int
	Detail     string // the call's detail (its cause); "" for a skip
}

// DeferredWalk is a job left deferred after its latest walk, with the
// latest event of each provider in that job since the last publication.
type DeferredWalk struct {
	JobID  string
	At     time.Time // when the job was left deferred (jobs.updated_at)
	Events []WalkEvent
}

// DeferredSinceLastPublication returns the last publication (zero when
// none) and every job deferred after it, oldest first, each with the
// latest call or skip of every provider for that job after it. Only job
// calls count (not shadow or health calls).
func (s *Store) DeferredSinceLastPublication(ctx context.Context) (time.Time, []DeferredWalk, error) {
	last, err := s.LastPublished(ctx)
	if err != nil {
		return time.Time{}, nil, err
	}
	from := ""
	if !last.IsZero() {
		from = FormatTime(last)
	}
	var (
		out   []DeferredWalk
		index = map[string]int{}
	)
	err = s.each(ctx, `WITH ev AS (
	SELECT request_id, provider, ts, outcome AS what, 0 AS skip, http_status, detail, id FROM calls
	WHERE purpose = 'job' AND ts > ? AND request_id IN (SELECT id FROM jobs WHERE status = 'deferred' AND updated_at > ?)
	UNION ALL
	SELECT request_id, provider, ts, reason, 1, 0, '', id FROM skips
	WHERE ts > ? AND request_id IN (SELECT id FROM jobs WHERE status = 'deferred' AND updated_at > ?)
), latest AS (
	SELECT *, ROW_NUMBER() OVER (PARTITION BY request_id, provider ORDER BY ts DESC, skip, id DESC) AS rn FROM ev
)
SELECT j.id, j.updated_at, l.provider, l.ts, l.what, l.skip, l.http_status, l.detail
FROM jobs j JOIN latest l ON l.request_id = j.id AND l.rn = 1
WHERE j.status = 'deferred' AND j.updated_at > ?
ORDER BY j.updated_at, j.id, l.ts, l.provider`, []any{from, from, from, from, from}, func(r *sql.Rows) error {
		var (
			id, at, ts string
			ev         WalkEvent
		)
		if err := r.Scan(&id, &at, &ev.Provider, &ts, &ev.What, &ev.Skip, &ev.HTTPStatus, &ev.Detail); err != nil {
			return err
		}
		var err error
		if ev.TS, err = ParseTime(ts); err != nil {
			return err
		}
		i, ok := index[id]
		if !ok {
			w := DeferredWalk{JobID: id}
			if w.At, err = ParseTime(at); err != nil {
				return err
			}
			i = len(out)
			index[id] = i
			out = append(out, w)
		}
		out[i].Events = append(out[i].Events, ev)
		return nil
	})
	if err != nil {
		return time.Time{}, nil, fmt.Errorf("deferred jobs: %w", s.queryErr(err))
	}
	return last, out, nil
}

// sqlList renders strings as a SQL list of quoted literals, for IN (...).
// The values come from this program's constants, never from input; quotes
// are doubled all the same.
func sqlList(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = "'" + strings.ReplaceAll(v, "'", "''") + "'"
	}
	return strings.Join(q, ", ")
}

// LastResolved returns when the latest resolved incident of key was
// resolved; zero when none was.
func (s *Store) LastResolved(ctx context.Context, key string) (time.Time, error) {
	var ts sql.NullString
	if err := s.db.QueryRowContext(ctx, "SELECT MAX(resolved_at) FROM incidents WHERE key = ? AND resolved_at IS NOT NULL", key).Scan(&ts); err != nil {
		return time.Time{}, fmt.Errorf("last resolved %s: %w", key, s.queryErr(err))
	}
	t, err := scanTime(ts)
	if err != nil {
		return time.Time{}, fmt.Errorf("last resolved %s: %w", key, err)
	}
	return t, nil
}

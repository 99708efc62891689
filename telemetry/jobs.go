package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

const jobColumns = `id, topic, slot, title, category, language, status, provider, model, quality_score,
	attempt, location, published_at, last_error, updated_at, owner_host, owner_pid, claimed_at, owner_token, payload, deferrals`

// jobRow is a jobs row with its claim.
type jobRow struct {
	rec       chain.JobRecord
	owner     chain.Owner
	claimed   bool
	claimedAt time.Time
}

type scanner interface{ Scan(dest ...any) error }

func scanJob(sc scanner) (jobRow, error) {
	var (
		r                          jobRow
		score                      sql.NullFloat64
		published, updated, claimd sql.NullString
		host, token                sql.NullString
		pid                        sql.NullInt64
	)
	err := sc.Scan(&r.rec.ID, &r.rec.Topic, &r.rec.Slot, &r.rec.Title, &r.rec.Category, &r.rec.Language,
		&r.rec.Status, &r.rec.Provider, &r.rec.Model, &score, &r.rec.Attempt, &r.rec.Location, &published,
		&r.rec.LastError, &updated, &host, &pid, &claimd, &token, &r.rec.Payload, &r.rec.Deferrals)
	if err != nil {
		return r, err
	}
	if score.Valid {
		v := score.Float64
		r.rec.QualityScore = &v
	}
	if r.rec.PublishedAt, err = scanTime(published); err != nil {
		return r, err
	}
	if r.rec.UpdatedAt, err = scanTime(updated); err != nil {
		return r, err
	}
	if r.claimedAt, err = scanTime(claimd); err != nil {
		return r, err
	}
	if host.Valid {
		r.claimed = true
		r.owner = chain.Owner{Host: host.String, PID: int(pid.Int64), Token: token.String}
	}
	return r, nil
}

func getJob(ctx context.Context, q queryRower, id string) (jobRow, bool, error) {
	return getJobSQL(ctx, q, "SELECT "+jobColumns+" FROM jobs WHERE id = ?", id)
}

// lockJob is getJob for a claim: on PostgreSQL it locks the row (FOR
// UPDATE SKIP LOCKED, dialect.lockRow), and found is false also when
// another worker's transaction holds it (locked tells which). On SQLite
// the write transaction already excludes every other writer: it is getJob.
func (s *Store) lockJob(ctx context.Context, tx *sql.Tx, id string) (r jobRow, found, locked bool, err error) {
	r, found, err = getJobSQL(ctx, tx, "SELECT "+jobColumns+" FROM jobs WHERE id = ?"+s.d.lockRow, id)
	if err != nil || found || s.d.lockRow == "" {
		return r, found, false, err
	}
	r, found, err = getJob(ctx, tx, id)
	return r, false, found, err
}

func getJobSQL(ctx context.Context, q queryRower, query, id string) (jobRow, bool, error) {
	r, err := scanJob(q.QueryRowContext(ctx, query, id))
	if errors.Is(err, sql.ErrNoRows) {
		return jobRow{}, false, nil
	}
	if err != nil {
		return jobRow{}, false, err
	}
	return r, true, nil
}

// ClaimJob inserts the job (status due) if new and claims it for owner, in
// one IMMEDIATE transaction. A finished job (published, review, rejected) is
// not claimed. A job claimed by another owner is not claimed while alive
// reports that owner alive and its claim (claimed_at, renewed by
// HeartbeatJob) is younger than lease; otherwise the claim is taken over. A
// nil alive counts every owner alive (only the lease then frees a claim). A
// claimed job becomes running, except that a job in publishing keeps that
// status and its updated_at (the write-ahead time) so the caller can
// reconcile it. Title, category and language are refreshed from j when set.
// cur is the job as stored after the call. alive runs inside the write
// transaction: it must be quick and must not use the store.
func (s *Store) ClaimJob(ctx context.Context, j chain.JobRecord, owner chain.Owner, alive func(chain.Owner) bool, lease time.Duration, now time.Time) (claimed bool, cur chain.JobRecord, err error) {
	return s.claimJob(ctx, j, owner, alive, lease, now, nil)
}

// ClaimJobWithin is ClaimJob under a ceiling of publications per day: in
// the same transaction, a job that would be claimed afresh (not one in
// publishing, which is reconciled) is refused with cur.Status
// chain.JobDayFull when the other jobs that are or may still be delivered
// on the day that starts at dayStart reach ceiling: those published within
// the day (dayStart to dayStart + 24h, so a record dated in the future
// never counts toward today), every job in publishing whatever its claim's
// age (a reconciliation delivers it on the day it runs), and the running
// jobs claimed within lease. Concurrent runs therefore never together pass
// the ceiling.
func (s *Store) ClaimJobWithin(ctx context.Context, j chain.JobRecord, owner chain.Owner, alive func(chain.Owner) bool, lease time.Duration, now, dayStart time.Time, ceiling int) (bool, chain.JobRecord, error) {
	full := func(tx *sql.Tx) (bool, error) { return s.dayFull(ctx, tx, j.ID, lease, now, dayStart, ceiling) }
	return s.claimJob(ctx, j, owner, alive, lease, now, full)
}

// dayFull reports whether the jobs other than id that count toward the day
// starting at dayStart (see ClaimJobWithin) reach ceiling.
func (s *Store) dayFull(ctx context.Context, tx *sql.Tx, id string, lease time.Duration, now, dayStart time.Time, ceiling int) (bool, error) {
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE id <> ? AND ((status = ? AND published_at >= ? AND published_at < ?)
	OR status = ? OR (status = ? AND claimed_at >= ?))`, id, chain.JobPublished, FormatTime(dayStart), FormatTime(dayStart.Add(24*time.Hour)),
		chain.JobPublishing, chain.JobRunning, FormatTime(now.Add(-lease))).Scan(&n)
	return n >= ceiling, err
}

// MarkPublishingWithin is MarkPublishing under the day's ceiling, counted
// as ClaimJobWithin counts it, in the mark's transaction: a job whose claim
// ran out while its run was paused was not counted by the other runs,
// which may have filled the day meanwhile; its mark is then refused with
// chain.ErrDayFull and nothing is delivered.
func (s *Store) MarkPublishingWithin(ctx context.Context, j chain.JobRecord, owner chain.Owner, lease time.Duration, now, dayStart time.Time, ceiling int) error {
	return s.markPublishing(ctx, j, owner, now, func(tx *sql.Tx) error {
		if err := s.pgLock(ctx, tx, pgLockCeiling); err != nil {
			return err
		}
		full, err := s.dayFull(ctx, tx, j.ID, lease, now, dayStart, ceiling)
		if err == nil && full {
			err = fmt.Errorf("job %s not marked: %w", j.ID, chain.ErrDayFull)
		}
		return err
	})
}

// claimJob is ClaimJob with an optional ceiling check (full) run before a
// fresh claim.
func (s *Store) claimJob(ctx context.Context, j chain.JobRecord, owner chain.Owner, alive func(chain.Owner) bool, lease time.Duration, now time.Time, full func(*sql.Tx) (bool, error)) (claimed bool, cur chain.JobRecord, err error) {
	ts := FormatTime(now)
	// On PostgreSQL the claim decides on the job's row, which it locks; a
	// ceiling also counts the other jobs, so that claim first takes the
	// ceiling's lock (every claim under a ceiling takes it).
	err = s.writeMode(ctx, "claim job "+j.ID, writeMode{locked: true}, func(tx *sql.Tx) error {
		claimed = false
		if full != nil {
			if err := s.pgLock(ctx, tx, pgLockCeiling); err != nil {
				return err
			}
		}
		r, found, locked, err := s.lockJob(ctx, tx, j.ID)
		if err != nil {
			return err
		}
		if locked {
			// Another worker is claiming or finishing it right now.
			cur = r.rec
			return nil
		}
		if !found {
			_, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, topic, slot, title, category, language, status, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`, j.ID, j.Topic, j.Slot, j.Title, j.Category, j.Language, chain.JobDue, ts, ts)
			if err != nil {
				return fmt.Errorf("insert: %w", err)
			}
			if r, found, locked, err = s.lockJob(ctx, tx, j.ID); err != nil || locked || !found {
				// Inserted meanwhile by another worker that holds it.
				cur = r.rec
				return err
			}
		}
		if r.rec.Status.Finished() {
			cur = r.rec
			return nil
		}
		if r.claimed && r.owner != owner {
			live := alive == nil || alive(r.owner)
			if live && now.Sub(r.claimedAt) < lease {
				cur = r.rec
				return nil
			}
			if r.rec.Status == chain.JobPublishing {
				over, err := s.deliveryOver(ctx, tx, r, live, lease, now, s.now())
				if err != nil || !over {
					cur = r.rec
					return err
				}
			}
		}
		status, updated := chain.JobRunning, ts
		if r.rec.Status == chain.JobPublishing {
			status, updated = chain.JobPublishing, FormatTime(r.rec.UpdatedAt)
		} else if full != nil {
			if isFull, err := full(tx); err != nil || isFull {
				cur = r.rec
				cur.Status = chain.JobDayFull
				return err
			}
		}
		_, err = tx.ExecContext(ctx, `UPDATE jobs SET status = ?, owner_host = ?, owner_pid = ?, owner_token = ?, claimed_at = ?, updated_at = ?,
	title = COALESCE(NULLIF(?, ''), title), category = COALESCE(NULLIF(?, ''), category), language = COALESCE(NULLIF(?, ''), language)
WHERE id = ?`, status, owner.Host, owner.PID, owner.Token, ts, updated, j.Title, j.Category, j.Language, j.ID)
		if err != nil {
			return fmt.Errorf("update: %w", err)
		}
		if r, _, err = getJob(ctx, tx, j.ID); err != nil {
			return err
		}
		cur, claimed = r.rec, true
		return nil
	})
	if err != nil {
		if unstorable(err) {
			err = fmt.Errorf("%w: %w", chain.ErrJobUnstorable, err)
		}
		return false, chain.JobRecord{}, err
	}
	return claimed, cur, nil
}

// unstorable reports whether err is the database refusing a value of the
// row itself rather than being unusable: on PostgreSQL a data exception
// (class 22, e.g. a NUL byte in text) or a program limit (class 54, e.g. an
// index row too large for a long id).
func unstorable(err error) bool {
	c := pgCode(err)
	return strings.HasPrefix(c, "22") || strings.HasPrefix(c, "54")
}

// HeartbeatJob renews owner's claim on job id (claimed_at = now). It fails
// when the job is not claimed by owner any more (another run took it over,
// or it was finished): the caller must then discard its answer.
func (s *Store) HeartbeatJob(ctx context.Context, id string, owner chain.Owner, now time.Time) error {
	return s.writeMode(ctx, "heartbeat job "+id, writeMode{locked: true}, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, "UPDATE jobs SET claimed_at = ? WHERE id = ? AND owner_host = ? AND owner_pid = ? AND COALESCE(owner_token, '') = ?",
			FormatTime(now), id, owner.Host, owner.PID, owner.Token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("job %s is not claimed by %s pid %d any more", id, owner.Host, owner.PID)
		}
		return nil
	})
}

// MarkPublishing records the write-ahead state before publication: status
// publishing, the winner (provider, model, score, attempt — the attempt
// whose stored output is what gets published), the location the article
// goes to, and updated_at = now (the publication time a reconciliation
// reuses). Only the claim's owner may mark the job. The commit is durable
// (fsynced) before MarkPublishing returns, so no power cut can take the mark
// back once the side effect starts.
func (s *Store) MarkPublishing(ctx context.Context, j chain.JobRecord, owner chain.Owner, now time.Time) error {
	return s.markPublishing(ctx, j, owner, now, nil)
}

// markPublishing is MarkPublishing with an optional check (first) in its
// transaction.
func (s *Store) markPublishing(ctx context.Context, j chain.JobRecord, owner chain.Owner, now time.Time, check func(*sql.Tx) error) error {
	return s.writeMode(ctx, "mark publishing "+j.ID, writeMode{durable: true, locked: true}, func(tx *sql.Tx) error {
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		if err := s.checkOwnerLease(ctx, tx, owner, s.now()); err != nil {
			return fmt.Errorf("job %s not marked: %w", j.ID, err)
		}
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET status = ?, provider = ?, model = ?, quality_score = ?, attempt = ?,
	location = ?, payload = ?, updated_at = ?, claimed_at = ? WHERE id = ? AND owner_host = ? AND owner_pid = ? AND COALESCE(owner_token, '') = ?`,
			chain.JobPublishing, j.Provider, j.Model, nullFloat(j.QualityScore), j.Attempt, j.Location, j.Payload, FormatTime(now), FormatTime(now),
			j.ID, owner.Host, owner.PID, owner.Token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("job %s is not claimed by this process any more", j.ID)
		}
		return nil
	})
}

// FinishJob sets the job's final status and last_error, releases the claim,
// and sets updated_at = now. Provider, model, quality score, attempt,
// location and published_at are taken from j when set (non-zero) and kept
// otherwise; a published job without PublishedAt gets now; the payload of
// publishing is dropped. A job that is not in the table is inserted. Only the
// claim's owner (or anyone, for an unclaimed job that is not published) may
// finish it: a process that lost its claim changes nothing and gets an
// error — also when the worker that took the claim over has published the
// job and released it meanwhile.
func (s *Store) FinishJob(ctx context.Context, j chain.JobRecord, owner chain.Owner, now time.Time) error {
	if j.Status == "" {
		return fmt.Errorf("finish job %s: empty status", j.ID)
	}
	ts := FormatTime(now)
	published := j.PublishedAt
	if published.IsZero() && j.Status == chain.JobPublished {
		published = now
	}
	return s.writeMode(ctx, "finish job "+j.ID, writeMode{locked: true}, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO jobs (id, topic, slot, title, category, language, status, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (id) DO NOTHING`,
			j.ID, j.Topic, j.Slot, j.Title, j.Category, j.Language, j.Status, ts, ts)
		if err != nil {
			return err
		}
		inserted, err := res.RowsAffected()
		if err != nil {
			return err
		}
		var attempt any
		if j.Attempt > 0 {
			attempt = j.Attempt
		}
		res, err = tx.ExecContext(ctx, `UPDATE jobs SET status = ?, last_error = ?, updated_at = ?, deferrals = deferrals + CASE WHEN ? = 'deferred' THEN 1 ELSE 0 END,
	owner_host = NULL, owner_pid = NULL, owner_token = NULL, claimed_at = NULL,
	provider = COALESCE(NULLIF(?, ''), provider), model = COALESCE(NULLIF(?, ''), model),
	quality_score = COALESCE(?, quality_score), attempt = COALESCE(?, attempt),
	location = COALESCE(NULLIF(?, ''), location), published_at = COALESCE(?, published_at),
	payload = NULL
WHERE id = ? AND (? = 1 OR (owner_host IS NULL AND status <> ?) OR (owner_host = ? AND owner_pid = ? AND COALESCE(owner_token, '') = ?))`,
			j.Status, j.LastError, ts, j.Status, j.Provider, j.Model, nullFloat(j.QualityScore), attempt,
			j.Location, nullTime(published), j.ID, inserted, chain.JobPublished, owner.Host, owner.PID, owner.Token)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return fmt.Errorf("job %s is claimed by another process: not finished as %s", j.ID, j.Status)
		}
		return nil
	})
}

// Job returns the job with id (false when unknown).
func (s *Store) Job(ctx context.Context, id string) (chain.JobRecord, bool, error) {
	r, ok, err := getJob(ctx, s.db, id)
	if err != nil {
		return chain.JobRecord{}, false, fmt.Errorf("read job %s: %w", id, err)
	}
	return r.rec, ok, nil
}

// JobsByStatus returns the jobs with status, oldest slot first.
func (s *Store) JobsByStatus(ctx context.Context, status chain.JobStatus) ([]chain.JobRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+jobColumns+" FROM jobs WHERE status = ? ORDER BY slot, created_at, id", status)
	if err != nil {
		return nil, fmt.Errorf("list %s jobs: %w", status, err)
	}
	defer rows.Close()
	var out []chain.JobRecord
	for rows.Next() {
		r, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list %s jobs: %w", status, err)
		}
		out = append(out, r.rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list %s jobs: %w", status, err)
	}
	return out, nil
}

// PurgeOutputs deletes the answer texts created before before (the
// retention limit) and returns how many it deleted. calls rows stay. Texts
// of jobs waiting in review or in publishing are kept: they are what
// `review approve` and a reconciliation publish.
func (s *Store) PurgeOutputs(ctx context.Context, before time.Time) (int64, error) {
	var n int64
	err := s.write(ctx, "purge outputs", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM outputs WHERE created_at < ?
AND request_id NOT IN (SELECT id FROM jobs WHERE status IN (?, ?))`, FormatTime(before), chain.JobReview, chain.JobPublishing)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return n, err
}

// Jobs returns every stored job by id (the backlog's history).
func (s *Store) Jobs(ctx context.Context) (map[string]chain.JobRecord, error) {
	rows, err := s.db.QueryContext(ctx, "SELECT "+jobColumns+" FROM jobs")
	if err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	defer rows.Close()
	out := map[string]chain.JobRecord{}
	for rows.Next() {
		r, err := scanJob(rows)
		if err != nil {
			return nil, fmt.Errorf("list jobs: %w", err)
		}
		out[r.rec.ID] = r.rec
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list jobs: %w", err)
	}
	return out, nil
}

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

// ClaimReview takes a job waiting in review for owner in one IMMEDIATE
// transaction: status review → running, claimed by owner (so that publication
// goes through the normal write-ahead path). It returns claimed=false and
// the job as stored when the job is not in review (cur.Status "" when the
// job is unknown).
func (s *Store) ClaimReview(ctx context.Context, id string, owner chain.Owner, now time.Time) (claimed bool, cur chain.JobRecord, err error) {
	ts := FormatTime(now)
	return s.leaveReview(ctx, "claim review "+id, id,
		`status = ?, owner_host = ?, owner_pid = ?, owner_token = ?, claimed_at = ?, updated_at = ?`,
		chain.JobRunning, owner.Host, owner.PID, owner.Token, ts, ts)
}

// RejectReview closes a job waiting in review (`review reject`): status
// rejected, so it is not redone for its slot. It returns rejected=false and
// the job as stored when the job is not in review (cur.Status "" when the
// job is unknown).
func (s *Store) RejectReview(ctx context.Context, id string, now time.Time) (rejected bool, cur chain.JobRecord, err error) {
	return s.leaveReview(ctx, "reject review "+id, id,
		`status = ?, last_error = ?, updated_at = ?, owner_host = NULL, owner_pid = NULL, owner_token = NULL, claimed_at = NULL`,
		chain.JobRejected, "rejected in manual review", FormatTime(now))
}

// leaveReview applies set (with args) to job id only while it is in
// review, in one write transaction, and returns whether it did and the job
// as stored afterwards.
func (s *Store) leaveReview(ctx context.Context, what, id, set string, args ...any) (moved bool, cur chain.JobRecord, err error) {
	err = s.write(ctx, what, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE jobs SET `+set+` WHERE id = ? AND status = ?`, append(args, id, chain.JobReview)...)
		if err != nil {
			return err
		}
		n, _ := res.RowsAffected()
		r, _, err := getJob(ctx, tx, id)
		if err != nil {
			return err
		}
		cur, moved = r.rec, n == 1
		return nil
	})
	if err != nil {
		return false, chain.JobRecord{}, err
	}
	return moved, cur, nil
}

// CandidateAt returns the stored answer of the job's non-shadow attempt
// (false when that attempt stored no text, e.g. after retention purged it).
func (s *Store) CandidateAt(ctx context.Context, jobID string, attempt int) (chain.Candidate, bool, error) {
	var (
		c       chain.Candidate
		score   sql.NullFloat64
		partial int
	)
	err := s.db.QueryRowContext(ctx, `SELECT c.request_id, c.attempt, c.provider, c.model, c.quality_score, o.text, o.partial
FROM outputs o JOIN calls c ON c.id = o.call_id
WHERE c.request_id = ? AND c.attempt = ? AND c.shadow = 0
ORDER BY c.id DESC LIMIT 1`, jobID, attempt).Scan(&c.RequestID, &c.Attempt, &c.Provider, &c.Model, &score, &c.Text, &partial)
	if errors.Is(err, sql.ErrNoRows) {
		return chain.Candidate{}, false, nil
	}
	if err != nil {
		return chain.Candidate{}, false, fmt.Errorf("candidate %d of %s: %w", attempt, jobID, err)
	}
	c.QualityScore = score.Float64
	c.Partial = partial == 1
	return c, true, nil
}

// JobCall is one recorded call of a job, for `review show`.
type JobCall struct {
	Provider   string
	Model      string
	Attempt    int // 0 for shadow calls
	TS         time.Time
	Outcome    chain.Outcome
	HTTPStatus int
	Score      *float64
	Checks     []string // the quality checks that cost points
	Detail     string
	Shadow     bool
	CostUSD    float64
	Latency    time.Duration
	TextChars  int // length of the stored answer text; 0 when none (or purged)
}

// JobCalls returns every call of a job, the chain's attempts first in
// attempt order, then its shadow calls.
func (s *Store) JobCalls(ctx context.Context, jobID string) ([]JobCall, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT c.provider, c.model, c.attempt, c.ts, c.outcome, c.http_status, c.quality_score,
	c.checks, c.detail, c.shadow, c.cost_estimate_usd, c.latency_ms, COALESCE(length(o.text), 0)
FROM calls c LEFT JOIN outputs o ON o.call_id = c.id
WHERE c.request_id = ? ORDER BY c.shadow, c.attempt, c.id`, jobID)
	if err != nil {
		return nil, fmt.Errorf("calls of %s: %w", jobID, err)
	}
	defer rows.Close()
	var out []JobCall
	for rows.Next() {
		var (
			c              JobCall
			ts, out2       string
			score          sql.NullFloat64
			checks         string
			shadow, lat    int64
			status, nchars int64
		)
		if err := rows.Scan(&c.Provider, &c.Model, &c.Attempt, &ts, &out2, &status, &score, &checks, &c.Detail,
			&shadow, &c.CostUSD, &lat, &nchars); err != nil {
			return nil, fmt.Errorf("calls of %s: %w", jobID, err)
		}
		if c.TS, err = ParseTime(ts); err != nil {
			return nil, fmt.Errorf("calls of %s: %w", jobID, err)
		}
		c.Outcome, c.HTTPStatus, c.Shadow = chain.Outcome(out2), int(status), shadow == 1
		c.Latency, c.TextChars = time.Duration(lat)*time.Millisecond, int(nchars)
		if score.Valid {
			v := score.Float64
			c.Score = &v
		}
		if checks != "" {
			if err := json.Unmarshal([]byte(checks), &c.Checks); err != nil {
				c.Checks = []string{checks}
			}
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("calls of %s: %w", jobID, err)
	}
	return out, nil
}

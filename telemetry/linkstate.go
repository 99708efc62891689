package telemetry

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/contentpipe/contentpipe/chain"
)

// MisconfiguredLink is a link with an open misconfigured incident
// (provider_state.misconfigured).
type MisconfiguredLink struct {
	Provider string
	chain.Misconfig
}

// MisconfiguredLinks returns every link with an open misconfigured
// incident, by name, for `health`, `topics` and `report`.
func (s *Store) MisconfiguredLinks(ctx context.Context) ([]MisconfiguredLink, error) {
	var out []MisconfiguredLink
	err := s.each(ctx, `SELECT provider, misconfigured FROM provider_state WHERE misconfigured <> '' ORDER BY provider`, nil,
		func(r *sql.Rows) error {
			var m MisconfiguredLink
			var raw string
			if err := r.Scan(&m.Provider, &raw); err != nil {
				return err
			}
			if err := json.Unmarshal([]byte(raw), &m.Misconfig); err != nil {
				return fmt.Errorf("decode misconfigured of %s: %w", m.Provider, err)
			}
			out = append(out, m)
			return nil
		})
	if err != nil {
		return nil, fmt.Errorf("misconfigured links: %w", s.queryErr(err))
	}
	return out, nil
}

var _ chain.JobHistorySource = (*Store)(nil)

// JobHistory reads jobID's calls once: its next attempt number and the
// links whose job calls were refused as too large (a second query only
// when there are some).
func (s *Store) JobHistory(ctx context.Context, jobID string) (chain.JobHistory, error) {
	var h chain.JobHistory
	var tooLarge int
	err := s.db.QueryRowContext(ctx, `SELECT COALESCE(MAX(attempt), 0) + 1, count(CASE WHEN outcome = 'too_large' AND purpose = 'job' THEN 1 END)
FROM calls WHERE request_id = ?`, jobID).Scan(&h.NextAttempt, &tooLarge)
	if err == nil && tooLarge > 0 {
		err = s.each(ctx, `SELECT DISTINCT provider FROM calls WHERE request_id = ? AND outcome = 'too_large' AND purpose = 'job' ORDER BY provider`,
			[]any{jobID}, func(r *sql.Rows) error {
				var p string
				if err := r.Scan(&p); err != nil {
					return err
				}
				h.TooLarge = append(h.TooLarge, p)
				return nil
			})
	}
	if err != nil {
		return chain.JobHistory{}, fmt.Errorf("history of %s: %w", jobID, s.queryErr(err))
	}
	return h, nil
}

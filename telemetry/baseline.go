package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

var _ chain.BaselineSource = (*Store)(nil)

// LatencyBaseline returns provider's latency baseline: the medians of
// first-token time and total latency over its answered job calls (purpose
// job, outcome ok or rejected) since since. Calls that did not measure a
// first token (first_token_ms 0) count for the total only. Calls is 0
// when there is none.
func (s *Store) LatencyBaseline(ctx context.Context, provider string, since time.Time) (chain.LatencyBaseline, error) {
	b, err := s.latencyMedians(ctx, `SELECT latency_ms, first_token_ms FROM calls
WHERE provider = ? AND ts >= ? AND purpose = 'job' AND outcome IN ('ok', 'rejected')`, provider, FormatTime(since))
	if err != nil {
		return b, fmt.Errorf("latency baseline of %s: %w", provider, err)
	}
	return b, nil
}

// latencyMedians reads (latency_ms, first_token_ms) rows of query and
// returns their medians; a first token of 0 (not measured) counts for the
// total only.
func (s *Store) latencyMedians(ctx context.Context, query string, args ...any) (chain.LatencyBaseline, error) {
	var totals, firsts []int64
	err := s.each(ctx, query, args, func(r *sql.Rows) error {
		var total, first int64
		if err := r.Scan(&total, &first); err != nil {
			return err
		}
		totals = append(totals, total)
		if first > 0 {
			firsts = append(firsts, first)
		}
		return nil
	})
	if err != nil {
		return chain.LatencyBaseline{}, s.queryErr(err)
	}
	return chain.LatencyBaseline{Calls: len(totals), FirstToken: medianMS(firsts), Total: medianMS(totals)}, nil
}

// medianMS is the median of millisecond values as a duration (the mean of
// the two middle values for an even count; 0 for none).
func medianMS(v []int64) time.Duration {
	if len(v) == 0 {
		return 0
	}
	sort.Slice(v, func(i, j int) bool { return v[i] < v[j] })
	m := len(v) / 2
	ms := float64(v[m])
	if len(v)%2 == 0 {
		ms = float64(v[m-1]+v[m]) / 2
	}
	return time.Duration(ms * float64(time.Millisecond))
}

var (
	_ chain.HealthBaselineSource = (*Store)(nil)
	_ chain.FailureSource        = (*Store)(nil)
)

// healthBaselineCalls is how many of a link's latest health answers its
// health baseline reads.
const healthBaselineCalls = 20

// HealthBaseline returns provider's latency baseline from its latest
// answered health calls (purpose health, outcome ok) before before, for a
// link without job calls.
func (s *Store) HealthBaseline(ctx context.Context, provider string, before time.Time) (chain.LatencyBaseline, error) {
	b, err := s.latencyMedians(ctx, `SELECT latency_ms, first_token_ms FROM calls
WHERE provider = ? AND ts < ? AND purpose = 'health' AND outcome = 'ok' ORDER BY ts DESC LIMIT ?`,
		provider, FormatTime(before), healthBaselineCalls)
	if err != nil {
		return b, fmt.Errorf("health baseline of %s: %w", provider, err)
	}
	b.Health = b.Calls > 0
	return b, nil
}

// LastFailure returns provider's latest failed call (any outcome but ok and
// rejected), for the words of a health check through an open circuit.
func (s *Store) LastFailure(ctx context.Context, provider string) (chain.Failure, bool, error) {
	var (
		f       chain.Failure
		ts, out string
		found   bool
	)
	err := s.each(ctx, `SELECT ts, outcome, http_status, detail FROM calls
WHERE provider = ? AND outcome NOT IN ('ok', 'rejected') ORDER BY ts DESC LIMIT 1`,
		[]any{provider}, func(r *sql.Rows) error {
			found = true
			return r.Scan(&ts, &out, &f.Status, &f.Detail)
		})
	if err != nil {
		return f, false, fmt.Errorf("last failure of %s: %w", provider, s.queryErr(err))
	}
	if !found {
		return f, false, nil
	}
	f.Outcome = chain.Outcome(out)
	if f.TS, err = ParseTime(ts); err != nil {
		return f, false, fmt.Errorf("last failure of %s: %w", provider, err)
	}
	return f, true, nil
}

package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"sort"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// recentOutputs is how many of a link's last settled calls the output
// estimate takes its median from.
const recentOutputs = 20

// capCounts is the predicate of a cap reservation that counts toward its
// day's cap: still open (the call may be in flight) or settled as sent. A
// settled reservation whose request was never sent was given back. Every
// query that counts cap use (ReserveCap, ReserveSpend, CapUsed) and every
// sum of a reservation's use below is this rule.
const capCounts = `(settled = 0 OR sent = 1)`

// A reservation's use: its estimate while open, its real use once settled
// and sent (capCounts), nothing when given back.
// useUSDRow is one row's, useTokens and useUSD the sums over rows.
const (
	useUSDRow = `CASE WHEN settled = 0 THEN est_usd WHEN ` + capCounts + ` THEN usd ELSE 0 END`
	useTokens = `COALESCE(SUM(CASE WHEN settled = 0 THEN est_tokens WHEN ` + capCounts + ` THEN tokens ELSE 0 END), 0)`
	useUSD    = `COALESCE(SUM(` + useUSDRow + `), 0)`
)

// ReserveSpend checks r against every limit it carries and takes one
// reservation when all hold, in one IMMEDIATE transaction (so concurrent
// processes cannot both take the last of a limit; on PostgreSQL every
// reservation holds pgLockSpend to its commit). A settlement running at the
// same time takes no lock: it changes only its own row and reads nothing a
// reservation writes, so either order of the two is a serial one. The output estimate is
// the median output of the link's last settled calls (at most
// recentOutputs), else r.MaxOutput; the cost estimate prices the input
// estimate and that output at r.Price. A limit is crossed when its use
// (settled use plus open estimates) plus this call's estimate would pass
// it; the cap when its count reached it.
func (s *Store) ReserveSpend(ctx context.Context, r chain.SpendRequest) (chain.SpendGrant, error) {
	var g chain.SpendGrant
	err := s.writeMode(ctx, "reserve "+r.Provider, writeMode{locked: true}, func(tx *sql.Tx) error {
		g = chain.SpendGrant{}
		out, err := outputEstimate(ctx, tx, r.Provider, r.MaxOutput)
		if err != nil {
			return err
		}
		// The estimate reads settled rows only and need not see the last
		// settlement: the lock, held to the commit, covers the decision.
		if err := s.pgLock(ctx, tx, pgLockSpend); err != nil {
			return err
		}
		g.EstTokens, g.EstUSD = r.InputTokens+out, r.Price.Cost(r.InputTokens, out)
		day, now := FormatTime(r.DayStart), FormatTime(r.Now)
		var n int
		var tokens, linkUSD float64
		if err := tx.QueryRowContext(ctx, `SELECT count(CASE WHEN `+capCounts+` THEN 1 END), `+useTokens+`, `+useUSD+`
FROM cap_reservations WHERE provider = ? AND day_start = ?`, r.Provider, day).Scan(&n, &tokens, &linkUSD); err != nil {
			return err
		}
		chainDay, chainMonth := 0.0, 0.0
		if r.ChainDailyUSD > 0 || r.ChainMonthlyUSD > 0 {
			// Only the month's rows when a monthly limit needs them; a daily
			// limit alone reads the day's (the month sum is then unused).
			from := r.ChainMonthStart
			if r.ChainMonthlyUSD <= 0 {
				from = r.ChainDayStart
			}
			// Both periods are bounded on both sides: a reservation dated in
			// the future (a clock set back) never counts toward today.
			to := r.ChainMonthStart.AddDate(0, 1, 0)
			if r.ChainMonthlyUSD <= 0 {
				to = r.ChainDayStart.AddDate(0, 0, 1)
			}
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(CASE WHEN ts >= ? AND ts < ? THEN u END), 0), COALESCE(SUM(u), 0)
FROM (SELECT ts, `+useUSDRow+` AS u FROM cap_reservations WHERE ts >= ? AND ts < ?) AS r`,
				FormatTime(r.ChainDayStart), FormatTime(r.ChainDayStart.AddDate(0, 0, 1)), FormatTime(from), FormatTime(to)).Scan(&chainDay, &chainMonth); err != nil {
				return err
			}
		}
		for _, c := range []struct {
			limit      chain.SpendLimit
			used, max  float64
			this       float64
			countLimit bool
		}{
			{chain.LimitCap, float64(n), float64(r.Cap), 1, true},
			{chain.LimitTokens, tokens, float64(r.DailyTokens), float64(g.EstTokens), false},
			{chain.LimitLinkUSD, linkUSD, r.DailyUSD, g.EstUSD, false},
			{chain.LimitChainDay, chainDay, r.ChainDailyUSD, g.EstUSD, false},
			{chain.LimitChainMonth, chainMonth, r.ChainMonthlyUSD, g.EstUSD, false},
		} {
			if c.max > 0 && c.used+c.this > c.max {
				g.Refused, g.Used, g.Limit = c.limit, c.used, c.max
				return nil
			}
		}
		return tx.QueryRowContext(ctx, `INSERT INTO cap_reservations (provider, day_start, ts, est_tokens, est_output, est_usd) VALUES (?, ?, ?, ?, ?, ?)
RETURNING id`, r.Provider, day, now, g.EstTokens, out, g.EstUSD).Scan(&g.ID)
	})
	if err != nil {
		return chain.SpendGrant{}, err
	}
	return g, nil
}

// outputEstimate is the median output tokens of provider's last settled,
// sent reservations, or max when there are none.
func outputEstimate(ctx context.Context, tx *sql.Tx, provider string, max int) (int, error) {
	rows, err := tx.QueryContext(ctx, `SELECT output_tokens FROM cap_reservations
WHERE provider = ? AND settled = 1 AND sent = 1 AND output_tokens > 0 ORDER BY id DESC LIMIT ?`, provider, recentOutputs)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var outs []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return 0, err
		}
		outs = append(outs, v)
	}
	if err := rows.Err(); err != nil {
		return 0, err
	}
	if len(outs) == 0 {
		return max, nil
	}
	sort.Ints(outs)
	return outs[len(outs)/2], nil
}

// settleSpend settles a reservation with the call's real use.
func settleSpend(ctx context.Context, tx *sql.Tx, c chain.CapSettlement) error {
	res, err := tx.ExecContext(ctx, "UPDATE cap_reservations SET settled = 1, sent = ?, tokens = ?, output_tokens = ?, usd = ? WHERE id = ?",
		boolInt(c.Sent), c.Tokens, c.OutputTokens, c.CostUSD, c.ID)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return fmt.Errorf("reservation %d not found", c.ID)
	}
	return nil
}

// LinkSpend is provider's use in the cap day that starts at dayStart:
// tokens and USD, settled use plus open estimates, as ReserveSpend counts.
func (s *Store) LinkSpend(ctx context.Context, provider string, dayStart time.Time) (tokens int, usd float64, err error) {
	err = s.db.QueryRowContext(ctx, `SELECT `+useTokens+`, `+useUSD+` FROM cap_reservations WHERE provider = ? AND day_start = ?`,
		provider, FormatTime(dayStart)).Scan(&tokens, &usd)
	if err != nil {
		return 0, 0, fmt.Errorf("spend of %s: %w", provider, err)
	}
	return tokens, usd, nil
}

// ChainSpend is the USD of every call reserved at or after from and before
// to, as ReserveSpend counts it for the chain's budget.
func (s *Store) ChainSpend(ctx context.Context, from, to time.Time) (float64, error) {
	var usd float64
	if err := s.db.QueryRowContext(ctx, `SELECT `+useUSD+` FROM cap_reservations WHERE ts >= ? AND ts < ?`, FormatTime(from), FormatTime(to)).Scan(&usd); err != nil {
		return 0, fmt.Errorf("chain spend: %w", err)
	}
	return usd, nil
}

// SkipsSince counts the skips with reason at or after from and before to,
// of provider ("" = any provider).
func (s *Store) SkipsSince(ctx context.Context, reason chain.SkipReason, provider string, from, to time.Time) (int, error) {
	var n int
	err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM skips WHERE reason = ? AND ts >= ? AND ts < ? AND (? = '' OR provider = ?)`,
		string(reason), FormatTime(from), FormatTime(to), provider, provider).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count %s skips: %w", reason, err)
	}
	return n, nil
}

// SpendError is one provider's estimate error: estimated against settled
// cost of its sent calls since a time.
type SpendError struct {
	Provider          string
	Calls             int
	EstUSD, ActualUSD float64
	MeanAbsErr        float64 // mean |estimate − actual| per call, USD
	MaxAbsErr         float64
}

// SpendErrors returns the estimate error per provider of the calls
// reserved since from that were answered (settled, sent, with output).
func (s *Store) SpendErrors(ctx context.Context, from time.Time) ([]SpendError, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT provider, count(*), SUM(est_usd), SUM(usd), AVG(ABS(est_usd - usd)), MAX(ABS(est_usd - usd))
FROM cap_reservations WHERE settled = 1 AND sent = 1 AND output_tokens > 0 AND ts >= ? GROUP BY provider ORDER BY provider`, FormatTime(from))
	if err != nil {
		return nil, fmt.Errorf("spend errors: %w", err)
	}
	defer rows.Close()
	var out []SpendError
	for rows.Next() {
		var e SpendError
		if err := rows.Scan(&e.Provider, &e.Calls, &e.EstUSD, &e.ActualUSD, &e.MeanAbsErr, &e.MaxAbsErr); err != nil {
			return nil, fmt.Errorf("spend errors: %w", err)
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ArticleCost is one provider's spend and the articles it published in a
// window: PerArticle = Spend / Published (0 when it published none).
type ArticleCost struct {
	Provider   string
	Published  int
	SpendUSD   float64 // every call of the provider (job, shadow, health)
	PerArticle float64
}

// ArticleCosts returns, per provider with calls or publications since
// from, its spend and the cost per article it published.
func (s *Store) ArticleCosts(ctx context.Context, from time.Time) ([]ArticleCost, error) {
	ts := FormatTime(from)
	rows, err := s.db.QueryContext(ctx, `SELECT p, COALESCE((SELECT SUM(cost_estimate_usd) FROM calls WHERE provider = p AND ts >= ?), 0),
	(SELECT count(*) FROM jobs WHERE provider = p AND status = 'published' AND published_at >= ?)
FROM (SELECT DISTINCT provider AS p FROM calls WHERE ts >= ?) AS d ORDER BY p`, ts, ts, ts)
	if err != nil {
		return nil, fmt.Errorf("article costs: %w", err)
	}
	defer rows.Close()
	var out []ArticleCost
	for rows.Next() {
		var c ArticleCost
		if err := rows.Scan(&c.Provider, &c.SpendUSD, &c.Published); err != nil {
			return nil, fmt.Errorf("article costs: %w", err)
		}
		if c.Published > 0 {
			c.PerArticle = c.SpendUSD / float64(c.Published)
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

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

// A cap reservation counts toward its day's cap while it is still open
// (the call may be in flight) or once settled as sent; a settled
// reservation whose request was never sent was given back. Its use is its
// estimate while open, its real use once settled and sent, nothing when
// given back. rowCounts, rowTokens and rowUSD are that rule for one row
// (prefix "NEW." or "OLD." in a trigger, "" in a query); every count and
// sum of reservations, and the running totals the triggers of
// totalsSQL keep, is written with them.
func rowCounts(p string) string { return "(" + p + "settled = 0 OR " + p + "sent = 1)" }

func rowTokens(p string) string {
	return "CASE WHEN " + p + "settled = 0 THEN " + p + "est_tokens WHEN " + rowCounts(p) + " THEN " + p + "tokens ELSE 0 END"
}

func rowUSD(p string) string {
	return "CASE WHEN " + p + "settled = 0 THEN " + p + "est_usd WHEN " + rowCounts(p) + " THEN " + p + "usd ELSE 0 END"
}

// useUSD is the sum of the rows' USD use.
var useUSD = "COALESCE(SUM(" + rowUSD("") + "), 0)"

// cap_days and spend_days are running totals of cap_reservations (one row
// per link and cap day: requests counted, tokens and USD used; one row per
// UTC day of the reservation's ts: USD used), kept by triggers in the
// transaction that inserts, settles or deletes a reservation, so a
// reservation reads its limits' use from one row each instead of summing
// every reservation of the day (which made a busy day quadratic).
// totalsSQL is the migration that creates them, fills them from the rows
// there are and creates the triggers; pg selects PostgreSQL's dialect.
func totalsSQL(pg bool) string {
	add := func(p string) string {
		return `INSERT INTO cap_days (provider, day_start, requests, tokens, usd)
	VALUES (` + p + `provider, ` + p + `day_start, CASE WHEN ` + rowCounts(p) + ` THEN 1 ELSE 0 END, ` + rowTokens(p) + `, ` + rowUSD(p) + `)
	ON CONFLICT (provider, day_start) DO UPDATE SET requests = cap_days.requests + excluded.requests,
		tokens = cap_days.tokens + excluded.tokens, usd = cap_days.usd + excluded.usd;
	INSERT INTO spend_days (day, usd) VALUES (substr(` + p + `ts, 1, 10), ` + rowUSD(p) + `)
	ON CONFLICT (day) DO UPDATE SET usd = spend_days.usd + excluded.usd;
`
	}
	sub := func(p string) string {
		return `UPDATE cap_days SET requests = requests - (CASE WHEN ` + rowCounts(p) + ` THEN 1 ELSE 0 END),
		tokens = tokens - (` + rowTokens(p) + `), usd = usd - (` + rowUSD(p) + `)
	WHERE provider = ` + p + `provider AND day_start = ` + p + `day_start;
	UPDATE spend_days SET usd = usd - (` + rowUSD(p) + `) WHERE day = substr(` + p + `ts, 1, 10);
`
	}
	real := "REAL"
	if pg {
		real = "DOUBLE PRECISION"
	}
	head := `CREATE TABLE cap_days (
	provider  TEXT    NOT NULL,
	day_start TEXT    NOT NULL,
	requests  INTEGER NOT NULL DEFAULT 0,
	tokens    BIGINT  NOT NULL DEFAULT 0,
	usd       ` + real + ` NOT NULL DEFAULT 0,
	PRIMARY KEY (provider, day_start)
);
CREATE TABLE spend_days (
	day TEXT PRIMARY KEY,
	usd ` + real + ` NOT NULL DEFAULT 0
);
INSERT INTO cap_days (provider, day_start, requests, tokens, usd)
SELECT provider, day_start, SUM(CASE WHEN ` + rowCounts("") + ` THEN 1 ELSE 0 END), SUM(` + rowTokens("") + `), SUM(` + rowUSD("") + `)
FROM cap_reservations GROUP BY provider, day_start;
INSERT INTO spend_days (day, usd) SELECT substr(ts, 1, 10), SUM(` + rowUSD("") + `) FROM cap_reservations GROUP BY substr(ts, 1, 10);
-- The last outputs a reservation's estimate reads, from the index alone.
DROP INDEX cap_reservations_outputs;
CREATE INDEX cap_reservations_outputs ON cap_reservations (provider, id, output_tokens, settled, sent) WHERE settled = 1 AND sent = 1 AND output_tokens > 0;
`
	if !pg {
		return head + `CREATE TRIGGER cap_reservations_insert AFTER INSERT ON cap_reservations BEGIN
	` + add("NEW.") + `END;
CREATE TRIGGER cap_reservations_update AFTER UPDATE ON cap_reservations BEGIN
	` + sub("OLD.") + "	" + add("NEW.") + `END;
CREATE TRIGGER cap_reservations_delete AFTER DELETE ON cap_reservations BEGIN
	` + sub("OLD.") + `END;
`
	}
	return head + `CREATE FUNCTION cap_reservations_totals() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	IF TG_OP <> 'INSERT' THEN
	` + sub("OLD.") + `	END IF;
	IF TG_OP <> 'DELETE' THEN
	` + add("NEW.") + `	END IF;
	RETURN NULL;
END $$;
CREATE TRIGGER cap_reservations_totals AFTER INSERT OR UPDATE OR DELETE ON cap_reservations
	FOR EACH ROW EXECUTE FUNCTION cap_reservations_totals();
`
}

// dayKey is the spend_days key of the UTC day that t is in.
func dayKey(t time.Time) string { return FormatTime(t)[:10] }

// ReserveSpend checks r against every limit it carries and takes one
// reservation when all hold, in one IMMEDIATE transaction (so concurrent
// processes cannot both take the last of a limit; on PostgreSQL every
// reservation holds pgLockSpend to its commit). It reads its limits' use from
// cap_days and spend_days. A settlement running at the same time takes no
// lock: its row's triggers add a difference to those totals (a relative
// update, made under the totals row's lock on PostgreSQL, where a
// SERIALIZABLE settlement that meets a concurrent reservation's update is
// retried), and a reservation's decision does not change what a settlement
// adds, so either order of the two is a serial one. The output estimate is
// the median output of the link's last settled calls (at most
// recentOutputs), else r.MaxOutput; the cost estimate prices the input
// estimate and that output at r.Price. A limit is crossed when its use
// (settled use plus open estimates) plus this call's estimate would pass
// it; the cap when its count reached it.
func (s *Store) ReserveSpend(ctx context.Context, r chain.SpendRequest) (chain.SpendGrant, error) {
	var g chain.SpendGrant
	err := s.writeMode(ctx, "reserve "+r.Provider, writeMode{locked: true}, func(tx *sql.Tx) error {
		g = chain.SpendGrant{}
		if err := s.pgLock(ctx, tx, pgLockSpend); err != nil {
			return err
		}
		n, tokens, linkUSD, err := linkUse(ctx, tx, r.Provider, r.DayStart)
		if err != nil {
			return err
		}
		// A cap counts requests, not estimates: a link at its cap is
		// refused before the estimate is read (a simulated year meets
		// that refusal more often than any other).
		if r.Cap > 0 && n+1 > r.Cap {
			g.Refused, g.Used, g.Limit = chain.LimitCap, float64(n), float64(r.Cap)
			return nil
		}
		// The estimate reads settled rows only and need not see the last
		// settlement: the lock, held to the commit, covers the decision.
		out, err := outputEstimate(ctx, tx, r.Provider, r.MaxOutput)
		if err != nil {
			return err
		}
		g.EstTokens, g.EstUSD = r.InputTokens+out, r.Price.Cost(r.InputTokens, out)
		chainDay, chainMonth := 0.0, 0.0
		if r.ChainDailyUSD > 0 || r.ChainMonthlyUSD > 0 {
			// Only the month's days when a monthly limit needs them; a
			// daily limit alone reads the day's (the month sum is then
			// unused). Both periods are bounded on both sides: a
			// reservation dated in the future (a clock set back) never
			// counts toward today.
			from, to := r.ChainMonthStart, r.ChainMonthStart.AddDate(0, 1, 0)
			if r.ChainMonthlyUSD <= 0 {
				from, to = r.ChainDayStart, r.ChainDayStart.AddDate(0, 0, 1)
			}
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(CASE WHEN day = ? THEN usd END), 0), COALESCE(SUM(usd), 0)
FROM spend_days WHERE day >= ? AND day < ?`, dayKey(r.ChainDayStart), dayKey(from), dayKey(to)).Scan(&chainDay, &chainMonth); err != nil {
				return err
			}
		}
		for _, c := range []struct {
			limit     chain.SpendLimit
			used, max float64
			this      float64
		}{
			{chain.LimitTokens, float64(tokens), float64(r.DailyTokens), float64(g.EstTokens)},
			{chain.LimitLinkUSD, linkUSD, r.DailyUSD, g.EstUSD},
			{chain.LimitChainDay, chainDay, r.ChainDailyUSD, g.EstUSD},
			{chain.LimitChainMonth, chainMonth, r.ChainMonthlyUSD, g.EstUSD},
		} {
			if c.max > 0 && c.used+c.this > c.max {
				g.Refused, g.Used, g.Limit = c.limit, c.used, c.max
				return nil
			}
		}
		g.ID, err = s.d.insertID(ctx, tx, `INSERT INTO cap_reservations (provider, day_start, ts, est_tokens, est_output, est_usd) VALUES (?, ?, ?, ?, ?, ?)
RETURNING id`, r.Provider, FormatTime(r.DayStart), FormatTime(r.Now), g.EstTokens, out, g.EstUSD)
		return err
	})
	if err != nil {
		return chain.SpendGrant{}, err
	}
	return g, nil
}

// recentOutputsSQL reads a provider's last settled outputs, newest first.
const recentOutputsSQL = `SELECT output_tokens FROM cap_reservations
WHERE provider = ? AND settled = 1 AND sent = 1 AND output_tokens > 0 ORDER BY id DESC LIMIT ?`

// outputEstimate is the median output tokens of provider's last settled,
// sent reservations, or max when there are none.
func outputEstimate(ctx context.Context, tx *sql.Tx, provider string, max int) (int, error) {
	rows, err := tx.QueryContext(ctx, recentOutputsSQL, provider, recentOutputs)
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

// linkUse is provider's use of the cap day that starts at dayStart, as a
// reservation counts it: requests, tokens and USD (cap_days).
func linkUse(ctx context.Context, q queryRower, provider string, dayStart time.Time) (requests, tokens int, usd float64, err error) {
	err = q.QueryRowContext(ctx, `SELECT COALESCE(SUM(requests), 0), COALESCE(SUM(tokens), 0), COALESCE(SUM(usd), 0)
FROM cap_days WHERE provider = ? AND day_start = ?`, provider, FormatTime(dayStart)).Scan(&requests, &tokens, &usd)
	return requests, tokens, usd, err
}

// LinkSpend is provider's use in the cap day that starts at dayStart:
// tokens and USD, settled use plus open estimates, as ReserveSpend counts.
func (s *Store) LinkSpend(ctx context.Context, provider string, dayStart time.Time) (tokens int, usd float64, err error) {
	_, tokens, usd, err = linkUse(ctx, s.db, provider, dayStart)
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

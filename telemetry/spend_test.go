package telemetry

import (
	"context"
	"database/sql"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// TestReserveSpendConcurrentBudget: eight stores on one file race for a
// chain daily budget that fits exactly five estimates; five are granted,
// the rest refused as budget.daily_usd.
func TestReserveSpendConcurrentBudget(t *testing.T) {
	forEachBackend(t, testReserveSpendConcurrentBudget)
}

func testReserveSpendConcurrentBudget(t *testing.T) {
	_, path := openTemp(t)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	price := chain.Price{InputPerMTok: 1, OutputPerMTok: 2}
	req := chain.SpendRequest{Provider: "openrouter", DayStart: utcMidnight(now), Now: now,
		ChainDayStart: utcMidnight(now), ChainMonthStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		InputTokens: 1000, MaxOutput: 2000, Price: price}
	est := price.Cost(1000, 2000) // 0.005
	req.ChainDailyUSD = 5*est + est/2
	var (
		mu      sync.Mutex
		granted int
		refused = map[chain.SpendLimit]int{}
		wg      sync.WaitGroup
	)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, err := Open(path)
			if err != nil {
				t.Error(err)
				return
			}
			defer s.Close()
			g, err := s.ReserveSpend(context.Background(), req)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if g.Refused == "" {
				granted++
			} else {
				refused[g.Refused]++
			}
		}()
	}
	wg.Wait()
	if granted != 5 || refused[chain.LimitChainDay] != 3 {
		t.Fatalf("granted %d, refused %v; want 5 granted, 3 refused by budget.daily_usd", granted, refused)
	}
}

// TestReserveSpendSettleAndEstimate: settling replaces the estimate by the
// real use (room comes back when the call was cheaper), a call given back
// counts nothing, the next estimate is the median of recent outputs, and
// the link's token limit refuses with reason tokens.
func TestReserveSpendSettleAndEstimate(t *testing.T) {
	forEachBackend(t, testReserveSpendSettleAndEstimate)
}

func testReserveSpendSettleAndEstimate(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	price := chain.Price{InputPerMTok: 1, OutputPerMTok: 1}
	req := chain.SpendRequest{Provider: "groq", DayStart: utcMidnight(now), Now: now, InputTokens: 100, MaxOutput: 900,
		DailyTokens: 2500, DailyUSD: 1, Price: price}
	g1, err := s.ReserveSpend(ctx, req)
	if err != nil || g1.Refused != "" || g1.EstTokens != 1000 || math.Abs(g1.EstUSD-0.001) > 1e-12 {
		t.Fatalf("first: %+v %v", g1, err)
	}
	g2, _ := s.ReserveSpend(ctx, req)
	if g3, _ := s.ReserveSpend(ctx, req); g3.Refused != chain.LimitTokens || g3.Used != 2000 {
		t.Fatalf("third should cross daily_tokens 2500 (2000 open + 1000): %+v", g3)
	}
	if err := s.SettleCap(ctx, g2.ID, false, 0); err != nil { // never sent
		t.Fatal(err)
	}
	if err := settle(s, chain.CapSettlement{ID: g1.ID, Sent: true, Tokens: 400, OutputTokens: 300, CostUSD: 0.0004}); err != nil {
		t.Fatal(err)
	}
	g4, err := s.ReserveSpend(ctx, req)
	if err != nil || g4.Refused != "" || g4.EstTokens != 400 {
		t.Fatalf("after settling: want granted with the median output 300 (+100 in), got %+v %v", g4, err)
	}
	req.DailyUSD = 0.0006 // 0.0004 settled + 0.0004 open (g4) already pass it: refused
	if g5, _ := s.ReserveSpend(ctx, req); g5.Refused != chain.LimitLinkUSD {
		t.Fatalf("want daily_budget_usd refusal, got %+v", g5)
	}
}

func settle(s *Store, c chain.CapSettlement) error {
	return s.RecordAttempt(context.Background(), chain.AttemptRecord{
		Call: chain.Call{Provider: "groq", Model: "m", RequestID: "j", TS: time.Now(), Outcome: chain.OutcomeOK}, Cap: &c})
}

func utcMidnight(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// TestClaimJobWithinCeiling: with a ceiling of 2, one job published today
// and one live claim of another owner fill the day; a job in publishing is
// still claimed (reconciled); a stale claim (older than the lease) or a
// publication of yesterday does not count.
func TestClaimJobWithinCeiling(t *testing.T) { forEachBackend(t, testClaimJobWithinCeiling) }

func testClaimJobWithinCeiling(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	day := utcMidnight(now)
	a := chain.Owner{Host: "h", PID: 1, Token: "a"}
	b := chain.Owner{Host: "h", PID: 2, Token: "b"}
	lease := 10 * time.Minute
	claim := func(o chain.Owner, id string, at time.Time) (bool, chain.JobStatus) {
		t.Helper()
		ok, cur, err := s.ClaimJobWithin(ctx, chain.JobRecord{ID: id, Topic: id, Slot: "2026-12-01"}, o, nil, lease, at, day, 2)
		if err != nil {
			t.Fatal(err)
		}
		return ok, cur.Status
	}
	if ok, _ := claim(a, "old", now.Add(-20*time.Hour)); !ok { // yesterday's claim and publication
		t.Fatal("old not claimed")
	}
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "old", Status: chain.JobPublished, PublishedAt: now.Add(-20 * time.Hour)}, a, now.Add(-20*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if ok, _ := claim(a, "one", now); !ok {
		t.Fatal("one not claimed")
	}
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "one", Status: chain.JobPublished}, a, now); err != nil {
		t.Fatal(err)
	}
	if ok, _ := claim(b, "two", now); !ok {
		t.Fatal("two not claimed: only one published today")
	}
	if ok, st := claim(a, "three", now.Add(time.Minute)); ok || st != chain.JobDayFull {
		t.Fatalf("three: claimed %v status %s, want day_full (1 published + 1 live claim)", ok, st)
	}
	if ok, _ := claim(a, "three", now.Add(lease+2*time.Minute)); !ok {
		t.Fatal("three not claimed after two's claim went stale")
	}
}

// TestCountsIgnoreTheFuture: a clock set forward to 2027-01-02 and back to
// 2026-12-05. What the forward clock recorded (a reservation, a
// publication) counts toward neither the day nor the month of 2026-12-05:
// every day and month count is bounded on both sides.
func TestCountsIgnoreTheFuture(t *testing.T) { forEachBackend(t, testCountsIgnoreTheFuture) }

func testCountsIgnoreTheFuture(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	price := chain.Price{InputPerMTok: 1, OutputPerMTok: 2}
	est := price.Cost(1000, 2000)
	req := func(now time.Time) chain.SpendRequest {
		return chain.SpendRequest{Provider: "paid", DayStart: utcMidnight(now), Now: now, Cap: 1, DailyTokens: 3000, DailyUSD: est * 1.5,
			ChainDayStart: utcMidnight(now), ChainMonthStart: time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC),
			ChainDailyUSD: est * 1.5, ChainMonthlyUSD: est * 1.5, InputTokens: 1000, MaxOutput: 2000, Price: price}
	}
	ahead := time.Date(2027, 1, 2, 10, 0, 0, 0, time.UTC)
	back := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	if g, err := s.ReserveSpend(ctx, req(ahead)); err != nil || g.Refused != "" {
		t.Fatalf("ahead: %+v %v", g, err)
	}
	if g, err := s.ReserveSpend(ctx, req(back)); err != nil || g.Refused != "" {
		t.Fatalf("back on 2026-12-05: refused by %s (used %g of %g): a reservation dated 2027-01-02 counted — %v", g.Refused, g.Used, g.Limit, err)
	}
	month := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	if usd, err := s.ChainSpend(ctx, month, month.AddDate(0, 1, 0)); err != nil || usd > est*1.01 {
		t.Fatalf("December's spend %g (one call ~%g): %v", usd, est, err)
	}
	owner := chain.Owner{Host: "h", PID: 1}
	if ok, _, err := s.ClaimJobWithin(ctx, chain.JobRecord{ID: "future", Topic: "future", Slot: "2027-01-02"}, owner, nil, time.Minute, ahead, utcMidnight(ahead), 1); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "future", Status: chain.JobPublished}, owner, ahead); err != nil {
		t.Fatal(err)
	}
	ok, cur, err := s.ClaimJobWithin(ctx, chain.JobRecord{ID: "today", Topic: "today", Slot: "2026-12-05"}, owner, nil, time.Minute, back, utcMidnight(back), 1)
	if err != nil || !ok {
		t.Fatalf("posts_per_day 1 on 2026-12-05: claimed %v (%s), %v — a publication dated 2027-01-02 counted", ok, cur.Status, err)
	}
}

// TestSpendTotalsMatchRows: the running totals the triggers keep
// (cap_days, spend_days) are, after every reservation, settlement, give-back
// and deletion of a random sequence across links, cap days and UTC days,
// what summing the reservations themselves gives; and a refusal by the
// chain's day comes at the same reservation as the sum would make it.
func TestSpendTotalsMatchRows(t *testing.T) {
	forEachBackend(t, testSpendTotalsMatchRows)
}

func testSpendTotalsMatchRows(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 26))
	start := time.Date(2026, 12, 1, 20, 0, 0, 0, time.UTC)
	price := chain.Price{InputPerMTok: 0.3, OutputPerMTok: 2.5}
	var open []int64
	var refused int
	for i := range 400 {
		now := start.Add(time.Duration(i) * 7 * time.Minute)
		provider := []string{"gemini", "groq", "cerebras"}[rng.IntN(3)]
		// gemini's cap day starts at 08:00 UTC, the others' at midnight.
		day := utcMidnight(now)
		if provider == "gemini" {
			day = utcMidnight(now.Add(-8 * time.Hour)).Add(8 * time.Hour)
		}
		switch op := rng.IntN(10); {
		case op < 5 || len(open) == 0:
			req := chain.SpendRequest{Provider: provider, DayStart: day, Now: now, Cap: 40, DailyTokens: 5000000,
				ChainDayStart: utcMidnight(now), ChainMonthStart: time.Date(2026, now.Month(), 1, 0, 0, 0, 0, time.UTC),
				ChainDailyUSD: 0.3, InputTokens: 500 + rng.IntN(3000), MaxOutput: 8192, Price: price}
			// What the reservations of the chain's day add up to decides.
			dayUSD, err := s.ChainSpend(ctx, req.ChainDayStart, req.ChainDayStart.AddDate(0, 0, 1))
			if err != nil {
				t.Fatal(err)
			}
			g, err := s.ReserveSpend(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			if g.Refused == chain.LimitChainDay {
				refused++
				if dayUSD+g.EstUSD <= req.ChainDailyUSD {
					t.Fatalf("step %d: refused by the chain's day at %.9f + %.9f, within %.2f", i, dayUSD, g.EstUSD, req.ChainDailyUSD)
				}
			}
			if g.ID != 0 {
				open = append(open, g.ID)
			}
		case op < 8:
			k := rng.IntN(len(open))
			id := open[k]
			open = append(open[:k], open[k+1:]...)
			sent := rng.IntN(4) > 0
			err := s.write(ctx, "settle", func(tx *sql.Tx) error {
				return settleSpend(ctx, tx, chain.CapSettlement{ID: id, Sent: sent, Tokens: rng.IntN(9000),
					OutputTokens: rng.IntN(6000), CostUSD: rng.Float64() / 100})
			})
			if err != nil {
				t.Fatal(err)
			}
		case op < 9:
			if _, _, _, err := s.ReserveCap(ctx, provider, day, 0, now); err != nil {
				t.Fatal(err)
			}
		default:
			if _, err := s.db.ExecContext(ctx, "DELETE FROM cap_reservations WHERE id = ?", open[0]); err != nil {
				t.Fatal(err)
			}
			open = open[1:]
		}
		assertTotals(t, s, i)
	}
	if refused == 0 {
		t.Fatal("no reservation was refused by the chain's day: the sequence does not reach the limit")
	}
}

// assertTotals compares cap_days and spend_days with the sums of the rows.
func assertTotals(t *testing.T, s *Store, step int) {
	t.Helper()
	for _, q := range []struct{ totals, rows string }{
		{"SELECT provider || ' ' || day_start, requests, tokens, usd FROM cap_days WHERE requests <> 0 OR tokens <> 0 OR usd > 1e-12 OR usd < -1e-12 ORDER BY 1",
			`SELECT provider || ' ' || day_start, SUM(CASE WHEN ` + rowCounts("") + ` THEN 1 ELSE 0 END), SUM(` + rowTokens("") + `), ` + useUSD + `
FROM cap_reservations GROUP BY provider, day_start HAVING SUM(CASE WHEN ` + rowCounts("") + ` THEN 1 ELSE 0 END) <> 0 OR SUM(` + rowTokens("") + `) <> 0 OR ` + useUSD + ` > 1e-12 ORDER BY 1`},
		{"SELECT day, 0, 0, usd FROM spend_days WHERE usd > 1e-12 OR usd < -1e-12 ORDER BY 1",
			`SELECT substr(ts, 1, 10), 0, 0, ` + useUSD + ` FROM cap_reservations GROUP BY substr(ts, 1, 10) HAVING ` + useUSD + ` > 1e-12 ORDER BY 1`},
	} {
		got, want := totalRows(t, s, q.totals), totalRows(t, s, q.rows)
		if len(got) != len(want) {
			t.Fatalf("step %d: totals %v, rows %v", step, got, want)
		}
		for i := range got {
			g, w := got[i], want[i]
			if g.key != w.key || g.n != w.n || g.tokens != w.tokens || math.Abs(g.usd-w.usd) > 1e-9 {
				t.Fatalf("step %d: totals %+v, rows %+v", step, g, w)
			}
		}
	}
}

type totalRow struct {
	key       string
	n, tokens int64
	usd       float64
}

func totalRows(t *testing.T, s *Store, q string) []totalRow {
	t.Helper()
	rows, err := s.db.QueryContext(context.Background(), q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []totalRow
	for rows.Next() {
		var r totalRow
		if err := rows.Scan(&r.key, &r.n, &r.tokens, &r.usd); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestSpendTotalsMigrated: migration 12 fills the running totals from the
// reservations a database already holds.
func TestSpendTotalsMigrated(t *testing.T) {
	forEachBackend(t, testSpendTotalsMigrated)
}

func testSpendTotalsMigrated(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 23, 0, 0, 0, time.UTC)
	for i := range 30 {
		at := now.Add(time.Duration(i) * 9 * time.Minute)
		g, err := s.ReserveSpend(ctx, chain.SpendRequest{Provider: []string{"groq", "gemini"}[i%2], DayStart: utcMidnight(at), Now: at,
			InputTokens: 1000 + i, MaxOutput: 4000, Price: chain.Price{InputPerMTok: 0.59, OutputPerMTok: 0.79}})
		if err != nil {
			t.Fatal(err)
		}
		if i%3 > 0 {
			if err := s.write(ctx, "settle", func(tx *sql.Tx) error {
				return settleSpend(ctx, tx, chain.CapSettlement{ID: g.ID, Sent: i%3 == 1, Tokens: 900 + i, OutputTokens: 700, CostUSD: 0.001 * float64(i)})
			}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Back to the schema before migration 12, the reservations kept.
	undo := `DROP TRIGGER cap_reservations_insert; DROP TRIGGER cap_reservations_update; DROP TRIGGER cap_reservations_delete;`
	if s.d.name == BackendPostgres {
		undo = `DROP TRIGGER cap_reservations_totals ON cap_reservations; DROP FUNCTION cap_reservations_totals();`
	}
	undo += ` DROP TABLE cap_days; DROP TABLE spend_days; DROP INDEX cap_reservations_outputs;
CREATE INDEX cap_reservations_outputs ON cap_reservations (provider, id) WHERE settled = 1 AND sent = 1 AND output_tokens > 0;
DELETE FROM schema_migrations WHERE version = 12;`
	if _, err := s.db.ExecContext(ctx, undo); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var n int
	if err := s.db.QueryRowContext(ctx, "SELECT count(*) FROM cap_days").Scan(&n); err != nil || n == 0 {
		t.Fatalf("cap_days after the migration: %d rows, %v", n, err)
	}
	assertTotals(t, s, 0)
}

package telemetry

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// WeeklyCostQuery is the README's weekly cost query (section The database).
const weeklyCostQuery = `SELECT provider, COUNT(*) AS calls, ROUND(SUM(cost_estimate_usd), 4) AS usd
FROM calls WHERE ts >= date('now', '-7 days') GROUP BY provider ORDER BY usd DESC`

// benchRows is the number of calls rows BenchmarkWeeklyCostQuery generates:
// CONTENTPIPE_BENCH_ROWS, default 200,000 (the BENCHMARKS.md figure uses
// CONTENTPIPE_BENCH_ROWS=10000000).
func benchRows(b *testing.B) int {
	if v := os.Getenv("CONTENTPIPE_BENCH_ROWS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("CONTENTPIPE_BENCH_ROWS=%q: want a positive row count", v)
		}
		return n
	}
	return 200_000
}

// fillCalls inserts n calls rows spread evenly over the year before now,
// in one transaction through one prepared statement, shaped like real rows
// (four providers, a few outcomes, prompt versions and previous errors).
func fillCalls(b *testing.B, s *Store, n int, now time.Time) {
	b.Helper()
	ctx := context.Background()
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		b.Fatal(err)
	}
	st, err := tx.PrepareContext(ctx, `INSERT INTO calls (provider, model, request_id, attempt, ts, input_tokens, output_tokens,
		latency_ms, first_token_ms, http_status, cost_estimate_usd, quality_score, outcome, prompt_version, previous_error, purpose, checks)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'job', ?)`)
	if err != nil {
		b.Fatal(err)
	}
	providers := []string{"gemini", "groq", "cerebras", "openrouter"}
	models := []string{"gemini-flash-latest", "llama-3.3-70b-versatile", "gpt-oss-120b", "meta-llama/llama-3.3-70b-instruct"}
	rng := rand.New(rand.NewPCG(1, 2))
	span := 365 * 24 * time.Hour
	start := now.Add(-span)
	for i := range n {
		p := rng.IntN(100)
		k := 0
		switch {
		case p >= 94:
			k = 3
		case p >= 88:
			k = 2
		case p >= 80:
			k = 1
		}
		ts := start.Add(time.Duration(float64(span) * float64(i) / float64(n)))
		outcome, status, prev := "ok", 200, ""
		var score any = 80.0 + float64(rng.IntN(20))
		in, out := 700+rng.IntN(300), 1800+rng.IntN(900)
		switch r := rng.IntN(100); {
		case r < 5:
			outcome, status, score, in, out, prev = "rate_limited", 429, nil, 0, 0, "rate_limited 429: Quota exceeded for metric"
		case r < 7:
			outcome, status, score, in, out = "server_error", 503, nil, 0, 0
		case r < 9:
			outcome = "rejected"
			score = 40.0
		}
		cost := float64(in)*0.3/1e6 + float64(out)*2.5/1e6
		if _, err := st.ExecContext(ctx, providers[k], models[k], fmt.Sprintf("%s/topic-%d", ts.Format("2006-01-02"), i%8), 1+i%3,
			FormatTime(ts), in, out, 4000+rng.IntN(20000), 500+rng.IntN(2000), status, cost, score, outcome,
			"article@3/"+map[bool]string{true: "gemini", false: "openai"}[k == 0], prev, "[]"); err != nil {
			b.Fatal(err)
		}
	}
	st.Close()
	if err := tx.Commit(); err != nil {
		b.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE); ANALYZE"); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkWeeklyCostQuery measures the README's weekly cost query on a
// generated calls table (CONTENTPIPE_BENCH_ROWS rows over one year) and
// reports the file's bytes per row. It only runs with -bench.
func BenchmarkWeeklyCostQuery(b *testing.B) {
	n := benchRows(b)
	s, path := openTemp(b)
	now := time.Now().UTC()
	t0 := time.Now()
	fillCalls(b, s, n, now)
	fill := time.Since(t0)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	_, plan, err := s.Query(ctx, "EXPLAIN QUERY PLAN "+weeklyCostQuery)
	if err != nil {
		b.Fatal(err)
	}
	var steps []string
	for _, r := range plan {
		steps = append(steps, fmt.Sprint(r[len(r)-1]))
	}
	b.Logf("%d rows generated in %s; file %d bytes = %.1f bytes/row; plan: %s", n, fill.Round(time.Millisecond), fi.Size(),
		float64(fi.Size())/float64(n), strings.Join(steps, " | "))
	// SQLite may take calls(ts) or the skip-scan of calls(provider, ts):
	// either way a ts range on an index, never a scan of the table.
	if p := strings.Join(steps, " "); !strings.Contains(p, "SEARCH calls USING") || !strings.Contains(p, "ts>?") {
		b.Errorf("the weekly query does not search an index on ts: %v", steps)
	}
	b.ResetTimer()
	for b.Loop() {
		_, rows, err := s.Query(ctx, weeklyCostQuery)
		if err != nil {
			b.Fatal(err)
		}
		if len(rows) != 4 {
			b.Fatalf("%d providers in the weekly query, want 4", len(rows))
		}
	}
	b.ReportMetric(float64(fi.Size())/float64(n), "bytes/row")
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMoneyBudgetConcurrentRuns: a chain budget.daily_usd that fits three
// articles' cost; four concurrent runs on a backlog of 10 publish exactly
// 3, the 80 % warning and the reached alert are queued once each, and the
// settled spend passes the budget by no more than one call's estimate
// error. The links have a history from the day before (estimates use the
// median of recent outputs), as a running installation does.
func TestMoneyBudgetConcurrentRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("four concurrent runs: skipped with -short")
	}
	// One price for every link, so that an article costs about the same
	// whichever link writes it; a link without history is estimated at
	// max_tokens (4000 output tokens: more than the budget).
	link := "max_tokens: 4000, price: {input_per_mtok: 1, output_per_mtok: 2}"
	links := map[string]string{"gemini": link, "groq": link, "cerebras": link, "openrouter": link}
	w := newWorld(t, worldOptions{topics: 12, link: links,
		job:   "{posts_per_run: 2, deadline: 1m, language: en, target_words: 300, parallel: 1}",
		extra: "budget: {daily_usd: 100}\n"})
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.RFC3339)
	if r := run(t, w.dir, append([]string{envNow + "=" + yesterday}, w.env...), "run"); r.code != 0 {
		t.Fatalf("history run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	var article float64 // the cost of one published article yesterday
	if err := db.QueryRow(`SELECT AVG(cost_estimate_usd) FROM calls WHERE outcome = 'ok'`).Scan(&article); err != nil || article <= 0 {
		t.Fatalf("history cost %v: %v", article, err)
	}
	budget := 3.5 * article
	cfgPath := filepath.Join(w.dir, "contentpipe.yaml")
	b, _ := os.ReadFile(cfgPath)
	cfg := strings.Replace(string(b), "posts_per_run: 2", "posts_per_run: 10", 1)
	cfg = strings.Replace(cfg, "budget: {daily_usd: 100}", fmt.Sprintf("budget: {daily_usd: %.8f}", budget), 1)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	results := make(chan result, 4)
	for range 4 {
		go func() { results <- run(t, w.dir, w.env, "run") }()
	}
	for range 4 {
		r := <-results
		noCrash(t, "budget run", r)
		if r.code != 0 && r.code != 1 {
			t.Errorf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	today := time.Now().UTC().Format(time.DateOnly)
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND substr(published_at, 1, 10) = ?`, today); n != 3 {
		t.Errorf("%d published today under a budget for 3 (article $%.6f, budget $%.6f)\n%s", n, article, budget, dumpJobs(t, db, ""))
	}
	var settled, maxErr float64
	if err := db.QueryRow(`SELECT COALESCE(SUM(usd), 0), COALESCE(MAX(ABS(est_usd - usd)), 0) FROM cap_reservations
WHERE settled = 1 AND sent = 1 AND substr(ts, 1, 10) = ?`, today).Scan(&settled, &maxErr); err != nil {
		t.Fatal(err)
	}
	if settled > budget+maxErr {
		t.Errorf("settled spend $%.6f passes the budget $%.6f by more than one call's estimate error $%.6f", settled, budget, maxErr)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM skips WHERE reason = 'budget'`); n == 0 {
		t.Error("no budget skips recorded")
	}
	for _, k := range []string{"warn", "reached"} {
		if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE key = ?`, "budget:budget.daily_usd::"+today+":"+k); n != 1 {
			t.Errorf("%d %s alerts for budget.daily_usd, want 1", n, k)
		}
	}
	rows, err := db.Query(`SELECT provider, COUNT(*), AVG(est_usd), AVG(usd), AVG(ABS(est_usd - usd)), MAX(ABS(est_usd - usd))
FROM cap_reservations WHERE settled = 1 AND sent = 1 AND substr(ts, 1, 10) = ? GROUP BY provider ORDER BY provider`, today)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var p string
		var n int
		var est, act, mean, mx float64
		if err := rows.Scan(&p, &n, &est, &act, &mean, &mx); err != nil {
			t.Fatal(err)
		}
		t.Logf("FIGURES estimate error %s: calls=%d mean_est=$%.6f mean_actual=$%.6f mean_abs_err=$%.6f max_abs_err=$%.6f", p, n, est, act, mean, mx)
	}
	rep := run(t, w.dir, w.env, "report", "--days", "1")
	for _, want := range []string{"Budgets (", "chain        budget.daily_usd", " published ", "per article", "Estimate error per link", "gemini"} {
		if !strings.Contains(rep.stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, rep.stdout)
		}
	}
	t.Logf("FIGURES budget: article=$%.6f budget=$%.6f settled=$%.6f", article, budget, settled)
}

// TestBudgetFallsThroughToCheaperLink: with no history a call is
// estimated at max_tokens; a daily budget below Gemini's estimate (built-in
// price 0.30/2.50) but above Groq's (0.59/0.79) skips Gemini with reason
// budget, without a call, and Groq writes the article.
func TestBudgetFallsThroughToCheaperLink(t *testing.T) {
	t.Parallel()
	links := map[string]string{"gemini": "max_tokens: 4000", "groq": "max_tokens: 4000", "cerebras": "max_tokens: 4000", "openrouter": "max_tokens: 4000"}
	w := newWorld(t, worldOptions{topics: 1, link: links, extra: "budget: {daily_usd: 0.006}\n"})
	r := run(t, w.dir, w.env, "run")
	if r.code != 0 || !strings.Contains(r.stdout, "1 published") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM skips WHERE provider = 'gemini' AND reason = 'budget'`); n != 1 {
		t.Errorf("%d gemini budget skips, want 1", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE provider = 'gemini'`); n != 0 || w.sims.Server("gemini").Requests() != 0 {
		t.Errorf("gemini called %d times despite the budget", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND provider = 'groq'`); n != 1 {
		t.Errorf("the article was not written by groq:\n%s", dumpJobs(t, db, ""))
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// allDown makes every simulated provider answer 500.
func allDown() map[sim.Flavor]sim.Profile {
	down := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultServerError: 1}}
	return map[sim.Flavor]sim.Profile{sim.FlavorGemini: down, sim.FlavorGroq: down, sim.FlavorCerebras: down, sim.FlavorOpenRouter: down}
}

// TestAlertsTelegramDownDuringRunSentByNextCommand: every provider fails,
// Telegram is down during the run: the run still ends normally (exit 1 for
// the deferred jobs), its one chain-down incident message (not one per
// job) stays in the outbox, and the next command of another kind delivers
// every pending alert exactly once.
func TestAlertsTelegramDownDuringRunSentByNextCommand(t *testing.T) {
	t.Parallel()
	const topics = 3
	w, bot := telegramWorld(t, topics, allDown(), "")
	bot.SetDown(true)
	metrics := filepath.Join(w.dir, "run.prom")
	r := run(t, w.dir, w.env, "run", "--metrics-file", metrics)
	if r.code != 1 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if strings.Contains(r.stderr, tgToken) || strings.Contains(r.stdout, tgToken) {
		t.Fatal("the bot token was printed")
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE rule = 'chain_down' AND sent_at IS NULL`); n != 1 {
		t.Fatalf("%d pending chain_down alerts for %d deferred jobs, want 1", n, topics)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE last_error LIKE '%AAH-e2e%'`); n != 0 {
		t.Fatal("the token is in alerts.last_error")
	}
	b, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`contentpipe_run_jobs{outcome="deferred"} 3`, `contentpipe_run_calls{provider="gemini",outcome="server_error"}`,
		`contentpipe_calls_total{provider="groq",outcome="server_error"}`, "contentpipe_last_success_timestamp_seconds 0",
		`contentpipe_alerts_pending`, "# TYPE contentpipe_calls_total counter"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics lack %q:\n%s", want, b)
		}
	}
	if len(bot.Messages()) != 0 {
		t.Fatal("a message got through a down Telegram")
	}

	bot.SetDown(false)
	h := run(t, w.dir, w.env, "health") // the next command, of another kind
	if h.code != 1 {
		t.Fatalf("health: exit %d\n%s", h.code, h.stderr)
	}
	var shown strings.Builder
	for _, m := range bot.Messages() {
		shown.WriteString(m.Text + "\n")
	}
	if n := strings.Count(shown.String(), "Down: the whole chain"); n != 1 {
		t.Fatalf("%d chain-down messages, want 1:\n%s", n, shown.String())
	}
	want := count(t, db, `SELECT COUNT(*) FROM alerts`)
	seen := map[string]int{}
	for _, m := range bot.Messages() {
		seen[m.Text]++
	}
	if len(bot.Messages()) != want || len(seen) != want {
		t.Fatalf("%d messages (%d distinct) for %d alerts:\n%s", len(bot.Messages()), len(seen), want, shown.String())
	}
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE sent_at IS NULL`); n != 0 {
		t.Fatalf("%d alerts still pending", n)
	}
	before := len(bot.Messages())
	if f := run(t, w.dir, w.env, "alerts", "flush"); f.code != 0 || !strings.Contains(f.stdout, "0 alert(s) delivered, 0 pending") {
		t.Fatalf("alerts flush: %d %s %s", f.code, f.stdout, f.stderr)
	}
	if len(bot.Messages()) != before {
		t.Fatal("a later flush sent delivered alerts again")
	}
}

// TestAlertsTwoProcessesFlushOnce starts several flushing processes at once
// over the same pending alerts: each alert reaches Telegram once.
func TestAlertsTwoProcessesFlushOnce(t *testing.T) {
	t.Parallel()
	const topics = 6
	w, bot := telegramWorld(t, topics, allDown(), "")
	bot.SetDown(true)
	if r := run(t, w.dir, w.env, "run"); r.code != 1 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	bot.SetDown(false)
	bot.SetDelay(30 * time.Millisecond)
	done := make(chan result, 3)
	for i := 0; i < 3; i++ {
		go func() { done <- run(t, w.dir, w.env, "alerts", "flush") }()
	}
	for i := 0; i < 3; i++ {
		if r := <-done; r.code != 0 {
			t.Errorf("flush exit %d: %s", r.code, r.stderr)
		}
	}
	seen := map[string]int{}
	for _, m := range bot.Messages() {
		seen[m.Text]++
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	want := count(t, db, `SELECT COUNT(*) FROM alerts`)
	if len(bot.Messages()) != want || len(seen) != want {
		t.Fatalf("%d messages (%d distinct) for %d alerts", len(bot.Messages()), len(seen), want)
	}
	for text, n := range seen {
		if n != 1 {
			t.Errorf("sent %d times: %.80q", n, text)
		}
	}
}

// TestAlertsWithoutTelegramGoToStderrOnce: no Telegram settings: alerts are
// printed once on stderr, recorded in the table, marked delivered, and
// nothing fails.
func TestAlertsWithoutTelegramGoToStderrOnce(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 2, allDown(), "")
	r := run(t, w.dir, w.env, "run")
	if r.code != 1 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if n := strings.Count(r.stderr, "ALERT [CRITICAL] Down: the whole chain"); n != 1 {
		t.Fatalf("%d chain-down alerts on stderr, want 1:\n%s", n, r.stderr)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE rule = 'chain_down' AND sent_at IS NOT NULL`); n != 1 {
		t.Fatalf("%d chain_down alerts marked delivered, want 1", n)
	}
	r2 := run(t, w.dir, w.env, "alerts", "flush")
	if r2.code != 0 || strings.Contains(r2.stderr, "ALERT") {
		t.Fatalf("a later command printed old alerts again: %d\n%s", r2.code, r2.stderr)
	}
	if a := run(t, w.dir, w.env, "alerts", "test"); a.code != 2 || !strings.Contains(a.stderr, "TELEGRAM_BOT_TOKEN") {
		t.Fatalf("alerts test without telegram: %d %s", a.code, a.stderr)
	}
}

// `alerts test --demo` shows a newcomer what the messages look like: the
// example alerts delivered through the real Telegram notifier to the
// loopback fake Bot API, printed as the chat displays them (the HTML
// parsed), with no bot, no config and no database.
func TestAlertsTestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, nil, "alerts", "test", "--demo")
	if r.code != 0 {
		t.Fatalf("alerts test --demo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"🔴 CRITICAL contentpipe · chain_down\nDown: the whole chain", "🟠 WARNING contentpipe · provider_down",
		"🔴 CRITICAL contentpipe · auth_error\nProvider gemini refused our credentials", "Fix GEMINI_API_KEY",
		"🟠 WARNING contentpipe · budget", "🔵 INFO contentpipe · review_queue", "🟠 WARNING contentpipe · health",
		"\nSince: ", "\nAutomation: ", "\nRun: contentpipe health"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the demo lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "<b>") || strings.Contains(r.stdout, "`") {
		t.Errorf("the demo shows markup instead of what the chat displays:\n%s", r.stdout)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("alerts test --demo left %d file(s) in the working directory", len(entries))
	}
}

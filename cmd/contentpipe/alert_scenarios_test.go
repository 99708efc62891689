package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// age moves every timestamp recorded in the world's database d into the
// past, as if d had passed before the next command: the alert rules read
// recorded calls, jobs and incidents, so aging them is how these tests
// drive hours between runs without a clock seam in the binary. Every text
// column holding a UTC ISO-8601 timestamp moves; JSON (a breaker's
// samples) does not, so the worlds here keep the circuit breaker closed.
func age(t *testing.T, w *simWorld, d time.Duration) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(w.dir, "data", "pipeline.db")+"?_busy_timeout=15000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var tables []string
	rows, err := db.Query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	rows.Close()
	shift := fmt.Sprintf("-%d seconds", int(d.Seconds()))
	for _, tb := range tables {
		cols, err := db.Query(fmt.Sprintf("SELECT name FROM pragma_table_info('%s') WHERE type = 'TEXT'", tb))
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for cols.Next() {
			var n string
			if err := cols.Scan(&n); err != nil {
				t.Fatal(err)
			}
			names = append(names, n)
		}
		cols.Close()
		for _, c := range names {
			q := fmt.Sprintf(`UPDATE %q SET %q = strftime('%%Y-%%m-%%dT%%H:%%M:%%fZ', %q, ?)
WHERE %q GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]T[0-9][0-9]:[0-9][0-9]:*Z'`, tb, c, c, c)
			if _, err := db.Exec(q, shift); err != nil {
				t.Fatalf("age %s.%s: %v", tb, c, err)
			}
		}
	}
}

// alertWorld is a sim world whose circuit breaker never opens (its samples
// are not aged) and which runs each topic once.
func alertWorld(t *testing.T, topics int, profiles map[sim.Flavor]sim.Profile) *simWorld {
	t.Helper()
	w := newSimWorld(t, topics, profiles, "")
	path := filepath.Join(w.dir, "contentpipe.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(b), "retry:\n", "retry:\n  circuit: {min_samples: 1000}\n", 1)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return w
}

// alertRows lists the outbox's alerts of rule: key and text.
func alertRows(t *testing.T, w *simWorld, rule string) []string {
	t.Helper()
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	return column(t, db, "SELECT key || ' | ' || text FROM alerts WHERE rule = ? ORDER BY id", rule)
}

func setAll(w *simWorld, p sim.Profile) {
	for _, f := range sim.Flavors() {
		w.sims.Server(f).SetProfile(p)
	}
}

// TestAlertChainDownOneIncident: every provider answers 503 for six hours,
// over four runs two hours apart; the fourth run publishes again. One
// chain-down message and one resolved message, no per-job or per-provider
// messages on top.
func TestAlertChainDownOneIncident(t *testing.T) {
	t.Parallel()
	w := alertWorld(t, 2, nil)
	setAll(w, sim.Profile{Rates: map[sim.Fault]float64{sim.FaultUnavailable: 1}})
	for i := range 3 {
		r := run(t, w.dir, w.env, "run")
		if r.code != 1 || !strings.Contains(r.stdout, "deferred") {
			t.Fatalf("run %d during the outage: exit %d\n%s\n%s", i+1, r.code, r.stdout, r.stderr)
		}
		age(t, w, 2*time.Hour)
	}
	setAll(w, sim.Profile{})
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run after the outage: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	down := alertRows(t, w, "chain_down")
	if len(down) != 2 || !strings.Contains(down[0], "Down: the whole chain") || !strings.Contains(down[1], "Resolved: the chain publishes again") {
		t.Fatalf("chain_down messages, want one opened and one resolved:\n%s", strings.Join(down, "\n"))
	}
	if !strings.Contains(down[1], "(6h") {
		t.Errorf("the resolved message does not span the six hours:\n%s", down[1])
	}
	for _, rule := range []string{"provider_down", "all_failed"} {
		if rows := alertRows(t, w, rule); len(rows) != 0 {
			t.Errorf("%s messages during a chain-down incident:\n%s", rule, strings.Join(rows, "\n"))
		}
	}
}

// TestAlertRateLimitsAndQuotaNotDown: two per-minute 429s, then a day of
// quota exhaustion (runs six hours apart) of the first link: automation
// handles both, so no provider-down message.
func TestAlertRateLimitsAndQuotaNotDown(t *testing.T) {
	t.Parallel()
	w := alertWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini: {Script: []sim.Fault{sim.FaultRateMinute, sim.FaultRateMinute}, RetryAfter: 200 * time.Millisecond},
	})
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run with two 429s: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	w.sims.Server(sim.FlavorGemini).SetProfile(sim.Profile{Rates: map[sim.Fault]float64{sim.FaultRateDay: 1}})
	for i := range 5 {
		age(t, w, 6*time.Hour)
		w.addTopics(t, 1)
		if r := run(t, w.dir, w.env, "run"); r.code != 0 {
			t.Fatalf("run %d with gemini's quota out: exit %d\n%s\n%s", i+2, r.code, r.stdout, r.stderr)
		}
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, "SELECT COUNT(*) FROM calls WHERE provider = 'gemini' AND outcome = 'rate_limited'"); n != 2 {
		t.Errorf("%d per-minute 429s recorded, want 2", n)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM calls WHERE provider = 'gemini' AND outcome = 'quota_exhausted'"); n < 2 {
		t.Errorf("%d daily 429s recorded, want the quota out across the day", n)
	}
	if rows := alertRows(t, w, "provider_down"); len(rows) != 0 {
		t.Errorf("provider_down for rate limits and quota:\n%s", strings.Join(rows, "\n"))
	}
	if n := count(t, db, "SELECT COUNT(*) FROM incidents"); n != 0 {
		t.Errorf("%d incidents opened for what automation handles", n)
	}
}

// TestAlertProviderDownTwoHours: the first link answers 503 for two hours
// (and on), runs an hour apart, the chain publishing through the next
// link: exactly one provider-down message.
func TestAlertProviderDownTwoHours(t *testing.T) {
	t.Parallel()
	w := alertWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini: {Rates: map[sim.Fault]float64{sim.FaultUnavailable: 1}},
	})
	for i := range 4 {
		if i > 0 {
			age(t, w, time.Hour)
			w.addTopics(t, 1)
		}
		if r := run(t, w.dir, w.env, "run"); r.code != 0 {
			t.Fatalf("run %d: exit %d\n%s\n%s", i+1, r.code, r.stdout, r.stderr)
		}
	}
	rows := alertRows(t, w, "provider_down")
	if len(rows) != 1 || !strings.Contains(rows[0], "provider gemini keeps failing") {
		t.Fatalf("provider_down messages, want one for gemini:\n%s", strings.Join(rows, "\n"))
	}
	if down := alertRows(t, w, "chain_down"); len(down) != 0 {
		t.Errorf("chain_down while the chain publishes:\n%s", strings.Join(down, "\n"))
	}
}

// A 401 halts the run (exit 3); its alert has the four parts every alert
// has and names the variable holding the refused key, as does the final
// error: T_GEMINI_KEY, not "the key named by api_key_env".
func TestAlertAuthNamesTheVariable(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 2, map[sim.Flavor]sim.Profile{sim.FlavorGemini: {Script: []sim.Fault{sim.FaultUnauthorized}}}, "")
	r := run(t, w.dir, w.env, "run")
	if r.code != exitHalted {
		t.Fatalf("exit %d, want 3\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	text := alertText(t, w, "auth_error")
	for _, want := range []string{"Provider gemini refused our credentials (", "Fix T_GEMINI_KEY (in the environment, or in the config's env_file), then rerun.",
		"\nSince: ", " ago)\nAutomation: The run stopped", "\nRun: `contentpipe health`"} {
		if !strings.Contains(text, want) {
			t.Errorf("auth alert lacks %q:\n%s", want, text)
		}
	}
	if !strings.Contains(r.stderr, "halted: gemini refused our credentials; fix T_GEMINI_KEY and rerun") || strings.Contains(r.stderr, "api_key_env") {
		t.Errorf("the final error should name T_GEMINI_KEY:\n%s", r.stderr)
	}
}

// alertText is the text of the one alert of rule in w's database.
func alertText(t *testing.T, w *simWorld, rule string) string {
	t.Helper()
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	var text string
	if err := db.QueryRow("SELECT text FROM alerts WHERE rule = ?", rule).Scan(&text); err != nil {
		t.Fatalf("the %s alert: %v", rule, err)
	}
	return text
}

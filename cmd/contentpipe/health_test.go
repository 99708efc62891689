package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/alerts/telegramtest"
)

const (
	tgToken = "7000000001:AAH-e2e_token.test"
	tgChat  = "123456789"
)

// telegramWorld is a sim world whose alerts go to a fake Bot API.
func telegramWorld(t *testing.T, topics int, profiles map[sim.Flavor]sim.Profile, extra string) (*simWorld, *telegramtest.Server) {
	t.Helper()
	bot := telegramtest.NewServer(tgToken, tgChat)
	t.Cleanup(bot.Close)
	w := newSimWorld(t, topics, profiles, `alerts:
  telegram: {token_env: T_TG_TOKEN, chat_id_env: T_TG_CHAT, api_endpoint: "`+bot.Endpoint+`"}
`+extra)
	w.env = append(w.env, "T_TG_TOKEN="+tgToken, "T_TG_CHAT="+tgChat)
	return w, bot
}

func TestHealthOneFailingLink(t *testing.T) {
	t.Parallel()
	w, bot := telegramWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorGroq: {Rates: map[sim.Fault]float64{sim.FaultServerError: 1}},
	}, "")
	metrics := filepath.Join(w.dir, "metrics", "health.prom")
	if err := os.MkdirAll(filepath.Dir(metrics), 0o755); err != nil {
		t.Fatal(err)
	}
	r := run(t, w.dir, w.env, "health", "--metrics-file", metrics)
	if r.code != 1 {
		t.Fatalf("health with a failing link: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, " unhealthy ") || !strings.Contains(r.stdout, "groq") || strings.Count(r.stdout, "healthy ") < 3 {
		t.Errorf("summary:\n%s", r.stdout)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM health_checks`); n != 4 {
		t.Fatalf("%d health_checks rows, want 4", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM health_checks WHERE ok = 1 AND latency_ms >= 0 AND provider <> 'groq'`); n != 3 {
		t.Errorf("%d healthy rows, want 3", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM health_checks WHERE provider = 'groq' AND ok = 0 AND http_status = 500 AND outcome = 'server_error'`); n != 1 {
		t.Errorf("groq's failure not recorded with its status")
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE purpose = 'health'`); n != 4 {
		t.Errorf("%d health calls, want 4", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE key = 'health:groq' AND sent_at IS NOT NULL`); n != 1 {
		t.Errorf("health alert for groq not delivered")
	}
	msgs := bot.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "Health check failed for provider groq (unhealthy): server_error (HTTP 500)") {
		t.Errorf("telegram got %+v", msgs)
	}
	b, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`contentpipe_health_up{provider="groq"} 0`, `contentpipe_health_up{provider="gemini"} 1`,
		"# TYPE contentpipe_health_latency_seconds gauge", `contentpipe_health_first_token_seconds{provider="cerebras"}`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("metrics file lacks %q:\n%s", want, b)
		}
	}
	left, _ := filepath.Glob(filepath.Join(filepath.Dir(metrics), ".*tmp*"))
	if len(left) != 0 {
		t.Errorf("temporary metrics files left: %v", left)
	}

	// The same walk an hour later would not alert again (quiet period), and
	// a healthy chain exits 0.
	w2, _ := telegramWorld(t, 1, nil, "")
	if r := run(t, w2.dir, w2.env, "health"); r.code != 0 {
		t.Fatalf("healthy chain: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := run(t, w2.dir, w2.env, "--config", "missing.yaml", "health"); r.code != 2 {
		t.Fatalf("missing config: exit %d", r.code)
	}
}

// TestHealthWholeChainDownOnce: when no link answers the walk, one
// critical message says the whole chain is down with every link's cause,
// and no warning per link comes on top; nothing says jobs fall back.
func TestHealthWholeChainDownOnce(t *testing.T) {
	t.Parallel()
	down := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultServerError: 1}}
	w, bot := telegramWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini: down, sim.FlavorGroq: down, sim.FlavorCerebras: down, sim.FlavorOpenRouter: down,
	}, "")
	r := run(t, w.dir, w.env, "health")
	if r.code != 1 {
		t.Fatalf("health with every link failing: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	msgs := bot.Messages()
	if len(msgs) != 1 || !strings.Contains(msgs[0].Text, "the whole chain is down") || strings.Contains(msgs[0].Text, "fall back to the other") {
		t.Fatalf("telegram got %d messages, want the one chain-down message: %+v", len(msgs), msgs)
	}
	for _, p := range []string{"gemini", "groq", "cerebras", "openrouter"} {
		if !strings.Contains(msgs[0].Text, p+" server_error (HTTP 500)") {
			t.Errorf("the message does not name %s's cause: %s", p, msgs[0].Text)
		}
	}
}

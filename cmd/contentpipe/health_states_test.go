package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// healthRow is the state word health printed for provider ("" = no row).
func healthRow(out, provider string) string {
	m := regexp.MustCompile(`(?m)^(?:\S+ )?  ` + provider + `\s+(\S+)\s`).FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return m[1]
}

// TestHealthStatesOnTheBinary: a link whose daily quota ran out in a job
// earlier is exhausted (not called), a link whose health call is far
// slower than its job calls is cold, one that answers a per-minute 429 is
// rate_limited, one without job calls says it has no baseline: the walk
// exits 0 and alerts nobody, and `report` and the metrics use the same
// words. A link that fails with 503 is unhealthy: exit 1 and one alert.
func TestHealthStatesOnTheBinary(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 2, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini: {Rates: map[sim.Fault]float64{sim.FaultRateDay: 1}},
	}, "health: {cold_factor: 3, cold_floor: 1s}\n")
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE provider = 'groq' AND purpose = 'job' AND outcome = 'ok'`); n != 2 {
		t.Fatalf("%d answered job calls of groq, want 2 (its baseline)", n)
	}
	servedGemini := w.sims.Server(sim.FlavorGemini).Requests()
	w.sims.Server(sim.FlavorGroq).SetProfile(sim.Profile{Script: []sim.Fault{sim.FaultSlowFirstToken}, FirstTokenDelay: 1500 * time.Millisecond})
	w.sims.Server(sim.FlavorCerebras).SetProfile(sim.Profile{Script: []sim.Fault{sim.FaultRateMinute}})
	metrics := filepath.Join(w.dir, "health.prom")
	r := run(t, w.dir, w.env, "health", "--metrics-file", metrics)
	if r.code != 0 {
		t.Fatalf("cold, rate-limited and exhausted links: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	want := map[string]string{"gemini": "exhausted", "groq": "cold", "cerebras": "rate_limited", "openrouter": "healthy"}
	for p, st := range want {
		if got := healthRow(r.stdout, p); got != st {
			t.Errorf("health says %s is %q, want %q:\n%s", p, got, st, r.stdout)
		}
	}
	if w.sims.Server(sim.FlavorGemini).Requests() != servedGemini {
		t.Errorf("the exhausted link was called by the health walk")
	}
	for _, s := range []string{"first token 1.5", "vs median", "over 2 job calls", "no baseline", "1 healthy, 1 cold, 1 rate_limited, 1 exhausted"} {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("health output lacks %q:\n%s", s, r.stdout)
		}
	}
	if n := count(t, db, `SELECT COUNT(*) FROM health_checks WHERE provider = 'groq' AND outcome = 'cold' AND ok = 1 AND detail LIKE 'cold: first token%'`); n != 1 {
		t.Errorf("the cold check is not recorded as cold with its figures")
	}
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE rule = 'health'`); n != 0 {
		t.Errorf("%d health alerts for cold, rate-limited and exhausted links, want 0", n)
	}
	prom, err := os.ReadFile(metrics)
	if err != nil {
		t.Fatal(err)
	}
	for p, st := range want {
		if line := `contentpipe_health_state{provider="` + p + `",state="` + st + `"} 1`; !strings.Contains(string(prom), line) {
			t.Errorf("metrics lack %s", line)
		}
	}
	rep := run(t, w.dir, w.env, "report", "--days", "1")
	for p, st := range want {
		if !regexp.MustCompile(`(?m)^(?:\S+ )?  ` + p + `\s+.*last [0-9: -]+: ` + st + `,`).MatchString(rep.stdout) {
			t.Errorf("report does not call %s %s:\n%s", p, st, rep.stdout)
		}
	}
	if strings.Contains(rep.stdout, "last unhealthy") {
		t.Errorf("report lists a link as unhealthy:\n%s", rep.stdout)
	}

	// A link that fails with 503 is unhealthy: exit 1, one alert for it.
	w.sims.Server(sim.FlavorOpenRouter).SetProfile(sim.Profile{Rates: map[sim.Fault]float64{sim.FaultUnavailable: 1}})
	r = run(t, w.dir, w.env, "health")
	if r.code != 1 || healthRow(r.stdout, "openrouter") != "unhealthy" || healthRow(r.stdout, "groq") != "healthy" {
		t.Fatalf("a 503: exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE rule = 'health'`); n != 1 {
		t.Errorf("%d health alerts, want 1 (openrouter)", n)
	}
}

// TestHealthDamagedDatabase: health runs the full integrity check, so one
// damaged page of the calls index — which the cheap check at open does not
// read — stops it with exit 2 naming the file, before any provider call.
func TestHealthDamagedDatabase(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 2, nil, "")
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	path := filepath.Join(w.dir, "data", "pipeline.db")
	if r := run(t, w.dir, w.env, "health"); r.code != 0 {
		t.Fatalf("health on a sound database: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	conn := openDB(t, path)
	root := count(t, conn, "SELECT rootpage FROM sqlite_master WHERE name = 'calls_provider_ts'")
	size := count(t, conn, "PRAGMA page_size")
	conn.Close()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte{0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42}, int64((root-1)*size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	served := w.served()
	r := run(t, w.dir, w.env, "health")
	noCrash(t, "health on a damaged database", r)
	if r.code != 2 || !strings.Contains(r.stderr, path+" is damaged (PRAGMA integrity_check") {
		t.Fatalf("damaged index page: exit %d, want 2 naming %s\n%s\n%s", r.code, path, r.stdout, r.stderr)
	}
	if w.served() != served {
		t.Errorf("%d provider calls on a damaged database", w.served()-served)
	}
}

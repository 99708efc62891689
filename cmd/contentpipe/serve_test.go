package main

import (
	"bytes"
	"database/sql"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// jobCount counts jobs with status in the database, 0 while it does not exist.
func jobCount(path, status string) int {
	if _, err := os.Stat(path); err != nil {
		return 0
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		return 0
	}
	defer db.Close()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM jobs WHERE status = ?", status).Scan(&n); err != nil {
		return 0
	}
	return n
}

// TestServeStopsCleanlyOnSIGTERM starts the real binary's `serve` with a
// run every second, sends SIGTERM while a job is in flight, and expects
// that job to finish (published), no new job to start, and exit 0.
func TestServeStopsCleanlyOnSIGTERM(t *testing.T) {
	slow := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultSlowFirstToken: 1}, FirstTokenDelay: 1500 * time.Millisecond}
	const topics = 4
	w := newSimWorld(t, topics, map[sim.Flavor]sim.Profile{sim.FlavorGemini: slow}, `schedule: {run: "@every 1s", health: "", report: ""}
`)
	metricsDir := filepath.Join(w.dir, "metrics")
	if err := os.MkdirAll(metricsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary(t), "serve", "--metrics-dir", metricsDir)
	cmd.Dir = w.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "TZ=UTC"}, w.env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	dbPath := filepath.Join(w.dir, "data", "pipeline.db")
	deadline := time.Now().Add(60 * time.Second)
	for jobCount(dbPath, "running") == 0 {
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			t.Fatalf("no job started within 60s\n%s\n%s", so.String(), se.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited early: %v\n%s\n%s", err, so.String(), se.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("serve after SIGTERM: %v\n%s\n%s", err, so.String(), se.String())
		}
	case <-time.After(90 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("serve did not stop within 90s of SIGTERM\n%s\n%s", so.String(), se.String())
	}
	if !strings.Contains(so.String(), "serve stopped") {
		t.Errorf("stdout:\n%s", so.String())
	}
	if n := jobCount(dbPath, "running"); n != 0 {
		t.Errorf("%d jobs left running: the job in flight did not finish", n)
	}
	published := jobCount(dbPath, "published")
	if published < 1 || published >= topics {
		t.Errorf("%d of %d jobs published: want the job in flight finished and no new ones taken", published, topics)
	}
	if b, err := os.ReadFile(filepath.Join(metricsDir, "run.prom")); err != nil || !strings.Contains(string(b), `contentpipe_run_jobs{outcome="published"}`) {
		t.Errorf("run metrics: %v\n%s", err, b)
	}
}

func TestServeBadScheduleIsExit2(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 1, nil, `schedule: {run: "", health: "", report: ""}
`)
	r := run(t, w.dir, w.env, "serve")
	if r.code != 2 || !strings.Contains(r.stderr, "nothing to schedule") {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
}

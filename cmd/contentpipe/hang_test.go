package main

import (
	"bytes"
	"database/sql"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// infiniteCostWorld is a world with one published topic whose call cost
// +Inf, and a quality score of 1e308: what an infinite price wrote before
// config check refused one.
func infiniteCostWorld(t *testing.T) *simWorld {
	t.Helper()
	w := newWorld(t, worldOptions{topics: 2})
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run exit %d\n%s", r.code, r.stderr)
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(w.dir, "data", "pipeline.db")+"?_busy_timeout=15000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("UPDATE calls SET cost_estimate_usd = 9e999 WHERE id = (SELECT MIN(id) FROM calls)"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("UPDATE calls SET quality_score = 1e308 WHERE id = (SELECT MAX(id) FROM calls)"); err != nil {
		t.Fatal(err)
	}
	return w
}

// start starts the binary in w.dir; the test waits for it itself.
func start(t *testing.T, w *simWorld, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = w.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "TZ=UTC"}, w.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	return cmd, &out
}

// waitFor waits at most d for cmd to end; false when it is still running.
func waitFor(cmd *exec.Cmd, d time.Duration) (bool, error) {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return true, err
	case <-time.After(d):
		return false, nil
	}
}

// TestReportChartInfiniteCost: `report --chart` on a database holding an
// infinite cost and an absurd score finishes, draws the chart without
// them, and says so.
func TestReportChartInfiniteCost(t *testing.T) {
	t.Parallel()
	w := infiniteCostWorld(t)
	out := filepath.Join(w.dir, "chart.png")
	cmd, text := start(t, w, "report", "--chart", out)
	ended, err := waitFor(cmd, 60*time.Second)
	if !ended {
		t.Fatalf("report --chart still drawing after 60s:\n%s", text)
	}
	if err != nil {
		t.Fatalf("report --chart: %v\n%s", err, text)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("chart: %v", err)
	}
}

// TestSIGTERMEndsCommands: SIGTERM ends a command within seconds, be it
// drawing a chart or running a query that never ends.
func TestSIGTERMEndsCommands(t *testing.T) {
	w := infiniteCostWorld(t)
	for _, args := range [][]string{
		{"report", "--chart", filepath.Join(w.dir, "chart.png")},
		{"sql", "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"},
	} {
		cmd, text := start(t, w, args...)
		time.Sleep(1500 * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		if ended, _ := waitFor(cmd, 10*time.Second); !ended {
			t.Errorf("%s: still running 10s after SIGTERM:\n%s", strings.Join(args, " "), text)
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// repoFile is a path in the repository, from this package's directory.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimulateFieldNotesDeterministicJSON(t *testing.T) {
	for _, faults := range []string{"data/faults/field-notes.yaml", "data/faults/correlated.yaml"} {
		t.Run(filepath.Base(faults), func(t *testing.T) { testDeterministicJSON(t, faults) })
	}
}

func testDeterministicJSON(t *testing.T, faults string) {
	dir := t.TempDir()
	args := []string{"simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"),
		"--faults", repoFile(t, faults), "--days", "6", "--seed", "5", "--format", "json", "--advise"}
	a := run(t, dir, nil, args...)
	if a.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", a.code, a.stdout, a.stderr)
	}
	b := run(t, dir, nil, args...)
	type out struct {
		Report struct {
			Seed uint64 `json:"seed"`
			Rows []map[string]any
		} `json:"report"`
		Advice *struct {
			Suggested []string `json:"suggested"`
			Enough    bool     `json:"enough_history"`
		} `json:"advice"`
		Verdict []string `json:"verdict"`
	}
	parse := func(s string) out {
		var o out
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, s)
		}
		for _, r := range o.Report.Rows {
			delete(r, "db") // a temporary path per run
		}
		return o
	}
	oa, ob := parse(a.stdout), parse(b.stdout)
	ja, _ := json.Marshal(oa)
	jb, _ := json.Marshal(ob)
	if string(ja) != string(jb) {
		t.Fatalf("same seed, different output:\n%s\n%s", ja, jb)
	}
	if oa.Report.Seed != 5 || len(oa.Report.Rows) != 4 {
		t.Fatalf("want seed 5 and 4 rows: %s", ja)
	}
	for i, want := range []string{"chain", "single", "cost-order", "naive"} {
		r := oa.Report.Rows[i]
		if r["scenario"] != want || r["jobs"].(float64) != 36 {
			t.Errorf("row %d: %v", i, r)
		}
	}
	if oa.Advice == nil || len(oa.Advice.Suggested) != 4 || oa.Advice.Suggested[0] != "gemini" || oa.Advice.Enough {
		t.Fatalf("advice on six days (not enough history): %+v", oa.Advice)
	}
	if len(oa.Verdict) < 6 || !strings.HasPrefix(oa.Verdict[0], "success: ") {
		t.Fatalf("verdict: %q", oa.Verdict)
	}
}

func TestSimulateTableAndKeptDatabases(t *testing.T) {
	dir := t.TempDir()
	keep := filepath.Join(dir, "sim")
	r := run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"),
		"--faults", repoFile(t, "data/faults/field-notes.yaml"), "--days", "3", "--db", keep)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"success", "blackout h", "wasted", "p95 publish", "chain", "single", "cost-order", "naive", "targets:",
		"twice", "drift flagged", "spend/budget", "verdict (which strategy wins on which figure, and why):", "success: ", "cost-order "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	db := openDB(t, filepath.Join(keep, "chain.db"))
	if n := count(t, db, "SELECT COUNT(*) FROM jobs"); n != 18 {
		t.Fatalf("kept chain database has %d jobs, want 18", n)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM calls WHERE ts < '2026-01-05' OR ts >= '2026-01-09'"); n != 0 {
		t.Fatalf("%d calls outside the simulated days: the clock is not virtual", n)
	}
}

func TestSimulateBadFaultsFileNamesTheLine(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "faults.yaml")
	body := "seed: 1\nproviders:\n  gemini:\n    rate_limit:\n      per_minute: 1.5\n  groq: {}\n  cerebras: {}\n  openrouter: {}\n"
	if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"), "--faults", bad, "--days", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "faults.yaml:5:") || !strings.Contains(r.stderr, "per_minute") {
		t.Fatalf("exit %d, want 2 with the line of per_minute\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(bad, []byte("seed: 1\nprovidrs: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"), "--faults", bad, "--days", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "provid") || !strings.Contains(r.stderr, "2") {
		t.Fatalf("unknown key: exit %d\n%s", r.code, r.stderr)
	}
}

// TestSimulateAdviseOnShortHistory: three simulated days are far below the
// history the advice needs; it says so, with what it had, instead of
// endorsing the configured order.
func TestSimulateAdviseOnShortHistory(t *testing.T) {
	dir := t.TempDir()
	r := run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"),
		"--faults", repoFile(t, "data/faults/correlated.yaml"), "--days", "3", "--advise")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "not enough history to judge the order") || strings.Contains(r.stdout, "the history supports") ||
		!strings.Contains(r.stdout, "history: ") || !strings.Contains(r.stdout, "calls and skips") || !strings.Contains(r.stdout, "failure episodes") {
		t.Fatalf("advice on three days:\n%s", r.stdout)
	}
}

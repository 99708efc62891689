package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

// endToEndParallel is how many end-to-end tests run at once when -parallel
// is not given. They spend most of their time waiting on the binary they
// start (its providers, its sleeps, its database), so more of them than
// there are cores overlap well; the ones whose timing is the test (leases,
// SIGSTOP, signals, locks, power cuts) do not call t.Parallel and run alone
// before the others.
const endToEndParallel = 4

func TestMain(m *testing.M) {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		if err := flag.Set("test.parallel", fmt.Sprint(endToEndParallel)); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	os.Exit(m.Run())
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
)

// binary builds the real contentpipe binary once per test process.
func binary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "contentpipe-bin-")
		if err != nil {
			binErr = err
			return
		}
		binPath = filepath.Join(dir, "contentpipe")
		wd, err := os.Getwd()
		if err != nil {
			binErr = err
			return
		}
		sum := sha256.Sum256([]byte(wd))
		kept := filepath.Join(testCacheDir(), "bin-"+hex.EncodeToString(sum[:6]), "contentpipe")
		binErr = buildKept(".", ".", kept, binPath)
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

// testCacheDir is where the tests keep what outlives one test process
// (built binaries, extracted sources): contentpipe-test under the user's
// cache directory, or under the temporary directory when there is none.
func testCacheDir() string {
	base, err := os.UserCacheDir()
	if err != nil {
		base = os.TempDir()
	}
	return filepath.Join(base, "contentpipe-test")
}

// buildKept runs go build of pkg in dir with its output at kept, a path
// that stays from one test process to the next, then hard-links (or
// copies) it to bin. Go build does not link again when kept is already
// the binary of these sources, which saves the link (seconds of CPU for
// a cgo binary) that a fresh output path costs every time; bin is this
// process's own copy, so a later build that replaces kept does not
// change the binary a running test process uses.
func buildKept(dir, pkg, kept, bin string) error {
	if err := os.MkdirAll(filepath.Dir(kept), 0o755); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", kept, pkg)
	build.Dir = dir
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	if err := os.Link(kept, bin); err == nil {
		return nil
	}
	b, err := os.ReadFile(kept)
	if err != nil {
		return err
	}
	return os.WriteFile(bin, b, 0o755)
}

type result struct {
	code           int
	stdout, stderr string
}

// run runs the binary in dir with env (plus PATH/HOME) and returns its result.
func run(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary(t), args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TZ=UTC"}, env...)
	var so, se bytes.Buffer
	cmd.Stdout, cmd.Stderr = &so, &se
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("run %v: %v", args, err)
	}
	return result{code: code, stdout: so.String(), stderr: se.String()}
}

func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func count(t *testing.T, db *sql.DB, q string, args ...any) int {
	t.Helper()
	var n int
	if err := db.QueryRow(q, args...).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// column runs a query of one text column and returns its values in order.
func column(t *testing.T, db *sql.DB, q string, args ...any) []string {
	t.Helper()
	rows, err := db.Query(q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

func TestDemoEndToEnd(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, nil, "run", "--demo")
	if r.code != 0 {
		t.Fatalf("run --demo exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "out", "*", "*.md"))
	if len(files) != 4 {
		t.Fatalf("%d published files, want 4:\n%s", len(files), r.stdout)
	}
	for _, f := range files {
		b, _ := os.ReadFile(f)
		for _, key := range []string{"title:", "date:", "category:", "provider:", "model:", "quality_score:", "job_id:"} {
			if !bytes.Contains(b, []byte("\n"+key)) {
				t.Errorf("%s: front matter lacks %s", f, key)
			}
		}
	}
	if !strings.Contains(r.stdout, "4 published") || !strings.Contains(r.stdout, "$") {
		t.Errorf("summary does not say what was published and what it cost:\n%s", r.stdout)
	}
	dbPath := filepath.Join(dir, "data", "pipeline.db")
	if st, err := os.Stat(dbPath); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("database %v mode %v, want 0600", err, st.Mode().Perm())
	}
	db := openDB(t, dbPath)
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`); n != 4 {
		t.Errorf("%d published jobs", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE outcome <> 'ok'`); n == 0 {
		t.Error("the demo showed no failover: every call was ok")
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE prompt_version = '' OR prompt_version IS NULL`); n != 0 {
		t.Errorf("%d calls without a prompt version", n)
	}
	if n := count(t, db, `SELECT COUNT(DISTINCT provider) FROM calls`); n < 2 {
		t.Errorf("only %d provider(s) used", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM skips`); n == 0 {
		t.Error("no skips recorded although gemini's daily quota ran out")
	}
	// The README's example query (section The database).
	spec := `SELECT provider, COUNT(*) AS calls, ROUND(SUM(cost_estimate_usd), 4) AS usd
FROM calls WHERE ts >= date('now', '-7 days') GROUP BY provider ORDER BY usd DESC;`
	if q := run(t, dir, nil, "sql", spec); q.code != 0 || !strings.Contains(q.stdout, "usd") {
		t.Fatalf("sql exit %d\n%s\n%s", q.code, q.stdout, q.stderr)
	}
	q := run(t, dir, nil, "sql", "--format", "json", "SELECT COUNT(*) AS n FROM jobs")
	var rows []map[string]int
	if err := json.Unmarshal([]byte(q.stdout), &rows); q.code != 0 || err != nil || len(rows) != 1 || rows[0]["n"] != 4 {
		t.Fatalf("sql json: exit %d %q %v %s", q.code, q.stdout, err, q.stderr)
	}
	before := count(t, db, `SELECT COUNT(*) FROM calls`)
	w := run(t, dir, nil, "sql", "DELETE FROM calls")
	if w.code != 1 || !strings.Contains(w.stderr, "read-only") {
		t.Fatalf("write through sql: exit %d stderr %q", w.code, w.stderr)
	}
	if after := count(t, db, `SELECT COUNT(*) FROM calls`); after != before {
		t.Fatalf("a refused write changed calls: %d → %d", before, after)
	}

	// The demo backlog is longer than one run: a second run right after
	// publishes the next 4 topics (posts_per_day 8) and leaves the first
	// four alone; a third finds the day's ceiling reached and calls nobody.
	stamp := map[string][]byte{}
	for _, f := range files {
		stamp[f], _ = os.ReadFile(f)
	}
	r2 := run(t, dir, nil, "run", "--demo")
	if r2.code != 0 || !strings.Contains(r2.stdout, "4 published") {
		t.Fatalf("second run exit %d:\n%s\n%s", r2.code, r2.stdout, r2.stderr)
	}
	files2, _ := filepath.Glob(filepath.Join(dir, "out", "*", "*.md"))
	if len(files2) != 8 {
		t.Fatalf("second run: %d files, want 8", len(files2))
	}
	for f, b := range stamp {
		if now, _ := os.ReadFile(f); !bytes.Equal(now, b) {
			t.Errorf("%s rewritten by the second run", f)
		}
	}
	before = count(t, db, `SELECT COUNT(*) FROM calls`)
	r3 := run(t, dir, nil, "run", "--demo")
	if r3.code != 0 || !strings.Contains(r3.stdout, "0 published") || !strings.Contains(r3.stdout, "posts_per_day reached") {
		t.Fatalf("third run exit %d:\n%s\n%s", r3.code, r3.stdout, r3.stderr)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls`); n != before {
		t.Errorf("third run made %d calls", n-before)
	}
}

func TestBadConfigIsExit2WithLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := "database: data/x.db\nchian: []\n"
	if err := os.WriteFile(filepath.Join(dir, "contentpipe.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, nil, "run")
	if r.code != 2 || !strings.Contains(r.stderr, "contentpipe.yaml:2") || !strings.Contains(r.stderr, "chain") {
		t.Fatalf("exit %d stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "x.db")); err == nil {
		t.Fatal("a bad config still created the database")
	}
	r = run(t, dir, nil, "--config", "missing.yaml", "run")
	if r.code != 2 || !strings.Contains(r.stderr, "missing.yaml") {
		t.Fatalf("missing config: exit %d stderr %q", r.code, r.stderr)
	}
	r = run(t, dir, nil, "run", "--no-such-flag")
	if r.code != 2 {
		t.Fatalf("bad flag: exit %d", r.code)
	}
}

func TestVersion(t *testing.T) {
	t.Parallel()
	r := run(t, t.TempDir(), nil, "version")
	if r.code != 0 || !strings.Contains(r.stdout, "sqlite 3.") || !strings.Contains(r.stdout, "go1.") {
		t.Fatalf("version: %d %q", r.code, r.stdout)
	}
}

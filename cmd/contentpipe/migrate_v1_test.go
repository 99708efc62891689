package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// v1Release is a commit of the release before the backlog, whose job ids
// are <date>/<topic>.
const v1Release = "654f0b1"

// buildV1 builds the v1 release's binary from git history (git archive of
// v1Release into a temporary directory, then go build).
func buildV1(t *testing.T) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if err := exec.Command("git", "cat-file", "-e", v1Release+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s not in this clone (shallow?): %v", v1Release, err)
	}
	src := t.TempDir()
	archive := exec.Command("sh", "-c", "git archive "+v1Release+" | tar -x -C "+src)
	archive.Dir = strings.TrimSpace(string(top))
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", v1Release, err, out)
	}
	bin := filepath.Join(t.TempDir(), "contentpipe-v1")
	build := exec.Command("go", "build", "-o", bin, "./cmd/contentpipe")
	build.Dir = src
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build of %s: %v\n%s", v1Release, err, out)
	}
	return bin
}

// TestMigrateV1Database writes a database with the v1 release (`run
// --demo`: four topics published under <date>/<topic> ids), then opens it
// with this build: the four count as published (topics shows them so, the
// next run publishes the next four, never them again), their calls follow
// them to the new ids, and the v1 rows are gone under their old ids.
func TestMigrateV1Database(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds the v1 release: skipped with -short")
	}
	v1 := buildV1(t)
	dir := t.TempDir()
	cmd := exec.Command(v1, "run", "--demo")
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TZ=UTC"}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("v1 run --demo: %v\n%s", err, out)
	}
	dbPath := filepath.Join(dir, "data", "pipeline.db")
	today := time.Now().UTC().Format(time.DateOnly)
	{
		db := openDB(t, dbPath)
		if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND id LIKE ? || '/%'`, today); n != 4 {
			t.Fatalf("v1 database: %d published <date>/<topic> jobs, want 4", n)
		}
		db.Close()
	}
	res := run(t, dir, nil, "topics", "--format", "json")
	if res.code != 0 {
		t.Fatalf("topics on the v1 database: exit %d\n%s", res.code, res.stderr)
	}
	var out struct {
		Topics []map[string]any `json:"topics"`
	}
	if err := json.Unmarshal([]byte(res.stdout), &out); err != nil {
		t.Fatalf("topics json: %v\n%s", err, res.stdout)
	}
	states := map[string]string{}
	for _, tp := range out.Topics {
		states[tp["topic"].(string)] = tp["state"].(string)
	}
	for _, id := range []string{"home-composting", "small-office-backups", "team-password-manager", "evde-ekmek-mayasi"} {
		if states[id] != "published" {
			t.Errorf("v1-published topic %s is %q after the migration", id, states[id])
		}
	}
	res = run(t, dir, nil, "run", "--demo")
	if res.code != 0 || !strings.Contains(res.stdout, "4 published") || strings.Contains(res.stdout, "home-composting") {
		t.Fatalf("run after the migration: exit %d, want the next 4 topics\n%s\n%s", res.code, res.stdout, res.stderr)
	}
	db := openDB(t, dbPath)
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE id LIKE '%/%'`); n != 0 {
		t.Errorf("%d jobs still under a v1 id", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`); n != 8 {
		t.Errorf("%d published jobs, want 8", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE request_id = 'home-composting' AND outcome = 'ok'`); n != 1 {
		t.Errorf("home-composting: %d ok calls under its new id, want 1 (its v1 calls follow it)", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE request_id LIKE ? || '/%'`, today); n != 0 {
		t.Errorf("%d calls left under v1 ids", n)
	}
}

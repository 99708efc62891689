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
// v1Release, then go build).
//
// The sources go to one directory per commit under the user's cache
// directory and stay there: go's build cache keys a package outside the
// module cache by its directory too, so a fresh temporary directory each
// time recompiled every package of v1 (some 20 s of CPU); from the same
// directory the second build is a cache hit, and the binary kept beside
// it (buildKept) is not even linked again.
func buildV1(t *testing.T) string {
	t.Helper()
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	if err := exec.Command("git", "cat-file", "-e", v1Release+"^{commit}").Run(); err != nil {
		t.Skipf("commit %s not in this clone (shallow?): %v", v1Release, err)
	}
	src := v1Sources(t, strings.TrimSpace(string(top)))
	bin := filepath.Join(t.TempDir(), "contentpipe-v1")
	if err := buildKept(src, "./cmd/contentpipe", src+".bin", bin); err != nil {
		t.Fatalf("go build of %s: %v", v1Release, err)
	}
	return bin
}

// v1Sources returns the directory holding v1Release's tree, extracting it
// from the repository at top when it is not there yet. The tree is
// extracted beside it and renamed into place, so a directory under that
// name is always whole, whoever else extracts it at the same time.
func v1Sources(t *testing.T, top string) string {
	t.Helper()
	base := testCacheDir()
	src := filepath.Join(base, "v1-"+v1Release)
	if _, err := os.Stat(filepath.Join(src, "go.mod")); err == nil {
		return src
	}
	if err := os.MkdirAll(base, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp, err := os.MkdirTemp(base, "v1-"+v1Release+".tmp-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp) // gone after the rename; left over when another won it
	archive := exec.Command("sh", "-c", "git archive "+v1Release+" | tar -x -C "+tmp)
	archive.Dir = top
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive %s: %v\n%s", v1Release, err, out)
	}
	if err := os.Rename(tmp, src); err != nil {
		if _, serr := os.Stat(filepath.Join(src, "go.mod")); serr != nil {
			t.Fatalf("v1 sources: %v", err)
		}
	}
	return src
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

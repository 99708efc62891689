package main

import (
	"bufio"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// withPassword puts a password into a test server URL: the server trusts
// loopback, so any password connects, and none may ever be printed.
func withPassword(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), fakeDBPassword)
	return u.String()
}

// fakeDBPassword is a recognisable database password for the scans.
const fakeDBPassword = "FAKEPW-pg-2f9c41"

func noPassword(t *testing.T, what string, r result) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, fakeDBPassword) {
		t.Errorf("%s printed the database password:\n%s\n%s", what, r.stdout, r.stderr)
	}
}

// copiedCounts reads the table lines of `db copy` (table, rows).
func copiedCounts(t *testing.T, out string) map[string]string {
	t.Helper()
	got := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && f[0] != "table" && strings.HasPrefix(sc.Text(), "  ") {
			got[f[0]] = f[1]
		}
	}
	return got
}

// TestDBCopyToPostgresAndBack moves a used SQLite database to PostgreSQL
// with `db copy`, checks every count it printed against both databases,
// runs on the copy, refuses what must be refused (a non-empty destination,
// the source itself, an unreachable server, another publishing target on
// the copy), and copies the PostgreSQL database back into a new SQLite
// file.
func TestDBCopyToPostgresAndBack(t *testing.T) {
	t.Parallel()
	pg := withPassword(t, testPostgres(t))
	w := newSimWorld(t, 3, nil, "")
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run exit %d\n%s", r.code, r.stderr)
	}
	sqlitePath := filepath.Join(w.dir, "data", "pipeline.db")
	src := openDB(t, sqlitePath)

	r := run(t, w.dir, w.env, "db", "copy", "--to", pg)
	noPassword(t, "db copy", r)
	if r.code != 0 || !strings.Contains(r.stdout, "verified:") || !strings.Contains(r.stdout, "postgres://root:xxxxx@") {
		t.Fatalf("db copy exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	counts := copiedCounts(t, r.stdout)
	w.dbURL = pg
	dst := worldDB(t, w)
	for _, table := range []string{"jobs", "calls", "outputs", "meta", "cap_reservations"} {
		c, ok := counts[table]
		if !ok {
			t.Errorf("db copy printed no count for %s:\n%s", table, r.stdout)
			continue
		}
		s, d := count(t, src, "SELECT COUNT(*) FROM "+table), count(t, dst, "SELECT COUNT(*) FROM "+table)
		if c != strconv.Itoa(s) || s != d {
			t.Errorf("%s: printed %v, SQLite has %d, PostgreSQL %d", table, c, s, d)
		}
	}
	if n := count(t, dst, "SELECT COUNT(*) FROM jobs WHERE status = 'published'"); n != 3 {
		t.Errorf("%d published jobs on the copy, want 3", n)
	}

	// Refusals, nothing copied.
	again := run(t, w.dir, w.env, "db", "copy", "--to", pg)
	noPassword(t, "db copy again", again)
	if again.code != 1 || !strings.Contains(again.stderr, "empty") {
		t.Errorf("copy into a non-empty database: exit %d\n%s%s", again.code, again.stdout, again.stderr)
	}
	self := run(t, w.dir, w.env, "db", "copy", "--to", "sqlite:data/pipeline.db")
	if self.code != 2 || !strings.Contains(self.stderr, "is the configured database itself") {
		t.Errorf("copy onto itself: exit %d\n%s%s", self.code, self.stdout, self.stderr)
	}
	down := run(t, w.dir, w.env, "db", "copy", "--to", "postgres://root:"+fakeDBPassword+"@127.0.0.1:1/nowhere?sslmode=disable&connect_timeout=2")
	noPassword(t, "db copy to a closed port", down)
	if down.code != 1 || !strings.Contains(down.stderr, "destination") || !strings.Contains(down.stderr, "127.0.0.1:1") {
		t.Errorf("copy to an unreachable server: exit %d\n%s%s", down.code, down.stdout, down.stderr)
	}
	bare := run(t, w.dir, w.env, "db", "copy", "--to", "elsewhere.db")
	if bare.code != 2 || !strings.Contains(bare.stderr, "sqlite:PATH") {
		t.Errorf("--to without a scheme: exit %d\n%s", bare.code, bare.stderr)
	}

	// The copy carries the publishing target: the same config on
	// PostgreSQL runs on, another target is refused, naming both.
	cfgPath := filepath.Join(w.dir, "contentpipe.yaml")
	b, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	onPG := strings.Replace(string(b), "database: data/pipeline.db", "database_url_env: CONTENTPIPE_DATABASE_URL", 1)
	writeFile(t, filepath.Join(w.dir, "pg.yaml"), onPG)
	writeFile(t, filepath.Join(w.dir, "pg-other.yaml"), strings.Replace(onPG, "publish: {kind: markdown, dir: out}", "publish: {kind: markdown, dir: elsewhere}", 1))
	env := append(append([]string(nil), w.env...), "CONTENTPIPE_DATABASE_URL="+pg)
	w.addTopics(t, 1)
	other := run(t, w.dir, env, "run", "--config", "pg-other.yaml")
	noPassword(t, "run with another target", other)
	if other.code != 2 || !strings.Contains(other.stderr, "belongs to the publishing target markdown "+filepath.Join(w.dir, "out")) {
		t.Errorf("another target on the copy: exit %d\n%s%s", other.code, other.stdout, other.stderr)
	}
	own := run(t, w.dir, env, "run", "--config", "pg.yaml")
	noPassword(t, "run on the copy", own)
	if own.code != 0 || !strings.Contains(own.stdout, "1 published") {
		t.Fatalf("run on the copy: exit %d\n%s%s", own.code, own.stdout, own.stderr)
	}
	if n := count(t, src, "SELECT COUNT(*) FROM jobs"); n != 3 {
		t.Errorf("the SQLite source changed after the move: %d jobs", n)
	}

	// From the copy onto itself (the same server, port and database).
	same := run(t, w.dir, env, "--config", "pg.yaml", "db", "copy", "--to", pg)
	noPassword(t, "db copy onto the PostgreSQL source", same)
	if same.code != 2 || !strings.Contains(same.stderr, "is the configured database itself") {
		t.Errorf("copy of PostgreSQL onto itself: exit %d\n%s%s", same.code, same.stdout, same.stderr)
	}

	// And back into a new SQLite file.
	back := run(t, w.dir, env, "--config", "pg.yaml", "db", "copy", "--to", "sqlite:back/pipeline.db")
	noPassword(t, "db copy back", back)
	if back.code != 0 || !strings.Contains(back.stdout, "verified:") {
		t.Fatalf("copy back: exit %d\n%s%s", back.code, back.stdout, back.stderr)
	}
	bdb := openDB(t, filepath.Join(w.dir, "back", "pipeline.db"))
	if n, m := count(t, bdb, "SELECT COUNT(*) FROM jobs WHERE status = 'published'"), count(t, dst, "SELECT COUNT(*) FROM jobs WHERE status = 'published'"); n != 4 || m != 4 {
		t.Errorf("published jobs: %d in the copy back, %d on PostgreSQL, want 4", n, m)
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDBCopyKilledRetries: a `db copy --to sqlite:PATH` killed before its
// commit leaves nothing at PATH that blocks the retry, which copies.
func TestDBCopyKilledRetries(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{topics: 2})
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run exit %d\n%s", r.code, r.stderr)
	}
	dst := filepath.Join(t.TempDir(), "back.db")
	killed := run(t, w.dir, append([]string{"CONTENTPIPE_CRASH_AT=before commit: copy into@1"}, w.env...), "db", "copy", "--to", "sqlite:"+dst)
	if killed.code != -1 {
		t.Fatalf("the copy was not killed: exit %d\n%s%s", killed.code, killed.stdout, killed.stderr)
	}
	r := run(t, w.dir, w.env, "db", "copy", "--to", "sqlite:"+dst)
	if r.code != 0 || !strings.Contains(r.stdout, "verified:") {
		t.Fatalf("retry: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	left, _ := filepath.Glob(dst + ".*")
	if len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if n := count(t, openDB(t, dst), "SELECT COUNT(*) FROM jobs"); n != 2 {
		t.Errorf("the copy holds %d jobs, want 2", n)
	}
}

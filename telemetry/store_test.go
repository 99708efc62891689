package telemetry

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/contentpipe/contentpipe/chain"
)

// openTemp opens a new database on t's backend (see forEachBackend) and
// returns it with its spec, for further Open and OpenReadOnly calls.
func openTemp(t testing.TB) (*Store, string) {
	t.Helper()
	path := newSpec(t)
	s, err := Open(path)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

func queryInt(t testing.TB, s *Store, q string, args ...any) int64 {
	t.Helper()
	_, rows, err := s.Query(context.Background(), q, args...)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	if len(rows) != 1 || len(rows[0]) != 1 {
		t.Fatalf("%s: want one value, got %v", q, rows)
	}
	n, ok := rows[0][0].(int64)
	if !ok {
		t.Fatalf("%s: want int64, got %T %v", q, rows[0][0], rows[0][0])
	}
	return n
}

func TestOpenMigratesAndReopens(t *testing.T) { forEachBackend(t, testOpenMigratesAndReopens) }

func testOpenMigratesAndReopens(t *testing.T) {
	s, path := openTemp(t)
	tables := []string{"calls", "outputs", "jobs", "skips", "alerts", "health_checks", "shadow_comparisons",
		"provider_state", "provider_events", "cap_reservations", "schema_migrations"}
	for _, tb := range append(tables, "owners", "schedule_slots", "meta", "incidents") {
		if n := queryInt(t, s, s.d.tableExists, tb); n != 1 {
			t.Errorf("table %s missing", tb)
		}
	}
	if n := queryInt(t, s, "SELECT count(*) FROM schema_migrations"); n != int64(len(s.d.migrations)) {
		t.Fatalf("schema_migrations rows = %d, want %d", n, len(s.d.migrations))
	}
	if n := queryInt(t, s, "SELECT max(version) FROM schema_migrations"); n != int64(SchemaVersion) {
		t.Fatalf("schema version = %d, want %d", n, SchemaVersion)
	}
	if s.pg() {
		for _, ix := range []string{"calls_ts", "calls_request", "calls_provider_ts"} {
			if n := queryInt(t, s, "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?", ix); n != 1 {
				t.Errorf("index %s missing", ix)
			}
		}
	} else {
		for _, ix := range []string{"calls_ts", "calls_request", "calls_provider_ts"} {
			if n := queryInt(t, s, "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name = ?", ix); n != 1 {
				t.Errorf("index %s missing", ix)
			}
		}
		sqlitePragmas(t, s)
	}
	if err := s.RecordSkip(t.Context(), chain.Skip{TS: time.Now(), Provider: "groq", Reason: chain.SkipCap}); err != nil {
		t.Fatal(err)
	}
	s.Close()

	s2, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	if n := queryInt(t, s2, "SELECT count(*) FROM schema_migrations"); n != int64(len(s.d.migrations)) {
		t.Fatalf("after reopen schema_migrations rows = %d", n)
	}
	if n := queryInt(t, s2, "SELECT count(*) FROM skips"); n != 1 {
		t.Fatalf("data lost on reopen: %d skips", n)
	}
}

func sqlitePragmas(t *testing.T, s *Store) {
	t.Helper()
	_, rows, err := s.Query(t.Context(), "PRAGMA journal_mode")
	if err != nil || rows[0][0] != "wal" {
		t.Fatalf("journal_mode = %v, %v; want wal", rows, err)
	}
	if n := queryInt(t, s, "PRAGMA foreign_keys"); n != 1 {
		t.Errorf("foreign_keys = %d", n)
	}
	if n := queryInt(t, s, "PRAGMA synchronous"); n != 1 {
		t.Errorf("synchronous = %d, want 1 (NORMAL)", n)
	}
	if n := queryInt(t, s, "PRAGMA busy_timeout"); n < 10000 {
		t.Errorf("busy_timeout = %d, want ≥ 10000", n)
	}
}

func TestOpenConcurrentFresh(t *testing.T) { forEachBackend(t, testOpenConcurrentFresh) }

func testOpenConcurrentFresh(t *testing.T) {
	path := newSpec(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := Open(path)
			if err == nil {
				s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := queryInt(t, s, "SELECT count(*) FROM schema_migrations"); n != int64(len(s.d.migrations)) {
		t.Fatalf("schema_migrations rows = %d, want %d", n, len(s.d.migrations))
	}
}

func TestOpenNewerSchema(t *testing.T) { forEachBackend(t, testOpenNewerSchema) }

func testOpenNewerSchema(t *testing.T) {
	s, path := openTemp(t)
	_, err := s.db.Exec("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, 'future', '2030-01-01T00:00:00.000Z')", SchemaVersion+1)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path)
	if err == nil {
		t.Fatal("open of a newer database succeeded")
	}
	for _, want := range []string{path, "upgrade contentpipe"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a", "data")
	path := filepath.Join(dir, "pipeline.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSkip(t.Context(), chain.Skip{TS: time.Now(), Provider: "groq", Reason: chain.SkipCap}); err != nil {
		t.Fatal(err)
	}
	for _, side := range []string{"-wal", "-shm"} {
		fi, err := os.Stat(path + side)
		if err != nil {
			t.Fatalf("%s: %v", side, err)
		}
		if m := fi.Mode().Perm(); m != 0o600 {
			t.Errorf("%s mode = %o, want 600", side, m)
		}
	}
	s.Close()
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o700 {
		t.Errorf("dir mode = %o, want 700", m)
	}
	fi, err = os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("file mode = %o, want 600", m)
	}

	// An existing file readable by others is tightened.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	fi, _ = os.Stat(path)
	if m := fi.Mode().Perm(); m != 0o600 {
		t.Errorf("existing file mode = %o after open, want 600", m)
	}
}

func TestGarbageFile(t *testing.T) {
	dir := t.TempDir()
	cases := map[string][]byte{
		"text.db":    []byte("this is a text file, not a database\n"),
		"tiny.db":    []byte("SQLite"),
		"damaged.db": append([]byte("SQLite format 3\x00"), bytes.Repeat([]byte{0xAB}, 8192)...),
	}
	for name, content := range cases {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, content, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, open := range []func(string) (*Store, error){Open, OpenReadOnly} {
			s, err := open(path)
			if err == nil {
				s.Close()
				t.Fatalf("%s: open succeeded", name)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "database:") {
				t.Errorf("%s: error %q should name the file and the fix", name, err)
			}
		}
		after, _ := os.ReadFile(path)
		if !bytes.Equal(after, content) {
			t.Errorf("%s: file was modified", name)
		}
	}
}

func TestOpenReadOnlyMissing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.db")
	_, err := OpenReadOnly(path)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), path) {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("read-only open created the file")
	}
}

func TestTimeFormat(t *testing.T) {
	tm := time.Date(2026, 11, 29, 21, 0, 0, 123456789, time.FixedZone("TRT", 3*3600))
	got := FormatTime(tm)
	if got != "2026-11-29T18:00:00.123Z" {
		t.Fatalf("FormatTime = %q", got)
	}
	back, err := ParseTime(got)
	if err != nil {
		t.Fatal(err)
	}
	if !back.Equal(tm.Truncate(time.Millisecond)) || back.Location() != time.UTC {
		t.Fatalf("ParseTime = %v", back)
	}
	if z, err := ParseTime(""); err != nil || !z.IsZero() {
		t.Fatalf("ParseTime(\"\") = %v, %v", z, err)
	}
	if _, err := ParseTime("yesterday"); err == nil {
		t.Fatal("ParseTime accepted garbage")
	}
	if got := FormatTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)); !regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`).MatchString(got) {
		t.Fatalf("FormatTime without ms = %q", got)
	}
}

// TestAwkwardPath checks the file: URI escaping: the database lands at the
// exact path, also with characters that mean something in a URI.
func TestAwkwardPath(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my data #1 ?x=y", "100%")
	path := filepath.Join(dir, "pipe line?.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordSkip(t.Context(), chain.Skip{TS: time.Now(), Provider: "groq", Reason: chain.SkipCap}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "pipe line?.db") {
			t.Errorf("stray file %q", e.Name())
		}
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := queryInt(t, r, "SELECT count(*) FROM skips"); n != 1 {
		t.Fatalf("skips = %d", n)
	}
}

func TestLockedErrorNamesFileAndFix(t *testing.T) {
	s := &Store{path: "/srv/contentpipe/data/pipeline.db"}
	err := s.lockedErr("claim job x", sqlite3.Error{Code: sqlite3.ErrBusy})
	for _, want := range []string{"claim job x", "/srv/contentpipe/data/pipeline.db", "locked by another process", "fuser", "rerun"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("locked error %q lacks %q", err, want)
		}
	}
}

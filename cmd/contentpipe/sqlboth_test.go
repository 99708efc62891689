package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// readmeQueries returns the SQL blocks of README.md by dialect: each
// ```sql block that follows a line "<!-- sql: sqlite|postgres|both -->".
func readmeQueries(t *testing.T) map[string][]string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(l, "<!-- sql: ") {
			continue
		}
		dialect := strings.TrimSuffix(strings.TrimPrefix(l, "<!-- sql: "), " -->")
		if i+1 >= len(lines) || lines[i+1] != "```sql" {
			t.Fatalf("README.md:%d: %q is not followed by a ```sql block", i+1, l)
		}
		var q []string
		j := i + 2
		for ; j < len(lines) && lines[j] != "```"; j++ {
			q = append(q, lines[j])
		}
		out[dialect] = append(out[dialect], strings.Join(q, "\n"))
		i = j
	}
	return out
}

// TestReadmeQueries runs every example query of README.md through
// `contentpipe sql` on the demo's database: the SQLite ones (and those
// marked for both) on the SQLite file, the PostgreSQL ones (and both) on
// a `db copy` of it. Each dialect has as many blocks as the other.
func TestReadmeQueries(t *testing.T) {
	t.Parallel()
	qs := readmeQueries(t)
	if len(qs["sqlite"]) == 0 || len(qs["sqlite"]) != len(qs["postgres"]) || len(qs["both"]) == 0 {
		t.Fatalf("README queries: %d SQLite, %d PostgreSQL, %d for both: want each SQLite example in both dialects",
			len(qs["sqlite"]), len(qs["postgres"]), len(qs["both"]))
	}
	dir := t.TempDir()
	if r := run(t, dir, nil, "run", "--demo"); r.code != 0 {
		t.Fatalf("run --demo exit %d\n%s", r.code, r.stderr)
	}
	check := func(t *testing.T, args []string, q string) {
		t.Helper()
		r := run(t, dir, nil, append(append([]string{"sql", "--format", "json"}, args...), q)...)
		var rows []map[string]any
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &rows) != nil {
			t.Errorf("exit %d on\n%s\n%s%s", r.code, q, r.stdout, r.stderr)
			return
		}
		if len(rows) == 0 && !strings.Contains(q, "health_checks") && !strings.Contains(q, "incidents") && !strings.Contains(q, "wasted") {
			t.Errorf("no rows from the demo database for\n%s", q)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		for _, q := range append(qs["sqlite"], qs["both"]...) {
			check(t, nil, q)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		pg := testPostgres(t)
		if r := run(t, dir, nil, "db", "copy", "--to", pg); r.code != 0 {
			t.Fatalf("db copy exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
		for _, q := range append(qs["postgres"], qs["both"]...) {
			check(t, []string{"--db", pg}, q)
		}
	})
}

// TestSQLReadOnlyBothBackends: `contentpipe sql` answers queries and
// refuses every write on SQLite and on PostgreSQL, without printing the
// database's password.
func TestSQLReadOnlyBothBackends(t *testing.T) {
	t.Parallel()
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			o := worldOptions{topics: 2}
			if backend == "postgres" {
				o.dbURL = withPassword(t, testPostgres(t))
			}
			w := newWorld(t, o)
			if r := run(t, w.dir, w.env, "run"); r.code != 0 {
				t.Fatalf("run exit %d\n%s", r.code, r.stderr)
			}
			db := worldDB(t, w)
			q := run(t, w.dir, w.env, "sql", "--format", "json", "SELECT COUNT(*) AS n FROM jobs WHERE status = 'published'")
			noPassword(t, "sql", q)
			var rows []map[string]int
			if err := json.Unmarshal([]byte(q.stdout), &rows); q.code != 0 || err != nil || len(rows) != 1 || rows[0]["n"] != 2 {
				t.Fatalf("sql: exit %d %q %v %s", q.code, q.stdout, err, q.stderr)
			}
			before := count(t, db, "SELECT COUNT(*) FROM calls")
			for i, write := range []string{
				"DELETE FROM calls",
				"UPDATE jobs SET status = 'due'",
				"INSERT INTO meta (key, value, updated_at) VALUES ('x', 'y', 'z')",
				"CREATE TABLE sneaky (a INTEGER)",
				"DROP TABLE calls",
				// Refused either as a write or as not one statement.
				"SELECT 1; DELETE FROM calls",
				"WITH d AS (DELETE FROM calls RETURNING 1) SELECT COUNT(*) FROM d",
			} {
				r := run(t, w.dir, w.env, "sql", write)
				noPassword(t, "sql write", r)
				low := strings.ToLower(r.stderr)
				if r.code != 1 || i < 5 && !strings.Contains(low, "read-only") && !strings.Contains(low, "read only") {
					t.Errorf("%s: exit %d, want 1 saying read-only\n%s%s", write, r.code, r.stdout, r.stderr)
				}
			}
			if after := count(t, db, "SELECT COUNT(*) FROM calls"); after != before {
				t.Fatalf("refused writes changed calls: %d → %d", before, after)
			}
			if n := count(t, db, "SELECT COUNT(*) FROM jobs WHERE status = 'published'"); n != 2 {
				t.Fatalf("refused writes changed jobs: %d published", n)
			}
			if backend == "postgres" {
				// --db takes the URL too; a bad query is exit 1 naming no password.
				r := run(t, w.dir, nil, "sql", "--db", w.dbURL, "SELECT nosuchcolumn FROM jobs")
				noPassword(t, "sql --db", r)
				if r.code != 1 {
					t.Errorf("bad query: exit %d\n%s", r.code, r.stderr)
				}
			}
		})
	}
}

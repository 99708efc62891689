package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestSQLRunsNoProgramNorEndsSessions: `contentpipe sql` on PostgreSQL as
// the superuser root neither runs a program on the server (COPY … TO
// PROGRAM, which could rewrite jobs behind the run's back) nor ends a live
// session (pg_terminate_backend); each is refused, exit 1.
func TestSQLRunsNoProgramNorEndsSessions(t *testing.T) {
	t.Parallel()
	pg := testPostgres(t)
	w := newWorld(t, worldOptions{topics: 1, dbURL: pg})
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run exit %d\n%s", r.code, r.stderr)
	}
	mark := filepath.Join(os.TempDir(), "contentpipe-sql-ran-"+time.Now().Format("150405.000000000"))
	t.Cleanup(func() { os.Remove(mark) })
	r := run(t, w.dir, w.env, "sql", "COPY (SELECT 1) TO PROGRAM 'touch "+mark+"'")
	if _, err := os.Stat(mark); err == nil || r.code != 1 || !strings.Contains(r.stderr, "COPY is refused") {
		t.Errorf("COPY TO PROGRAM: exit %d, program ran: %v\n%s%s", r.code, err == nil, r.stdout, r.stderr)
	}
	// One connection, not a pool: a pool would reconnect unseen.
	ctx := context.Background()
	live, err := pgx.Connect(ctx, pg)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close(ctx)
	r = run(t, w.dir, w.env, "sql", "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND datname = current_database()")
	var one int
	if err := live.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || r.code != 1 {
		t.Errorf("pg_terminate_backend: exit %d, the live session: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "read-only") {
		t.Errorf("the refusal does not say read-only:\n%s", r.stderr)
	}
}

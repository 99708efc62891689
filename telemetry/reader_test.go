package telemetry

import (
	"context"
	neturl "net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// pgReadOnlyStore migrates a fresh PostgreSQL database (as the test
// server's user, root: a superuser) and opens it as `contentpipe sql` does.
func pgReadOnlyStore(t *testing.T) (url string, ro *Store) {
	t.Helper()
	url = newPostgresDB(t)
	s, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err = OpenReadOnly(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ro.Close() })
	return url, ro
}

// TestPGQueryRunsNoProgram: a read-only query on PostgreSQL, opened by a
// superuser, cannot run a program on the server (COPY … TO PROGRAM), even
// by first leaving the reader role.
func TestPGQueryRunsNoProgram(t *testing.T) {
	_, ro := pgReadOnlyStore(t)
	// The server runs the program as its own user: the mark goes where it
	// may write.
	mark := filepath.Join(os.TempDir(), "contentpipe-ran-"+strings.ReplaceAll(t.Name(), "/", "_")+"-"+time.Now().Format("150405.000000000"))
	t.Cleanup(func() { os.Remove(mark) })
	for _, q := range []string{
		"COPY (SELECT 1) TO PROGRAM 'touch " + mark + "'",
		"DO $$BEGIN RESET ROLE; EXECUTE 'COPY (SELECT 1) TO PROGRAM ''touch " + mark + "'''; END$$",
		"SELECT set_config('role', session_user, true), pg_read_file('/etc/hostname')",
		"SELECT pg_read_file('/etc/hostname')",
	} {
		_, rows, err := ro.Query(context.Background(), q)
		if err == nil {
			t.Errorf("%s: ran (%v), want refused", q, rows)
		}
		if _, serr := os.Stat(mark); serr == nil {
			t.Fatalf("%s: the program ran on the server (%v)", q, err)
		}
	}
}

// TestPGQueryEndsNoSession: a read-only query cannot end another session
// (pg_terminate_backend), such as a live run's connection.
func TestPGQueryEndsNoSession(t *testing.T) {
	url, ro := pgReadOnlyStore(t)
	ctx := context.Background()
	victim, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close(ctx)
	var pid int
	if err := victim.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&pid); err != nil {
		t.Fatal(err)
	}
	_, rows, err := ro.Query(ctx, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = ?", pid)
	time.Sleep(100 * time.Millisecond)
	var one int
	if perr := victim.QueryRow(ctx, "SELECT 1").Scan(&one); perr != nil {
		t.Fatalf("the query ended another session (answer %v, err %v): %v", rows, err, perr)
	}
	if err == nil {
		t.Errorf("pg_terminate_backend answered %v, want refused", rows)
	}
}

// TestPGQueryRefusesWritableReader: when the reader role was given a
// write right, queries are refused, naming the table and the fix.
func TestPGQueryRefusesWritableReader(t *testing.T) {
	url, ro := pgReadOnlyStore(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "GRANT UPDATE ON jobs TO "+PGReaderRole); err != nil {
		t.Fatal(err)
	}
	_, _, err = ro.Query(ctx, "SELECT count(*) FROM jobs")
	if err == nil || !strings.Contains(err.Error(), "jobs") || !strings.Contains(err.Error(), "REVOKE") {
		t.Fatalf("err %v, want a refusal naming jobs and REVOKE", err)
	}
	// Still answers ordinary queries once fixed.
	if _, err := admin.Exec(ctx, "REVOKE UPDATE ON jobs FROM "+PGReaderRole); err != nil {
		t.Fatal(err)
	}
	if _, rows, err := ro.Query(ctx, "SELECT count(*) AS n FROM jobs"); err != nil || len(rows) != 1 {
		t.Fatalf("after REVOKE: %v %v", rows, err)
	}
}

// TestPGQueryLoginNotMember: a login that is not a member of the reader
// role is told the GRANT that fixes it, and reads once granted.
func TestPGQueryLoginNotMember(t *testing.T) {
	u, _ := pgReadOnlyStore(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close(ctx)
	login := "cp_login_" + strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000000"), ".", ""))
	if _, err := admin.Exec(ctx, "CREATE ROLE "+login+" LOGIN"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, u)
		if err == nil {
			defer c.Close(ctx)
			_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+login)
		}
	})
	p, _ := neturl.Parse(u)
	p.User = neturl.User(login)
	_, err = OpenReadOnly(p.String())
	if err == nil || !strings.Contains(err.Error(), "GRANT "+PGReaderRole+" TO "+login) {
		t.Fatalf("err %v, want the GRANT that fixes it", err)
	}
	if _, err := admin.Exec(ctx, "GRANT "+PGReaderRole+" TO "+login); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(p.String())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if _, rows, err := ro.Query(ctx, "SELECT count(*) AS n FROM jobs"); err != nil || len(rows) != 1 {
		t.Fatalf("after GRANT: %v %v", rows, err)
	}
	ro.Close()
	// Revoke before the role is dropped (the database still holds nothing of it).
	_, _ = admin.Exec(ctx, "REVOKE "+PGReaderRole+" FROM "+login)
}

// TestPGUnprivilegedOwnerMigrates: a database owner that may not create
// roles nor grant them migrates all the same (migration 11 skips what it
// may not do), and `sql` then names the statements that fix it.
func TestPGUnprivilegedOwnerMigrates(t *testing.T) {
	server := postgresServer(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		t.Skipf("server unreachable: %v", err)
	}
	defer admin.Close(ctx)
	suffix := strings.ReplaceAll(time.Now().Format("150405.000000"), ".", "")
	owner, db := "cp_owner_"+suffix, "cp_owned_"+suffix
	for _, q := range []string{"CREATE ROLE " + owner + " LOGIN", "CREATE DATABASE " + db + " OWNER " + owner} {
		if _, err := admin.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, server)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP DATABASE IF EXISTS "+db+" WITH (FORCE)")
		_, _ = c.Exec(ctx, "DROP ROLE IF EXISTS "+owner)
	})
	p, _ := neturl.Parse(server)
	p.User, p.Path = neturl.User(owner), "/"+db
	s, err := Open(p.String())
	if err != nil {
		t.Fatalf("an unprivileged owner cannot migrate: %v", err)
	}
	s.Close()
	ro, err := OpenReadOnly(p.String())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	_, _, err = ro.Query(ctx, "SELECT count(*) FROM jobs")
	if err == nil || !strings.Contains(err.Error(), "GRANT "+PGReaderRole+" TO "+owner) {
		t.Fatalf("err %v, want the GRANT that fixes it", err)
	}
	// The owner could grant SELECT on its tables: membership is all that
	// is missing.
	if _, err := admin.Exec(ctx, "GRANT "+PGReaderRole+" TO "+owner); err != nil {
		t.Fatal(err)
	}
	if _, rows, err := ro.Query(ctx, "SELECT count(*) AS n FROM jobs"); err != nil || len(rows) != 1 {
		t.Fatalf("after GRANT: %v %v", rows, err)
	}
}

package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// seedCopy fills the report's rows plus a job in publishing with its
// payload, provider state, a reservation, a notice, the publishing
// target, a schedule slot and a registered process into a new database on
// t's backend.
func seedCopy(t *testing.T) string {
	t.Helper()
	spec := seedReport(t)
	s, err := Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	o := chain.Owner{Host: "h", PID: 7}
	if ok, _, err := s.ClaimJob(ctx, job("pub"), o, nil, time.Hour, t0); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	rec := job("pub")
	rec.Provider, rec.Attempt, rec.Location, rec.Payload = "groq", 1, "out/pub.md", []byte{0, 1, 2, 0xff, 'x'}
	if err := s.MarkPublishing(ctx, rec, o, t0); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateProviderState(ctx, "groq", func(st *chain.ProviderState) []chain.Transition {
		st.ExhaustedUntil, st.ExhaustedReason = t0.Add(time.Hour), "daily quota"
		return []chain.Transition{{Kind: "exhausted", From: "ok", To: "exhausted", Detail: "429"}}
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReserveSpend(ctx, chain.SpendRequest{Provider: "groq", DayStart: utcMidnight(t0), Now: t0, InputTokens: 10, MaxOutput: 20,
		Price: chain.Price{InputPerMTok: 1, OutputPerMTok: 1}}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimNotice(ctx, "backlog", "low", t0); err != nil {
		t.Fatal(err)
	}
	if err := s.BindTarget(ctx, "markdown:/srv/out"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ClaimSlot(ctx, "run", t0, o); err != nil {
		t.Fatal(err)
	}
	return spec
}

// dump reads every table of s as rows of comparable values (text as
// string), ordered by every column.
func dump(t *testing.T, s *Store) map[string][][]any {
	t.Helper()
	out := map[string][][]any{}
	for _, tb := range copyTables {
		cols, _, err := s.Query(context.Background(), "SELECT * FROM "+tb+" LIMIT 0")
		if err != nil {
			t.Fatal(err)
		}
		order := make([]string, len(cols))
		for i := range cols {
			order[i] = fmt.Sprint(i + 1)
		}
		_, rows, err := s.Query(context.Background(), "SELECT * FROM "+tb+" ORDER BY "+strings.Join(order, ", "))
		if err != nil {
			t.Fatal(err)
		}
		out[tb] = rows
	}
	return out
}

// TestCopyBothWays: SQLite → PostgreSQL → SQLite keeps every row of every
// table, byte for byte; the report's counts are the tables' counts; new
// rows on PostgreSQL get ids past the copied ones; the publishing target
// travels with the data.
func TestCopyBothWays(t *testing.T) {
	ctx := t.Context()
	srcSpec := seedCopy(t) // SQLite (not inside forEachBackend)
	src, err := OpenReadOnly(srcSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	want := dump(t, src)

	pgSpec := newPostgresDB(t)
	pg, err := Open(pgSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	rep, err := Copy(ctx, src, pg)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Tables) != len(copyTables) {
		t.Fatalf("report has %d tables, want %d", len(rep.Tables), len(copyTables))
	}
	for _, tr := range rep.Tables {
		if tr.Rows != int64(len(want[tr.Table])) {
			t.Errorf("report: %s %d rows, the source has %d", tr.Table, tr.Rows, len(want[tr.Table]))
		}
	}
	if rep.Total() < 30 {
		t.Fatalf("only %d rows copied: the seed is too small to mean anything", rep.Total())
	}
	if got := dump(t, pg); !reflect.DeepEqual(got, want) {
		for tb := range want {
			if !reflect.DeepEqual(got[tb], want[tb]) {
				t.Errorf("table %s on PostgreSQL:\n got %v\nwant %v", tb, got[tb], want[tb])
			}
		}
	}
	maxID := queryInt(t, pg, "SELECT max(id) FROM calls")
	if err := pg.RecordCall(ctx, chain.Call{Provider: "x", RequestID: "new", Attempt: 1, TS: t0, Outcome: chain.OutcomeOK, Text: "t"}); err != nil {
		t.Fatalf("a new call after the copy: %v", err)
	}
	if id := queryInt(t, pg, "SELECT id FROM calls WHERE request_id = 'new'"); id <= maxID {
		t.Fatalf("new call id %d, not past the copied %d", id, maxID)
	}
	var te *TargetError
	if err := pg.BindTarget(ctx, "webhook:https://other"); !errors.As(err, &te) || te.Have != "markdown:/srv/out" {
		t.Fatalf("target check after the copy: %v", err)
	}
	if err := pg.BindTarget(ctx, "markdown:/srv/out"); err != nil {
		t.Fatal(err)
	}

	// Into a database that holds rows: refused, naming the table and the fix.
	_, err = Copy(ctx, src, pg)
	if err == nil || !strings.Contains(err.Error(), "calls: ") || !strings.Contains(err.Error(), "new, empty database") {
		t.Fatalf("copy into a full database: %v", err)
	}

	// And back, into a new SQLite file.
	if _, err := pg.db.Exec("DELETE FROM outputs WHERE request_id = 'new'"); err != nil {
		t.Fatal(err)
	}
	if _, err := pg.db.Exec("DELETE FROM calls WHERE request_id = 'new'"); err != nil {
		t.Fatal(err)
	}
	back, err := Open("sqlite:" + newSpec(t))
	if err != nil {
		t.Fatal(err)
	}
	defer back.Close()
	pgRO, err := OpenReadOnly(pgSpec)
	if err != nil {
		t.Fatal(err)
	}
	defer pgRO.Close()
	if _, err := Copy(ctx, pgRO, back); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, back); !reflect.DeepEqual(got, want) {
		for tb := range want {
			if !reflect.DeepEqual(got[tb], want[tb]) {
				t.Errorf("table %s back on SQLite:\n got %v\nwant %v", tb, got[tb], want[tb])
			}
		}
	}
	if _, err := Copy(ctx, src, pgRO); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("copy into a read-only store: %v", err)
	}
}

// TestReadOnlyPostgres: a read-only store on PostgreSQL runs queries and
// refuses every write the server would take — DML, DDL, a write hidden in
// a function call, turning read-only off — with the same clear error as
// on SQLite; the store's own writes are refused before they reach the
// server.
func TestReadOnlyPostgres(t *testing.T) {
	ctx := t.Context()
	spec := newPostgresDB(t)
	w, err := Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.RecordSkip(ctx, chain.Skip{TS: t0, Provider: "groq", Reason: chain.SkipCap}); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r, err := OpenReadOnly(spec)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := queryInt(t, r, "SELECT count(*) FROM skips"); n != 1 {
		t.Fatalf("skips = %d", n)
	}
	for _, q := range []string{
		"DELETE FROM skips",
		"UPDATE skips SET reason = 'x'",
		"INSERT INTO skips (ts, provider, reason) VALUES ('t', 'p', 'r')",
		"CREATE TABLE evil (x int)",
		"DROP TABLE skips",
		"SELECT setval(pg_get_serial_sequence('skips', 'id'), 99)",
		"SET default_transaction_read_only = off; DELETE FROM skips",
		"WITH d AS (DELETE FROM skips RETURNING *) SELECT * FROM d",
	} {
		_, _, err := r.Query(ctx, q)
		if err == nil {
			t.Errorf("%s: allowed on a read-only store", q)
			continue
		}
		if !strings.Contains(err.Error(), "read-only") && !strings.Contains(err.Error(), "cannot insert multiple commands") {
			t.Errorf("%s: error %q does not say read-only", q, err)
		}
	}
	// Turning the session's default off is refused (set_config could
	// also leave the reader role); each query runs in a READ ONLY
	// transaction of its own anyway.
	if _, _, err := r.Query(ctx, "SELECT set_config('default_transaction_read_only', 'off', false)"); err == nil || !strings.Contains(err.Error(), "set_config") {
		t.Fatalf("set_config: %v, want refused", err)
	}
	if _, _, err := r.Query(ctx, "DELETE FROM skips"); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("DELETE after turning the default off: %v", err)
	}
	if err := r.RecordSkip(ctx, chain.Skip{TS: t0, Provider: "groq", Reason: chain.SkipCap}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Errorf("store write on a read-only store: %v", err)
	}
	if n := queryInt(t, r, "SELECT count(*) FROM skips"); n != 1 {
		t.Fatalf("skips = %d after the refused writes", n)
	}
}

// TestPostgresURLRedacted: a URL's password never appears in an error or
// in Path; errors name the database by RedactURL.
func TestPostgresURLRedacted(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://bob:s3cr%40t@db.example:5432/cp?sslmode=require": "postgres://bob:xxxxx@db.example:5432/cp?sslmode=require",
		"postgresql://bob@db/cp":                                     "postgresql://bob@db/cp",
		"postgres://db/cp?password=hunter2&sslmode=disable":          "postgres://db/cp?password=xxxxx&sslmode=disable",
		"data/pipeline.db":                                           "data/pipeline.db",
		"postgres://db/cp?sslpassword=hunter2&sslmode=require":       "postgres://db/cp?sslmode=require&sslpassword=xxxxx",
		"host=db port=5432 password=hunter2 dbname=cp":               "host=db port=5432 password=xxxxx dbname=cp",
		"host=db password='hun ter\\'2' sslpassword=x dbname=cp":     "host=db password=xxxxx sslpassword=xxxxx dbname=cp",
		"data/a=b.db": "data/a=b.db",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
	for spec, want := range map[string]bool{
		"host=db dbname=cp": true, "dbname=cp user=bob password=x": true, "postgresql://db/cp": true,
		"data/pipeline.db": false, "data/a=b.db": false, "foo=bar": false, "host=db dbname='unclosed": false,
	} {
		if got := IsPostgres(spec); got != want {
			t.Errorf("IsPostgres(%q) = %v, want %v", spec, got, want)
		}
	}
	for _, spec := range []string{"host=db password=hunter2 dbname=cp", "postgres://db/cp?sslpassword=hunter2"} {
		if err := scrub(errors.New("failed for hunter2"), spec); strings.Contains(err.Error(), "hunter2") {
			t.Errorf("scrub(%q) left the password: %v", spec, err)
		}
	}
	server := postgresServer(t)
	// A wrong password for a user that does not exist, on a port where no
	// server listens, and on the real server for a database that does not
	// exist: each error names the URL without its password.
	for _, u := range []string{
		"postgres://nobody:Sup3rSecretPw@127.0.0.1:1/cp?sslmode=disable&connect_timeout=2",
		"postgres://nobody@127.0.0.1:1/cp?sslmode=disable&connect_timeout=2&sslpassword=Sup3rSecretPw",
		"host=127.0.0.1 port=1 user=nobody password=Sup3rSecretPw dbname=cp sslmode=disable connect_timeout=2",
		withPassword(t, server, "/no_such_db_here"),
	} {
		for name, open := range map[string]func(string) (*Store, error){"Open": Open, "OpenReadOnly": OpenReadOnly} {
			s, err := open(u)
			if err == nil {
				s.Close()
				t.Fatalf("%s(%s) succeeded", name, RedactURL(u))
			}
			if strings.Contains(err.Error(), "Sup3rSecretPw") {
				t.Errorf("%s: the error shows the password: %v", name, err)
			}
			if !strings.Contains(err.Error(), RedactURL(u)) {
				t.Errorf("%s: the error %q does not name %s", name, err, RedactURL(u))
			}
		}
	}
	spec := newPostgresDB(t)
	withPw := withPassword(t, spec, "") // trust auth ignores it
	s, err := Open(withPw)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if strings.Contains(s.Path(), "Sup3rSecretPw") || s.Backend() != BackendPostgres {
		t.Fatalf("Path() = %q, Backend() = %q", s.Path(), s.Backend())
	}
	if err := s.BindTarget(t.Context(), "a"); err != nil {
		t.Fatal(err)
	}
	err = s.BindTarget(t.Context(), "b")
	if err == nil || strings.Contains(err.Error(), "Sup3rSecretPw") || !strings.Contains(err.Error(), "psql") {
		t.Fatalf("target error: %v", err)
	}
}

// TestRebind: '?' outside literals, quoted identifiers, comments and
// dollar quotes become $n.
func TestRebind(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT ? , ?":                           "SELECT $1 , $2",
		"SELECT '?', \"a?\", ? -- ?\n, ?":        "SELECT '?', \"a?\", $1 -- ?\n, $2",
		"SELECT 'it''s ?', ? /* ? */ , $$?$$, ?": "SELECT 'it''s ?', $1 /* ? */ , $$?$$, $2",
		"SELECT $tag$ ? $tag$, ?":                "SELECT $tag$ ? $tag$, $1",
		"SELECT $1":                              "SELECT $1",
	} {
		if got := rebind(in); got != want {
			t.Errorf("rebind(%q) = %q, want %q", in, got, want)
		}
	}
}

// withPassword returns u with the password Sup3rSecretPw (and the path
// replaced when path is set).
func withPassword(t *testing.T, u, path string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	user := "root"
	if p.User != nil {
		user = p.User.Username()
	}
	p.User = url.UserPassword(user, "Sup3rSecretPw")
	if path != "" {
		p.Path = path
	}
	return p.String()
}

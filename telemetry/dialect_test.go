package telemetry

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestDialectsComplete: every operation of a dialect is set on both
// backends, and each names its backend, so a difference added for one
// backend cannot leave the other calling nil.
func TestDialectsComplete(t *testing.T) {
	for _, d := range []*dialect{sqliteDialect, postgresDialect} {
		v := reflect.ValueOf(d).Elem()
		for i := range v.NumField() {
			f := v.Field(i)
			if (f.Kind() == reflect.Func || f.Kind() == reflect.Slice) && f.IsNil() {
				t.Errorf("%s dialect: %s is not set", d.name, v.Type().Field(i).Name)
			}
		}
		if d.tableExists == "" || d.unitSep == "" {
			t.Errorf("%s dialect: tableExists or unitSep is empty", d.name)
		}
	}
	if sqliteDialect.name != BackendSQLite || postgresDialect.name != BackendPostgres {
		t.Errorf("dialect names %q and %q", sqliteDialect.name, postgresDialect.name)
	}
	for spec, want := range map[string]*dialect{t.TempDir() + "/x.db": sqliteDialect, newPostgresDB(t): postgresDialect} {
		s, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		if s.d != want {
			t.Errorf("store %s has the %s dialect, want %s", s.Path(), s.d.name, want.name)
		}
		s.Close()
	}
}

// TestInsertID: on both backends the id insertID gives is the id the row
// was stored with (SQLite takes it from the rowid, without RETURNING), and
// an insert that does not end in RETURNING id is refused before it runs.
func TestInsertID(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		s, _ := openTemp(t)
		ctx := context.Background()
		for i := range 3 {
			tx, err := s.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			id, err := s.d.insertID(ctx, tx, "INSERT INTO cap_reservations (provider, day_start, ts) VALUES (?, ?, ?)\nRETURNING id",
				"groq", "2026-12-01T00:00:00.000Z", FormatTime(time.Now()))
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			var provider string
			var n int
			if err := s.db.QueryRowContext(ctx, "SELECT provider, (SELECT count(*) FROM cap_reservations WHERE id <= ?) FROM cap_reservations WHERE id = ?", id, id).Scan(&provider, &n); err != nil {
				t.Fatalf("insert %d: id %d is not a stored row: %v", i, id, err)
			}
			if provider != "groq" || n != i+1 {
				t.Errorf("insert %d: id %d names %q, the %d-th row", i, id, provider, n)
			}
		}
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		if _, err := s.d.insertID(ctx, tx, "INSERT INTO cap_reservations (provider, day_start, ts) VALUES ('x', 'y', 'z')"); err == nil || !strings.Contains(err.Error(), "RETURNING id") {
			t.Errorf("an insert without RETURNING id: err = %v, want one naming RETURNING id", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM cap_reservations WHERE provider = 'x'").Scan(&n); err != nil || n != 0 {
			t.Errorf("the refused insert ran: %d rows (%v)", n, err)
		}
	})
}

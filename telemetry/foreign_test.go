package telemetry

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestForeignSchemaLeavesNothing: opening (migrating) a database that
// holds another application's jobs table fails, and leaves no
// schema_migrations table behind: the database is as it was.
func TestForeignSchemaLeavesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T) {
		ctx := context.Background()
		spec := newSpec(t)
		var exists func() bool
		if backendOf(t) == BackendPostgres {
			c, err := pgx.Connect(ctx, spec)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, "CREATE TABLE jobs (x integer)"); err != nil {
				t.Fatal(err)
			}
			exists = func() bool {
				var name *string
				if err := c.QueryRow(ctx, "SELECT to_regclass('schema_migrations')::text").Scan(&name); err != nil {
					t.Fatal(err)
				}
				return name != nil
			}
		} else {
			if err := os.MkdirAll(filepath.Dir(spec), 0o700); err != nil {
				t.Fatal(err)
			}
			db, err := sql.Open("sqlite3", spec)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.Exec("CREATE TABLE jobs (x INTEGER)"); err != nil {
				t.Fatal(err)
			}
			exists = func() bool {
				var n int
				if err := db.QueryRow("SELECT count(*) FROM sqlite_master WHERE name = 'schema_migrations'").Scan(&n); err != nil {
					t.Fatal(err)
				}
				return n > 0
			}
		}
		s, err := Open(spec)
		if err == nil {
			s.Close()
			t.Fatal("Open migrated a database with a foreign jobs table")
		}
		if exists() {
			t.Fatalf("Open failed (%v) but left schema_migrations behind", err)
		}
	})
}

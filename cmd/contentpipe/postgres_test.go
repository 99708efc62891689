package main

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib"
)

// The PostgreSQL tests of this package run against the server that
// CONTENTPIPE_TEST_POSTGRES names (a URL of any database on it, e.g.
// postgres://root@127.0.0.1:5432/test?sslmode=disable); each test creates
// its own database there and drops it at the end. Without the variable they
// skip, naming it; with CONTENTPIPE_REQUIRE_POSTGRES=1 (CI) a missing
// variable or an unreachable server fails them instead.
const (
	envTestPostgres    = "CONTENTPIPE_TEST_POSTGRES"
	envRequirePostgres = "CONTENTPIPE_REQUIRE_POSTGRES"
)

// forBothBackends runs fn as a subtest on SQLite (dbURL "", the world's
// own file) and on a fresh PostgreSQL database (testPostgres).
func forBothBackends(t *testing.T, fn func(t *testing.T, dbURL string)) {
	t.Run("sqlite", func(t *testing.T) { fn(t, "") })
	t.Run("postgres", func(t *testing.T) { fn(t, testPostgres(t)) })
}

// testPostgres creates a fresh database on the test server and returns its
// URL; the database is dropped when t ends.
func testPostgres(t *testing.T) string {
	t.Helper()
	base := os.Getenv(envTestPostgres)
	if base == "" {
		if os.Getenv(envRequirePostgres) == "1" {
			t.Fatalf("%s is not set but %s=1: set it to the test server, e.g. %s=postgres://root@127.0.0.1:5432/test?sslmode=disable", envTestPostgres, envRequirePostgres, envTestPostgres)
		}
		t.Skipf("PostgreSQL test skipped: %s is not set (e.g. %s=postgres://root@127.0.0.1:5432/test?sslmode=disable)", envTestPostgres, envTestPostgres)
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", envTestPostgres, err)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		t.Fatalf("the PostgreSQL server of %s is not reachable: %v (start it: pg_ctlcluster --skip-systemctl-redirect $(ls /etc/postgresql) main start)", envTestPostgres, err)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cp_cmd_" + strings.ToLower(strings.NewReplacer("/", "_", "-", "_").Replace(t.Name()))
	if len(name) > 40 {
		name = name[:40]
	}
	name += "_" + hex.EncodeToString(b[:])
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create test database: %v", err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Logf("drop test database %s: %v", name, err)
		}
	})
	u.Path = "/" + name
	return u.String()
}

// worldDB opens the world's database for the test's own queries: the
// SQLite file read-only, or the PostgreSQL database of w.dbURL.
func worldDB(t *testing.T, w *simWorld) *sql.DB {
	t.Helper()
	if w.dbURL == "" {
		return openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	}
	db, err := sql.Open("pgx", w.dbURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// q is a test query in the world's dialect: $1… placeholders on PostgreSQL
// where the SQLite text has ?.
func (w *simWorld) q(query string) string {
	if w.dbURL == "" {
		return query
	}
	var b strings.Builder
	n := 0
	for _, r := range query {
		if r == '?' {
			n++
			fmt.Fprintf(&b, "$%d", n)
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

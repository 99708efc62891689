package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// The store suite runs every store test on both backends: SQLite on a
// file in the test's temporary directory, and PostgreSQL on a database of
// its own (created and dropped by the test, so tests run in parallel) on
// the server named by CONTENTPIPE_TEST_POSTGRES. Without that variable the
// PostgreSQL cases skip, naming it; with CONTENTPIPE_REQUIRE_POSTGRES=1 a
// missing or unreachable server fails them instead.
const (
	envTestPostgres    = "CONTENTPIPE_TEST_POSTGRES"
	envRequirePostgres = "CONTENTPIPE_REQUIRE_POSTGRES"
)

// testBackend maps a running (sub)test to the backend openTemp opens for it.
var testBackend sync.Map // testing.TB → string

// forEachBackend runs fn as the subtests "sqlite" and "postgres"; openTemp
// and newSpec inside fn open that backend.
func forEachBackend(t *testing.T, fn func(t *testing.T)) {
	t.Helper()
	for _, b := range []string{BackendSQLite, BackendPostgres} {
		t.Run(b, func(t *testing.T) {
			testBackend.Store(t, b)
			t.Cleanup(func() { testBackend.Delete(t) })
			fn(t)
		})
	}
}

// backendOf is the backend of t (SQLite outside forEachBackend).
func backendOf(t testing.TB) string {
	if b, ok := testBackend.Load(t); ok {
		return b.(string)
	}
	return BackendSQLite
}

// newSpec returns the spec (a file path or a URL) of a new, empty database
// on t's backend, removed when t ends.
func newSpec(t testing.TB) string {
	t.Helper()
	if backendOf(t) == BackendPostgres {
		return newPostgresDB(t)
	}
	return filepath.Join(t.TempDir(), "data", "pipeline.db")
}

// postgresServer returns the server URL of CONTENTPIPE_TEST_POSTGRES, or
// skips t (fails it under CONTENTPIPE_REQUIRE_POSTGRES=1).
func postgresServer(t testing.TB) string {
	t.Helper()
	u := os.Getenv(envTestPostgres)
	if u == "" {
		if os.Getenv(envRequirePostgres) == "1" {
			t.Fatalf("%s is not set but %s=1: set it to the test server, e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable", envTestPostgres, envRequirePostgres)
		}
		t.Skipf("PostgreSQL case skipped: set %s (e.g. postgres://root@127.0.0.1:5432/test?sslmode=disable) to run it", envTestPostgres)
	}
	return u
}

// newPostgresDB creates a database with a random name on the test server
// and returns its URL; the database is dropped when t ends.
func newPostgresDB(t testing.TB) string {
	t.Helper()
	server := postgresServer(t)
	ctx := context.Background()
	admin, err := pgx.Connect(ctx, server)
	if err != nil {
		if os.Getenv(envRequirePostgres) != "1" {
			t.Skipf("PostgreSQL case skipped: the server of %s (%s) is unreachable: %v", envTestPostgres, RedactURL(server), err)
		}
		t.Fatalf("the server of %s (%s) is unreachable: %v", envTestPostgres, RedactURL(server), err)
	}
	defer admin.Close(ctx)
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "cp_test_" + hex.EncodeToString(b[:])
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		c, err := pgx.Connect(ctx, server)
		if err != nil {
			t.Errorf("drop database %s: %v", name, err)
			return
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("drop database %s: %v", name, err)
		}
	})
	p, err := url.Parse(server)
	if err != nil {
		t.Fatalf("%s: %v", envTestPostgres, err)
	}
	p.Path = "/" + name
	return p.String()
}

// pg reports whether the store is on PostgreSQL (for tests whose
// expectations differ by backend).
func (s *Store) pg() bool { return s.d == postgresDialect }

// Package telemetry is contentpipe's store, on SQLite (github.com/mattn/go-sqlite3,
// the embedded default) or on PostgreSQL (github.com/jackc/pgx/v5, for several
// workers on several machines; see pg.go): versioned migrations, the calls cost table, jobs and their claims, answer
// texts (outputs) with their own retention, skips, provider state and daily
// cap reservations, the alerts outbox, health checks, shadow comparisons, and
// the read-only query behind `contentpipe sql`.
//
// Every timestamp is stored as UTC ISO-8601 text with milliseconds and a Z
// (see FormatTime) so that SQLite's date functions work on it. Write
// transactions are BEGIN IMMEDIATE and short; the store is safe for
// concurrent use by several goroutines and several processes on one file.
//
// On PostgreSQL the tables, columns and meanings are the same, and so is the
// SQL text wherever both dialects accept it (the connector rebinds '?'); what
// differs is chosen once per store (dialect.go).
// Timestamps stay ISO-8601 text there too, not timestamptz: every query of
// this package compares them with FormatTime'd parameters and reads them
// with ParseTime, `db copy` moves them unchanged, and the fixed layout
// sorts as time does. An operator's SQL casts where it needs a time:
// `WHERE ts::timestamptz >= now() - interval '7 days'`. Write transactions
// there are SERIALIZABLE and rerun on a serialization failure, as a busy
// SQLite write is; job claims lock their row (FOR UPDATE SKIP LOCKED).
package telemetry

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/contentpipe/contentpipe/chain"
)

var (
	_ chain.Store    = (*Store)(nil)
	_ chain.JobStore = (*Store)(nil)
)

// BusyTimeout is how long one statement waits for another connection's
// write lock (SQLite busy_timeout) before SQLITE_BUSY is returned.
const BusyTimeout = 15 * time.Second

// busyRetries bounds how often a write transaction that still failed with
// SQLITE_BUSY or SQLITE_LOCKED after BusyTimeout is tried again.
const busyRetries = 4

// Store is the SQLite database of one contentpipe installation. Open returns
// a read-write store (migrated to the current schema), OpenReadOnly a store
// whose connections refuse every write. A Store is safe for concurrent use;
// several processes may open the same file at once.
type Store struct {
	db       *sql.DB
	path     string   // the SQLite file, or the PostgreSQL URL redacted (RedactURL)
	d        *dialect // sqliteDialect or postgresDialect
	readOnly bool
	scratch  bool // OpenScratch: Close commits its batch and drops its own indexes
	// OwnerLease and DeliveryWindow, when set (right after Open, before
	// Register), replace DefaultOwnerLease and DefaultDeliveryWindow; see
	// lease.go.
	OwnerLease, DeliveryWindow time.Duration
	// Now, when set (right after Open, before Register), is the clock of
	// the owner leases (lease.go): their renewals, the checks against
	// them, and the times of schedule slot claims. time.Now otherwise;
	// every worker sharing a database must run the same clock.
	Now func() time.Time
	// Step, when set (right after Open, before any other use), is called
	// just before and just after each write transaction's commit: the
	// crash tests kill the process there.
	Step func(step string)
}

// Open opens (creating it, and its directory, when missing) the database at
// path: the directory with mode 0700, the file with mode 0600 (an existing
// file open to others is tightened to 0600 when this user may), WAL journal, synchronous
// NORMAL, foreign keys on, busy timeout BusyTimeout, and every pending
// migration applied. A file that is not a SQLite database, or whose schema is
// newer than this binary knows, is an error that names the file and the fix.
//
// spec may also be a PostgreSQL URL (postgres://… or postgresql://…): the
// same tables on that server, migrated the same way (see pg.go), or
// sqlite:PATH for a file whose name would read as a URL.
func Open(spec string) (*Store, error) {
	if isPostgresURL(spec) {
		return openPostgres(spec, false)
	}
	path := strings.TrimPrefix(spec, "sqlite:")
	if path == "" {
		return nil, errors.New("open database: empty path (set `database:` in the config)")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create database directory: %w", err)
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	fi, err := f.Stat()
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("open database %s: is a directory (point `database:` at a file)", path)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		// Best effort: a file owned by another user keeps its mode.
		_ = os.Chmod(path, 0o600)
	}
	dsn, err := buildDSN(path, false)
	if err != nil {
		return nil, err
	}
	s := &Store{db: sql.OpenDB(connector{dsn: dsn, drv: &sqlite3.SQLiteDriver{}}), path: path, d: sqliteDialect}
	ctx := context.Background()
	// Switching a new file to WAL takes a lock that a process opening the
	// same new file at the same moment may hold: such an open is retried.
	var err2 error
	for try := 0; try <= busyRetries; try++ {
		if err2 = s.db.PingContext(ctx); err2 == nil {
			err2 = s.migrate(ctx)
		}
		if !isBusy(err2) {
			break
		}
		time.Sleep(time.Duration(50*(try+1)) * time.Millisecond)
	}
	if err2 != nil {
		s.db.Close()
		return nil, s.openErr(err2)
	}
	return s, nil
}

// OpenReadOnly opens an existing database for queries only (`contentpipe
// sql`, reports). Read-only is enforced by SQLite itself on every connection:
// the file is opened with mode=ro, PRAGMA query_only is on, and ATTACH is
// disabled, so no statement can change the file or create another one. It
// runs no migrations. A missing file is an error.
//
// On a PostgreSQL URL every connection runs with
// default_transaction_read_only=on and Query runs each statement in a READ
// ONLY transaction: the server refuses every write.
func OpenReadOnly(spec string) (*Store, error) {
	if isPostgresURL(spec) {
		return openPostgres(spec, true)
	}
	path := strings.TrimPrefix(spec, "sqlite:")
	if path == "" {
		return nil, errors.New("open database: empty path (set `database:` in the config)")
	}
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("database %s does not exist: run `contentpipe run` first or point `database:` at the right file", path)
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if fi.IsDir() {
		return nil, fmt.Errorf("open database %s: is a directory (point `database:` at a file)", path)
	}
	if err := checkHeader(path); err != nil {
		return nil, err
	}
	dsn, err := buildDSN(path, true)
	if err != nil {
		return nil, err
	}
	drv := &sqlite3.SQLiteDriver{ConnectHook: func(c *sqlite3.SQLiteConn) error {
		// No ATTACH: an attached file could be opened or created writable.
		c.SetLimit(sqlite3.SQLITE_LIMIT_ATTACHED, 0)
		c.RegisterAuthorizer(readOnlyAuthorizer)
		return nil
	}}
	s := &Store{db: sql.OpenDB(connector{dsn: dsn, drv: drv}), path: path, d: sqliteDialect, readOnly: true}
	if err := s.db.PingContext(context.Background()); err != nil {
		s.db.Close()
		return nil, s.openErr(err)
	}
	// Touch the schema once so that a damaged file fails here, not later.
	var n int
	if err := s.db.QueryRowContext(context.Background(), "SELECT count(*) FROM sqlite_master").Scan(&n); err != nil {
		s.db.Close()
		return nil, s.openErr(err)
	}
	return s, nil
}

// Close closes every connection of the store.
func (s *Store) Close() error {
	if s.scratch {
		return s.closeScratch()
	}
	return s.db.Close()
}

// Path returns the database file the store was opened on; on PostgreSQL
// the URL with its password redacted (RedactURL), fit for any message.
func (s *Store) Path() string { return s.path }

// Backend returns BackendSQLite ("sqlite") or BackendPostgres ("postgres").
func (s *Store) Backend() string { return s.d.name }

// ReadOnly reports whether the store was opened with OpenReadOnly.
func (s *Store) ReadOnly() bool { return s.readOnly }

// SQLiteVersion returns the version of the linked SQLite library.
func SQLiteVersion() string {
	v, _, _ := sqlite3.Version()
	return v
}

// queryPragmas are the pragmas that take an argument and only read.
var queryPragmas = map[string]bool{
	"table_info": true, "table_xinfo": true, "table_list": true, "index_info": true, "index_xinfo": true,
	"index_list": true, "foreign_key_list": true, "foreign_key_check": true, "integrity_check": true,
	"quick_check": true,
}

// readOnlyAuthorizer is the SQLite authorizer of read-only connections: it
// denies ATTACH, DETACH and every pragma that sets something (a pragma with
// an argument that is not a pure query), such as query_only=OFF,
// journal_mode=… or writable_schema=ON. mode=ro and query_only refuse the
// remaining writes.
func readOnlyAuthorizer(op int, arg1, arg2, _ string) int {
	switch op {
	case sqlite3.SQLITE_ATTACH, sqlite3.SQLITE_DETACH:
		return sqlite3.SQLITE_DENY
	case sqlite3.SQLITE_PRAGMA:
		if arg2 != "" && !queryPragmas[strings.ToLower(arg1)] {
			return sqlite3.SQLITE_DENY
		}
	}
	return sqlite3.SQLITE_OK
}

// connector opens connections of one DSN on one driver value, so that the
// read-only store's ConnectHook needs no globally registered driver name.
type connector struct {
	dsn string
	drv *sqlite3.SQLiteDriver
}

func (c connector) Connect(context.Context) (driver.Conn, error) { return c.drv.Open(c.dsn) }
func (c connector) Driver() driver.Driver                        { return c.drv }

// buildDSN returns the file: URI with the connection settings for path.
func buildDSN(path string, readOnly bool) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("database path %s: %w", path, err)
	}
	// SQLite URI paths: '%' escapes, '?' starts the query, '#' the fragment.
	esc := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(filepath.ToSlash(abs))
	if !strings.HasPrefix(esc, "/") {
		esc = "/" + esc
	}
	// The statement cache keeps each connection's prepared statements:
	// the same few statements run for every call.
	q := fmt.Sprintf("_busy_timeout=%d&_foreign_keys=1&_stmt_cache_size=32", BusyTimeout.Milliseconds())
	if readOnly {
		q += "&mode=ro&_query_only=1"
	} else {
		q += "&_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate"
	}
	return "file:" + esc + "?" + q, nil
}

var sqliteHeader = []byte("SQLite format 3\x00")

// checkHeader fails when path exists, is not empty, and does not start with
// the SQLite header. A missing or empty file is fine (a new database).
func checkHeader(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open database %s: %w", path, err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.IsDir() {
		return fmt.Errorf("open database %s: is a directory (point `database:` at a file)", path)
	}
	head := make([]byte, len(sqliteHeader))
	n, err := io.ReadFull(f, head)
	if n == 0 && (err == io.EOF || err == nil) {
		return nil
	}
	if n < len(head) || !bytes.Equal(head, sqliteHeader) {
		return notDatabase(path, "file is not a database")
	}
	return nil
}

func notDatabase(path, why string) error {
	return fmt.Errorf("%s is not a SQLite database (%s): move it away or point `database:` elsewhere", path, why)
}

// openErr turns SQLite's codes for a foreign or damaged file into an error
// that names the file and the fix; other errors get the file as context.
func (s *Store) openErr(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch se.Code {
		case sqlite3.ErrNotADB:
			return notDatabase(s.path, se.Error())
		case sqlite3.ErrCorrupt:
			return fmt.Errorf("database %s is damaged (%v): restore a backup, or move it away and point `database:` elsewhere", s.path, se)
		case sqlite3.ErrCantOpen:
			return fmt.Errorf("open database %s: %w (check that the file and its directory are readable and writable)", s.path, err)
		}
	}
	var ve *versionError
	if errors.As(err, &ve) {
		return err
	}
	return fmt.Errorf("open database %s: %w", s.path, err)
}

// isBusy reports whether err is SQLite saying another connection holds the
// lock (SQLITE_BUSY, SQLITE_LOCKED), i.e. the operation may be retried.
func isBusy(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked)
}

// write runs fn in one BEGIN IMMEDIATE transaction and commits it. When
// SQLite still reports the database busy or locked after its busy timeout,
// the whole transaction is tried again (at most busyRetries times), so fn
// must be safe to run more than once.
func (s *Store) write(ctx context.Context, what string, fn func(tx *sql.Tx) error) error {
	return s.writeMode(ctx, what, writeMode{}, fn)
}

// writeMode is how a write transaction runs.
type writeMode struct {
	// durable: the commit reaches the disk before it returns (SQLite).
	durable bool
	// locked: fn decides only on rows it locks itself (SELECT … FOR
	// UPDATE, an UPDATE or INSERT … ON CONFLICT whose WHERE is the
	// decision, pg_advisory_xact_lock first), so on PostgreSQL it runs
	// READ COMMITTED — each statement sees what committed before it — and
	// waits for the lock instead of failing serialization and running
	// again. SQLite's single writer needs no such distinction.
	locked bool
}

func (s *Store) writeMode(ctx context.Context, what string, mode writeMode, fn func(tx *sql.Tx) error) error {
	if s.readOnly {
		return fmt.Errorf("%s: the database %s is opened read-only and writes are refused", what, s.path)
	}
	var err error
	for try := 0; ; try++ {
		err = s.tryWrite(ctx, what, mode, fn)
		if err == nil {
			return nil
		}
		if !s.d.retryable(err) || ctx.Err() != nil {
			break
		}
		wait, gaveUp := s.d.retry(s, what, try, err)
		if gaveUp != nil {
			return gaveUp
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: %w", what, ctx.Err())
		case <-t.C:
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// retrySQLite is the wait before the next try of a write that found the
// database busy or locked (dialect.retry), growing with try, and the
// error after busyRetries tries.
func (s *Store) retrySQLite(what string, try int, err error) (time.Duration, error) {
	if try >= busyRetries {
		return 0, s.lockedErr(what, err)
	}
	return time.Duration(25*(try+1))*time.Millisecond + rand.N(25*time.Millisecond), nil
}

// retryPG is the wait before the next try of a write PostgreSQL refused
// as conflicting (dialect.retry), and the error after pgRetries tries.
func (s *Store) retryPG(what string, try int, err error) (time.Duration, error) {
	if try >= pgRetries {
		return 0, fmt.Errorf("%s: the database %s refused the transaction %d times in a row as conflicting with other workers (%v): too many workers on the same rows; rerun",
			what, s.path, pgRetries+1, err)
	}
	// Conflicts end in milliseconds: a short jittered wait.
	return rand.N(time.Duration(min(try+1, 20)) * time.Millisecond), nil
}

// lockedErr is the error of a write that found the database locked by
// another connection through every busy timeout and retry: it names the
// file and how to find the holder.
func (s *Store) lockedErr(what string, err error) error {
	return fmt.Errorf("%s: the database %s stayed locked by another process for over %s (%v): "+
		"find the holder (fuser %s; a stuck contentpipe or an open sqlite3 shell with a write transaction), stop it, then rerun",
		what, s.path, (busyRetries+1)*BusyTimeout, err, s.path)
}

// tryWrite runs fn in one transaction. A durable one runs on a connection
// switched to synchronous=FULL for its commit: in WAL mode with NORMAL a
// commit is not fsynced, and a power cut can take it back after the side
// effect it guards (a file written, a webhook sent) already happened. The
// fsync of the WAL at that commit also makes every earlier commit durable.
//
// On PostgreSQL a write transaction is SERIALIZABLE, so a decision on
// rows (a cap, a budget, a ceiling) holds across workers as it does under
// SQLite's single writer, unless it locks what it decides on (mode.locked); a commit is durable (synchronous_commit is on
// for every connection, see openPostgres), so the durable flag changes
// nothing there.
func (s *Store) tryWrite(ctx context.Context, what string, mode writeMode, fn func(tx *sql.Tx) error) error {
	return s.d.tryWrite(s, ctx, what, mode, fn)
}

func (s *Store) tryWritePG(ctx context.Context, what string, mode writeMode, fn func(tx *sql.Tx) error) error {
	iso := sql.LevelSerializable
	if mode.locked {
		iso = sql.LevelReadCommitted
	}
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
	if err != nil {
		return err
	}
	if mode.durable {
		what += " (durable)"
	}
	return s.commitWith(tx, what, fn)
}

func (s *Store) tryWriteSQLite(ctx context.Context, what string, mode writeMode, fn func(tx *sql.Tx) error) error {
	if !mode.durable {
		tx, err := s.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE through _txlock
		if err != nil {
			return err
		}
		return s.commitWith(tx, what, fn)
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "PRAGMA synchronous = FULL"); err != nil {
		return err
	}
	// Back to NORMAL before the connection returns to the pool; a failure
	// there only leaves one connection slower.
	defer conn.ExecContext(context.WithoutCancel(ctx), "PRAGMA synchronous = NORMAL") //nolint:errcheck
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	return s.commitWith(tx, what+" (durable)", fn)
}

func (s *Store) commitWith(tx *sql.Tx, what string, fn func(tx *sql.Tx) error) error {
	if err := fn(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	if s.Step != nil {
		s.Step("before commit: " + what)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if s.Step != nil {
		s.Step("committed: " + what)
	}
	return nil
}

// TimeLayout is the layout of every stored timestamp: UTC ISO-8601 with
// milliseconds and a Z, e.g. 2026-11-29T18:00:00.123Z.
const TimeLayout = "2006-01-02T15:04:05.000Z"

// FormatTime renders t in UTC with TimeLayout.
func FormatTime(t time.Time) string { return t.UTC().Format(TimeLayout) }

// ParseTime parses a stored timestamp (TimeLayout; RFC 3339 and SQLite's
// "YYYY-MM-DD HH:MM:SS" are accepted too, read as UTC). The empty string
// is the zero time.
func ParseTime(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	for _, layout := range []string{TimeLayout, time.RFC3339Nano, "2006-01-02 15:04:05.999999999", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, fmt.Errorf("parse timestamp %q: want the form 2026-11-29T18:00:00.123Z", s)
}

// nullTime is the column value for an optional timestamp: NULL when zero.
func nullTime(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return FormatTime(t)
}

// scanTime parses an optional stored timestamp.
func scanTime(ns sql.NullString) (time.Time, error) {
	if !ns.Valid {
		return time.Time{}, nil
	}
	return ParseTime(ns.String)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func nullFloat(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

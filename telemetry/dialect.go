package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// dialect is everything that differs between the two backends, chosen once
// when a store opens (Store.d): the SQL the dialects spell differently and
// the few operations that work differently (migrations, write
// transactions and their retries, liveness of a claim's owner, checks,
// error texts). Everything else is one text for both: the connector
// rebinds '?' placeholders for PostgreSQL (pg.go), ON CONFLICT upserts and
// RETURNING id run on both (the hot inserts take their id through
// insertID), and timestamps are the same ISO-8601 text.
type dialect struct {
	name string // BackendSQLite or BackendPostgres

	// tableExists is a query of one argument, a table name, that returns
	// 1 when the table exists and 0 otherwise.
	tableExists string
	// unitSep is the SQL of the character 31 (the unit separator).
	unitSep string
	// lockRow ends a SELECT that locks the rows it returns for the rest
	// of the transaction, skipping rows another transaction holds; empty
	// where a write transaction already excludes every other writer.
	lockRow string
	// advisoryLock is a statement of one argument, a key, that takes a
	// lock held to the transaction's end (see writeMode.locked); empty
	// where the write transaction itself is the lock.
	advisoryLock string
	// snapshot is how `db copy` reads its source: one consistent snapshot.
	snapshot *sql.TxOptions
	// leases: a claim's owner lives while its owners row has an unexpired
	// lease (lease.go), not while it holds its lock file (owner.go).
	leases bool
	// readerRole: Query on a read-only store runs in a READ ONLY
	// transaction as PGReaderRole (see enterReader).
	readerRole bool
	// numericText: the driver returns NUMERIC values as text, which Query
	// turns into numbers.
	numericText bool
	// stringText: a text column takes a string, not bytes.
	stringText bool
	// resetSequence, with a table name for %[1]s, sets the table's id
	// sequence past its largest id (after `db copy`); empty when the id
	// needs no sequence.
	resetSequence string

	migrations []migration
	// secondsBetween is the SQL of the seconds from the stored timestamp
	// a to the stored timestamp b (TEXT timestamps).
	secondsBetween func(a, b string) string
	migrate        func(s *Store, ctx context.Context) error
	// tryWrite runs fn in one write transaction; retry is how long to wait
	// before running a failed one again (the try-th time), or the error
	// to give up with.
	tryWrite  func(s *Store, ctx context.Context, what string, mode writeMode, fn func(tx *sql.Tx) error) error
	retryable func(err error) bool
	retry     func(s *Store, what string, try int, err error) (time.Duration, error)
	register  func(s *Store, o chain.Owner) (*Process, error)
	alive     func(s *Store, o chain.Owner) bool
	// quickCheck and integrityCheck are QuickCheck and IntegrityCheck.
	quickCheck, integrityCheck func(s *Store, ctx context.Context) error
	queryErr                   func(s *Store, err error) error
	// insertID runs an INSERT that ends in " RETURNING id" and returns
	// that id.
	insertID func(ctx context.Context, tx *sql.Tx, insert string, args ...any) (int64, error)
}

var sqliteDialect = &dialect{
	name:        BackendSQLite,
	tableExists: "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?",
	unitSep:     "char(31)",
	migrations:  migrations,
	secondsBetween: func(a, b string) string {
		return "(julianday(" + b + ") - julianday(" + a + ")) * 86400.0"
	},
	migrate:        (*Store).migrateSQLite,
	tryWrite:       (*Store).tryWriteSQLite,
	retryable:      isBusy,
	retry:          (*Store).retrySQLite,
	register:       (*Store).registerSQLite,
	alive:          (*Store).aliveSQLite,
	quickCheck:     (*Store).quickCheckSQLite,
	integrityCheck: func(s *Store, ctx context.Context) error { return s.check(ctx, "PRAGMA integrity_check") },
	queryErr:       (*Store).queryErrSQLite,
	insertID:       insertLastID,
}

var postgresDialect = &dialect{
	name:          BackendPostgres,
	tableExists:   "SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema() AND table_name = ?",
	unitSep:       "chr(31)",
	lockRow:       " FOR UPDATE SKIP LOCKED",
	advisoryLock:  "SELECT pg_advisory_xact_lock(?)",
	snapshot:      &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true},
	leases:        true,
	readerRole:    true,
	numericText:   true,
	stringText:    true,
	resetSequence: "SELECT setval(pg_get_serial_sequence('%[1]s', 'id'), COALESCE(MAX(id), 0) + 1, false) FROM %[1]s",
	migrations:    pgMigrations,
	secondsBetween: func(a, b string) string {
		return "EXTRACT(EPOCH FROM (" + b + "::timestamptz - " + a + "::timestamptz))::double precision"
	},
	migrate:        (*Store).migratePG,
	tryWrite:       (*Store).tryWritePG,
	retryable:      isPGRetry,
	retry:          (*Store).retryPG,
	register:       (*Store).registerPG,
	alive:          (*Store).alivePG,
	quickCheck:     func(s *Store, ctx context.Context) error { return s.pgCheck(ctx, stateTables) },
	integrityCheck: func(s *Store, ctx context.Context) error { return s.pgCheck(ctx, copyTables) },
	queryErr:       (*Store).queryErrPG,
	insertID:       insertReturning,
}

// insertReturning reads the id the INSERT returns.
func insertReturning(ctx context.Context, tx *sql.Tx, insert string, args ...any) (id int64, err error) {
	if _, err := withoutReturning(insert); err != nil {
		return 0, err
	}
	err = tx.QueryRowContext(ctx, insert, args...).Scan(&id)
	return id, err
}

// insertLastID runs the INSERT without its RETURNING clause and takes the
// rowid SQLite gives the row (every id column is INTEGER PRIMARY KEY, the
// rowid's alias). With RETURNING, each execution grew and trimmed the C
// heap (perf: sysmalloc, madvise, page-table flushes, all absent without
// it), and the attempt's durable write cost about 100 µs more
// (BENCHMARKS.md §13).
func insertLastID(ctx context.Context, tx *sql.Tx, insert string, args ...any) (int64, error) {
	plain, err := withoutReturning(insert)
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, plain, args...)
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// withoutReturning is insert without the "RETURNING id" it must end in.
func withoutReturning(insert string) (string, error) {
	plain, ok := strings.CutSuffix(insert, "RETURNING id")
	if !ok {
		return "", fmt.Errorf("insert %q does not end in RETURNING id", insert)
	}
	return plain, nil
}

package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// stateTables are the tables whose damage could make a run publish twice or
// lose a job: the ones QuickCheck verifies at every open. They stay small
// (a row per job, provider or alert), so checking them costs milliseconds,
// while PRAGMA quick_check of a whole database with 10^6 calls rows takes
// seconds (see BENCHMARKS.md).
var stateTables = []string{"schema_migrations", "jobs", "provider_state", "cap_reservations", "alerts", "meta"}

// CorruptError is a damaged database file: it names the file, what SQLite
// found, and the fix.
type CorruptError struct {
	Path   string
	Detail string
}

func (e *CorruptError) Error() string {
	return fmt.Sprintf("database %s is damaged (PRAGMA integrity_check: %s): restore a backup, "+
		"or recover what is readable with `sqlite3 %s .recover | sqlite3 new.db` and point `database:` at it", e.Path, e.Detail, e.Path)
}

// QuickCheck runs PRAGMA quick_check on the state tables (stateTables) and
// their indexes: the cheap check of every open for a run. A damaged page
// there, or a read that hits damage, is a *CorruptError.
//
// On PostgreSQL the server owns the integrity of its pages (checksums,
// WAL): QuickCheck reads every state table once, so that a missing table
// or a server that cannot read one fails at open as a damaged file does.
func (s *Store) QuickCheck(ctx context.Context) error { return s.d.quickCheck(s, ctx) }

func (s *Store) quickCheckSQLite(ctx context.Context) error {
	for _, t := range stateTables {
		if err := s.check(ctx, fmt.Sprintf("PRAGMA quick_check(%s)", t)); err != nil {
			return err
		}
	}
	return nil
}

// IntegrityCheck runs the full PRAGMA integrity_check of the whole file
// (`health`): seconds per 10^6 calls rows.
// On PostgreSQL it counts the rows of every table (see QuickCheck).
func (s *Store) IntegrityCheck(ctx context.Context) error { return s.d.integrityCheck(s, ctx) }

// pgCheck reads every row of each table (count(*)) in one read-only
// transaction.
func (s *Store) pgCheck(ctx context.Context, tables []string) error {
	tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("check database %s: %w", s.path, err)
	}
	defer tx.Rollback() //nolint:errcheck
	for _, t := range tables {
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
			return fmt.Errorf("check database %s: table %s: %w (restore a backup, or run `contentpipe run` once to migrate it)", s.path, t, err)
		}
	}
	return nil
}

func (s *Store) check(ctx context.Context, pragma string) error {
	rows, err := s.db.QueryContext(ctx, pragma)
	if err != nil {
		return s.corrupt(err)
	}
	defer rows.Close()
	var found []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return s.corrupt(err)
		}
		if line != "ok" && len(found) < 5 {
			found = append(found, line)
		}
	}
	if err := rows.Err(); err != nil {
		return s.corrupt(err)
	}
	if len(found) > 0 {
		return &CorruptError{Path: s.path, Detail: strings.Join(found, "; ")}
	}
	return nil
}

// corrupt turns SQLite's corruption codes into a *CorruptError; other
// errors get the file as context.
func (s *Store) corrupt(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB) {
		return &CorruptError{Path: s.path, Detail: se.Error()}
	}
	return fmt.Errorf("check database %s: %w", s.path, err)
}

// metaTarget is the meta key of the publishing target a database belongs to.
const metaTarget = "publish_target"

// TargetError is a config whose publishing target differs from the one the
// database belongs to.
type TargetError struct {
	Path, Have, Want string
}

func (e *TargetError) Error() string {
	if isPostgresURL(e.Path) {
		return fmt.Sprintf("database %s belongs to the publishing target %s, but this config publishes to %s: "+
			"point `database:` at this config's own database; if you moved the target on purpose, run "+
			"`psql '%s' -c \"DELETE FROM meta WHERE key = '%s'\"` once, then rerun", e.Path, e.Have, e.Want, e.Path, metaTarget)
	}
	return fmt.Sprintf("database %s belongs to the publishing target %s, but this config publishes to %s: "+
		"point `database:` at this config's own database; if you moved the target on purpose, run "+
		"`sqlite3 %s \"DELETE FROM meta WHERE key = '%s'\"` once, then rerun", e.Path, e.Have, e.Want, e.Path, metaTarget)
}

// BindTarget records target as the publishing target of the database when
// none is recorded yet, and refuses (*TargetError) a different one: two
// configs on one database would adopt and re-publish each other's jobs.
func (s *Store) BindTarget(ctx context.Context, target string) error {
	var have string
	err := s.write(ctx, "bind publishing target", func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, "SELECT value FROM meta WHERE key = ?", metaTarget).Scan(&have)
		if errors.Is(err, sql.ErrNoRows) {
			have = target
			_, err = tx.ExecContext(ctx, "INSERT INTO meta (key, value, updated_at) VALUES (?, ?, ?)", metaTarget, target, FormatTime(time.Now()))
		}
		return err
	})
	if err != nil {
		return err
	}
	if have != target {
		return &TargetError{Path: s.path, Have: have, Want: target}
	}
	return nil
}

package telemetry

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// copyTables are the tables of a contentpipe database, parents before the
// tables that reference them (outputs references calls). schema_migrations
// is not among them: each database keeps its own history.
var copyTables = []string{
	"calls", "outputs", "jobs", "skips", "alerts", "health_checks", "shadow_comparisons",
	"provider_state", "provider_events", "cap_reservations", "cap_days", "spend_days", "meta", "incidents", "owners", "schedule_slots",
}

// derivedTables are the running totals the triggers on cap_reservations
// keep (totalsSQL): Copy does not insert their rows, the destination's
// triggers build them from the reservations it copies, and Copy checks
// that they hold as many rows as the source's.
var derivedTables = map[string]bool{"cap_days": true, "spend_days": true}

// TableRows is one table of a copy and the rows it holds.
type TableRows struct {
	Table string
	Rows  int64
}

// CopyReport is what Copy moved: every table in copy order with its rows
// (verified in the destination).
type CopyReport struct {
	Tables []TableRows
}

// Total is the number of rows copied.
func (r CopyReport) Total() int64 {
	var n int64
	for _, t := range r.Tables {
		n += t.Rows
	}
	return n
}

// copyBatchParams bounds the parameters of one multi-row INSERT (SQLite
// allows 32766, PostgreSQL 65535).
const copyBatchParams = 30000

// Copy copies every table of src into dst (SQLite to PostgreSQL, back, or
// between two databases of one kind): rows, ids and values unchanged, in
// one destination transaction, reading src in one snapshot. dst must hold
// no rows yet (a fresh database: Open migrates it), and both must be at
// this binary's schema version. Before the commit it verifies that every
// table of dst holds as many rows as src did; on PostgreSQL it then sets
// each identity column's sequence past the copied ids, so new rows get new
// ids. Workers must not write src during the copy (stop them first): what
// they write after its snapshot is not copied.
func Copy(ctx context.Context, src, dst *Store) (CopyReport, error) {
	var rep CopyReport
	if dst.readOnly {
		return rep, fmt.Errorf("copy into %s: the destination is opened read-only", dst.path)
	}
	for _, s := range []*Store{src, dst} {
		var v int
		if err := s.db.QueryRowContext(ctx, "SELECT COALESCE(MAX(version), 0) FROM schema_migrations").Scan(&v); err != nil {
			return rep, fmt.Errorf("copy: read the schema version of %s: %w", s.path, err)
		}
		if v != SchemaVersion {
			return rep, fmt.Errorf("copy: %s has schema version %d, this contentpipe %d: run this contentpipe on it once (it migrates), then copy", s.path, v, SchemaVersion)
		}
	}
	stx, err := src.db.BeginTx(ctx, src.d.snapshot)
	if err != nil {
		return rep, fmt.Errorf("copy: read %s: %w", src.path, err)
	}
	defer stx.Rollback() //nolint:errcheck
	err = dst.write(ctx, "copy into "+dst.path, func(tx *sql.Tx) error {
		rep = CopyReport{}
		var full []string
		for _, t := range copyTables {
			var n int64
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				full = append(full, fmt.Sprintf("%s: %d rows", t, n))
			}
		}
		if len(full) > 0 {
			return fmt.Errorf("the destination %s already holds rows (%s): copy into a new, empty database (create one, e.g. `createdb NAME`, or name a new SQLite file); a copy never merges",
				dst.path, strings.Join(full, ", "))
		}
		for _, t := range copyTables {
			var want, got int64
			if err := stx.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&want); err != nil {
				return fmt.Errorf("count %s in %s: %w", t, src.path, err)
			}
			n := want
			if !derivedTables[t] {
				if n, err = copyTable(ctx, stx, tx, t, dst.d.stringText); err != nil {
					return fmt.Errorf("table %s: %w", t, err)
				}
			}
			if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM "+t).Scan(&got); err != nil {
				return fmt.Errorf("count %s in %s: %w", t, dst.path, err)
			}
			if n != want || got != want {
				return fmt.Errorf("table %s: %d rows in %s, %d read, %d in %s after the copy: nothing was copied", t, want, src.path, n, got, dst.path)
			}
			rep.Tables = append(rep.Tables, TableRows{Table: t, Rows: got})
		}
		for _, t := range copyTables {
			if !identityTables[t] || dst.d.resetSequence == "" {
				continue
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf(dst.d.resetSequence, t)); err != nil {
				return fmt.Errorf("set the id sequence of %s: %w", t, err)
			}
		}
		return nil
	})
	if err != nil {
		return CopyReport{}, fmt.Errorf("copy %s to %s: %w", src.path, dst.path, err)
	}
	return rep, nil
}

// copyTable inserts every row of table from src into dst, in multi-row
// INSERTs, and returns how many it read.
func copyTable(ctx context.Context, src, dst *sql.Tx, table string, toPG bool) (int64, error) {
	rows, err := src.QueryContext(ctx, "SELECT * FROM "+table)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return 0, err
	}
	per := max(1, min(500, copyBatchParams/len(cols)))
	head := "INSERT INTO " + table + " (" + strings.Join(cols, ", ") + ") VALUES "
	tuple := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + ")"
	var (
		n     int64
		batch []any
		count int
	)
	flush := func() error {
		if count == 0 {
			return nil
		}
		q := head + strings.TrimSuffix(strings.Repeat(tuple+", ", count), ", ")
		if _, err := dst.ExecContext(ctx, q, batch...); err != nil {
			return err
		}
		batch, count = batch[:0], 0
		return nil
	}
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return n, err
		}
		if toPG {
			for i, v := range vals {
				// SQLite hands TEXT back as []byte at times; PostgreSQL's
				// text columns want a string (payload stays bytes).
				if b, ok := v.([]byte); ok && cols[i] != "payload" {
					vals[i] = string(b)
				}
			}
		}
		batch = append(batch, vals...)
		count++
		n++
		if count == per {
			if err := flush(); err != nil {
				return n, err
			}
		}
	}
	if err := rows.Err(); err != nil {
		return n, err
	}
	return n, flush()
}

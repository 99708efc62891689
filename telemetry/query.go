package telemetry

import (
	"context"
	"database/sql"
	"encoding/csv"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// Query runs q with args and returns the column names and every row. Values
// are int64, float64, string, []byte (blobs that are not UTF-8 text) or nil
// (NULL). On a read-only store a statement that would write fails with an
// error saying so.
//
// On a read-only PostgreSQL store q runs in a READ ONLY transaction (on a
// connection whose default is read-only too), rolled back at the end, as
// the role PGReaderRole (see enterReader): it must be a read, and the role
// must have no right beyond reading.
func (s *Store) Query(ctx context.Context, q string, args ...any) (cols []string, rows [][]any, err error) {
	var src interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	} = s.db
	if s.d.readerRole && s.readOnly {
		tx, err := s.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			return nil, nil, s.queryErr(err)
		}
		defer tx.Rollback() //nolint:errcheck
		if err := enterReader(ctx, tx, q); err != nil {
			return nil, nil, err
		}
		src = tx
	}
	rs, err := src.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, nil, s.queryErr(err)
	}
	defer rs.Close()
	if cols, err = rs.Columns(); err != nil {
		return nil, nil, s.queryErr(err)
	}
	// PostgreSQL's numeric (ROUND(x::numeric, 4), AVG of an integer) comes
	// as text: it is a number here as on SQLite.
	var numeric []bool
	if s.d.numericText {
		if types, err := rs.ColumnTypes(); err == nil {
			numeric = make([]bool, len(types))
			for i, ct := range types {
				numeric[i] = ct.DatabaseTypeName() == "NUMERIC"
			}
		}
	}
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, nil, s.queryErr(err)
		}
		for i, v := range vals {
			if b, ok := v.([]byte); ok && utf8.Valid(b) {
				vals[i] = string(b)
			}
			if numeric != nil && numeric[i] {
				if str, ok := vals[i].(string); ok {
					if f, err := strconv.ParseFloat(str, 64); err == nil {
						vals[i] = f
					}
				}
			}
		}
		rows = append(rows, vals)
	}
	if err := rs.Err(); err != nil {
		return nil, nil, s.queryErr(err)
	}
	if err := rs.Close(); err != nil {
		return nil, nil, s.queryErr(err)
	}
	return cols, rows, nil
}

// queryErr explains SQLite's refusals on a read-only store.
func (s *Store) queryErr(err error) error { return s.d.queryErr(s, err) }

func (s *Store) queryErrPG(err error) error {
	switch pgCode(err) {
	case "25006": // read_only_sql_transaction
		return fmt.Errorf("the database %s is opened read-only and writes are refused: %w", s.path, err)
	case "42501": // insufficient_privilege
		if s.readOnly {
			return fmt.Errorf("the database %s is opened read-only, as the role %s that may only read the tables: %w", s.path, PGReaderRole, err)
		}
	}
	return fmt.Errorf("query: %w", err)
}

func (s *Store) queryErrSQLite(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) {
		switch {
		case se.Code == sqlite3.ErrReadonly:
			return fmt.Errorf("the database %s is opened read-only and writes are refused: %w", s.path, err)
		case s.readOnly && (se.Code == sqlite3.ErrAuth || strings.Contains(se.Error(), "too many attached databases")):
			return fmt.Errorf("the database %s is opened read-only and writes are refused (no ATTACH, VACUUM or setting pragmas): %w", s.path, err)
		case se.Code == sqlite3.ErrNotADB || se.Code == sqlite3.ErrCorrupt:
			return s.openErr(err)
		}
	}
	return fmt.Errorf("query: %w", err)
}

// WriteTable writes a query result to w in format "table" (aligned columns
// with a header, NULL shown as NULL, numbers right-aligned, followed by a
// row count; the empty format means table), "csv" (a header line, NULL as an
// empty field) or "json" (an array of objects in column order, numbers as
// JSON numbers, NULL as null).
func WriteTable(w io.Writer, cols []string, rows [][]any, format string) error {
	switch format {
	case "", "table":
		return writeText(w, cols, rows)
	case "csv":
		return writeCSV(w, cols, rows)
	case "json":
		return writeJSON(w, cols, rows)
	}
	return fmt.Errorf("unknown format %q: use table, csv or json", format)
}

// cell renders a value as text; null is what NULL becomes.
func cell(v any, null string) string {
	switch x := v.(type) {
	case nil:
		return null
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return formatFloat(x)
	case string:
		return x
	case []byte:
		if utf8.Valid(x) {
			return string(x)
		}
		return "x'" + hex.EncodeToString(x) + "'"
	case bool:
		if x {
			return "1"
		}
		return "0"
	case time.Time:
		return FormatTime(x)
	}
	return fmt.Sprint(v)
}

// formatFloat writes f as JSON would: plain digits, exponent only below
// 1e-6 or from 1e21.
func formatFloat(f float64) string {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return strconv.FormatFloat(f, 'g', -1, 64)
	}
	b, _ := json.Marshal(f)
	return string(b)
}

func isNumber(v any) bool {
	switch v.(type) {
	case int64, float64:
		return true
	}
	return false
}

var controlEscaper = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`)

func writeText(w io.Writer, cols []string, rows [][]any) error {
	widths := make([]int, len(cols))
	right := make([]bool, len(cols))
	text := make([][]string, len(rows))
	for i, c := range cols {
		widths[i] = utf8.RuneCountInString(c)
		right[i] = true
	}
	seen := make([]bool, len(cols))
	for r, row := range rows {
		text[r] = make([]string, len(cols))
		for i := range cols {
			var v any
			if i < len(row) {
				v = row[i]
			}
			if v != nil {
				seen[i] = true
				if !isNumber(v) {
					right[i] = false
				}
			}
			s := controlEscaper.Replace(cell(v, "NULL"))
			text[r][i] = s
			widths[i] = max(widths[i], utf8.RuneCountInString(s))
		}
	}
	for i := range right {
		right[i] = right[i] && seen[i]
	}
	var b strings.Builder
	line := func(fields []string) {
		for i, f := range fields {
			if i > 0 {
				b.WriteString("  ")
			}
			pad := strings.Repeat(" ", widths[i]-utf8.RuneCountInString(f))
			if right[i] {
				b.WriteString(pad + f)
			} else if i < len(fields)-1 {
				b.WriteString(f + pad)
			} else {
				b.WriteString(f)
			}
		}
		b.WriteByte('\n')
	}
	if len(cols) > 0 {
		line(cols)
		dashes := make([]string, len(cols))
		for i := range cols {
			dashes[i] = strings.Repeat("-", widths[i])
		}
		line(dashes)
		for _, t := range text {
			line(t)
		}
	}
	switch len(rows) {
	case 1:
		b.WriteString("(1 row)\n")
	default:
		fmt.Fprintf(&b, "(%d rows)\n", len(rows))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeCSV(w io.Writer, cols []string, rows [][]any) error {
	cw := csv.NewWriter(w)
	if len(cols) > 0 {
		if err := cw.Write(cols); err != nil {
			return err
		}
	}
	rec := make([]string, len(cols))
	for _, row := range rows {
		for i := range cols {
			var v any
			if i < len(row) {
				v = row[i]
			}
			rec[i] = cell(v, "")
		}
		if err := cw.Write(rec); err != nil {
			return err
		}
	}
	cw.Flush()
	return cw.Error()
}

func writeJSON(w io.Writer, cols []string, rows [][]any) error {
	var b strings.Builder
	b.WriteString("[")
	for r, row := range rows {
		if r > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  {")
		for i, c := range cols {
			if i > 0 {
				b.WriteString(", ")
			}
			k, _ := json.Marshal(c)
			b.Write(k)
			b.WriteString(": ")
			var v any
			if i < len(row) {
				v = row[i]
			}
			b.WriteString(jsonValue(v))
		}
		b.WriteString("}")
	}
	if len(rows) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func jsonValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		if math.IsInf(x, 0) || math.IsNaN(x) {
			return "null"
		}
		n, _ := json.Marshal(x)
		return string(n)
	case bool:
		return strconv.FormatBool(x)
	}
	s, _ := json.Marshal(cell(v, ""))
	return string(s)
}

package telemetry

import (
	"maps"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// schemaOf lists every table of s with its column names in order.
func schemaOf(t *testing.T, s *Store) map[string][]string {
	t.Helper()
	q := `SELECT m.name, p.name FROM sqlite_master m JOIN pragma_table_info(m.name) p
WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`
	if s.pg() {
		q = `SELECT table_name, column_name FROM information_schema.columns
WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`
	}
	rows, err := s.db.QueryContext(t.Context(), q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		out[table] = append(out[table], col)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSchemaTheSameOnBothBackends: the PostgreSQL schema is written apart
// from SQLite's migrations (migrate.go), so this test holds them together —
// the same tables with the same columns in the same order — and holds
// copyTables to every table there is, so Copy cannot leave one behind, and
// identityTables to every table whose id PostgreSQL generates.
func TestSchemaTheSameOnBothBackends(t *testing.T) {
	lite, err := Open(filepath.Join(t.TempDir(), "schema.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	want := schemaOf(t, lite)
	tables := make([]string, 0, len(want))
	for name := range want {
		if name != "schema_migrations" {
			tables = append(tables, name)
		}
	}
	slices.Sort(tables)
	listed := slices.Sorted(slices.Values(copyTables))
	if !slices.Equal(tables, listed) {
		t.Errorf("tables of a migrated database %v, copyTables %v: list every table in copyTables", tables, listed)
	}
	pg, err := Open(newPostgresDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	// `db copy` sets the sequences of identityTables (copy.go): a table
	// with a generated id missing there would hand out copied ids again.
	rows, err := pg.db.QueryContext(t.Context(), `SELECT table_name FROM information_schema.columns
WHERE table_schema = current_schema() AND is_identity = 'YES' ORDER BY table_name`)
	if err != nil {
		t.Fatal(err)
	}
	var identity []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			t.Fatal(err)
		}
		identity = append(identity, name)
	}
	rows.Close()
	if listed := slices.Sorted(maps.Keys(identityTables)); !slices.Equal(identity, listed) {
		t.Errorf("tables with a generated id on PostgreSQL %v, identityTables %v", identity, listed)
	}
	if got := schemaOf(t, pg); !reflect.DeepEqual(got, want) {
		for name, cols := range want {
			if !slices.Equal(got[name], cols) {
				t.Errorf("table %s: PostgreSQL columns %v, SQLite %v", name, got[name], cols)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok {
				t.Errorf("table %s exists on PostgreSQL only", name)
			}
		}
	}
}

package telemetry

import (
	"reflect"
	"testing"
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

package telemetry

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/contentpipe/contentpipe/chain"
)

func TestReadOnlyRefusesWrites(t *testing.T) {
	w, path := openTemp(t)
	ctx := t.Context()
	for i := range 3 {
		if err := w.RecordCall(ctx, chain.Call{Provider: "gemini", RequestID: "j", Attempt: i + 1, TS: t0, CostUSD: 0.1, Outcome: chain.OutcomeOK, Text: "t"}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close() // the read-only store must also work without a writer around

	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	writes := []string{
		"INSERT INTO calls (provider, request_id, attempt, ts, outcome) VALUES ('x', 'y', 9, '2026', 'ok')",
		"UPDATE calls SET cost_estimate_usd = 99",
		"DELETE FROM calls",
		"DELETE FROM outputs",
		"DROP TABLE calls",
		"CREATE TABLE evil (x)",
		"CREATE INDEX evil ON calls (model)",
		"PRAGMA user_version = 42",
		"VACUUM",
		"REPLACE INTO jobs (id, topic, slot, status, created_at, updated_at) VALUES ('a','b','c','d','e','f')",
	}
	for _, q := range writes {
		_, _, err := r.Query(ctx, q)
		if err == nil {
			t.Errorf("%s: accepted", q)
			continue
		}
		if !strings.Contains(err.Error(), "read-only") || !strings.Contains(err.Error(), "writes are refused") {
			t.Errorf("%s: error %q does not say the database is read-only", q, err)
		}
	}
	// Tricks: turn query_only off, attach the same file (or a new one)
	// writable, vacuum into a new file.
	tricks := []string{
		"PRAGMA query_only = OFF",
		"DELETE FROM calls",
		"ATTACH DATABASE 'file:" + path + "?mode=rw' AS w",
		"DELETE FROM w.calls",
		"ATTACH DATABASE '" + filepath.Join(filepath.Dir(path), "new.db") + "' AS n",
		"CREATE TABLE n.t (x)",
		"VACUUM INTO '" + filepath.Join(filepath.Dir(path), "copy.db") + "'",
		"PRAGMA journal_mode = DELETE",
		"PRAGMA writable_schema = ON",
		"UPDATE sqlite_master SET sql = '' WHERE name = 'calls'",
	}
	for _, q := range tricks {
		_, _, err := r.Query(ctx, q)
		if err == nil {
			t.Errorf("%s: accepted", q)
			continue
		}
		direct := strings.HasPrefix(q, "ATTACH") || strings.HasPrefix(q, "VACUUM") || strings.HasPrefix(q, "PRAGMA")
		if direct && !strings.Contains(err.Error(), "read-only") {
			t.Errorf("%s: error %v, want a read-only refusal", q, err)
		}
	}
	// go-sqlite3 runs every statement of a multi-statement query.
	if _, _, err := r.Query(ctx, "SELECT 1; DELETE FROM calls"); err == nil {
		t.Error("multi-statement write accepted")
	}
	// Reading pragmas still work.
	for _, q := range []string{"PRAGMA table_info(calls)", "PRAGMA journal_mode", "PRAGMA user_version", "PRAGMA quick_check"} {
		if _, rows, err := r.Query(ctx, q); err != nil || len(rows) == 0 {
			t.Errorf("%s: %v rows, %v", q, len(rows), err)
		}
	}
	// A WAL reader may create the -wal/-shm files SQLite needs; nothing else.
	for _, n := range []string{"new.db", "copy.db"} {
		if _, err := os.Stat(filepath.Join(filepath.Dir(path), n)); err == nil {
			t.Errorf("read-only store created %s", n)
		}
	}
	r.Close()

	w, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if n := queryInt(t, w, "SELECT count(*) FROM calls"); n != 3 {
		t.Fatalf("calls = %d after read-only session, want 3", n)
	}
	if n := queryInt(t, w, "SELECT count(*) FROM outputs"); n != 3 {
		t.Fatalf("outputs = %d", n)
	}
	if n := queryInt(t, w, "SELECT count(*) FROM calls WHERE cost_estimate_usd = 0.1"); n != 3 {
		t.Fatalf("costs changed")
	}
	if n := queryInt(t, w, "PRAGMA user_version"); n != 0 {
		t.Fatalf("user_version = %d", n)
	}
	if n := queryInt(t, w, "SELECT count(*) FROM sqlite_master WHERE name IN ('evil', 't')"); n != 0 {
		t.Fatalf("schema changed")
	}
	_, rows, _ := w.Query(ctx, "PRAGMA journal_mode")
	if rows[0][0] != "wal" {
		t.Fatalf("journal_mode = %v", rows[0][0])
	}
	// The writer's helpers refuse too, with the same message.
	if err := r.RecordSkip(ctx, chain.Skip{TS: t0, Provider: "x", Reason: "cap"}); err == nil || !strings.Contains(err.Error(), "read-only") {
		t.Fatalf("RecordSkip on a read-only store: %v", err)
	}
}

func TestReadOnlyWhileWriterActive(t *testing.T) { forEachBackend(t, testReadOnlyWhileWriterActive) }

func testReadOnlyWhileWriterActive(t *testing.T) {
	w, path := openTemp(t)
	ctx := t.Context()
	if err := w.RecordSkip(ctx, chain.Skip{TS: t0, Provider: "groq", Reason: chain.SkipCap}); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if n := queryInt(t, r, "SELECT count(*) FROM skips"); n != 1 {
		t.Fatalf("skips = %d", n)
	}
	if err := w.RecordSkip(ctx, chain.Skip{TS: t0, Provider: "groq", Reason: chain.SkipCap}); err != nil {
		t.Fatal(err)
	}
	if n := queryInt(t, r, "SELECT count(*) FROM skips"); n != 2 {
		t.Fatalf("reader does not see the writer's commit: %d", n)
	}
	if _, _, err := r.Query(ctx, "SELEC nonsense"); err == nil || strings.Contains(err.Error(), "read-only") {
		t.Fatalf("syntax error = %v", err)
	}
}

func TestWriteTableFormats(t *testing.T) {
	cols := []string{"provider", "calls", "usd", "note"}
	rows := [][]any{
		{"gemini", int64(12), 0.0345, nil},
		{"openrouter", int64(3), float64(2), "line1\nline2"},
		{"grök", int64(100), 1e-9, "a,\"b\""},
	}
	var b bytes.Buffer
	if err := WriteTable(&b, cols, rows, "table"); err != nil {
		t.Fatal(err)
	}
	want := "" +
		"provider    calls     usd  note\n" +
		"----------  -----  ------  ------------\n" +
		"gemini         12  0.0345  NULL\n" +
		"openrouter      3       2  line1\\nline2\n" +
		"grök          100    1e-9  a,\"b\"\n" +
		"(3 rows)\n"
	if b.String() != want {
		t.Fatalf("table:\n%s\nwant:\n%s", b.String(), want)
	}

	b.Reset()
	if err := WriteTable(&b, cols, rows, "csv"); err != nil {
		t.Fatal(err)
	}
	wantCSV := "provider,calls,usd,note\ngemini,12,0.0345,\nopenrouter,3,2,\"line1\nline2\"\ngrök,100,1e-9,\"a,\"\"b\"\"\"\n"
	if b.String() != wantCSV {
		t.Fatalf("csv:\n%q\nwant:\n%q", b.String(), wantCSV)
	}

	b.Reset()
	if err := WriteTable(&b, cols, rows, "json"); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b.Bytes()))
	dec.UseNumber()
	var objs []map[string]any
	if err := dec.Decode(&objs); err != nil {
		t.Fatalf("json %s: %v", b.String(), err)
	}
	if len(objs) != 3 {
		t.Fatalf("json objects = %d", len(objs))
	}
	if n, ok := objs[0]["calls"].(json.Number); !ok || n.String() != "12" {
		t.Errorf("calls = %#v, want the number 12", objs[0]["calls"])
	}
	if n, ok := objs[0]["usd"].(json.Number); !ok || n.String() != "0.0345" {
		t.Errorf("usd = %#v, want the number 0.0345", objs[0]["usd"])
	}
	if v, present := objs[0]["note"]; !present || v != nil {
		t.Errorf("note = %#v, want null", v)
	}
	if objs[1]["note"] != "line1\nline2" || objs[2]["provider"] != "grök" {
		t.Errorf("strings = %v", objs)
	}
	if !strings.HasPrefix(b.String(), "[\n  {\"provider\": \"gemini\", \"calls\": 12") {
		t.Errorf("json keys not in column order: %s", b.String())
	}

	// Empty results.
	for format, want := range map[string]string{"table": "provider  calls\n--------  -----\n(0 rows)\n", "csv": "provider,calls\n", "json": "[]\n"} {
		b.Reset()
		if err := WriteTable(&b, []string{"provider", "calls"}, nil, format); err != nil {
			t.Fatal(err)
		}
		if b.String() != want {
			t.Errorf("empty %s = %q, want %q", format, b.String(), want)
		}
	}
	if err := WriteTable(&b, cols, rows, "xml"); err == nil {
		t.Fatal("unknown format accepted")
	}
}

// TestQueryTypes checks the values a real query hands to WriteTable.
func TestQueryTypes(t *testing.T) { forEachBackend(t, testQueryTypes) }

func testQueryTypes(t *testing.T) {
	s, _ := openTemp(t)
	blob := "x'00ff'"
	if s.pg() {
		blob = `'\x00ff'::bytea`
	}
	cols, rows, err := s.Query(t.Context(), "SELECT 1 AS i, 2.5 AS f, 'x' AS s, NULL AS n, "+blob+" AS b, ? AS p", "arg")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(cols, []string{"i", "f", "s", "n", "b", "p"}) {
		t.Fatalf("cols = %v", cols)
	}
	want := []any{int64(1), 2.5, "x", nil, []byte{0, 0xff}, "arg"}
	for i, v := range want {
		if !equalValue(rows[0][i], v) {
			t.Errorf("%s = %#v, want %#v", cols[i], rows[0][i], v)
		}
	}
	var b bytes.Buffer
	if err := WriteTable(&b, cols, rows, "json"); err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != "[\n  {\"i\": 1, \"f\": 2.5, \"s\": \"x\", \"n\": null, \"b\": \"x'00ff'\", \"p\": \"arg\"}\n]\n" {
		t.Fatalf("json = %q", got)
	}
}

func equalValue(a, b any) bool {
	ab, aok := a.([]byte)
	bb, bok := b.([]byte)
	if aok || bok {
		return aok && bok && bytes.Equal(ab, bb)
	}
	return a == b
}

package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A recognisable database password: it must never show up in an error, a
// warning or DatabaseName.
const fakeDBPassword = "FAKEPW-postgres-31337"

const dbChain = "chain:\n  - {name: local, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"

// TestDatabaseSpecs: database: takes a path, sqlite:PATH or a postgres://
// URL, database_url_env names the variable holding the URL; what Open gets
// and what messages show.
func TestDatabaseSpecs(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contentpipe.yaml")
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		spec, show string
		warn       string // substring of a warning; "" = none about the database
	}{
		{"default", "", nil, filepath.Join(dir, "data", "pipeline.db"), filepath.Join(dir, "data", "pipeline.db"), ""},
		{"path", "database: db/x.db\n", nil, filepath.Join(dir, "db", "x.db"), filepath.Join(dir, "db", "x.db"), ""},
		{"sqlite prefix", "database: sqlite:db/x.db\n", nil, filepath.Join(dir, "db", "x.db"), filepath.Join(dir, "db", "x.db"), ""},
		{"sqlite absolute", "database: sqlite:///var/lib/cp.db\n", nil, "/var/lib/cp.db", "/var/lib/cp.db", ""},
		{"postgres", "database: postgres://cp@db.internal:5432/contentpipe?sslmode=require\n", nil,
			"postgres://cp@db.internal:5432/contentpipe?sslmode=require", "postgres://cp@db.internal:5432/contentpipe?sslmode=require", ""},
		{"postgresql upper-case scheme", "database: PostgreSQL://cp@db/contentpipe\n", nil, "postgresql://cp@db/contentpipe", "postgresql://cp@db/contentpipe", ""},
		{"password in the file", "database: postgres://cp:" + fakeDBPassword + "@db/contentpipe\n", nil,
			"postgres://cp:" + fakeDBPassword + "@db/contentpipe", "postgres://cp:xxxxx@db/contentpipe", "database_url_env: CONTENTPIPE_DATABASE_URL"},
		{"password parameter in the file", "database: postgres://cp@db/contentpipe?password=" + fakeDBPassword + "\n", nil,
			"postgres://cp@db/contentpipe?password=" + fakeDBPassword, "postgres://cp@db/contentpipe?password=xxxxx", "carries a password"},
		{"url env", "database_url_env: CONTENTPIPE_DATABASE_URL\n", map[string]string{"CONTENTPIPE_DATABASE_URL": "postgres://cp:" + fakeDBPassword + "@db:5432/contentpipe"},
			"postgres://cp:" + fakeDBPassword + "@db:5432/contentpipe", "postgres://cp:xxxxx@db:5432/contentpipe", ""},
		{"url env with a sqlite spec", "database_url_env: CP_DB\n", map[string]string{"CP_DB": "sqlite:/srv/cp.db"}, "/srv/cp.db", "/srv/cp.db", ""},
		{"libpq keywords in the file", "database: host=db dbname=contentpipe user=cp password=" + fakeDBPassword + "\n", nil,
			"host=db dbname=contentpipe user=cp password=" + fakeDBPassword, "host=db dbname=contentpipe user=cp password=xxxxx", "carries a password"},
		{"libpq keywords in the env", "database_url_env: CP_DB\n", map[string]string{"CP_DB": "host=db dbname=contentpipe sslpassword='" + fakeDBPassword + "'"},
			"host=db dbname=contentpipe sslpassword='" + fakeDBPassword + "'", "host=db dbname=contentpipe sslpassword=xxxxx", ""},
		{"sslpassword parameter", "database_url_env: CP_DB\n", map[string]string{"CP_DB": "postgres://cp@db/contentpipe?sslpassword=" + fakeDBPassword},
			"postgres://cp@db/contentpipe?sslpassword=" + fakeDBPassword, "postgres://cp@db/contentpipe?sslpassword=xxxxx", ""},
		{"empty url env is the default", "database_url_env: \"\"\n", nil, filepath.Join(dir, "data", "pipeline.db"), filepath.Join(dir, "data", "pipeline.db"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Parse(path, []byte(tc.yaml+dbChain), env(tc.env))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Database != tc.spec || cfg.DatabaseName() != tc.show {
				t.Errorf("Database %q shown as %q, want %q shown as %q", cfg.Database, cfg.DatabaseName(), tc.spec, tc.show)
			}
			var dbWarn []string
			for _, w := range cfg.Warnings {
				noSecret(t, "warning", w)
				if strings.Contains(w, "password") {
					dbWarn = append(dbWarn, w)
				}
			}
			noSecret(t, "DatabaseName", cfg.DatabaseName())
			switch {
			case tc.warn == "" && len(dbWarn) > 0:
				t.Errorf("unexpected warning %q", dbWarn)
			case tc.warn != "" && (len(dbWarn) != 1 || !strings.Contains(dbWarn[0], tc.warn) || !strings.Contains(dbWarn[0], "contentpipe.yaml:1:")):
				t.Errorf("warnings %q, want one at line 1 with %q", cfg.Warnings, tc.warn)
			}
		})
	}
}

func noSecret(t *testing.T, what, s string) {
	t.Helper()
	if strings.Contains(s, fakeDBPassword) {
		t.Errorf("%s shows the database password: %s", what, s)
	}
}

// TestDatabaseErrors: bad database settings name the file, the line and
// the fix, and never repeat a URL's password.
func TestDatabaseErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contentpipe.yaml")
	for _, tc := range []struct {
		name, yaml string
		env        map[string]string
		line       int
		msg, fix   string
	}{
		{"both", "database: data/x.db\ndatabase_url_env: CONTENTPIPE_DATABASE_URL\n", map[string]string{"CONTENTPIPE_DATABASE_URL": "postgres://cp@db/x"},
			2, "database (line 1) and database_url_env (line 2) are both set", "keep one"},
		{"unset variable", "database_url_env: CONTENTPIPE_DATABASE_URL\n", nil,
			1, "database_url_env: CONTENTPIPE_DATABASE_URL is not set", "export CONTENTPIPE_DATABASE_URL="},
		{"url where the name goes", "database_url_env: postgres://cp:" + fakeDBPassword + "@db/x\n", nil,
			1, "database_url_env: not an environment variable name", "NAME of an environment variable"},
		{"variable holds a path", "database_url_env: CP_DB\n", map[string]string{"CP_DB": "/srv/" + fakeDBPassword},
			1, "database_url_env: the value of CP_DB is not a postgres:// URL", "sqlite:PATH"},
		{"scheme typo", "database: postgress://cp:" + fakeDBPassword + "@db/x\n", nil,
			1, `database: unknown database scheme "postgress"`, `did you mean "postgres"?`},
		{"mysql", "database: mysql://cp:" + fakeDBPassword + "@db/x\n", nil,
			1, `database: unknown database scheme "mysql"`, "postgres"},
		{"no database name", "database: postgres://cp:" + fakeDBPassword + "@db:5432\n", nil,
			1, "database: the postgres:// URL names no database", "postgres://user@host:5432/contentpipe"},
		{"unparsable url", "database: \"postgres://cp:" + fakeDBPassword + "%zz@db/x\"\n", nil,
			1, "database: is not a valid postgres:// URL", "percent-encode"},
		{"postgres without slashes", "database: postgres:db/x\n", nil,
			1, "database: is not a valid postgres:// URL", "postgres://"},
		{"empty sqlite", "database: \"sqlite:\"\n", nil, 1, "database: sqlite: needs a path", "sqlite:data/pipeline.db"},
		{"empty", "database: \"\"\n", nil, 1, "database: must not be empty", "postgres:// URL"},
		{"key typo", "database_url: CONTENTPIPE_DATABASE_URL\n", nil, 1, `unknown key "database_url"`, "database_url_env"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(path, []byte(tc.yaml+dbChain), env(tc.env))
			if err == nil {
				t.Fatal("no error")
			}
			noSecret(t, "error", err.Error())
			var ce *Error
			if !errors.As(err, &ce) {
				t.Fatalf("%T %v", err, err)
			}
			if ce.Line != tc.line || !strings.Contains(ce.Msg, tc.msg) || !strings.Contains(ce.Fix, tc.fix) {
				t.Errorf("got line %d %q (fix %q)\nwant line %d %q (fix with %q)", ce.Line, ce.Msg, ce.Fix, tc.line, tc.msg, tc.fix)
			}
		})
	}
}

// TestLeases: job.lease, job.worker_lease and job.delivery_window.
func TestLeases(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contentpipe.yaml")
	cfg, err := Parse(path, []byte(dbChain), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if j := cfg.Job; j.Lease != 0 || j.WorkerLease != 0 || j.DeliveryWindow != 0 {
		t.Errorf("defaults %v %v %v, want 0 (the store's defaults)", j.Lease, j.WorkerLease, j.DeliveryWindow)
	}
	cfg, err = Parse(path, []byte("job: {deadline: 1m, lease: 20s, worker_lease: 6s, delivery_window: 3s}\n"+dbChain), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if j := cfg.Job; j.Lease != 20*time.Second || j.WorkerLease != 6*time.Second || j.DeliveryWindow != 3*time.Second {
		t.Errorf("got %v %v %v", j.Lease, j.WorkerLease, j.DeliveryWindow)
	}
	found := false
	for _, w := range cfg.Warnings {
		found = found || strings.Contains(w, "job.lease (20s) is shorter than job.deadline (1m0s)")
	}
	if !found {
		t.Errorf("no warning for a lease shorter than the deadline: %q", cfg.Warnings)
	}
	_, err = Parse(path, []byte("job: {worker_lease: 100ms}\n"+dbChain), env(nil))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 1 || !strings.Contains(ce.Msg, "job.worker_lease: 100ms is too short") {
		t.Errorf("worker_lease 100ms: %v", err)
	}
	_, err = Parse(path, []byte("job:\n  deadline: 1m\n  worker_lease: 1m\n"+dbChain), env(nil))
	if !errors.As(err, &ce) || ce.Line != 3 || !strings.Contains(ce.Msg, "job.worker_lease (1m0s) must be at least twice job.delivery_window (45s)") || !strings.Contains(ce.Fix, "at least 1m30s") {
		t.Errorf("worker_lease 1m with the default window: %v", err)
	}
}

// TestDatabasePasswordNeverInErrors: a URL in a wrong shape or a broken
// file is reported without its password.
func TestDatabasePasswordNeverInErrors(t *testing.T) {
	path := filepath.Join(t.TempDir(), "contentpipe.yaml")
	url := "postgres://cp:" + fakeDBPassword + "@db/contentpipe"
	for _, y := range []string{
		"database: [" + url + "]\n",
		"database: {u: " + url + "}\n",
		"database: '" + url + "\n",
		"database: " + url + "\n\tjob: 1\n",
		"database: " + url + "\ndatabase: x\n",
		"database_url: " + url + "\n",
		"database: " + url + "\ndatabase_url_env: CONTENTPIPE_DATABASE_URL\n",
	} {
		_, err := Parse(path, []byte(y+dbChain), env(map[string]string{"CONTENTPIPE_DATABASE_URL": url}))
		if err == nil {
			t.Errorf("%q: no error", y)
			continue
		}
		noSecret(t, "error", err.Error())
	}
}

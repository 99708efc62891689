package main

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDatabaseSecretsNeverPrinted: a database password given as
// ?sslpassword= / ?password= in a URL, or as password= in libpq's keyword
// form (which names PostgreSQL, never a file), is printed by none of the
// commands that name the database, and no file is named after it.
func TestDatabaseSecretsNeverPrinted(t *testing.T) {
	t.Parallel()
	for _, form := range []string{"url-params", "keywords"} {
		t.Run(form, func(t *testing.T) {
			pg := testPostgres(t)
			u, err := url.Parse(pg)
			if err != nil {
				t.Fatal(err)
			}
			spec := ""
			switch form {
			case "url-params":
				q := u.Query()
				q.Set("sslpassword", fakeDBPassword)
				q.Set("password", fakeDBPassword)
				u.RawQuery = q.Encode()
				spec = u.String()
			case "keywords":
				spec = "host=" + u.Hostname() + " port=" + u.Port() + " user=" + u.User.Username() +
					" password=" + fakeDBPassword + " dbname=" + strings.TrimPrefix(u.Path, "/") + " sslmode=disable sslpassword='" + fakeDBPassword + "'"
			}
			w := newWorld(t, worldOptions{topics: 2, dbURL: spec})
			for _, args := range [][]string{
				{"config", "check"},
				{"run"},
				{"health"},
				{"report"},
				{"topics"},
				{"sql", "SELECT count(*) FROM jobs"},
				{"sql", "SELECT nosuchcolumn FROM jobs"},
				{"db", "copy", "--to", "sqlite:" + filepath.Join(t.TempDir(), "back.db")},
				{"db", "copy", "--to", spec},
			} {
				r := run(t, w.dir, w.env, args...)
				noPassword(t, strings.Join(args, " "), r)
				if args[0] == "config" && !strings.Contains(r.stdout, "(PostgreSQL;") {
					t.Errorf("config check does not say PostgreSQL:\n%s%s", r.stdout, r.stderr)
				}
				if args[0] == "run" && r.code != 0 {
					t.Errorf("run: exit %d\n%s", r.code, r.stderr)
				}
			}
			filepath.Walk(w.dir, func(p string, _ os.FileInfo, _ error) error { //nolint:errcheck
				if strings.Contains(p, fakeDBPassword) {
					t.Errorf("a file is named after the password: %s", p)
				}
				return nil
			})
			// From a SQLite world into the spec: the destination is named redacted.
			src := newWorld(t, worldOptions{topics: 1})
			if r := run(t, src.dir, src.env, "run"); r.code != 0 {
				t.Fatalf("run exit %d\n%s", r.code, r.stderr)
			}
			fresh := testPostgres(t)
			dst := strings.Replace(spec, "dbname="+strings.TrimPrefix(u.Path, "/"), "dbname="+strings.TrimPrefix(fresh[strings.LastIndex(fresh, "/"):strings.Index(fresh, "?")], "/"), 1)
			if form == "url-params" {
				f, _ := url.Parse(fresh)
				f.RawQuery = u.RawQuery
				dst = f.String()
			}
			r := run(t, src.dir, src.env, "db", "copy", "--to", dst)
			noPassword(t, "db copy into "+form, r)
			if r.code != 0 || !strings.Contains(r.stdout, "verified:") || !strings.Contains(r.stdout, "xxxxx") {
				t.Errorf("db copy into %s: exit %d\n%s%s", form, r.code, r.stdout, r.stderr)
			}
		})
	}
}

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkConfig runs `config check` in process on a file of
// testdata/config_check and returns its exit status and output, with the
// directory's absolute path written as $DIR.
func checkConfig(t *testing.T, file string, env map[string]string) (int, string, string) {
	t.Helper()
	dir := filepath.Join("testdata", "config_check")
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"config", "check", "--config", filepath.Join(dir, file)}, &stdout, &stderr,
		func(k string) string { return env[k] })
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	return code, strings.ReplaceAll(stdout.String(), abs, "$DIR"), stderr.String()
}

// golden compares got with testdata/config_check/<name>; UPDATE_GOLDEN=1
// rewrites the file instead.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "config_check", name)
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (UPDATE_GOLDEN=1 writes it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s:\n--- got\n%s--- want\n%s", path, got, want)
	}
}

var checkEnv = map[string]string{"GEMINI_API_KEY": "FAKEKEY-gemini-7f3a9c11", "GROQ_API_KEY": "FAKEKEY-groq-b81d02ee"}

func TestConfigCheckFiveMistakes(t *testing.T) {
	t.Parallel()
	code, out, errOut := checkConfig(t, "five_mistakes.yaml", checkEnv)
	if code != exitConfig {
		t.Errorf("exit %d, want %d", code, exitConfig)
	}
	golden(t, "five_mistakes.golden", out)
	if got := strings.Count(out, "\n  fix: "); got != 5 {
		t.Errorf("%d problems with a fix, want 5", got)
	}
	for _, want := range []string{"five_mistakes.yaml:4:", "five_mistakes.yaml:5:", "five_mistakes.yaml:15:", "five_mistakes.yaml:16:", "five_mistakes.yaml:18:"} {
		if !strings.Contains(out, want) {
			t.Errorf("no problem at %s", want)
		}
	}
	for _, secret := range []string{"gsk_Fake0pasted", "FAKEKEY-"} {
		if strings.Contains(strings.ToLower(out+errOut), strings.ToLower(secret)) {
			t.Errorf("output shows %q:\n%s%s", secret, out, errOut)
		}
	}
}

func TestConfigCheckValid(t *testing.T) {
	t.Parallel()
	code, out, _ := checkConfig(t, "valid.yaml", checkEnv)
	if code != exitOK {
		t.Errorf("exit %d, want 0:\n%s", code, out)
	}
	golden(t, "valid.golden", out)
	if _, err := os.Stat(filepath.Join("testdata", "config_check", "out")); err == nil {
		t.Error("config check created the publish directory")
	}
	// The same file without its key variables: each one is a problem.
	code, out, _ = checkConfig(t, "valid.yaml", nil)
	if code != exitConfig || !strings.Contains(out, "valid.yaml:8: chain[0] (gemini): GEMINI_API_KEY is not set") ||
		!strings.Contains(out, "valid.yaml:14: chain[1] (groq): GROQ_API_KEY is not set") || !strings.Contains(out, "2 problems") {
		t.Errorf("unset keys: exit %d\n%s", code, out)
	}
}

func TestConfigCheckTopicsToo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := "topics: t.yaml\nchain:\n  - {name: l, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\njob: {parallel: 0}\n"
	if err := os.WriteFile(filepath.Join(dir, "c.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "t.yaml"), []byte("- id: a\n  title: A\n- id: a\n  title: B\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"--config", filepath.Join(dir, "c.yaml"), "config", "check"}, &stdout, &stderr, func(string) string { return "" })
	out := stdout.String()
	if code != exitConfig || !strings.Contains(out, "c.yaml:4: job.parallel: must be at least 1, got 0") ||
		!strings.Contains(out, `t.yaml:3: topics[1]: duplicate topic id "a" (first defined at line 1)`) || !strings.Contains(out, "2 problems") {
		t.Errorf("exit %d\n%s%s", code, out, stderr.String())
	}
}

// TestRunPrintsEveryProblem: run stops on a bad config with exit 2 and
// prints all of its problems, not only the first.
func TestRunPrintsEveryProblem(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"run", "--config", filepath.Join("testdata", "config_check", "five_mistakes.yaml")},
		&stdout, &stderr, func(k string) string { return checkEnv[k] })
	if code != exitConfig || strings.Count(stderr.String(), "  fix: ") != 5 {
		t.Errorf("exit %d, stderr:\n%s", code, stderr.String())
	}
	if _, err := os.Stat(filepath.Join("testdata", "config_check", "data")); err == nil {
		t.Error("a bad config created the database directory")
	}
}

// TestConfigCheckDatabaseURL: config check names a PostgreSQL database
// with its password replaced, warns about a password in the file, and
// shows the password nowhere; both keys set is one problem naming both.
func TestConfigCheckDatabaseURL(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	const pw = "FAKEPW-check-77e1"
	chainYAML := "chain:\n  - {name: l, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("t.yaml", "- id: a\n  title: A\n")
	check := func(cfg string, env map[string]string) (int, string) {
		var stdout, stderr bytes.Buffer
		code := execute(context.Background(), []string{"--config", cfg, "config", "check"}, &stdout, &stderr, func(k string) string { return env[k] })
		out := stdout.String() + stderr.String()
		if strings.Contains(out, pw) {
			t.Errorf("config check shows the database password:\n%s", out)
		}
		return code, out
	}
	inFile := write("in-file.yaml", "database: postgres://cp:"+pw+"@db.internal:5432/contentpipe\ntopics: t.yaml\n"+chainYAML)
	code, out := check(inFile, nil)
	if code != exitOK || !strings.Contains(out, "database: postgres://cp:xxxxx@db.internal:5432/contentpipe (PostgreSQL; not opened)") ||
		!strings.Contains(out, "in-file.yaml:1: the URL carries a password (not shown); put the URL in the environment") {
		t.Errorf("password in the file: exit %d\n%s", code, out)
	}
	fromEnv := write("from-env.yaml", "database_url_env: CONTENTPIPE_DATABASE_URL\ntopics: t.yaml\n"+chainYAML)
	code, out = check(fromEnv, map[string]string{"CONTENTPIPE_DATABASE_URL": "postgres://cp:" + pw + "@db.internal/contentpipe"})
	if code != exitOK || !strings.Contains(out, "database: postgres://cp:xxxxx@db.internal/contentpipe (PostgreSQL") || strings.Contains(out, "carries a password") {
		t.Errorf("URL from the environment: exit %d\n%s", code, out)
	}
	both := write("both.yaml", "database: data/x.db\ndatabase_url_env: CONTENTPIPE_DATABASE_URL\ntopics: t.yaml\n"+chainYAML)
	code, out = check(both, map[string]string{"CONTENTPIPE_DATABASE_URL": "postgres://cp:" + pw + "@db.internal/contentpipe"})
	if code != exitConfig || !strings.Contains(out, "both.yaml:2: database (line 1) and database_url_env (line 2) are both set") || !strings.Contains(out, "1 problem") {
		t.Errorf("both set: exit %d\n%s", code, out)
	}
}

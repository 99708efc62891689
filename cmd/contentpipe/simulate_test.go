package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"
)

// repoFile is a path in the repository, from this package's directory.
func repoFile(t *testing.T, rel string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "..", rel))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSimulateFieldNotesDeterministicJSON(t *testing.T) {
	t.Parallel()
	for _, faults := range []string{"data/faults/field-notes.yaml", "data/faults/correlated.yaml"} {
		t.Run(filepath.Base(faults), func(t *testing.T) { testDeterministicJSON(t, faults) })
	}
}

func testDeterministicJSON(t *testing.T, faults string) {
	dir := t.TempDir()
	args := []string{"simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"),
		"--faults", repoFile(t, faults), "--days", "6", "--seed", "5", "--format", "json", "--advise"}
	a := run(t, dir, nil, args...)
	if a.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", a.code, a.stdout, a.stderr)
	}
	b := run(t, dir, nil, args...)
	type out struct {
		Report struct {
			Seed uint64 `json:"seed"`
			Rows []map[string]any
		} `json:"report"`
		Advice *struct {
			Suggested []string `json:"suggested"`
			Enough    bool     `json:"enough_history"`
		} `json:"advice"`
		Verdict []string `json:"verdict"`
	}
	parse := func(s string) out {
		var o out
		if err := json.Unmarshal([]byte(s), &o); err != nil {
			t.Fatalf("not JSON: %v\n%s", err, s)
		}
		for _, r := range o.Report.Rows {
			delete(r, "db") // a temporary path per run
		}
		return o
	}
	oa, ob := parse(a.stdout), parse(b.stdout)
	ja, _ := json.Marshal(oa)
	jb, _ := json.Marshal(ob)
	if string(ja) != string(jb) {
		t.Fatalf("same seed, different output:\n%s\n%s", ja, jb)
	}
	if oa.Report.Seed != 5 || len(oa.Report.Rows) != 4 {
		t.Fatalf("want seed 5 and 4 rows: %s", ja)
	}
	for i, want := range []string{"chain", "single", "cost-order", "naive"} {
		r := oa.Report.Rows[i]
		if r["scenario"] != want || r["jobs"].(float64) != 36 {
			t.Errorf("row %d: %v", i, r)
		}
	}
	if oa.Advice == nil || len(oa.Advice.Suggested) != 4 || oa.Advice.Suggested[0] != "gemini" || oa.Advice.Enough {
		t.Fatalf("advice on six days (not enough history): %+v", oa.Advice)
	}
	if len(oa.Verdict) < 6 || !strings.HasPrefix(oa.Verdict[0], "success: ") {
		t.Fatalf("verdict: %q", oa.Verdict)
	}
}

func TestSimulateTableAndKeptDatabases(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	keep := filepath.Join(dir, "sim")
	r := run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"),
		"--faults", repoFile(t, "data/faults/field-notes.yaml"), "--days", "3", "--db", keep, "--wide")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"success", "blackout h", "wasted", "p95 publish", "chain", "single", "cost-order", "naive", "targets:",
		"twice", "drift flagged", "spend/budget", "verdict (which strategy wins on which figure, and why):", "success: ", "cost-order "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, r.stdout)
		}
	}
	db := openDB(t, filepath.Join(keep, "chain.db"))
	if n := count(t, db, "SELECT COUNT(*) FROM jobs"); n != 18 {
		t.Fatalf("kept chain database has %d jobs, want 18", n)
	}
	if n := count(t, db, "SELECT COUNT(*) FROM calls WHERE ts < '2026-01-05' OR ts >= '2026-01-09'"); n != 0 {
		t.Fatalf("%d calls outside the simulated days: the clock is not virtual", n)
	}
}

func TestSimulateBadFaultsFileNamesTheLine(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "faults.yaml")
	body := "seed: 1\nproviders:\n  gemini:\n    rate_limit:\n      per_minute: 1.5\n  groq: {}\n  cerebras: {}\n  openrouter: {}\n"
	if err := os.WriteFile(bad, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	r := run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"), "--faults", bad, "--days", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "faults.yaml:5:") || !strings.Contains(r.stderr, "per_minute") {
		t.Fatalf("exit %d, want 2 with the line of per_minute\n%s", r.code, r.stderr)
	}
	if err := os.WriteFile(bad, []byte("seed: 1\nprovidrs: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"), "--faults", bad, "--days", "1")
	if r.code != 2 || !strings.Contains(r.stderr, "provid") || !strings.Contains(r.stderr, "2") {
		t.Fatalf("unknown key: exit %d\n%s", r.code, r.stderr)
	}
}

// TestSimulateAdviseOnShortHistory: three simulated days are far below the
// history the advice needs; it says so, with what it had, instead of
// endorsing the configured order.
func TestSimulateAdviseOnShortHistory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, nil, "simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"),
		"--faults", repoFile(t, "data/faults/correlated.yaml"), "--days", "3", "--advise")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stdout, "not enough history to judge the order") || strings.Contains(r.stdout, "the history supports") ||
		!strings.Contains(r.stdout, "history: ") || !strings.Contains(r.stdout, "calls and skips") || !strings.Contains(r.stdout, "failure episodes") {
		t.Fatalf("advice on three days:\n%s", r.stdout)
	}
}

// simConfigWithTopics writes a copy of the field-notes simulation config
// whose topics file is topics (YAML) and whose job section is job.
func simConfigWithTopics(t *testing.T, dir, topics, job string) string {
	t.Helper()
	raw, err := os.ReadFile(repoFile(t, "data/faults/field-notes.config.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, l := range strings.Split(string(raw), "\n") {
		switch {
		case strings.HasPrefix(l, "topics:"):
			l = "topics: topics.yaml"
		case strings.HasPrefix(l, "job:"):
			l = "job: " + job
		case strings.HasPrefix(l, "quality:"):
			l = strings.Replace(l, "../article.schema.json", repoFile(t, "data/article.schema.json"), 1)
		case strings.HasPrefix(l, "database:"):
			l = "database: unused.db"
		}
		out = append(out, l)
	}
	if err := os.WriteFile(filepath.Join(dir, "topics.yaml"), []byte(topics), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "sim.yaml")
	if err := os.WriteFile(cfg, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestSimulateRunsTheTopicsFile: with a topics file the simulation plans
// that backlog as run does — a weekly series, one-off topics, a ceiling of
// two a day — and the kept database shows the ceiling held, the weekly
// topic once in its week and the one-off topics once; --posts-per-day is
// refused, since the backlog sets the load.
func TestSimulateRunsTheTopicsFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	topics := `- {id: weekly-news, title: "The week in small-office IT", category: it, keywords: [backups, updates], repeat: weekly, priority: 5}
- {id: compost, title: "Home composting in practice", category: home, keywords: [compost, soil]}
- {id: backups, title: "Backups for small offices", category: it, keywords: [NAS, offsite]}
- {id: passwords, title: "A password manager for a small team", category: it, keywords: [vaults, 2FA]}
`
	cfg := simConfigWithTopics(t, dir, topics, "{posts_per_run: 4, posts_per_day: 2, deadline: 15m, language: en, target_words: 1500, parallel: 1}")
	keep := filepath.Join(dir, "sim")
	r := run(t, dir, nil, "simulate", "--config", cfg, "--faults", repoFile(t, "data/faults/field-notes.yaml"),
		"--days", "9", "--db", keep, "--scenarios", "chain")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, filepath.Join(keep, "chain.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM (SELECT substr(published_at, 1, 10) d FROM jobs WHERE status = 'published' GROUP BY d HAVING COUNT(*) > 2)`); n != 0 {
		t.Errorf("%d days over posts_per_day 2", n)
	}
	// 2026-01-05 is a Monday: nine days are the weeks W02 and W03.
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND id IN ('weekly-news/2026-W02', 'weekly-news/2026-W03')`); n != 2 {
		t.Errorf("weekly topic published in %d of its 2 weeks", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND id IN ('compost', 'backups', 'passwords')`); n != 3 {
		t.Errorf("%d of the 3 one-off topics published", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM jobs`); n != 5 {
		t.Errorf("%d jobs, want 5 (2 weeks of the series, 3 one-off topics)", n)
	}
	r = run(t, dir, nil, "simulate", "--config", cfg, "--faults", repoFile(t, "data/faults/field-notes.yaml"), "--days", "2", "--posts-per-day", "8")
	if r.code != 2 || !strings.Contains(r.stderr, "--posts-per-day") || !strings.Contains(r.stderr, "topics") {
		t.Fatalf("--posts-per-day with a topics file: exit %d\n%s", r.code, r.stderr)
	}
}

// simTable parses the scenario table of simulate's output: header →
// scenario → cell.
func simTable(t *testing.T, out string) map[string]map[string]string {
	t.Helper()
	lines := strings.Split(out, "\n")
	split := regexp.MustCompile(`\s{2,}`)
	for i, l := range lines {
		if !strings.Contains(l, "scenario") || !strings.Contains(l, "success") {
			continue
		}
		// The headers hold single spaces, the cells none: split both at two.
		heads := split.Split(strings.TrimSpace(l), -1)
		table := map[string]map[string]string{}
		for _, row := range lines[i+1:] {
			cells := split.Split(strings.TrimSpace(row), -1)
			if len(cells) != len(heads) {
				break
			}
			table[cells[0]] = map[string]string{}
			for j, h := range heads {
				table[cells[0]][h] = cells[j]
			}
		}
		return table
	}
	t.Fatalf("no table in\n%s", out)
	return nil
}

// TestSimulateFitsAndWide: simulate's output fits TableWidth columns by
// default, and shows no progress in a pipe; --wide has every column with
// the same figures, and --progress forces the progress into the pipe.
func TestSimulateFitsAndWide(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"simulate", "--config", repoFile(t, "data/faults/field-notes.config.yaml"),
		"--faults", repoFile(t, "data/faults/correlated.yaml"), "--days", "4", "--advise"}
	narrow := run(t, dir, nil, args...)
	wide := run(t, dir, nil, append(args, "--wide", "--progress")...)
	if narrow.code != 0 || wide.code != 0 {
		t.Fatalf("exit %d, %d\n%s\n%s\n%s", narrow.code, wide.code, narrow.stdout, narrow.stderr, wide.stderr)
	}
	for _, l := range strings.Split(narrow.stdout, "\n") {
		if n := utf8.RuneCountInString(l); n > TableWidth {
			t.Errorf("a line of %d columns, more than %d: %q", n, TableWidth, l)
		}
	}
	if strings.Contains(narrow.stderr, "days simulated") {
		t.Errorf("progress in a pipe without --progress:\n%s", narrow.stderr)
	}
	if !strings.Contains(wide.stderr, "100% of the days simulated (chain 4 · single 4 · cost-order 4 · naive 4)") {
		t.Errorf("--progress shows no progress in the pipe:\n%s", wide.stderr)
	}
	nt, wt := simTable(t, narrow.stdout), simTable(t, wide.stdout)
	for _, c := range simColumns {
		if _, ok := wt["chain"][c.head]; !ok {
			t.Errorf("--wide lacks the column %q: %v", c.head, wt["chain"])
		}
		for _, sc := range []string{"chain", "single", "cost-order", "naive"} {
			if got, ok := nt[sc][c.narrow]; c.narrow != "" && (!ok || got != wt[sc][c.head]) {
				t.Errorf("%s %s: %q in the default table, %q with --wide", sc, c.head, got, wt[sc][c.head])
			}
		}
	}
	if len(nt["chain"]) >= len(simColumns) {
		t.Errorf("the default table has every column: %v", nt["chain"])
	}
}

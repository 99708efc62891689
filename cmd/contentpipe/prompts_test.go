package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// promptRow is one row of the prompts test table with its stable columns;
// latency and cost vary from run to run and are matched loosely.
func promptRow(link, version, result string) *regexp.Regexp {
	return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(link) + ` +` + regexp.QuoteMeta(version) + ` +` + result +
		` +\d+ +\d+ +\d+ +\d+ms +\$\d+\.\d{4} +`)
}

// `prompts test --demo` renders each demo link's own template, calls each
// once, gates the answers and prints one row per link; the calls are
// recorded with purpose 'prompts', never as a job's.
func TestPromptsTestDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, nil, "prompts", "test", "--demo")
	if r.code != 0 {
		t.Fatalf("prompts test --demo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	header := "  LINK        PROMPT             RESULT  SCORE  WORDS  SECTIONS  LATENCY  COST     CHECKS\n"
	if !strings.Contains(r.stdout, "prompts test: topic home-composting (en, 600 words), 4 links\n\n"+header) {
		t.Errorf("no summary line and header:\n%s", r.stdout)
	}
	for _, row := range [][2]string{{"gemini", "article@1/gemini"}, {"groq", "article@1/llama"}, {"cerebras", "article@1/gpt-oss"}, {"openrouter", "article@1/llama"}} {
		if !promptRow(row[0], row[1], "pass").MatchString(r.stdout) {
			t.Errorf("no passing row for %s with %s:\n%s", row[0], row[1], r.stdout)
		}
	}
	if !strings.Contains(r.stdout, "4 of 4 links passed the quality gate") {
		t.Errorf("no total:\n%s", r.stdout)
	}
	db := openDB(t, filepath.Join(dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE purpose = 'prompts' AND attempt = 0 AND request_id LIKE 'prompts/%/home-composting'`); n != 4 {
		t.Errorf("%d prompts calls recorded, want 4", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE purpose <> 'prompts'`) + count(t, db, `SELECT COUNT(*) FROM jobs`); n != 0 {
		t.Errorf("a prompts test left %d job calls or jobs", n)
	}

	tr := run(t, dir, nil, "prompts", "test", "--demo", "--topic", "evde-ekmek-mayasi")
	if tr.code != 0 || !strings.Contains(tr.stdout, "topic evde-ekmek-mayasi (tr,") {
		t.Errorf("--topic evde-ekmek-mayasi: exit %d\n%s\n%s", tr.code, tr.stdout, tr.stderr)
	}
	u := run(t, dir, nil, "prompts", "test", "--demo", "--topic", "nope")
	if u.code != exitConfig || !strings.Contains(u.stderr, `unknown topic "nope" (topics: home-composting,`) {
		t.Errorf("--topic nope: exit %d, want 2 naming the topics\n%s", u.code, u.stderr)
	}
}

// One link whose answer fails the gate makes the test exit 1, with that
// row marked FAIL and its checks shown; a link that errors is reported too.
func TestPromptsTestFails(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini:   {Script: []sim.Fault{sim.FaultLowQuality}},
		sim.FlavorCerebras: {Script: []sim.Fault{sim.FaultUnavailable}},
	}, "")
	r := run(t, w.dir, w.env, "prompts", "test")
	if r.code != exitPartial {
		t.Fatalf("exit %d, want 1\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !promptRow("gemini", "article@1/gemini", "FAIL").MatchString(r.stdout) || !strings.Contains(r.stdout, "words -") {
		t.Errorf("no failing gemini row with its checks:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^  cerebras +article@1/openai +server_error +- +- +- `).MatchString(r.stdout) {
		t.Errorf("no server_error row for cerebras:\n%s", r.stdout)
	}
	if !promptRow("groq", "article@1/openai", "pass").MatchString(r.stdout) || !strings.Contains(r.stdout, "2 of 4 links passed") {
		t.Errorf("groq should pass, 2 of 4:\n%s", r.stdout)
	}
	for _, k := range worldKeys {
		if strings.Contains(r.stdout+r.stderr, k) {
			t.Errorf("output shows the key %s", k)
		}
	}
}

// README's order: `run --demo` (whose Gemini reports its daily quota used
// up) then `prompts test --demo`. The exhausted link is reported "not
// called (exhausted until …)" and not counted: the other three pass, exit 0.
func TestPromptsTestAfterRunDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := run(t, dir, nil, "run", "--demo"); r.code != 0 {
		t.Fatalf("run --demo: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r := run(t, dir, nil, "prompts", "test", "--demo")
	if r.code != 0 {
		t.Fatalf("prompts test --demo after run --demo: exit %d, want 0\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if !regexp.MustCompile(`(?m)^  gemini +article@1/gemini +not called \(exhausted until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ \(quota_exhausted\)\) +- `).MatchString(r.stdout) {
		t.Errorf("no gemini row saying why it was not called:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "3 of 3 links passed the quality gate (1 not called, not counted)") {
		t.Errorf("no total over the links called:\n%s", r.stdout)
	}
}

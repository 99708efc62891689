package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// simWorld is a working directory with a config pointing at loopback
// simulators that live in the test process (so killing contentpipe does not
// kill them).
type simWorld struct {
	dir  string
	sims *sim.Set
	env  []string
}

func newSimWorld(t *testing.T, topics int, profiles map[sim.Flavor]sim.Profile, extra string) *simWorld {
	t.Helper()
	sims, err := sim.StartAll(profiles)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sims.Close)
	dir := t.TempDir()
	cfg := fmt.Sprintf(`database: data/pipeline.db
topics: topics.yaml
publish: {kind: markdown, dir: out}
job: {posts_per_run: %d, deadline: 1m, language: en, target_words: 400, parallel: 1}
chain:
  - {name: gemini, kind: gemini, model: gemini-flash-latest, api_key_env: T_GEMINI_KEY, base_url: "%s", infra: google,
     timeouts: {connect: 2s, first_token: 10s, total: 30s, idle: 5s}}
  - {name: groq, kind: openai, model: llama-3.3-70b-versatile, api_key_env: T_GROQ_KEY, base_url: "%s", infra: groq-lpu,
     timeouts: {connect: 2s, first_token: 10s, total: 30s, idle: 5s}}
  - {name: cerebras, kind: openai, model: gpt-oss-120b, api_key_env: T_CEREBRAS_KEY, base_url: "%s", infra: cerebras-wse,
     timeouts: {connect: 2s, first_token: 10s, total: 30s, idle: 5s}}
  - {name: openrouter, kind: openai, model: meta-llama/llama-3.3-70b-instruct, api_key_env: T_OPENROUTER_KEY, base_url: "%s", infra: broker,
     timeouts: {connect: 2s, first_token: 10s, total: 30s, idle: 5s}}
retry:
  rate_limited: {wait: 200ms, max_retries: 2, max_wait: 2s}
  other: {wait: 100ms}
quality: {threshold: 70, min_sections: 3, min_section_words: 80}
%s`, topics, sims.Server(sim.FlavorGemini).BaseURL(), sims.Server(sim.FlavorGroq).BaseURL(),
		sims.Server(sim.FlavorCerebras).BaseURL(), sims.Server(sim.FlavorOpenRouter).BaseURL(), extra)
	if err := os.WriteFile(filepath.Join(dir, "contentpipe.yaml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	var tb strings.Builder
	for i := 0; i < topics; i++ {
		fmt.Fprintf(&tb, "- {id: topic-%03d, title: \"Practical guide number %d to home energy savings\", category: home, keywords: [insulation, heat pump, bills]}\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "topics.yaml"), []byte(tb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return &simWorld{dir: dir, sims: sims, env: []string{
		"T_GEMINI_KEY=AIza-test-gemini-key-0001", "T_GROQ_KEY=gsk_test_groq_key_0002",
		"T_CEREBRAS_KEY=csk-test-cerebras-key-0003", "T_OPENROUTER_KEY=sk-or-test-openrouter-0004",
	}}
}

// publishedFiles maps job ids (from front matter) to the files that carry them.
func publishedFiles(t *testing.T, dir string) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "out", "*", "*.md"))
	byJob := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "job_id:") {
				id := strings.Trim(strings.TrimSpace(strings.TrimPrefix(line, "job_id:")), `"'`)
				byJob[id] = append(byJob[id], f)
			}
		}
	}
	return byJob
}

// TestCrashKillAndRerun kills the real binary with SIGKILL at random points
// of a run, then reruns it to completion: every job is published exactly once.
func TestCrashKillAndRerun(t *testing.T) {
	kills := 8
	if testing.Short() {
		kills = 3
	}
	if v := os.Getenv("CONTENTPIPE_KILLS"); v != "" {
		fmt.Sscan(v, &kills)
	}
	slow := sim.Profile{FirstTokenDelay: 40 * time.Millisecond, ChunkDelay: 5 * time.Millisecond}
	profiles := map[sim.Flavor]sim.Profile{sim.FlavorGemini: slow, sim.FlavorGroq: slow, sim.FlavorCerebras: slow, sim.FlavorOpenRouter: slow}
	const topics = 8
	w := newSimWorld(t, topics, profiles, "")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	for i := 0; i < kills; i++ {
		cmd := exec.Command(binary(t), "run")
		cmd.Dir = w.dir
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir}, w.env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
		var ok string
		if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err == nil && ok != "ok" {
			t.Fatalf("integrity_check after kill %d: %s", i, ok)
		}
		db.Close()
	}
	var last result
	for i := 0; i < 5; i++ {
		last = run(t, w.dir, w.env, "run")
		if last.code == 0 && strings.Contains(last.stdout, "0 published") {
			break
		}
	}
	if last.code != 0 {
		t.Fatalf("final run exit %d:\n%s\n%s", last.code, last.stdout, last.stderr)
	}
	byJob := publishedFiles(t, w.dir)
	if len(byJob) != topics {
		t.Fatalf("%d jobs published, want %d", len(byJob), topics)
	}
	for id, fs := range byJob {
		if len(fs) != 1 {
			t.Errorf("job %s published %d times: %v", id, len(fs), fs)
		}
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`); n != topics {
		t.Fatalf("%d jobs recorded published", n)
	}
}

// TestConcurrentRunsNeverShareAJob starts several runs at once over the same
// topics: each job is published once.
func TestConcurrentRunsNeverShareAJob(t *testing.T) {
	slow := sim.Profile{FirstTokenDelay: 20 * time.Millisecond}
	profiles := map[sim.Flavor]sim.Profile{sim.FlavorGemini: slow, sim.FlavorGroq: slow, sim.FlavorCerebras: slow, sim.FlavorOpenRouter: slow}
	const topics = 12
	w := newSimWorld(t, topics, profiles, "")
	results := make(chan result, 3)
	for i := 0; i < 3; i++ {
		go func() { results <- run(t, w.dir, w.env, "run") }()
	}
	for i := 0; i < 3; i++ {
		if r := <-results; r.code != 0 {
			t.Errorf("concurrent run exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	byJob := publishedFiles(t, w.dir)
	for id, fs := range byJob {
		if len(fs) != 1 {
			t.Errorf("job %s published %d times", id, len(fs))
		}
	}
	if len(byJob) != topics {
		t.Fatalf("%d of %d jobs published", len(byJob), topics)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE outcome = 'ok'`); n != topics {
		t.Fatalf("%d ok calls for %d jobs: a job was generated twice", n, topics)
	}
}

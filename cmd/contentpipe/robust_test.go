package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// noCrash fails when a run's output shows a Go panic or a runtime crash.
func noCrash(t *testing.T, what string, r result) {
	t.Helper()
	for _, s := range []string{"panic:", "goroutine ", "runtime error", "fatal error:"} {
		if strings.Contains(r.stderr, s) || strings.Contains(r.stdout, s) {
			t.Fatalf("%s crashed (%q):\nstdout:\n%s\nstderr:\n%s", what, s, r.stdout, r.stderr)
		}
	}
}

// checkCleanState holds the database and out/ to "nothing half-written": no
// claim left behind, no job stuck in publishing, no temp file, every
// published file complete and recorded, integrity ok.
func checkCleanState(t *testing.T, w *simWorld) (published int) {
	t.Helper()
	dbPath := filepath.Join(w.dir, "data", "pipeline.db")
	integrity(t, dbPath)
	db := openDB(t, dbPath)
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE owner_pid IS NOT NULL OR status IN ('running', 'publishing')`); n != 0 {
		t.Errorf("%d jobs left claimed, running or publishing", n)
	}
	if n := tempLeft(t, w.dir); n != 0 {
		t.Errorf("%d temp files left in out/", n)
	}
	byJob := publishedFiles(t, w.dir)
	for id, fs := range byJob {
		b, _ := os.ReadFile(fs[0])
		if len(fs) != 1 || !bytes.HasPrefix(b, []byte("---\n")) || !bytes.Contains(b, []byte("\n## ")) {
			t.Errorf("job %s: files %v, or the file is incomplete", id, fs)
		}
	}
	published = count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`)
	if published != len(byJob) {
		t.Errorf("%d jobs recorded published, %d files", published, len(byJob))
	}
	return published
}

// TestSignalDuringRun sends SIGTERM (and SIGINT) to a run while a provider
// call is in flight: the job in flight finishes (or stays due), no new job
// starts, nothing is left half-written, and the next run does the rest.
func TestSignalDuringRun(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			slow := sim.Profile{FirstTokenDelay: 700 * time.Millisecond, Rates: map[sim.Fault]float64{sim.FaultSlowFirstToken: 1}}
			profiles := map[sim.Flavor]sim.Profile{sim.FlavorGemini: slow, sim.FlavorGroq: slow, sim.FlavorCerebras: slow, sim.FlavorOpenRouter: slow}
			const topics = 6
			w := newSimWorld(t, topics, profiles, "")
			cmd := w.start(t, "run")
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(30 * time.Second)
			for w.served() == 0 && time.Now().Before(deadline) {
				time.Sleep(5 * time.Millisecond)
			}
			if w.served() == 0 {
				t.Fatal("no provider call started within 30s")
			}
			t0 := time.Now()
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				_ = cmd.Process.Kill()
				t.Fatal("run did not stop within 60s of the signal")
			}
			stopIn := time.Since(t0)
			ws := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if ws.Signaled() {
				t.Fatalf("run died of %v instead of stopping cleanly", ws.Signal())
			}
			// Topics stay due: exit 1, and the run says so.
			if c := ws.ExitStatus(); c != 1 {
				t.Fatalf("exit %d after %v with topics still due, want 1", c, sig)
			}
			n := checkCleanState(t, w)
			if n < 1 {
				t.Errorf("the job in flight was not finished")
			}
			if n == topics {
				t.Errorf("all %d jobs ran: the signal did not stop the run from taking new jobs", topics)
			}
			t1 := time.Now()
			r := run(t, w.dir, w.env, "run")
			t.Logf("rerun took %s", time.Since(t1))
			noCrash(t, "rerun", r)
			if r.code != 0 {
				t.Fatalf("rerun exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			if got := checkCleanState(t, w); got != topics {
				t.Errorf("%d of %d published after the rerun", got, topics)
			}
			t.Logf("FIGURES signal-%s: stopped %s after the signal, exit %d, finished_before_stop=%d of %d, after_rerun=%d", sig, stopIn.Round(10*time.Millisecond), ws.ExitStatus(), n, topics, topics)
		})
	}
}

// TestFourRunsHundredTopicsDailyCaps starts four runs at once over 100
// topics with small daily caps on three links: each job is published once,
// no cap is exceeded by a single call (counted in calls and at the
// simulators), and no run fails on a locked database.
func TestFourRunsHundredTopicsDailyCaps(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("4 processes x 100 topics: skipped with -short")
	}
	const topics, runs = 100, 4
	caps := map[string]int{"gemini": 17, "groq": 23, "cerebras": 11}
	w := newWorld(t, worldOptions{topics: topics,
		job:  "{posts_per_run: 100, deadline: 1m, language: en, target_words: 300, parallel: 1}",
		link: map[string]string{"gemini": "daily_cap: 17", "groq": "daily_cap: 23", "cerebras": "daily_cap: 11"},
	})
	start := time.Now()
	results := make(chan result, runs)
	for i := 0; i < runs; i++ {
		go func() { results <- run(t, w.dir, w.env, "run") }()
	}
	for i := 0; i < runs; i++ {
		r := <-results
		noCrash(t, "concurrent run", r)
		if r.code != 0 {
			t.Errorf("concurrent run exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if strings.Contains(strings.ToLower(r.stdout+r.stderr), "locked") || strings.Contains(r.stdout+r.stderr, "SQLITE_BUSY") {
			t.Errorf("a run hit a locked database:\n%s\n%s", r.stdout, r.stderr)
		}
	}
	elapsed := time.Since(start)
	byJob := publishedFiles(t, w.dir)
	doubles := 0
	for id, fs := range byJob {
		if len(fs) != 1 {
			doubles++
			t.Errorf("job %s published %d times", id, len(fs))
		}
	}
	if len(byJob) != topics {
		t.Errorf("%d of %d jobs published", len(byJob), topics)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE outcome = 'ok' AND purpose = 'job'`); n != topics {
		t.Errorf("%d ok calls for %d jobs: a job was generated twice", n, topics)
	}
	var figs []string
	for name, limit := range caps {
		calls := count(t, db, `SELECT COUNT(*) FROM calls WHERE provider = ?`, name)
		served := w.sims.Server(sim.Flavor(name)).Requests()
		if calls > limit || served > limit {
			t.Errorf("%s: %d calls recorded, %d requests served, daily cap %d", name, calls, served, limit)
		}
		if calls < limit {
			t.Errorf("%s: only %d of its %d daily calls used although jobs were waiting", name, calls, limit)
		}
		figs = append(figs, fmt.Sprintf("%s=%d/%d", name, served, limit))
	}
	if n := count(t, db, `SELECT COUNT(*) FROM skips WHERE reason = 'cap'`); n == 0 {
		t.Error("no cap skips recorded")
	}
	t.Logf("FIGURES concurrency: runs=%d topics=%d published=%d double=%d cap_use(served/cap)=%s openrouter=%d elapsed=%s",
		runs, topics, len(byJob), doubles, strings.Join(figs, ","), w.sims.Server(sim.FlavorOpenRouter).Requests(), elapsed.Round(time.Millisecond))
}

// walkFiles returns every regular file under dir with its bytes.
func walkFiles(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		out[p] = b
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// echoKeyServer is a hostile OpenAI-compatible or Gemini endpoint that puts
// the caller's key into its error answers, in the message and in a URL, as
// some real APIs do ("Incorrect API key provided: sk-…").
func echoKeyServer(t *testing.T, status int) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if k := r.Header.Get("x-goog-api-key"); k != "" {
			key = k
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Location", "https://api.example.test/v1?key="+key)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"code":%d,"status":"UNAUTHENTICATED","message":"Incorrect API key provided: %s. See https://api.example.test/keys?key=%s&x=1 (Bearer %s)","type":"invalid_request_error"}}`,
			status, key, key, key)
	}))
	t.Cleanup(s.Close)
	return s
}

// deadPort returns a loopback URL on which nothing listens.
func deadPort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// TestSecretsNeverLeak runs the demo and the failing scenarios with
// recognisable fake keys and scans stdout, stderr and every file under the
// working directory (the SQLite file, its -wal and -shm included) for them.
func TestSecretsNeverLeak(t *testing.T) {
	t.Parallel()
	const tgToken = "987654321:FAKE-telegram-token-secret-777"
	const hookSecret = "FAKE-webhook-hmac-secret-888"
	secrets := append([]string{tgToken, hookSecret, "demo-key-not-secret"}, worldKeys...)
	tgEnv := []string{"T_TG_TOKEN=" + tgToken, "T_TG_CHAT=-1001234567890", "T_HOOK_SECRET=" + hookSecret}
	one := func(f sim.Fault) sim.Profile {
		return sim.Profile{Script: []sim.Fault{f, f, f, f}, RetryAfter: 50 * time.Millisecond}
	}
	all := func(p sim.Profile) map[sim.Flavor]sim.Profile {
		return map[sim.Flavor]sim.Profile{sim.FlavorGemini: p, sim.FlavorGroq: p, sim.FlavorCerebras: p, sim.FlavorOpenRouter: p}
	}
	tgDown := fmt.Sprintf("alerts:\n  telegram: {token_env: T_TG_TOKEN, chat_id_env: T_TG_CHAT, api_endpoint: %q}\n", deadPort(t)+"/bot%s/%s")
	tgFailing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, "upstream error for %s", r.URL.Path) // echoes the token in the path
	}))
	t.Cleanup(tgFailing.Close)
	tg502 := fmt.Sprintf("alerts:\n  telegram: {token_env: T_TG_TOKEN, chat_id_env: T_TG_CHAT, api_endpoint: %q}\n", tgFailing.URL+"/bot%s/%s")
	hook := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "signature %s rejected", r.Header.Get("X-Signature"))
	}))
	t.Cleanup(hook.Close)
	echo401, echo403 := echoKeyServer(t, 401), echoKeyServer(t, 403)

	type scenario struct {
		name string
		opts worldOptions
		want []int // acceptable exit codes
	}
	scenarios := []scenario{
		{"401", worldOptions{profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: one(sim.FaultUnauthorized)}, extra: tgDown}, []int{3}},
		{"gemini-invalid-key", worldOptions{profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: one(sim.FaultInvalidKey)}}, []int{3}},
		{"403", worldOptions{profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: one(sim.FaultUnavailable), sim.FlavorGroq: one(sim.FaultForbidden)}, extra: tg502}, []int{3}},
		{"429", worldOptions{profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: one(sim.FaultRateDay), sim.FlavorGroq: one(sim.FaultRateMinute), sim.FlavorCerebras: one(sim.FaultRateDay), sim.FlavorOpenRouter: one(sim.FaultRateDay)}}, []int{0, 1}},
		{"5xx", worldOptions{profiles: all(sim.Profile{Rates: map[sim.Fault]float64{sim.FaultUnavailable: 0.5, sim.FaultServerError: 0.5}}), extra: tgDown}, []int{1}},
		{"timeouts", worldOptions{profiles: all(sim.Profile{Rates: map[sim.Fault]float64{sim.FaultHang: 0.5, sim.FaultStreamCut: 0.5}}),
			link: map[string]string{}, timeouts: "{connect: 1s, first_token: 300ms, total: 2s, idle: 300ms}", extra: tgDown}, []int{0, 1}},
		{"bad-base-url", worldOptions{baseURL: map[string]string{"gemini": deadPort(t), "groq": deadPort(t) + "/openai/v1", "cerebras": "http://[::1]:1/v1", "openrouter": deadPort(t) + "/api/v1"}, extra: tgDown}, []int{1}},
		{"echoed-key-401", worldOptions{baseURL: map[string]string{"gemini": echo401.URL}}, []int{3}},
		{"echoed-key-403-openai", worldOptions{profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: one(sim.FaultUnavailable)}, baseURL: map[string]string{"groq": echo403.URL + "/v1"}}, []int{3}},
		{"webhook-500", worldOptions{publish: fmt.Sprintf("{kind: webhook, url: %q, secret_env: T_HOOK_SECRET}", hook.URL+"/hook?token="+hookSecret[:10]), extra: tgDown}, []int{1}},
	}
	found := 0
	scanned := 0
	scan := func(what string, b []byte) {
		scanned++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				found++
				i := bytes.Index(b, []byte(s))
				lo, hi := max(0, i-120), min(len(b), i+len(s)+60)
				t.Errorf("%s leaks %q: …%q…", what, s, b[lo:hi])
			}
		}
	}
	scanDir := func(dir string, skip map[string]bool) {
		for p, b := range walkFiles(t, dir) {
			if !skip[filepath.Base(p)] {
				scan(p, b)
			}
		}
	}

	// The demo, with fake keys in the environment.
	demo := t.TempDir()
	env := append([]string{"GEMINI_API_KEY=" + worldKeys[0], "GROQ_API_KEY=" + worldKeys[1]}, tgEnv...)
	r := run(t, demo, env, "run", "--demo")
	noCrash(t, "demo", r)
	scan("demo stdout", []byte(r.stdout))
	scan("demo stderr", []byte(r.stderr))
	for _, q := range []string{"SELECT * FROM calls", "SELECT * FROM alerts", "SELECT * FROM jobs", "SELECT * FROM skips"} {
		r := run(t, demo, nil, "sql", "--format", "csv", q)
		scan("demo sql "+q, []byte(r.stdout+r.stderr))
	}
	scanDir(demo, nil)

	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			sc.opts.topics = 3
			w := newWorld(t, sc.opts)
			env := append(append([]string(nil), w.env...), tgEnv...)
			r := run(t, w.dir, env, "run")
			noCrash(t, sc.name, r)
			okCode := false
			for _, c := range sc.want {
				okCode = okCode || r.code == c
			}
			if !okCode {
				t.Errorf("exit %d, want one of %v\nstdout:\n%s\nstderr:\n%s", r.code, sc.want, r.stdout, r.stderr)
			}
			scan(sc.name+" stdout", []byte(r.stdout))
			scan(sc.name+" stderr", []byte(r.stderr))
			seen := r.stdout + r.stderr
			for _, q := range []string{"SELECT * FROM calls", "SELECT * FROM alerts", "SELECT * FROM jobs", "SELECT * FROM health_checks"} {
				r := run(t, w.dir, w.env, "sql", "--format", "json", q)
				scan(sc.name+" sql "+q, []byte(r.stdout+r.stderr))
				seen += r.stdout
			}
			// The hostile answers did reach the outputs, scrubbed: the scan
			// above looked at text that carried the key on the wire.
			if strings.HasPrefix(sc.name, "echoed-key") && !strings.Contains(seen, "Incorrect API key provided: [redacted]") {
				t.Errorf("the echoed error message is not in any output; the scan proves nothing:\n%s", seen)
			}
			// The config file names variables, not secrets, except the
			// webhook scenario's deliberately tokened URL.
			scanDir(w.dir, map[string]bool{"contentpipe.yaml": sc.name == "webhook-500"})
		})
	}
	t.Logf("FIGURES secrets: scenarios=%d outputs_scanned=%d secrets_found=%d", len(scenarios)+1, scanned, found)
}

// TestBadInputThroughBinary runs every broken config and topics file of the
// config corpus through the real binary: exit 2, file:line, a fix, nothing
// created, no secret in the message.
func TestBadInputThroughBinary(t *testing.T) {
	t.Parallel()
	src := filepath.Join("internal", "config", "testdata", "bad")
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	env := []string{"GEMINI_API_KEY=FAKEKEY-gemini-7f3a9c11", "GROQ_API_KEY=FAKEKEY-groq-b81d02ee",
		"CEREBRAS_API_KEY=FAKEKEY-other-55aa10c3", "OPENROUTER_API_KEY=FAKEKEY-other-55aa10c3",
		"WEBHOOK_SECRET=FAKEKEY-webhook-hmac-4242", "TELEGRAM_BOT_TOKEN=123456:FAKETOKEN-telegram-9e9e", "TELEGRAM_CHAT_ID=-1001234567890"}
	secrets := []string{"FAKEKEY-", "FAKETOKEN", "AIzaFAKE-literal-key-0123456789", "gsk-FAKE-pasted-secret-0123"}
	// Lines of the cases the issue names (the rest: any line).
	named := map[string]int{
		"unknown_top.yaml": 2, "type_int.yaml": 2, "duration_bad.yaml": 2, "bad_cron.yaml": 14,
		"cap_reset_zone.yaml": 7, "chain_empty.yaml": 2, "duplicate_name.yaml": 13, "schema_missing.yaml": 14,
		"topics_duplicate_id.yaml": 7,
	}
	good := filepath.Join(dir, "good-for-topics.yaml")
	files, _ := filepath.Glob(filepath.Join(dir, "*.yaml"))
	nConfigs, nTopics := 0, 0
	for _, f := range files {
		base := filepath.Base(f)
		cfg := f
		if strings.HasPrefix(base, "topics_") {
			nTopics++
			cfg = filepath.Join(dir, "cfg-"+base)
			y := fmt.Sprintf("database: db/%s.db\ntopics: %s\npublish: {kind: markdown, dir: out}\nchain:\n  - {name: gemini, kind: gemini, model: gemini-flash-latest, api_key_env: GEMINI_API_KEY}\n", base, base)
			if err := os.WriteFile(cfg, []byte(y), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if base != filepath.Base(good) && !strings.HasPrefix(base, "cfg-") {
			nConfigs++
		} else {
			continue
		}
		r := run(t, dir, env, "--config", cfg, "run")
		noCrash(t, base, r)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s\n%s", base, r.code, r.stdout, r.stderr)
			continue
		}
		want := base + ":"
		if n, ok := named[base]; ok {
			want = fmt.Sprintf("%s:%d: ", base, n)
		}
		if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "fix:") {
			t.Errorf("%s: stderr lacks %q or a fix:\n%s", base, want, r.stderr)
		}
		for _, s := range secrets {
			if strings.Contains(r.stdout+r.stderr, s) {
				t.Errorf("%s: output leaks %q:\n%s", base, s, r.stderr)
			}
		}
	}
	for _, db := range []string{"data/pipeline.db", "db"} {
		if _, err := os.Stat(filepath.Join(dir, db)); err == nil {
			t.Errorf("a bad config still created %s", db)
		}
	}
	if nConfigs < 40 || nTopics < 8 {
		t.Errorf("corpus too small: %d configs, %d topics files", nConfigs, nTopics)
	}
	t.Logf("FIGURES bad-input: configs=%d topics_files=%d all exit 2 with file:line and fix", nConfigs, nTopics)
}

// TestCorruptDatabase puts garbage where the database should be, and damages
// a real one: each run gives a clear error and an exit status, not a panic.
func TestCorruptDatabase(t *testing.T) {
	t.Parallel()
	t.Run("garbage", func(t *testing.T) {
		w := newSimWorld(t, 2, nil, "")
		if err := os.MkdirAll(filepath.Join(w.dir, "data"), 0o700); err != nil {
			t.Fatal(err)
		}
		junk := bytes.Repeat([]byte("this is not a database \x00\xff"), 400)
		if err := os.WriteFile(filepath.Join(w.dir, "data", "pipeline.db"), junk, 0o600); err != nil {
			t.Fatal(err)
		}
		r := run(t, w.dir, w.env, "run")
		noCrash(t, "run on garbage", r)
		if r.code != 2 || !strings.Contains(r.stderr, "pipeline.db is not a SQLite database") || !strings.Contains(r.stderr, "move it away") {
			t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
		}
		if w.served() != 0 {
			t.Errorf("%d provider calls on an unusable database", w.served())
		}
		q := run(t, w.dir, w.env, "sql", "SELECT 1")
		noCrash(t, "sql on garbage", q)
		if q.code == 0 || !strings.Contains(q.stderr, "not a SQLite database") {
			t.Errorf("sql on garbage: exit %d\n%s", q.code, q.stderr)
		}
	})
	t.Run("damaged pages", func(t *testing.T) {
		w := newSimWorld(t, 2, nil, "")
		if r := run(t, w.dir, w.env, "run"); r.code != 0 {
			t.Fatalf("first run exit %d\n%s", r.code, r.stderr)
		}
		path := filepath.Join(w.dir, "data", "pipeline.db")
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		// Keep the header page, ruin every other page.
		for i := 4096; i < len(b); i++ {
			b[i] = byte(i*7 + 13)
		}
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		w.addTopics(t, 2)
		r := run(t, w.dir, w.env, "run")
		noCrash(t, "run on a damaged database", r)
		if r.code == 0 {
			t.Fatalf("a damaged database passed as fine:\n%s\n%s", r.stdout, r.stderr)
		}
		low := strings.ToLower(r.stdout + r.stderr)
		if !strings.Contains(low, "malformed") && !strings.Contains(low, "damaged") && !strings.Contains(low, "not a database") && !strings.Contains(low, "corrupt") {
			t.Errorf("exit %d without saying the database is damaged:\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		t.Logf("FIGURES corrupt-db: exit %d: %s", r.code, strings.TrimSpace(lastLine(r.stderr)))
	})
	t.Run("one damaged page of jobs", func(t *testing.T) {
		w := newSimWorld(t, 2, nil, "")
		if r := run(t, w.dir, w.env, "run"); r.code != 0 {
			t.Fatalf("first run exit %d\n%s", r.code, r.stderr)
		}
		path := filepath.Join(w.dir, "data", "pipeline.db")
		conn := openDB(t, path)
		root := count(t, conn, "SELECT rootpage FROM sqlite_master WHERE name = 'jobs'")
		size := count(t, conn, "PRAGMA page_size")
		conn.Close()
		f, err := os.OpenFile(path, os.O_RDWR, 0)
		if err != nil {
			t.Fatal(err)
		}
		// The page header of the jobs table's root page: an invalid page type.
		if _, err := f.WriteAt([]byte{0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42, 0x42}, int64((root-1)*size)); err != nil {
			t.Fatal(err)
		}
		f.Close()
		w.addTopics(t, 2)
		before := w.served()
		r := run(t, w.dir, w.env, "run")
		noCrash(t, "run on a damaged jobs page", r)
		if r.code != 2 || !strings.Contains(r.stderr, "pipeline.db is damaged") || !strings.Contains(r.stderr, "integrity_check") {
			t.Fatalf("exit %d, want 2 naming the file and integrity_check:\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if n := w.served() - before; n != 0 {
			t.Errorf("%d provider calls on a damaged database", n)
		}
	})
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// TestLockedDatabase holds an EXCLUSIVE lock on the database from another
// connection, longer than the busy timeout, while `run` starts. The run must
// either wait it out and finish, or stop with a clear error; never panic,
// never publish without recording. It takes the busy timeout (15 s) and
// more, so it is skipped with -short.
func TestLockedDatabase(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out the 15 s busy timeout: skipped with -short")
	}
	// Most of it is a wait on the lock, whatever the load: it runs beside
	// the others.
	t.Parallel()
	w := newSimWorld(t, 2, nil, "")
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("first run exit %d\n%s", r.code, r.stderr)
	}
	w.addTopics(t, 2)
	path := filepath.Join(w.dir, "data", "pipeline.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=1000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(t.Context(), "BEGIN EXCLUSIVE"); err != nil {
		t.Fatal(err)
	}
	// Prove the lock is held: another writer is refused.
	probe, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=50&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	if tx, err := probe.Begin(); err == nil {
		tx.Rollback()
		t.Fatal("BEGIN EXCLUSIVE did not lock out other writers")
	}
	probe.Close()
	hold := 20 * time.Second
	var once sync.Once
	release := func() { once.Do(func() { _, _ = conn.ExecContext(t.Context(), "ROLLBACK"); conn.Close() }) }
	defer release()
	timer := time.AfterFunc(hold, release)
	defer timer.Stop()
	start := time.Now()
	r := run(t, w.dir, w.env, "run")
	took := time.Since(start)
	noCrash(t, "run on a locked database", r)
	switch r.code {
	case 0:
		if took < hold-time.Second {
			t.Errorf("run finished in %s while the lock was held for %s", took, hold)
		}
	case 1, 2:
		if !strings.Contains(strings.ToLower(r.stdout+r.stderr), "locked") && !strings.Contains(strings.ToLower(r.stdout+r.stderr), "busy") {
			t.Errorf("exit %d without saying the database is locked:\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	default:
		t.Errorf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	release()
	integrity(t, path)
	r2 := run(t, w.dir, w.env, "run")
	if r2.code != 0 {
		t.Fatalf("run after the lock exit %d\n%s\n%s", r2.code, r2.stdout, r2.stderr)
	}
	if n := len(publishedFiles(t, w.dir)); n != 4 {
		t.Errorf("%d of 4 published after the lock", n)
	}
	t.Logf("FIGURES locked-db: lock held %s, run exit %d after %s: %s", hold, r.code, took.Round(100*time.Millisecond), strings.TrimSpace(lastLine(r.stdout)))
}

// TestFilesModesAndRetention checks the database file and directory modes,
// and that prompt/answer texts are purged after retention_days while the
// calls rows stay.
func TestFilesModesAndRetention(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 3, nil, "retention_days: 2\n")
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("run exit %d\n%s", r.code, r.stderr)
	}
	for p, want := range map[string]fs.FileMode{"data": 0o700, "data/pipeline.db": 0o600, "data/pipeline.db-wal": 0o600, "data/pipeline.db-shm": 0o600} {
		st, err := os.Stat(filepath.Join(w.dir, p))
		if err != nil {
			if strings.HasSuffix(p, "-wal") || strings.HasSuffix(p, "-shm") {
				continue // checkpointed away at close
			}
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s: mode %v, want %v", p, st.Mode().Perm(), want)
		}
	}
	path := filepath.Join(w.dir, "data", "pipeline.db")
	rw, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=5000")
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	calls := count(t, rw, `SELECT COUNT(*) FROM calls`)
	outputs := count(t, rw, `SELECT COUNT(*) FROM outputs`)
	if outputs == 0 || calls == 0 {
		t.Fatalf("nothing recorded: %d calls, %d outputs", calls, outputs)
	}
	// Age one job's texts past the retention limit; keep the others fresh.
	old := time.Now().UTC().AddDate(0, 0, -3).Format("2006-01-02T15:04:05.000Z")
	res, err := rw.Exec(`UPDATE outputs SET created_at = ? WHERE request_id = (SELECT MIN(request_id) FROM outputs)`, old)
	if err != nil {
		t.Fatal(err)
	}
	aged, _ := res.RowsAffected()
	w.addTopics(t, 1)
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("second run exit %d\n%s", r.code, r.stderr)
	}
	after := count(t, rw, `SELECT COUNT(*) FROM outputs WHERE created_at < ?`, time.Now().UTC().AddDate(0, 0, -2).Format("2006-01-02T15:04:05.000Z"))
	if after != 0 {
		t.Errorf("%d outputs older than retention_days survived", after)
	}
	if n := count(t, rw, `SELECT COUNT(*) FROM outputs`); n < outputs-int(aged) {
		t.Errorf("fresh outputs purged too: %d left of %d (aged %d)", n, outputs, aged)
	}
	if n := count(t, rw, `SELECT COUNT(*) FROM calls`); n < calls {
		t.Errorf("calls rows deleted by the purge: %d → %d", calls, n)
	}
	t.Logf("FIGURES retention: outputs aged=%d purged, calls kept=%d", aged, calls)
}

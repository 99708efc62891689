package main

import (
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// simWorld is a working directory with a config pointing at loopback
// simulators that live in the test process (so killing contentpipe does not
// kill them).
type simWorld struct {
	dir    string
	sims   *sim.Set
	env    []string
	topics int // topics in topics.yaml
	// dbURL is the PostgreSQL database of the world (worldOptions.dbURL);
	// "" = the SQLite file data/pipeline.db.
	dbURL string
}

// worldOptions shape a simWorld's config. Zero fields take the defaults of
// newSimWorld.
type worldOptions struct {
	topics   int
	profiles map[sim.Flavor]sim.Profile
	// publish is the flow mapping of `publish:`; "" = markdown to out/.
	publish string
	// job is the flow mapping of `job:`; "" = every topic in one run,
	// deadline 1m, target_words 400, parallel 1.
	job string
	// link adds flow-mapping fields to a link by name, e.g.
	// {"gemini": "daily_cap: 30"}.
	link map[string]string
	// timeouts is the flow mapping of every link's timeouts; "" = connect
	// 2s, first_token 10s, total 30s, idle 5s.
	timeouts string
	// baseURL replaces a link's base_url by name.
	baseURL map[string]string
	// extra is appended to the config (other top-level keys).
	extra string
	// dbURL, when set, puts the world's database on PostgreSQL: the config
	// says database_url_env: CONTENTPIPE_DATABASE_URL and the world's
	// environment holds the URL (see testPostgres). "" = SQLite.
	dbURL string
}

// The fake keys of every simWorld: recognisable, so that a scan of every
// output can prove none of them leaked.
var worldKeys = []string{"AIza-test-gemini-key-0001", "gsk_test_groq_key_0002", "csk-test-cerebras-key-0003", "sk-or-test-openrouter-0004"}

func newSimWorld(t *testing.T, topics int, profiles map[sim.Flavor]sim.Profile, extra string) *simWorld {
	t.Helper()
	return newWorld(t, worldOptions{topics: topics, profiles: profiles, extra: extra})
}

// newWorld is newSimWorld with every option.
func newWorld(t *testing.T, o worldOptions) *simWorld {
	t.Helper()
	sims, err := sim.StartAll(o.profiles)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sims.Close)
	dir := t.TempDir()
	if o.timeouts == "" {
		o.timeouts = "{connect: 2s, first_token: 10s, total: 30s, idle: 5s}"
	}
	if o.publish == "" {
		o.publish = "{kind: markdown, dir: out}"
	}
	if o.job == "" {
		o.job = fmt.Sprintf("{posts_per_run: %d, deadline: 1m, language: en, target_words: 400, parallel: 1}", o.topics)
	}
	links := []struct {
		name, kind, model, env, infra string
		flavor                        sim.Flavor
	}{
		{"gemini", "gemini", "gemini-flash-latest", "T_GEMINI_KEY", "google", sim.FlavorGemini},
		{"groq", "openai", "llama-3.3-70b-versatile", "T_GROQ_KEY", "groq-lpu", sim.FlavorGroq},
		{"cerebras", "openai", "gpt-oss-120b", "T_CEREBRAS_KEY", "cerebras-wse", sim.FlavorCerebras},
		{"openrouter", "openai", "meta-llama/llama-3.3-70b-instruct", "T_OPENROUTER_KEY", "broker", sim.FlavorOpenRouter},
	}
	var cfg strings.Builder
	database := "database: data/pipeline.db"
	if o.dbURL != "" {
		database = "database_url_env: CONTENTPIPE_DATABASE_URL"
	}
	fmt.Fprintf(&cfg, "%s\ntopics: topics.yaml\npublish: %s\njob: %s\nchain:\n", database, o.publish, o.job)
	for _, l := range links {
		base := sims.Server(l.flavor).BaseURL()
		if b, ok := o.baseURL[l.name]; ok {
			base = b
		}
		more := ""
		if m := o.link[l.name]; m != "" {
			more = ", " + m
		}
		fmt.Fprintf(&cfg, "  - {name: %s, kind: %s, model: %s, api_key_env: %s, base_url: %q, infra: %s%s,\n     timeouts: %s}\n",
			l.name, l.kind, l.model, l.env, base, l.infra, more, o.timeouts)
	}
	cfg.WriteString(`retry:
  rate_limited: {wait: 200ms, max_retries: 2, max_wait: 2s}
  other: {wait: 100ms}
quality: {threshold: 70, min_sections: 3, min_section_words: 80}
`)
	cfg.WriteString(o.extra)
	if err := os.WriteFile(filepath.Join(dir, "contentpipe.yaml"), []byte(cfg.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	w := &simWorld{dir: dir, sims: sims, dbURL: o.dbURL, env: []string{
		"T_GEMINI_KEY=" + worldKeys[0], "T_GROQ_KEY=" + worldKeys[1],
		"T_CEREBRAS_KEY=" + worldKeys[2], "T_OPENROUTER_KEY=" + worldKeys[3],
	}}
	if o.dbURL != "" {
		w.env = append(w.env, "CONTENTPIPE_DATABASE_URL="+o.dbURL)
	}
	w.addTopics(t, o.topics)
	return w
}

// addTopics appends n topics to topics.yaml (ids topic-000, topic-001, …).
func (w *simWorld) addTopics(t *testing.T, n int) {
	t.Helper()
	var tb strings.Builder
	for i := w.topics; i < w.topics+n; i++ {
		fmt.Fprintf(&tb, "- {id: topic-%03d, title: \"Practical guide number %d to home energy savings\", category: home, keywords: [insulation, heat pump, bills]}\n", i, i)
	}
	f, err := os.OpenFile(filepath.Join(w.dir, "topics.yaml"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err == nil {
		_, err = f.WriteString(tb.String())
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	w.topics += n
}

// served is the number of API requests the world's simulators received.
func (w *simWorld) served() int {
	n := 0
	for _, f := range sim.Flavors() {
		n += w.sims.Server(f).Requests()
	}
	return n
}

// command is the binary in the world with args, not started.
func (w *simWorld) command(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Dir = w.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "TZ=UTC"}, w.env...)
	return cmd
}

// start starts the binary in the world without waiting for it.
func (w *simWorld) start(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := w.command(t, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd
}

// publishedFiles maps job ids (from front matter) to the files that carry them.
func publishedFiles(t *testing.T, dir string) map[string][]string {
	t.Helper()
	return filesByJob(t, dir, filepath.Join("out", "*", "*.md"))
}

// integrity runs PRAGMA integrity_check on the database through a normal
// (read-write) connection, as the next run would open it, so that a hot WAL
// left by a killed process is recovered first. Any error fails the test.
func integrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=15000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var ok string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&ok); err != nil {
		t.Fatalf("integrity_check: %v", err)
	}
	if ok != "ok" {
		t.Fatalf("integrity_check: %s", ok)
	}
}

// killCount is how many SIGKILLs TestCrashKillAndRerun and its webhook
// variant deliver: $CONTENTPIPE_KILLS, else 5 (3 with -short).
func killCount(t *testing.T) int {
	kills := 5
	if testing.Short() {
		kills = 3
	}
	if v := os.Getenv("CONTENTPIPE_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 1000 {
			t.Fatalf("CONTENTPIPE_KILLS=%q: want a count from 1 to 1000", v)
		}
		kills = n
	}
	return kills
}

// crashFigures are what a kill campaign measured.
type crashFigures struct {
	kills     int // SIGKILLs delivered to a live process
	early     int // processes that had already exited when the kill came
	integrity int // integrity checks that passed (one after every kill)
	served    int // API requests the simulators received
	recorded  int // rows in calls
	finalRuns int
	tmpLeft   int // temp files a killed publication left behind
}

// killCampaign starts `contentpipe run` kills times and SIGKILLs each at a
// random point: after 0-3 further API requests reached the simulators plus a
// random 0-80 ms, so that kills land before, during and after calls,
// commits and publications. After each kill the database must pass
// PRAGMA integrity_check and no job may have two files. check runs after
// each kill as well.
func killCampaign(t *testing.T, w *simWorld, kills int, check func(i int)) crashFigures {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	t.Logf("kill campaign seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 2))
	db := filepath.Join(w.dir, "data", "pipeline.db")
	var f crashFigures
	for i := 0; i < kills; i++ {
		before := w.served()
		cmd := w.start(t, "run")
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		want := before + rng.IntN(4)
		deadline := time.Now().Add(20 * time.Second)
		exited := false
	wait:
		for w.served() < want && time.Now().Before(deadline) {
			select {
			case err := <-done:
				done <- err
				exited = true
				break wait
			case <-time.After(2 * time.Millisecond):
			}
		}
		if !exited {
			time.Sleep(time.Duration(rng.IntN(80)) * time.Millisecond)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-done
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			f.kills++
		} else {
			f.early++
			if os.Getenv("CONTENTPIPE_DEBUG") != "" {
				t.Logf("kill %d: process exited by itself: %v", i, cmd.ProcessState)
			}
		}
		if _, err := os.Stat(db); err == nil {
			integrity(t, db)
			f.integrity++
		}
		for id, fs := range publishedFiles(t, w.dir) {
			if len(fs) != 1 {
				t.Fatalf("after kill %d: job %s has %d files: %v", i, id, len(fs), fs)
			}
		}
		// Keep work in stock so that every kill lands in a busy run.
		if _, err := os.Stat(db); err == nil {
			conn := openDB(t, db)
			done := 0
			// A kill during the first run's migrations leaves a file without tables yet.
			if count(t, conn, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'jobs'`) == 1 {
				done = count(t, conn, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`)
			}
			conn.Close()
			if w.topics-done < 6 {
				w.addTopics(t, 8)
			}
		}
		if check != nil {
			check(i)
		}
	}
	return f
}

// finish reruns until a run publishes nothing more and exits 0.
func finish(t *testing.T, w *simWorld, f *crashFigures) result {
	t.Helper()
	var last result
	for i := 0; i < 6; i++ {
		last = run(t, w.dir, w.env, "run")
		f.finalRuns++
		if last.code == 0 && strings.Contains(last.stdout, " 0 published") {
			return last
		}
	}
	t.Fatalf("final runs did not settle: exit %d:\n%s\n%s", last.code, last.stdout, last.stderr)
	return last
}

// crashProfiles answer fast but fail now and then, so that jobs walk the
// chain (several attempts, candidates stored, failover) while being killed.
func crashProfiles() map[sim.Flavor]sim.Profile {
	p := func(seed int64) sim.Profile {
		return sim.Profile{Seed: seed, FirstTokenDelay: 30 * time.Millisecond, Rates: map[sim.Fault]float64{
			sim.FaultUnavailable: 0.1, sim.FaultLowQuality: 0.1, sim.FaultSlowFirstToken: 0.3,
		}}
	}
	return map[sim.Flavor]sim.Profile{sim.FlavorGemini: p(1), sim.FlavorGroq: p(2), sim.FlavorCerebras: p(3), sim.FlavorOpenRouter: p(4)}
}

// checkAttempts holds the calls table to the simulators' request count:
// every attempt a simulator answered is a calls row, except those cut short
// by a kill (at most one per kill with parallel 1), whose jobs were repeated.
func checkAttempts(t *testing.T, db *sql.DB, w *simWorld, f *crashFigures) {
	t.Helper()
	f.served = w.served()
	f.recorded = count(t, db, `SELECT COUNT(*) FROM calls`)
	if f.recorded > f.served {
		t.Errorf("%d calls recorded but the simulators saw only %d requests", f.recorded, f.served)
	}
	if lost := f.served - f.recorded; lost > f.kills {
		t.Errorf("%d attempts reached a provider but are not in calls; only %d kills could explain it", lost, f.kills)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls c WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.id = c.request_id)`); n != 0 {
		t.Errorf("%d calls belong to no job", n)
	}
	var dup int
	if err := db.QueryRow(`SELECT COUNT(*) FROM (SELECT request_id, attempt FROM calls WHERE shadow = 0 GROUP BY 1, 2 HAVING COUNT(*) > 1)`).Scan(&dup); err != nil {
		t.Fatal(err)
	}
	if dup != 0 {
		t.Errorf("%d (job, attempt) pairs recorded twice: attempt numbers are reused after a crash", dup)
	}
}

func tempLeft(t *testing.T, dir string) int {
	t.Helper()
	tmp, _ := filepath.Glob(filepath.Join(dir, "out", "*", ".*.tmp-*"))
	return len(tmp)
}

// TestCrashKillAndRerun kills the real binary with SIGKILL at random points
// of runs ($CONTENTPIPE_KILLS times, default 5), checks the database after
// every kill, then reruns to completion: every job is published exactly
// once, and every attempt is recorded or was cut by a kill.
func TestCrashKillAndRerun(t *testing.T) {
	t.Parallel()
	kills := killCount(t)
	w := newWorld(t, worldOptions{topics: 8, job: "{posts_per_run: 10000, deadline: 1m, language: en, target_words: 400, parallel: 1}", profiles: crashProfiles()})
	f := killCampaign(t, w, kills, nil)
	finish(t, w, &f)
	topics := w.topics

	byJob := publishedFiles(t, w.dir)
	doubles := 0
	for id, fs := range byJob {
		if len(fs) != 1 {
			doubles++
			t.Errorf("job %s published %d times: %v", id, len(fs), fs)
		}
	}
	dbPath := filepath.Join(w.dir, "data", "pipeline.db")
	integrity(t, dbPath)
	db := openDB(t, dbPath)
	published, review := finalStates(t, db, topics)
	if len(byJob) != published {
		t.Errorf("%d jobs have files, %d are recorded published", len(byJob), published)
	}
	for id, fs := range byJob {
		var loc string
		if err := db.QueryRow(`SELECT location FROM jobs WHERE id = ? AND status = 'published'`, id).Scan(&loc); err != nil || loc != fs[0] {
			t.Errorf("job %s: recorded location %q (%v), file %s", id, loc, err, fs[0])
		}
	}
	checkAttempts(t, db, w, &f)
	f.tmpLeft = tempLeft(t, w.dir)
	t.Logf("FIGURES kill-markdown: kills=%d (process already gone: %d) integrity_ok=%d/%d jobs=%d published=%d review=%d lost=%d double_files=%d attempts_served=%d calls_recorded=%d cut_by_kill=%d final_runs=%d temp_files_left=%d",
		f.kills, f.early, f.integrity, kills, topics, published, review, topics-published-review, doubles, f.served, f.recorded, f.served-f.recorded, f.finalRuns, f.tmpLeft)
}

// hookReceiver is a webhook endpoint that behaves like a careful real one:
// it records every delivery, answers 200 to the first delivery of an
// Idempotency-Key and 409 to a repeat. It pauses a random 0-60 ms before
// answering, so that kills land between delivery and the run's record.
type hookReceiver struct {
	mu     sync.Mutex
	bodies map[string][]string // key → sha256 of each complete delivery
	cut    int                 // deliveries whose body a kill cut short
	bad    []string
}

func (h *hookReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		// The sender died mid-body: nothing was received, as for a real
		// receiver, which never acts on a truncated request.
		h.mu.Lock()
		h.cut++
		h.mu.Unlock()
		w.WriteHeader(http.StatusBadRequest)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	sum := sha256.Sum256(b)
	h.mu.Lock()
	if key == "" {
		h.bad = append(h.bad, "delivery without Idempotency-Key")
	}
	seen := len(h.bodies[key]) > 0
	h.bodies[key] = append(h.bodies[key], hex.EncodeToString(sum[:]))
	h.mu.Unlock()
	time.Sleep(time.Duration(rand.IntN(60)) * time.Millisecond)
	if seen {
		w.WriteHeader(http.StatusConflict)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// TestCrashKillAndRerunWebhook is the kill campaign with the webhook
// publisher: an httptest receiver counts deliveries per Idempotency-Key.
// A delivery cut by a kill before it was recorded is resent with the same
// key and the same bytes; no key ever carries two different articles.
func TestCrashKillAndRerunWebhook(t *testing.T) {
	t.Parallel()
	kills := killCount(t)
	recv := &hookReceiver{bodies: map[string][]string{}}
	hook := httptest.NewServer(recv)
	t.Cleanup(hook.Close)
	w := newWorld(t, worldOptions{topics: 8, job: "{posts_per_run: 10000, deadline: 1m, language: en, target_words: 400, parallel: 1}", profiles: crashProfiles(),
		publish: fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook")})
	f := killCampaign(t, w, kills, nil)
	finish(t, w, &f)
	topics := w.topics

	recv.mu.Lock()
	defer recv.mu.Unlock()
	for _, b := range recv.bad {
		t.Error(b)
	}
	deliveries, conflicts := 0, 0
	keys := make([]string, 0, len(recv.bodies))
	for k := range recv.bodies {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		bs := recv.bodies[k]
		deliveries += len(bs)
		for _, b := range bs[1:] {
			if b != bs[0] {
				conflicts++
				t.Errorf("key %s delivered with different bodies: the receiver would publish two articles", k)
				break
			}
		}
	}

	resends := deliveries - len(keys)
	if resends+recv.cut > f.kills {
		t.Errorf("%d resends for %d kills: something resends without a crash", resends, f.kills)
	}
	dbPath := filepath.Join(w.dir, "data", "pipeline.db")
	integrity(t, dbPath)
	db := openDB(t, dbPath)
	published, review := finalStates(t, db, topics)
	if len(keys) != published {
		t.Errorf("%d keys delivered, %d jobs recorded published", len(keys), published)
	}
	rows, err := db.Query(`SELECT id FROM jobs WHERE status = 'published'`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var id string
		_ = rows.Scan(&id)
		if len(recv.bodies[id]) == 0 {
			t.Errorf("job %s recorded but never delivered", id)
		}
	}
	rows.Close()
	checkAttempts(t, db, w, &f)
	t.Logf("FIGURES kill-webhook: kills=%d (process already gone: %d) integrity_ok=%d/%d jobs=%d published=%d review=%d keys_delivered=%d deliveries=%d same_key_resends=%d cut_deliveries=%d conflicting_bodies=%d attempts_served=%d calls_recorded=%d cut_by_kill=%d final_runs=%d",
		f.kills, f.early, f.integrity, kills, topics, published, review, len(keys), deliveries, resends, recv.cut, conflicts, f.served, f.recorded, f.served-f.recorded, f.finalRuns)
}

// TestConcurrentRunsNeverShareAJob starts several runs at once over the same
// topics: each job is published once.
func TestConcurrentRunsNeverShareAJob(t *testing.T) {
	t.Parallel()
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
	publishedAndGeneratedOnce(t, w, topics)
}

// publishedAndGeneratedOnce checks that each of the world's topics jobs
// has one file and exactly one passing call.
func publishedAndGeneratedOnce(t *testing.T, w *simWorld, topics int) {
	t.Helper()
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

// dumpJobs describes the jobs matching where, with their calls, for a
// failure message.
func dumpJobs(t *testing.T, db *sql.DB, where string) string {
	t.Helper()
	rows, err := db.Query(`SELECT id, status, COALESCE(last_error, ''), COALESCE(owner_pid, 0),
  (SELECT group_concat(provider || ':' || outcome || ':' || COALESCE(quality_score, -1), ' ') FROM calls c WHERE c.request_id = jobs.id)
FROM jobs WHERE ` + where)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, status, last string
		var pid int
		var calls sql.NullString
		_ = rows.Scan(&id, &status, &last, &pid, &calls)
		fmt.Fprintf(&b, "  %s %s pid=%d last_error=%q calls=[%s]\n", id, status, pid, last, calls.String)
	}
	return b.String()
}

// finalStates checks that every job ended: published, or in the review
// queue because every answer failed the quality gate (a designed outcome
// of the low_quality faults, not a loss). Nothing is left due, claimed,
// running or publishing.
func finalStates(t *testing.T, db *sql.DB, topics int) (published, review int) {
	t.Helper()
	published = count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`)
	review = count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'review'`)
	if published+review != topics {
		t.Errorf("%d published + %d in review of %d jobs: lost %d", published, review, topics, topics-published-review)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status NOT IN ('published', 'review') OR owner_pid IS NOT NULL`); n != 0 {
		t.Errorf("%d jobs left unfinished or still claimed:\n%s", n, dumpJobs(t, db, `status NOT IN ('published', 'review') OR owner_pid IS NOT NULL`))
	}
	if review > 0 {
		t.Logf("jobs in review:\n%s", dumpJobs(t, db, `status = 'review'`))
	}
	return published, review
}

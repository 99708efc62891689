package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// providerUse is one request as a provider's front saw it: its status and
// the usage the provider reported in the answer (0 when none came).
type providerUse struct {
	status  int
	in, out int
	cost    float64 // the provider's own cost figure (OpenRouter), -1 when none
}

// usageProxy stands in front of one simulator and keeps the provider's own
// log of every request: what reached it and what it reported it used. It
// reads the answer as it streams by, without holding it back.
type usageProxy struct {
	srv  *httptest.Server
	base string // the base_url to configure: the proxy with the simulator's path
	mu   sync.Mutex
	log  []providerUse
}

var (
	usageIn   = regexp.MustCompile(`"(?:prompt_tokens|promptTokenCount)"\s*:\s*(\d+)`)
	usageOut  = regexp.MustCompile(`"(?:completion_tokens|candidatesTokenCount|thoughtsTokenCount)"\s*:\s*(\d+)`)
	usageCost = regexp.MustCompile(`"cost"\s*:\s*([0-9.eE+-]+)`)
	geminiUse = regexp.MustCompile(`"usageMetadata"\s*:\s*\{[^}]*\}`)
)

func newUsageProxy(t *testing.T, s *sim.Server) *usageProxy {
	t.Helper()
	root := "http://" + s.Addr()
	target, _ := url.Parse(root)
	p := &usageProxy{}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.FlushInterval = -1 // stream chunks through at once
	// A killed worker cuts its requests short: that is the test, not news.
	rp.ErrorLog = log.New(io.Discard, "", 0)
	rp.ModifyResponse = func(resp *http.Response) error {
		resp.Body = &usageBody{ReadCloser: resp.Body, done: func(b []byte) { p.record(resp.StatusCode, b) }}
		return nil
	}
	p.srv = httptest.NewServer(rp)
	t.Cleanup(p.srv.Close)
	p.base = p.srv.URL + strings.TrimPrefix(s.BaseURL(), root)
	return p
}

// record adds one answer to the log. A Gemini stream repeats its usage in
// every chunk: the last one counts.
func (p *usageProxy) record(status int, body []byte) {
	u := providerUse{status: status, cost: -1}
	text := body
	if all := geminiUse.FindAll(body, -1); len(all) > 0 {
		text = all[len(all)-1]
	} else if i := bytes.LastIndex(body, []byte(`"usage"`)); i >= 0 {
		text = body[i:]
	}
	if m := usageIn.FindSubmatch(text); m != nil {
		u.in, _ = strconv.Atoi(string(m[1]))
	}
	for _, m := range usageOut.FindAllSubmatch(text, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		u.out += n
	}
	if m := usageCost.FindSubmatch(text); m != nil {
		u.cost, _ = strconv.ParseFloat(string(m[1]), 64)
	}
	p.mu.Lock()
	p.log = append(p.log, u)
	p.mu.Unlock()
}

// totals are the requests, tokens and USD (at the price, or the provider's
// own figure) of the log.
func (p *usageProxy) totals(inPerM, outPerM float64) (requests, tokens int, usd float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.log {
		requests++
		tokens += u.in + u.out
		if u.cost >= 0 {
			usd += u.cost
		} else {
			usd += (float64(u.in)*inPerM + float64(u.out)*outPerM) / 1e6
		}
	}
	return requests, tokens, usd
}

// usageBody passes an answer through and hands the whole of it to done
// when the proxy closes it.
type usageBody struct {
	io.ReadCloser
	buf  bytes.Buffer
	once sync.Once
	done func([]byte)
}

func (b *usageBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.buf.Write(p[:n])
	return n, err
}

func (b *usageBody) Close() error {
	b.once.Do(func() { b.done(b.buf.Bytes()) })
	return b.ReadCloser.Close()
}

// worker is one `contentpipe run` process of the multi-worker test.
type worker struct {
	cmd  *exec.Cmd
	out  syncBuffer // written by exec's copying goroutine, read on failure
	done chan struct{}
}

func startWorker(t *testing.T, w *simWorld) *worker {
	t.Helper()
	wk := &worker{done: make(chan struct{})}
	wk.cmd = w.command(t, "run")
	wk.cmd.Stdout, wk.cmd.Stderr = &wk.out, &wk.out
	if err := wk.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = wk.cmd.Wait(); close(wk.done) }()
	t.Cleanup(func() {
		_ = wk.cmd.Process.Signal(syscall.SIGCONT)
		_ = wk.cmd.Process.Kill()
		<-wk.done
	})
	return wk
}

// isDone reports whether the worker's process has exited.
func isDone(wk *worker) bool {
	select {
	case <-wk.done:
		return true
	default:
		return false
	}
}

// held lists the jobs a process holds a claim on (running or publishing);
// nil while the database has no jobs table yet.
func held(w *simWorld, db *sql.DB, pid int) []string {
	rows, err := db.Query(w.q(`SELECT id FROM jobs WHERE status IN ('running', 'publishing') AND owner_pid = ? ORDER BY id`), pid)
	if err != nil {
		return nil
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if rows.Scan(&id) == nil {
			ids = append(ids, id)
		}
	}
	return ids
}

// waitHolding waits until the worker holds a claim, and returns the jobs it
// holds.
func waitHolding(t *testing.T, w *simWorld, db *sql.DB, wk *worker) []string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-wk.done:
			t.Fatalf("worker %d finished before it could be signalled mid-job:\n%s", wk.cmd.Process.Pid, wk.out.String())
		default:
		}
		if ids := held(w, db, wk.cmd.Process.Pid); len(ids) > 0 {
			return ids
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("worker %d never held a job", wk.cmd.Process.Pid)
	return nil
}

// multiWorkerLimits are the limits of the multi-worker world: each binds
// somewhere in 300 jobs, and none may be passed.
const (
	mwGeminiCap     = 40    // requests
	mwGroqUSD       = 2.0   // groq's own daily_budget_usd
	mwCerebrasTok   = 15000 // cerebras daily_tokens
	mwChainUSD      = 20.0  // budget.daily_usd
	mwLease         = 3 * time.Second
	mwTopics        = 300
	mwGeminiPriceIn = 50.0
	mwGeminiPriceOu = 200.0
	mwGroqPriceIn   = 100.0
	mwGroqPriceOut  = 400.0
	mwCerebrasIn    = 50.0
	mwCerebrasOut   = 200.0
	mwOpenRouterIn  = 0.13
	mwOpenRouterOut = 0.40
)

// testMultiWorker runs 3 `run` workers at once on 300 topics against one
// database (dbURL, or the world's SQLite file when ""), with daily caps, a
// token limit and money budgets, SIGKILLs one mid-job and, with pause,
// SIGSTOPs another mid-job past its lease, then checks at the webhook receiver and at the
// providers' own fronts: every job delivered under one key with one body,
// no limit passed, and the claims of both signalled workers taken over.
func testMultiWorker(t *testing.T, dbURL string, pause bool) {
	fast := func(seed int64) sim.Profile {
		return sim.Profile{Seed: seed, FirstTokenDelay: 150 * time.Millisecond, Rates: map[sim.Fault]float64{
			sim.FaultUnavailable: 0.05, sim.FaultSlowFirstToken: 0.5}}
	}
	sims, err := sim.StartAll(map[sim.Flavor]sim.Profile{sim.FlavorGemini: fast(1), sim.FlavorGroq: fast(2), sim.FlavorCerebras: fast(3),
		sim.FlavorOpenRouter: {Seed: 4, FirstTokenDelay: 150 * time.Millisecond, Rates: map[sim.Fault]float64{sim.FaultSlowFirstToken: 0.5}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sims.Close)
	proxies := map[sim.Flavor]*usageProxy{}
	base := map[string]string{}
	for _, f := range sim.Flavors() {
		proxies[f] = newUsageProxy(t, sims.Server(f))
		base[string(f)] = proxies[f].base
	}
	recv := &hookReceiver{bodies: map[string][]string{}}
	hook := httptest.NewServer(recv)
	t.Cleanup(hook.Close)
	w := newWorld(t, worldOptions{topics: mwTopics, dbURL: dbURL, baseURL: base,
		publish: fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook"),
		job: fmt.Sprintf("{posts_per_run: 10000, deadline: 20s, language: en, target_words: 400, parallel: 2, lease: %s, worker_lease: %s, delivery_window: %s}",
			mwLease, 2*mwLease, mwLease),
		link: map[string]string{
			"gemini":     fmt.Sprintf("daily_cap: %d, max_tokens: 2000, price: {input_per_mtok: %g, output_per_mtok: %g}", mwGeminiCap, mwGeminiPriceIn, mwGeminiPriceOu),
			"groq":       fmt.Sprintf("daily_budget_usd: %g, max_tokens: 1500, price: {input_per_mtok: %g, output_per_mtok: %g}", mwGroqUSD, mwGroqPriceIn, mwGroqPriceOut),
			"cerebras":   fmt.Sprintf("daily_tokens: %d, max_tokens: 1500, price: {input_per_mtok: %g, output_per_mtok: %g}", mwCerebrasTok, mwCerebrasIn, mwCerebrasOut),
			"openrouter": fmt.Sprintf("max_tokens: 1500, price: {input_per_mtok: %g, output_per_mtok: %g}", mwOpenRouterIn, mwOpenRouterOut),
		},
		extra: fmt.Sprintf("budget: {daily_usd: %g}\n", mwChainUSD),
	})
	db := worldDB(t, w)
	start := time.Now()

	// The first worker creates the schema; the others start a moment later.
	workers := []*worker{startWorker(t, w)}
	waitHolding(t, w, db, workers[0])
	workers = append(workers, startWorker(t, w), startWorker(t, w))

	// SIGKILL worker 0 while it holds a job, once the run is well under way.
	for deadline := time.Now().Add(60 * time.Second); count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`) < 30; {
		if time.Now().After(deadline) {
			t.Fatalf("30 jobs not published within 60s:\n%s", workers[0].out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	killedHeld := waitHolding(t, w, db, workers[0])
	_ = workers[0].cmd.Process.Signal(syscall.SIGKILL)
	<-workers[0].done
	// SIGSTOP worker 1 while it holds a job, past its lease (PostgreSQL
	// only: on SQLite a process paused inside a write transaction holds
	// the file's one write lock, and nothing can take it from a live
	// process — README, More than one machine).
	stopped := workers[1]
	var stoppedHeld []string
	stoppedAt := time.Now()
	gone := map[string]bool{strconv.Itoa(workers[0].cmd.Process.Pid): true}
	if pause {
		stoppedHeld = waitHolding(t, w, db, stopped)
		_ = stopped.cmd.Process.Signal(syscall.SIGSTOP)
		stoppedAt = time.Now()
		gone[strconv.Itoa(stopped.cmd.Process.Pid)] = true
	}
	t.Logf("killed worker held %v; stopped worker holds %v", killedHeld, stoppedHeld)
	// Past the lease the signalled workers' claims are taken over while
	// the stopped one is still stopped: a new run starts whenever the last
	// one finished, as a timer would start them, until every held job is
	// published or claimed by someone else. (A job left publishing waits
	// for the delivery window after its holder's lease too.)
	time.Sleep(mwLease + 500*time.Millisecond)
	takeover := append(append([]string(nil), killedHeld...), stoppedHeld...)
	// A bound, not a timing check: a taker reaches a held job in the
	// backlog's order, behind the other due topics (10–13 s on a quiet
	// machine); a loaded CI machine running -race needs more.
	deadline := time.Now().Add(120 * time.Second)
	var taker *worker
	for _, id := range takeover {
		for {
			if taker == nil || isDone(taker) {
				taker = startWorker(t, w)
				workers = append(workers, taker)
			}
			st := column(t, db, w.q(`SELECT status || ' ' || COALESCE(CAST(owner_pid AS TEXT), '-') FROM jobs WHERE id = ?`), id)
			if len(st) == 1 {
				status, owner, _ := strings.Cut(st[0], " ")
				// Taken over: anything but still held by a signalled
				// worker (published, reclaimed by a live one, or finished
				// or deferred by a taker).
				if !(status == "running" || status == "publishing") || !gone[owner] {
					break
				}
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %s (held by a signalled worker) not taken over %s after its lease: %v\nlast run:\n%s", id, time.Since(stoppedAt), st, taker.out.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("held jobs taken over %s after the stop", time.Since(stoppedAt).Round(time.Millisecond))
	_ = stopped.cmd.Process.Signal(syscall.SIGCONT)
	for _, wk := range workers[1:] {
		select {
		case <-wk.done:
		case <-time.After(90 * time.Second):
			t.Fatalf("worker %d did not finish:\n%s", wk.cmd.Process.Pid, wk.out.String())
		}
	}
	// Jobs deferred (every link failed once) are due again: runs until
	// nothing is left.
	f := crashFigures{kills: 2}
	finish(t, w, &f)
	t.Logf("workers done in %s (+%d final runs)", time.Since(start).Round(time.Millisecond), f.finalRuns)

	// Exactly once at the target: one key per job, one body per key.
	recv.mu.Lock()
	keys := make([]string, 0, len(recv.bodies))
	deliveries := 0
	for k, bs := range recv.bodies {
		keys = append(keys, k)
		deliveries += len(bs)
		for _, b := range bs[1:] {
			if b != bs[0] {
				t.Errorf("key %s delivered with different bodies", k)
				break
			}
		}
	}
	for _, b := range recv.bad {
		t.Error(b)
	}
	recv.mu.Unlock()
	sort.Strings(keys)
	if len(keys) != mwTopics {
		t.Errorf("%d keys delivered, want %d", len(keys), mwTopics)
	}
	// A resend of the same body under the same key happens only when a
	// signalled worker was between its mark and its record (2 jobs each).
	if resends := deliveries - len(keys); resends > 4 {
		t.Errorf("%d same-key resends for 1 kill and 1 stop", resends)
	}
	published, review := finalStates(t, db, mwTopics)
	if review != 0 || published != mwTopics {
		t.Errorf("%d published, %d review; want all %d published", published, review, mwTopics)
	}

	// No limit passed, counted at the providers.
	gReq, _, gUSD := proxies[sim.FlavorGemini].totals(mwGeminiPriceIn, mwGeminiPriceOu)
	qReq, _, qUSD := proxies[sim.FlavorGroq].totals(mwGroqPriceIn, mwGroqPriceOut)
	cReq, cTok, cUSD := proxies[sim.FlavorCerebras].totals(mwCerebrasIn, mwCerebrasOut)
	oReq, _, oUSD := proxies[sim.FlavorOpenRouter].totals(mwOpenRouterIn, mwOpenRouterOut)
	if gReq > mwGeminiCap {
		t.Errorf("gemini received %d requests, daily_cap %d", gReq, mwGeminiCap)
	}
	if qUSD > mwGroqUSD {
		t.Errorf("groq's answers cost $%.4f, daily_budget_usd %g", qUSD, mwGroqUSD)
	}
	if cTok > mwCerebrasTok {
		t.Errorf("cerebras reported %d tokens, daily_tokens %d", cTok, mwCerebrasTok)
	}
	total := gUSD + qUSD + cUSD + oUSD
	if total > mwChainUSD {
		t.Errorf("the chain's answers cost $%.4f, budget.daily_usd %g", total, mwChainUSD)
	}
	// Each link limit bound somewhere: its skips are recorded.
	for _, s := range []struct{ link, reason string }{{"gemini", "cap"}, {"groq", "budget"}, {"cerebras", "tokens"}} {
		if n := count(t, db, w.q(`SELECT COUNT(*) FROM skips WHERE provider = ? AND reason = ?`), s.link, s.reason); n == 0 {
			t.Errorf("no %s skip for %s: the limit never bound, the test proves nothing about it", s.reason, s.link)
		}
	}
	// The database agrees with the providers: no call went unrecorded
	// except those cut by the kill.
	calls := count(t, db, `SELECT COUNT(*) FROM calls`)
	served := gReq + qReq + cReq + oReq
	if calls > served || served-calls > 4 {
		t.Errorf("%d calls recorded, the providers saw %d requests", calls, served)
	}
	t.Logf("FIGURES multi-worker %s: jobs=%d keys=%d deliveries=%d took_over=%d gemini=%d/%d req groq=$%.3f/%g cerebras=%d/%d tok chain=$%.3f/%g openrouter=%d req calls=%d served=%d elapsed=%s",
		backendName(dbURL), mwTopics, len(keys), deliveries, len(takeover), gReq, mwGeminiCap, qUSD, mwGroqUSD, cTok, mwCerebrasTok, total, mwChainUSD, oReq, calls, served, time.Since(start).Round(time.Millisecond))
}

func backendName(dbURL string) string {
	if dbURL == "" {
		return "sqlite"
	}
	return "postgres"
}

// TestMultiWorkerPostgres: three workers on one PostgreSQL database.
func TestMultiWorkerPostgres(t *testing.T) {
	testMultiWorker(t, testPostgres(t), true)
}

// TestMultiWorkerSQLite: the same three workers on one SQLite file (one
// machine), one SIGKILLed; none paused (see testMultiWorker).
func TestMultiWorkerSQLite(t *testing.T) {
	testMultiWorker(t, "", false)
}

// testServeWorkers starts 3 `serve` workers on one database with a run
// every 2 s taking one topic each: every slot is run by one worker, so
// the jobs published are the slots run, never more, and every other
// worker logs that the slot was taken.
func testServeWorkers(t *testing.T, dbURL string) {
	w := newWorld(t, worldOptions{topics: 40, dbURL: dbURL,
		job:   "{posts_per_run: 1, deadline: 20s, language: en, target_words: 400, parallel: 1}",
		extra: "schedule: {run: \"@every 2s\", health: \"\", report: \"\"}\n"})
	db := worldDB(t, w)
	var ws []*worker
	for i := 0; i < 3; i++ {
		if i == 1 {
			// The first worker creates the schema before the others open it.
			for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				var n int
				if db.QueryRow(`SELECT COUNT(*) FROM schedule_slots`).Scan(&n) == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("no schema after 30 s:\n%s", ws[0].out.String())
				}
			}
		}
		wk := &worker{done: make(chan struct{})}
		wk.cmd = w.command(t, "serve")
		wk.cmd.Stdout, wk.cmd.Stderr = &wk.out, &wk.out
		if err := wk.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() { _ = wk.cmd.Wait(); close(wk.done) }()
		t.Cleanup(func() { _ = wk.cmd.Process.Kill(); <-wk.done })
		ws = append(ws, wk)
	}
	time.Sleep(11 * time.Second)
	for _, wk := range ws {
		_ = wk.cmd.Process.Signal(syscall.SIGTERM)
	}
	taken := 0
	for _, wk := range ws {
		select {
		case <-wk.done:
		case <-time.After(60 * time.Second):
			t.Fatalf("serve did not stop:\n%s", wk.out.String())
		}
		if wk.cmd.ProcessState.ExitCode() != 0 {
			t.Errorf("serve exit %d:\n%s", wk.cmd.ProcessState.ExitCode(), wk.out.String())
		}
		taken += strings.Count(wk.out.String(), "scheduled job taken by another worker")
	}
	slots := count(t, db, `SELECT COUNT(*) FROM schedule_slots WHERE schedule = 'run'`)
	owners := count(t, db, `SELECT COUNT(DISTINCT owner_token) FROM schedule_slots WHERE schedule = 'run'`)
	published := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`)
	if slots < 3 {
		t.Fatalf("%d run slots in 11 s of @every 2s", slots)
	}
	if published > slots || published < slots-1 {
		t.Errorf("%d jobs published in %d run slots of posts_per_run 1: a slot ran twice or not at all", published, slots)
	}
	if taken < slots {
		t.Errorf("%d \"taken by another worker\" lines for %d slots of 3 workers", taken, slots)
	}
	for id, fs := range publishedFiles(t, w.dir) {
		if len(fs) != 1 {
			t.Errorf("job %s published %d times", id, len(fs))
		}
	}
	t.Logf("FIGURES serve-workers %s: slots=%d published=%d slot_owners=%d taken_elsewhere=%d", backendName(dbURL), slots, published, owners, taken)
}

func TestServeWorkersPostgres(t *testing.T) { testServeWorkers(t, testPostgres(t)) }
func TestServeWorkersSQLite(t *testing.T)   { testServeWorkers(t, "") }

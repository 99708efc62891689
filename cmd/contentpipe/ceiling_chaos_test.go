package main

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// flakyHook answers 503 to a share of first deliveries (leaving jobs in
// publishing for a later run to reconcile) and 200 to the rest, counting
// the keys it accepted.
type flakyHook struct {
	mu       sync.Mutex
	rng      *rand.Rand
	tried    map[string]bool
	accepted map[string]int
}

func (h *flakyHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	h.mu.Lock()
	fail := !h.tried[key] && h.rng.Float64() < 0.5
	h.tried[key] = true
	if !fail {
		h.accepted[key]++
	}
	h.mu.Unlock()
	time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
	if fail {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

func (h *flakyHook) keys() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.accepted)
}

// TestPostsPerDayChaos: posts_per_day 20 on a backlog of 60, a webhook that
// fails half of the first deliveries, four workers at once, one SIGKILLed
// mid-job and (PostgreSQL) one SIGSTOPped mid-job past its lease, then
// three more and the runs that follow. The receiver counts exactly the
// ceiling: every job left publishing was reconciled inside it, nothing
// delivered past it. Its timing is the test (leases, SIGSTOP): it does not
// run in parallel.
func TestPostsPerDayChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("multi-worker chaos: skipped with -short")
	}
	for _, backend := range []string{"sqlite", "postgres"} {
		t.Run(backend, func(t *testing.T) {
			t.Parallel() // the two backends' rounds overlap; the test stays apart from the others
			dbURL := ""
			if backend == "postgres" {
				dbURL = testPostgres(t)
			}
			const topics, ceiling = 60, 20
			recv := &flakyHook{rng: rand.New(rand.NewPCG(7, 9)), tried: map[string]bool{}, accepted: map[string]int{}}
			hook := httptest.NewServer(recv)
			t.Cleanup(hook.Close)
			slow := sim.Profile{Seed: 3, FirstTokenDelay: time.Second, Rates: map[sim.Fault]float64{sim.FaultSlowFirstToken: 0.5}}
			w := newWorld(t, worldOptions{topics: topics, dbURL: dbURL,
				profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: slow, sim.FlavorGroq: slow, sim.FlavorCerebras: slow, sim.FlavorOpenRouter: slow},
				publish:  fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook"),
				job: fmt.Sprintf("{posts_per_run: 100, posts_per_day: %d, deadline: 20s, language: en, target_words: 400, parallel: 2, lease: %s, worker_lease: %s, delivery_window: %s}",
					ceiling, mwLease, 2*mwLease, mwLease)})
			db := worldDB(t, w)
			workers := []*worker{startWorker(t, w)}
			waitHolding(t, w, db, workers[0])
			for range 3 {
				workers = append(workers, startWorker(t, w))
			}
			killed := waitHolding(t, w, db, workers[1])
			_ = workers[1].cmd.Process.Signal(syscall.SIGKILL)
			var stopped []string
			if dbURL != "" {
				stopped = waitHolding(t, w, db, workers[2])
				_ = workers[2].cmd.Process.Signal(syscall.SIGSTOP)
			}
			t.Logf("killed worker held %v; stopped worker holds %v", killed, stopped)
			time.Sleep(mwLease + time.Second)
			for range 3 {
				workers = append(workers, startWorker(t, w))
			}
			time.Sleep(2 * time.Second)
			_ = workers[2].cmd.Process.Signal(syscall.SIGCONT)
			for _, wk := range workers {
				select {
				case <-wk.done:
				case <-time.After(90 * time.Second):
					t.Fatalf("worker %d did not finish:\n%s", wk.cmd.Process.Pid, wk.out.String())
				}
			}
			// The runs that follow (a timer's) reconcile what is left
			// publishing and fill the day, never past it; then the next
			// day's runs.
			time.Sleep(mwLease + time.Second)
			for range 3 {
				noCrash(t, "later run", run(t, w.dir, w.env, "run"))
			}
			today := time.Now().UTC()
			day1 := recv.keys()
			tomorrow := today.AddDate(0, 0, 1).Truncate(24 * time.Hour).Add(10 * time.Hour)
			for i := range 3 {
				env := append([]string{envNow + "=" + tomorrow.Add(time.Duration(i)*time.Hour).Format(time.RFC3339)}, w.env...)
				noCrash(t, "next day's run", run(t, w.dir, env, "run"))
			}
			day2 := recv.keys() - day1
			perDay := func(d time.Time) int {
				return count(t, db, w.q(`SELECT COUNT(*) FROM jobs WHERE status = 'published' AND published_at LIKE ?`), d.Format(time.DateOnly)+"%")
			}
			publishing := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'publishing'`)
			t.Logf("FIGURES posts_per_day chaos %s: ceiling=%d receiver day1=%d day2=%d db day1=%d day2=%d publishing=%d workers=%d",
				backend, ceiling, day1, day2, perDay(today), perDay(tomorrow), publishing, len(workers))
			if day1 != ceiling || day2 != ceiling {
				t.Errorf("the receiver got %d articles on the first day and %d on the next, posts_per_day %d", day1, day2, ceiling)
			}
			if perDay(today) != day1 || perDay(tomorrow) != day2 || publishing != 0 {
				t.Errorf("the database says %d and %d published (%d publishing), the receiver %d and %d\n%s", perDay(today), perDay(tomorrow), publishing, day1, day2, jobsDump(db))
			}
		})
	}
}

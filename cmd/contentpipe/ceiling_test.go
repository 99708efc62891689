package main

import (
	"database/sql"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// failOnce is a webhook receiver that answers 503 to the first deliveries
// of the keys in fail (one each) and 200 to every other, counting the keys
// it accepted.
type failOnce struct {
	mu       sync.Mutex
	fail     map[string]int // key → 503s still to answer
	accepted map[string]int
}

func (f *failOnce) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fail[key] > 0 {
		f.fail[key]--
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	f.accepted[key]++
	w.WriteHeader(http.StatusOK)
}

func (f *failOnce) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.accepted)
}

// appendTopic adds one line to the world's topics file.
func appendTopic(t *testing.T, w *simWorld, line string) {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(w.dir, "topics.yaml"), os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(line + "\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// ceilingWorld is a world of topics publishing to a failOnce receiver
// whose first delivery of topic-000 answers 503, under posts_per_day.
func ceilingWorld(t *testing.T, topics, perDay int, dbURL string) (*simWorld, *failOnce) {
	t.Helper()
	recv := &failOnce{fail: map[string]int{"topic-000": 1}, accepted: map[string]int{}}
	hook := httptest.NewServer(recv)
	t.Cleanup(hook.Close)
	w := newWorld(t, worldOptions{topics: topics, dbURL: dbURL,
		publish: fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook"),
		job:     fmt.Sprintf("{posts_per_run: 10, posts_per_day: %d, deadline: 1m, language: en, target_words: 400, parallel: 1}", perDay)})
	return w, recv
}

// jobsDump lists the jobs with their day fields, on either backend.
func jobsDump(db *sql.DB) string {
	rows, err := db.Query(`SELECT id, status, slot, COALESCE(published_at, ''), COALESCE(last_error, '') FROM jobs ORDER BY id`)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, status, slot, pub, last string
		_ = rows.Scan(&id, &status, &slot, &pub, &last)
		fmt.Fprintf(&b, "  %s %s slot=%s published_at=%s last_error=%q\n", id, status, slot, pub, last)
	}
	return b.String()
}

// runAt runs `contentpipe run` with the clock at ts.
func runAt(t *testing.T, w *simWorld, ts string) result {
	t.Helper()
	res := run(t, w.dir, append([]string{envNow + "=" + ts}, w.env...), "run")
	noCrash(t, "run at "+ts, res)
	return res
}

// TestPostsPerDayCountsPublishingJobs: posts_per_day 3; the webhook answers
// 503 once for topic-000, so the 10:00 run publishes topic-001 and
// topic-002 and leaves topic-000 publishing. A topic of priority 5 is
// added and two runs start 0.8 s apart at 10:30, when the publishing job's
// claim is older than job.lease: one reconciles topic-000 and the other
// finds the day full — the receiver gets 3 articles that day, not 4. The
// new topic is published the next day.
func TestPostsPerDayCountsPublishingJobs(t *testing.T) {
	t.Parallel()
	forBothBackends(t, func(t *testing.T, dbURL string) {
		w, recv := ceilingWorld(t, 3, 3, dbURL)
		db := worldDB(t, w)
		r1 := runAt(t, w, "2026-12-01T10:00:00Z")
		if n := recv.count(); n != 2 {
			t.Fatalf("first run: %d delivered, want 2 (topic-000 answered 503)\n%s\n%s", n, r1.stdout, r1.stderr)
		}
		if n := count(t, db, w.q(`SELECT COUNT(*) FROM jobs WHERE id = 'topic-000' AND status = 'publishing'`)); n != 1 {
			t.Fatalf("topic-000 is not left publishing\n%s", jobsDump(db))
		}
		appendTopic(t, w, `- {id: urgent, title: "An urgent guide to home energy savings", category: home, priority: 5}`)
		results := make(chan result, 2)
		var wg sync.WaitGroup
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(time.Duration(i) * 800 * time.Millisecond)
				results <- runAt(t, w, "2026-12-01T10:30:00Z")
			}()
		}
		wg.Wait()
		close(results)
		var out string
		for r := range results {
			out += r.stdout + r.stderr
		}
		if n := recv.count(); n != 3 {
			t.Fatalf("%d articles delivered on 2026-12-01, want posts_per_day 3\n%s\n%s", n, out, jobsDump(db))
		}
		if n := count(t, db, w.q(`SELECT COUNT(*) FROM jobs WHERE status = 'published' AND published_at LIKE '2026-12-01%'`)); n != 3 {
			t.Fatalf("%d published on 2026-12-01 in the database, want 3\n%s", n, jobsDump(db))
		}
		if n := count(t, db, w.q(`SELECT COUNT(*) FROM jobs WHERE id = 'topic-000' AND status = 'published'`)); n != 1 {
			t.Fatalf("topic-000 was not reconciled on the full day\n%s\n%s", out, jobsDump(db))
		}
		runAt(t, w, "2026-12-02T10:00:00Z")
		if n := count(t, db, w.q(`SELECT COUNT(*) FROM jobs WHERE id = 'urgent' AND status = 'published' AND published_at LIKE '2026-12-02%'`)); n != 1 {
			t.Fatalf("the urgent topic was not published the next day\n%s", jobsDump(db))
		}
	})
}

// TestReconciledNextDayTakesThatDay: posts_per_day 2; topic-000's delivery
// fails on 12-01 and no other run comes that day. The first run of 12-02
// reconciles it first (the day is not full: nothing else counts), records
// it published on 12-02, the day the receiver got it (its slot, the day it
// was first taken, stays 12-01), and counts it toward
// 12-02's ceiling: one more topic that day, not two.
func TestReconciledNextDayTakesThatDay(t *testing.T) {
	t.Parallel()
	forBothBackends(t, func(t *testing.T, dbURL string) {
		w, recv := ceilingWorld(t, 5, 2, dbURL)
		db := worldDB(t, w)
		runAt(t, w, "2026-12-01T10:00:00Z")
		if n := recv.count(); n != 1 {
			t.Fatalf("12-01: %d delivered, want 1 (topic-000 failed, the day counts it)\n%s", n, jobsDump(db))
		}
		runAt(t, w, "2026-12-02T10:00:00Z")
		if n := recv.count(); n != 3 {
			t.Fatalf("after 12-02: %d delivered, want 3 (2 a day)\n%s", n, jobsDump(db))
		}
		if n := count(t, db, w.q(`SELECT COUNT(*) FROM jobs WHERE id = 'topic-000' AND status = 'published' AND published_at LIKE '2026-12-02%'`)); n != 1 {
			t.Fatalf("topic-000 reconciled on 12-02 keeps another day\n%s", jobsDump(db))
		}
		for _, day := range []string{"2026-12-01", "2026-12-02"} {
			if n := count(t, db, w.q(`SELECT COUNT(*) FROM jobs WHERE status = 'published' AND published_at LIKE ?`), day+"%"); n != 2 && day == "2026-12-02" || n > 2 {
				t.Errorf("%s: %d published, ceiling 2\n%s", day, n, jobsDump(db))
			}
		}
	})
}

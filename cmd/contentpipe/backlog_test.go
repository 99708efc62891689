package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// publishedRE finds the count in a run's summary line.
var publishedRE = regexp.MustCompile(`run for slot [0-9-]+: ([0-9]+) published`)

// TestBacklogPostsPerDayThirtyDays drives the real binary through 30
// simulated UTC days (CONTENTPIPE_NOW, no sleeps) on a backlog of 10 topics
// with posts_per_day 4 and posts_per_run 3: four runs a day publish exactly
// 4 (3 + 1 + 0 + 0), the next day the next 4 in file order, then the last
// 2, and no topic is ever published twice.
func TestBacklogPostsPerDayThirtyDays(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("120 runs of the binary: skipped with -short")
	}
	w := newWorld(t, worldOptions{topics: 10,
		job: "{posts_per_run: 3, posts_per_day: 4, deadline: 1m, language: en, target_words: 300, parallel: 1}"})
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	day0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	want := []int{4, 4, 2}
	for d := 0; d < 30; d++ {
		day := day0.AddDate(0, 0, d)
		var perRun []int
		for r := 0; r < 4; r++ {
			env := append([]string{envNow + "=" + day.Add(time.Duration(r)*4*time.Hour).Format(time.RFC3339)}, w.env...)
			res := run(t, w.dir, env, "run")
			noCrash(t, "backlog run", res)
			if res.code != 0 {
				t.Fatalf("day %d run %d: exit %d\n%s\n%s", d, r, res.code, res.stdout, res.stderr)
			}
			m := publishedRE.FindStringSubmatch(res.stdout)
			if m == nil {
				t.Fatalf("day %d run %d: no summary line:\n%s", d, r, res.stdout)
			}
			n, _ := strconv.Atoi(m[1])
			perRun = append(perRun, n)
		}
		got := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND substr(published_at, 1, 10) = ?`, day.Format(time.DateOnly))
		exp := 0
		if d < len(want) {
			exp = want[d]
		}
		if got != exp {
			t.Fatalf("day %d (%s): %d published (runs %v), want %d", d, day.Format(time.DateOnly), got, perRun, exp)
		}
		if d == 0 && fmt.Sprint(perRun) != "[3 1 0 0]" {
			t.Errorf("day 0 runs published %v, want [3 1 0 0]", perRun)
		}
		if d < len(want) {
			// Every topic published by the end of day d is one of the first
			// 4·(d+1): the backlog goes in file order.
			last := min(10, 4*(d+1))
			if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND id <= ?`, fmt.Sprintf("topic-%03d", last-1)); n != last {
				t.Errorf("day %d: %d of topics 0..%d published", d, n, last-1)
			}
		}
	}
	byJob := publishedFiles(t, w.dir)
	if len(byJob) != 10 {
		t.Errorf("%d topics published, want 10", len(byJob))
	}
	for id, fs := range byJob {
		if len(fs) != 1 || strings.Contains(id, "/") {
			t.Errorf("job %s published %d times (%v)", id, len(fs), fs)
		}
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE outcome = 'ok' AND purpose = 'job'`); n != 10 {
		t.Errorf("%d ok job calls for 10 topics: a topic was generated twice", n)
	}
	// 10 topics at 4 a day: the runway is under backlog_low_days (3) from the
	// first run; the alert is raised once on that day, not once per run.
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE rule = 'backlog_low' AND key = 'backlog_low:2026-12-01'`); n != 1 {
		t.Errorf("%d backlog_low alerts on the first day, want 1", n)
	}
}

// TestPostsPerDayConcurrentRuns: four runs started at once, each allowed
// 10 a run, on a backlog of 10 with posts_per_day 4, publish exactly 4
// together: the ceiling is held in the claim, not only counted at start.
func TestPostsPerDayConcurrentRuns(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("four concurrent runs: skipped with -short")
	}
	w := newWorld(t, worldOptions{topics: 10,
		job: "{posts_per_run: 10, posts_per_day: 4, deadline: 1m, language: en, target_words: 300, parallel: 2}"})
	results := make(chan result, 4)
	for range 4 {
		go func() { results <- run(t, w.dir, w.env, "run") }()
	}
	for range 4 {
		r := <-results
		noCrash(t, "concurrent run", r)
		if r.code != 0 {
			t.Errorf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published'`); n != 4 {
		t.Errorf("%d published by four concurrent runs, want posts_per_day 4\n%s", n, dumpJobs(t, db, ""))
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE outcome = 'ok' AND purpose = 'job'`); n != 4 {
		t.Errorf("%d articles generated, want 4 (a job past the ceiling must not be generated)", n)
	}
}

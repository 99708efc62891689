package main

import (
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// The crash-point tests kill the real binary at its N-th durable step for
// every N — each commit of the store (just before it and just after it) and
// each step of a delivery (temp file synced, renamed, directories synced;
// webhook about to be sent, answered) — through the CONTENTPIPE_CRASH_AT
// seam (crashpoint.go), then run it again until the backlog is done. The
// providers give a different passing article (another title, so another
// slug) on every call, so a reconciliation that published any answer but
// the marked one would show as a second file or a second body under one
// Idempotency-Key. Two-kill sequences kill a second run inside its
// publication window after a first run was killed anywhere (hole: run A
// recorded W1 and died; run B marked W2 and died; run C must publish W2).
//
// CONTENTPIPE_CRASHPOINTS=all runs every pair of the two-kill sequences;
// the default runs every single kill and the pairs whose first kill lands
// right after an answer was recorded or inside a publication.

// crashPointProfiles answer every call with a passing article whose title
// carries the request number.
func crashPointProfiles() map[sim.Flavor]sim.Profile {
	p := func(seed int64) sim.Profile { return sim.Profile{Seed: seed, VaryTitles: true} }
	return map[sim.Flavor]sim.Profile{sim.FlavorGemini: p(1), sim.FlavorGroq: p(2), sim.FlavorCerebras: p(3), sim.FlavorOpenRouter: p(4)}
}

const crashPointTopics = 2

// crashPointWorld is a fresh world of crashPointTopics topics publishing to
// kind ("markdown" or "webhook"); recv is the webhook receiver (nil for
// markdown).
func crashPointWorld(t *testing.T, kind string) (*simWorld, *hookReceiver) {
	t.Helper()
	o := worldOptions{topics: crashPointTopics, profiles: crashPointProfiles(),
		job: fmt.Sprintf("{posts_per_run: %d, deadline: 1m, language: en, target_words: 400, parallel: 1}", crashPointTopics)}
	var recv *hookReceiver
	if kind == "webhook" {
		recv = &hookReceiver{bodies: map[string][]string{}}
		hook := httptest.NewServer(recv)
		t.Cleanup(hook.Close)
		o.publish = fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook")
	}
	return newWorld(t, o), recv
}

// runUntilKilled runs `contentpipe run` with the seam armed at spec (a
// step number, or PREFIX@K) and reports whether the kill came (false: the
// run finished before it reached that step).
func runUntilKilled(t *testing.T, w *simWorld, spec string) bool {
	t.Helper()
	env := append(append([]string{}, w.env...), "CONTENTPIPE_CRASH_AT="+spec)
	r := run(t, w.dir, env, "run")
	return r.code == -1
}

// stepNames returns the durable steps of one uninterrupted run of w in
// order (the run happens: w moves on).
func stepNames(t *testing.T, w *simWorld) []string {
	t.Helper()
	logPath := filepath.Join(t.TempDir(), "steps.log")
	env := append(append([]string{}, w.env...), "CONTENTPIPE_CRASH_LOG="+logPath)
	if r := run(t, w.dir, env, "run"); r.code != 0 {
		t.Fatalf("dry run exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	b, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if _, name, ok := strings.Cut(line, " "); ok {
			names = append(names, name)
		}
	}
	return names
}

// inPublication reports whether a step lies in a publication window: the
// mark, the delivery and the record of it.
func inPublication(name string) bool {
	return strings.Contains(name, "mark publishing") || strings.HasPrefix(name, "markdown:") ||
		strings.HasPrefix(name, "webhook:") || strings.Contains(name, "finish job")
}

var titleTake = regexp.MustCompile(`\(take \d+\)`)

// checkAtMostOnce finishes the backlog and checks the invariants: every job
// published exactly once (one file per job; one distinct body per key),
// nothing lost, no temp file left, the database intact, and what was
// published is the marked attempt's answer.
func checkAtMostOnce(t *testing.T, w *simWorld, recv *hookReceiver, label string) {
	t.Helper()
	var f crashFigures
	finish(t, w, &f)
	db := filepath.Join(w.dir, "data", "pipeline.db")
	integrity(t, db)
	conn := openDB(t, db)
	if n := count(t, conn, "SELECT COUNT(*) FROM jobs WHERE status = 'published'"); n != crashPointTopics {
		t.Fatalf("%s: %d of %d jobs published:\n%s", label, n, crashPointTopics, dumpJobs(t, conn, ""))
	}
	// The published answer is the marked attempt's: its title is in the file.
	rows, err := conn.Query(`SELECT j.id, j.location, o.text FROM jobs j JOIN calls c ON c.request_id = j.id AND c.attempt = j.attempt AND c.shadow = 0
JOIN outputs o ON o.call_id = c.id`)
	if err != nil {
		t.Fatal(err)
	}
	marked := map[string]string{}
	for rows.Next() {
		var id, loc, text string
		if err := rows.Scan(&id, &loc, &text); err != nil {
			t.Fatal(err)
		}
		marked[id] = titleTake.FindString(text)
	}
	rows.Close()
	if recv == nil {
		files := publishedFiles(t, w.dir)
		if len(files) != crashPointTopics {
			t.Fatalf("%s: %d jobs have files, want %d: %v", label, len(files), crashPointTopics, files)
		}
		for id, fs := range files {
			if len(fs) != 1 {
				t.Fatalf("%s: job %s has %d files: %v", label, id, len(fs), fs)
			}
			b, _ := os.ReadFile(fs[0])
			if take := titleTake.FindString(string(b)); take == "" || take != marked[id] {
				t.Fatalf("%s: job %s published %q, but its marked attempt is %q", label, id, take, marked[id])
			}
		}
		if n := tempLeft(t, w.dir); n != 0 {
			t.Fatalf("%s: %d temp files left", label, n)
		}
		return
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.bodies) != crashPointTopics {
		t.Fatalf("%s: %d keys delivered, want %d", label, len(recv.bodies), crashPointTopics)
	}
	for k, bs := range recv.bodies {
		for _, b := range bs[1:] {
			if b != bs[0] {
				t.Fatalf("%s: key %s delivered with %d different bodies", label, k, len(bs))
			}
		}
	}
}

// crashPointFigures count what a crash-point test covered.
type crashPointFigures struct {
	points, single, double, killed atomic.Int64
}

func TestCrashPoints(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash points: skipped with -short")
	}
	all := os.Getenv("CONTENTPIPE_CRASHPOINTS") == "all"
	for _, kind := range []string{"markdown", "webhook"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			probe, _ := crashPointWorld(t, kind)
			steps := stepNames(t, probe)
			t.Logf("%s: the durable steps of one run: %q", kind, steps)
			var fig crashPointFigures
			fig.points.Store(int64(len(steps)))
			// The second kill lands inside a publication of the second run,
			// named by step and occurrence (its step numbers differ from a
			// clean run's: it finds the first run's work half done).
			var window []string
			seen := map[string]int{}
			for _, name := range steps {
				if inPublication(name) {
					prefix := strings.TrimSuffix(name, " (durable)")
					seen[prefix]++
					if all || seen[prefix] == 1 {
						window = append(window, fmt.Sprintf("%s@%d", prefix, seen[prefix]))
					}
				}
			}
			// Every sequence has a world of its own: they run as parallel
			// subtests (within -parallel), and the figures are logged once
			// all of them are done.
			t.Cleanup(func() {
				t.Logf("%s: %d durable steps per run; %d single-kill and %d two-kill sequences; %d kills landed; 0 doubles, 0 lost (%s)",
					kind, fig.points.Load(), fig.single.Load(), fig.double.Load(), fig.killed.Load(), time.Since(start).Round(time.Second))
			})
			for n := 1; n <= len(steps); n++ {
				t.Run(fmt.Sprintf("kill_%02d", n), func(t *testing.T) {
					t.Parallel()
					w, recv := crashPointWorld(t, kind)
					if runUntilKilled(t, w, strconv.Itoa(n)) {
						fig.killed.Add(1)
					}
					checkAtMostOnce(t, w, recv, fmt.Sprintf("kill at step %d (%s)", n, steps[n-1]))
					fig.single.Add(1)
				})
			}
			for n := 1; n <= len(steps); n++ {
				name := steps[n-1]
				first := strings.HasPrefix(name, "committed: record call") || strings.HasPrefix(name, "committed: record attempt") ||
					strings.HasPrefix(name, "committed: mark publishing") || strings.HasPrefix(name, "markdown:") || strings.HasPrefix(name, "webhook:")
				if !all && !first {
					continue
				}
				for _, m := range window {
					t.Run(fmt.Sprintf("kill_%02d_then_%s", n, m), func(t *testing.T) {
						t.Parallel()
						w, recv := crashPointWorld(t, kind)
						runUntilKilled(t, w, strconv.Itoa(n))
						if runUntilKilled(t, w, m) {
							fig.killed.Add(1)
						}
						checkAtMostOnce(t, w, recv, fmt.Sprintf("kill at step %d (%s), then at %s", n, name, m))
						fig.double.Add(1)
					})
				}
			}
		})
	}
}

// TestRunsInSeparatePIDNamespaces starts two runs at once, each as pid 1 of
// its own PID namespace (two containers with one hostname): with claims
// owned by host + pid each took the other's claims for its own and 6-9 of
// 12 jobs were published twice. Every job must be published once and
// generated once. It needs unshare(1) and the right to create namespaces
// (root); elsewhere it is skipped with the reason.
func TestRunsInSeparatePIDNamespaces(t *testing.T) {
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Skip("unshare is not installed (util-linux)")
	}
	if out, err := exec.Command(unshare, "--pid", "--fork", "--mount-proc", "true").CombinedOutput(); err != nil {
		t.Skipf("cannot create a PID namespace here (needs root): %v %s", err, out)
	}
	slow := sim.Profile{FirstTokenDelay: 20 * time.Millisecond}
	profiles := map[sim.Flavor]sim.Profile{sim.FlavorGemini: slow, sim.FlavorGroq: slow, sim.FlavorCerebras: slow, sim.FlavorOpenRouter: slow}
	const topics = 12
	w := newSimWorld(t, topics, profiles, "")
	results := make(chan result, 2)
	for range 2 {
		go func() {
			results <- runProgram(t, w.dir, w.env, unshare, "--pid", "--fork", "--mount-proc", "sh", "-c", `echo "pid $$"; exec "$0" run`, binary(t))
		}()
	}
	for range 2 {
		r := <-results
		if !strings.HasPrefix(r.stdout, "pid 1\n") || r.code != 0 {
			t.Fatalf("run in a PID namespace: exit %d:\n%s", r.code, r.stdout)
		}
	}
	publishedAndGeneratedOnce(t, w, topics)
}

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

func reviewIDs(t *testing.T, dir string) []string {
	t.Helper()
	db := openDB(t, filepath.Join(dir, "data", "pipeline.db"))
	return column(t, db, `SELECT id FROM jobs WHERE status = 'review' ORDER BY id`)
}

// A low-quality primary answer is rejected by the gate and the job is
// published by the next provider, over the real wire formats.
func TestLowQualityFailsOverEndToEnd(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini: {Script: []sim.Fault{sim.FaultLowQuality}},
	}, "")
	r := run(t, w.dir, w.env, "run")
	if r.code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE provider = 'gemini' AND outcome = 'rejected' AND quality_score < 70`); n != 1 {
		t.Fatalf("%d rejected gemini calls\n%s", n, r.stdout)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND provider = 'groq' AND quality_score >= 70`); n != 1 {
		t.Fatalf("job not published by groq:\n%s", r.stdout)
	}
	byJob := publishedFiles(t, w.dir)
	if len(byJob) != 1 {
		t.Fatalf("%d published jobs", len(byJob))
	}
	for _, fs := range byJob {
		b, _ := os.ReadFile(fs[0])
		if !bytes.Contains(b, []byte(`provider: "groq"`)) {
			t.Fatalf("published file does not name groq:\n%s", b)
		}
	}
}

// Every provider below the threshold: the job goes to review (exit 1, alert
// raised); `review approve` publishes the kept answer once, a second approve
// publishes nothing; `review reject` closes a job for its slot.
func TestAllBadReviewApproveEndToEnd(t *testing.T) {
	t.Parallel()
	bad := sim.Profile{Script: []sim.Fault{sim.FaultLowQuality, sim.FaultLowQuality}}
	w := newSimWorld(t, 2, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini: bad, sim.FlavorGroq: bad, sim.FlavorCerebras: bad, sim.FlavorOpenRouter: bad,
	}, "")
	r := run(t, w.dir, w.env, "run")
	if r.code != 1 || !strings.Contains(r.stdout, "2 review") {
		t.Fatalf("run exit %d, want 1 with 2 in review\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	ids := reviewIDs(t, w.dir)
	if len(ids) != 2 {
		t.Fatalf("review jobs %v", ids)
	}
	if len(publishedFiles(t, w.dir)) != 0 {
		t.Fatal("a job in review was published")
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	// One daily review_queue alert for the whole queue, not one per job.
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE rule = 'review_queue'`); n != 1 {
		t.Fatalf("%d review_queue alerts, want 1", n)
	}
	approveID, rejectID := ids[0], ids[1]

	l := run(t, w.dir, w.env, "review", "list")
	if l.code != 0 || !strings.Contains(l.stdout, approveID) || !strings.Contains(l.stdout, rejectID) {
		t.Fatalf("review list exit %d\n%s\n%s", l.code, l.stdout, l.stderr)
	}
	s := run(t, w.dir, w.env, "review", "show", approveID)
	if s.code != 0 || !strings.Contains(s.stdout, "kept answer") || !strings.Contains(s.stdout, "rejected") ||
		!strings.Contains(s.stdout, "words -") || !strings.Contains(s.stdout, "openrouter") {
		t.Fatalf("review show exit %d\n%s\n%s", s.code, s.stdout, s.stderr)
	}
	for _, args := range [][]string{{"review", "show", "2020-01-01/nope"}, {"review", "approve", "2020-01-01/nope"}, {"review", "reject", "2020-01-01/nope"}} {
		if u := run(t, w.dir, w.env, args...); u.code != 1 || !strings.Contains(u.stderr, "unknown job") {
			t.Fatalf("%v: exit %d\n%s", args, u.code, u.stderr)
		}
	}

	callsBefore := count(t, db, `SELECT COUNT(*) FROM calls`)
	a := run(t, w.dir, w.env, "review", "approve", approveID)
	if a.code != 0 || !strings.Contains(a.stdout, "approved and published") {
		t.Fatalf("approve exit %d\n%s\n%s", a.code, a.stdout, a.stderr)
	}
	byJob := publishedFiles(t, w.dir)
	if len(byJob) != 1 || len(byJob[approveID]) != 1 {
		t.Fatalf("published after approve: %v", byJob)
	}
	file := byJob[approveID][0]
	first, _ := os.ReadFile(file)
	var provider string
	if err := db.QueryRow(`SELECT provider FROM jobs WHERE id = ? AND status = 'published'`, approveID).Scan(&provider); err != nil {
		t.Fatalf("approved job not recorded published: %v", err)
	}
	if !bytes.Contains(first, []byte("provider: \""+provider+"\"")) {
		t.Fatalf("published file does not carry the kept answer's provider %s:\n%s", provider, first)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls`); n != callsBefore {
		t.Fatalf("approve made %d provider calls", n-callsBefore)
	}

	time.Sleep(20 * time.Millisecond) // a rewrite would change the file's date line
	a2 := run(t, w.dir, w.env, "review", "approve", approveID)
	if a2.code != 0 || !strings.Contains(a2.stdout, "already published") {
		t.Fatalf("second approve exit %d\n%s\n%s", a2.code, a2.stdout, a2.stderr)
	}
	if now, _ := os.ReadFile(file); !bytes.Equal(now, first) {
		t.Fatal("second approve rewrote the article")
	}
	if len(publishedFiles(t, w.dir)) != 1 {
		t.Fatal("second approve published something")
	}
	if rj := run(t, w.dir, w.env, "review", "reject", approveID); rj.code != 1 {
		t.Fatalf("reject of a published job: exit %d", rj.code)
	}

	rj := run(t, w.dir, w.env, "review", "reject", rejectID)
	if rj.code != 0 || !strings.Contains(rj.stdout, "rejected") {
		t.Fatalf("reject exit %d\n%s\n%s", rj.code, rj.stdout, rj.stderr)
	}
	if ap := run(t, w.dir, w.env, "review", "approve", rejectID); ap.code != 1 {
		t.Fatalf("approve of a rejected job: exit %d\n%s", ap.code, ap.stdout)
	}
	if l := run(t, w.dir, w.env, "review", "list"); l.code != 0 || !strings.Contains(l.stdout, "empty") {
		t.Fatalf("review list after approve+reject:\n%s", l.stdout)
	}
	// Both jobs are finished for the slot: a new run does nothing.
	r2 := run(t, w.dir, w.env, "run")
	if r2.code != 0 || !strings.Contains(r2.stdout, "0 published") {
		t.Fatalf("run after review exit %d\n%s\n%s", r2.code, r2.stdout, r2.stderr)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls`); n != callsBefore {
		t.Fatalf("the run after review made %d calls", n-callsBefore)
	}
}

// Shadow mode over the sim servers: a slow shadow provider is called for the
// job, recorded and compared, and the job is published by the primary only.
func TestShadowEndToEnd(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorCerebras: {Script: []sim.Fault{sim.FaultSlowFirstToken}, FirstTokenDelay: 1500 * time.Millisecond},
	}, "shadow: {providers: [cerebras], sample_rate: 1.0}\n")
	r := run(t, w.dir, w.env, "run")
	if r.code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'published' AND provider = 'gemini'`); n != 1 {
		t.Fatalf("not published by gemini:\n%s", r.stdout)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE provider = 'cerebras' AND shadow = 1 AND purpose = 'shadow' AND quality_score IS NOT NULL`); n != 1 {
		t.Fatalf("%d shadow calls of cerebras", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM calls WHERE provider = 'cerebras' AND shadow = 0`); n != 0 {
		t.Fatalf("%d job calls of cerebras", n)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM shadow_comparisons WHERE primary_provider = 'gemini' AND shadow_provider = 'cerebras'
		AND shadow_score IS NOT NULL AND primary_score IS NOT NULL AND quality_delta IS NOT NULL AND word_ratio > 0 AND shadow_latency_ms >= 1000`); n != 1 {
		t.Fatalf("%d shadow comparisons", n)
	}
	byJob := publishedFiles(t, w.dir)
	if len(byJob) != 1 {
		t.Fatalf("%d published jobs", len(byJob))
	}
	for _, fs := range byJob {
		if b, _ := os.ReadFile(fs[0]); len(fs) != 1 || !bytes.Contains(b, []byte(`provider: "gemini"`)) {
			t.Fatalf("published %v", fs)
		}
	}
}

// An unknown id is exit 1 with the id forms jobs have now (the topic id,
// <topic>/<period> for a series), never the date-first form; a date-first
// id gets the topic id it now is.
func TestReviewUnknownIDHint(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	u := run(t, dir, nil, "review", "show", "nope")
	if u.code != exitPartial || !strings.Contains(u.stderr, `unknown job ID "nope"`) || !strings.Contains(u.stderr, "<topic>/<period>") ||
		strings.Contains(u.stderr, "2026-11-29/topic-id") {
		t.Errorf("review show nope: exit %d, want 1 with the current id forms\n%s", u.code, u.stderr)
	}
	d := run(t, dir, nil, "review", "show", "2026-11-29/home-composting")
	if d.code != exitPartial || !strings.Contains(d.stderr, "try `contentpipe review show home-composting`") {
		t.Errorf("a date-first id: exit %d, want 1 naming the topic id\n%s", d.code, d.stderr)
	}
}

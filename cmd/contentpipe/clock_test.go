package main

import (
	"strings"
	"testing"
)

// TestRunRefusesAClockBehind drives the clock through CONTENTPIPE_NOW: a
// run whose clock is over 5 minutes behind the database's newest record
// does not start (exit 2, no provider asked, a clock_behind alert naming
// both times); 4 minutes behind is tolerated. After a clock set forward to
// 2027-01-02 and back, `--clock-behind-ok` acknowledges the records once
// and the later runs go on without it. Both backends.
func TestRunRefusesAClockBehind(t *testing.T) {
	t.Parallel()
	forBothBackends(t, func(t *testing.T, dbURL string) {
		w := newWorld(t, worldOptions{topics: 2, dbURL: dbURL,
			job: "{posts_per_run: 1, deadline: 1m, language: en, target_words: 400, parallel: 1}"})
		db := worldDB(t, w)
		if r := runAt(t, w, "2026-12-02T10:00:00Z"); r.code != 0 {
			t.Fatalf("first run: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		served := w.served()
		r := runAt(t, w, "2026-12-01T10:00:00Z")
		if r.code != 2 || !strings.Contains(r.stderr, "2026-12-01T10:00:0") || !strings.Contains(r.stderr, "2026-12-02T10:00:0") || !strings.Contains(r.stderr, "--clock-behind-ok") {
			t.Fatalf("a clock a day behind: exit %d, want 2 naming both times\n%s\n%s", r.code, r.stdout, r.stderr)
		}
		if w.served() != served {
			t.Fatalf("a provider was asked by a run whose clock is behind (%d → %d requests)", served, w.served())
		}
		if n := count(t, db, w.q(`SELECT COUNT(*) FROM alerts WHERE rule = 'clock_behind' AND text LIKE '%2026-12-01T10:00:0%' AND text LIKE '%2026-12-02T10:00:0%'`)); n != 1 {
			t.Fatalf("%d clock_behind alerts naming both times, want 1", n)
		}
		if r := runAt(t, w, "2026-12-02T09:56:30Z"); r.code == 2 {
			t.Fatalf("a clock under 5 minutes behind was refused\n%s", r.stderr)
		}
		w.addTopics(t, 1)
		if r := runAt(t, w, "2027-01-02T10:00:00Z"); r.code == 2 { // a clock set forward
			t.Fatalf("forward: exit 2\n%s", r.stderr)
		}
		if r := runAt(t, w, "2026-12-02T11:00:00Z"); r.code != 2 {
			t.Fatalf("back after forward: exit %d, want 2\n%s", r.code, r.stderr)
		}
		env := append([]string{envNow + "=2026-12-02T11:00:00Z"}, w.env...)
		if r := run(t, w.dir, env, "run", "--clock-behind-ok"); r.code == 2 {
			t.Fatalf("--clock-behind-ok: exit 2\n%s", r.stderr)
		}
		if r := runAt(t, w, "2026-12-02T11:10:00Z"); r.code == 2 {
			t.Fatalf("after the acknowledgement: exit 2\n%s", r.stderr)
		}
	})
}

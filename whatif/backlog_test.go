package whatif

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// runBacklog runs the chain scenario of smallModel over cfg's backlog for
// days, at four runs a day, and returns its row and its stored jobs.
func runBacklog(t *testing.T, cfg Config, days int) (Row, map[string]chain.JobRecord) {
	t.Helper()
	ch, specs := testChain(t, 1500)
	w, err := NewWorld(smallModel(), 3, days)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Chain, cfg.Specs, cfg.World, cfg.Open, cfg.Dir = ch, specs, w, openScratch, t.TempDir()
	cfg.RunTimes = []time.Duration{6 * time.Hour, 10 * time.Hour, 14 * time.Hour, 18 * time.Hour}
	cfg.Scenarios = []string{"chain"}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	row := rep.Rows[0]
	st, err := telemetry.Open(row.DB)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	jobs, err := st.Jobs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return row, jobs
}

func backlogLowSince(t *testing.T, db string, since time.Time) bool {
	t.Helper()
	st, err := telemetry.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	_, ok, err := st.FirstAlertSince(context.Background(), "backlog_low:", since)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// Six daily topics and a weekly one of higher priority under a ceiling of
// four a day: the plan of run decides what is due, the ceiling holds every
// day, each series is published at most once in its period, and the
// weekly topic goes first in its week.
func TestSimulatedBacklogHoldsCeilingAndPeriods(t *testing.T) {
	backlog := append(DailyTopics(6, nil), chain.BacklogTopic{
		Job: chain.Job{Topic: "weekly-roundup", Title: "The week in home energy", Category: "home",
			Keywords: []string{"roundup", "bills"}, Language: "en", TargetWords: 1500},
		Repeat: chain.RepeatWeekly, Priority: 10, Index: 6,
	})
	const days = 14
	row, jobs := runBacklog(t, Config{Backlog: backlog, PostsPerDay: 4, PostsPerRun: 4, BacklogLowDays: 3}, days)
	if row.PublishedTwice != 0 {
		t.Errorf("published twice: %d", row.PublishedTwice)
	}
	if want := days*6 + 2; row.Jobs != want { // 14 days × 6 daily + the weeks W02 and W03
		t.Errorf("due jobs %d, want %d", row.Jobs, want)
	}
	perDay := map[string]int{}
	weekly := map[string]time.Time{}
	for id, j := range jobs {
		topic, period, ok := strings.Cut(id, "/")
		if !ok || topic != j.Topic || period == "" {
			t.Errorf("job id %q: want <topic>/<period>", id)
		}
		if j.Status != chain.JobPublished {
			continue
		}
		perDay[j.PublishedAt.UTC().Format(time.DateOnly)]++
		if topic == "weekly-roundup" {
			weekly[period] = j.PublishedAt
		}
	}
	full := 0
	for d, n := range perDay {
		if n > 4 {
			t.Errorf("%s: %d published, over posts_per_day 4", d, n)
		}
		if n == 4 {
			full++
		}
	}
	if full < days/2 {
		t.Errorf("the ceiling bound on %d of %d days: %v", full, days, perDay)
	}
	if len(weekly) != 2 || weekly["2026-W02"].IsZero() || weekly["2026-W03"].IsZero() {
		t.Fatalf("weekly topic published in %v, want once in each of 2026-W02 and 2026-W03", weekly)
	}
	// Priority 10: the first run of its week takes it.
	if got := weekly["2026-W02"].UTC().Format(time.DateOnly); got != "2026-01-05" {
		t.Errorf("weekly topic of 2026-W02 published on %s, want the week's first day", got)
	}
	// A backlog of series never runs out: no backlog_low.
	if backlogLowSince(t, row.DB, time.Time{}) {
		t.Error("backlog_low raised for a backlog of recurring series")
	}
}

// Five one-off topics at two a run: they run out on the first day, and the
// backlog_low rule of run fires in the simulation; nothing is published
// twice and nothing more is due once they are done.
func TestSimulatedBacklogRunsOut(t *testing.T) {
	var backlog []chain.BacklogTopic
	for i, t := range DailyTopics(5, nil) {
		t.Repeat, t.Index = chain.RepeatNone, i
		backlog = append(backlog, t)
	}
	row, jobs := runBacklog(t, Config{Backlog: backlog, PostsPerRun: 2, BacklogLowDays: 3}, 4)
	if row.Jobs != 5 || len(jobs) != 5 || row.PublishedTwice != 0 {
		t.Fatalf("due %d, stored %d, twice %d; want 5, 5, 0", row.Jobs, len(jobs), row.PublishedTwice)
	}
	for id, j := range jobs {
		if id != j.Topic {
			t.Errorf("one-off job id %q, want the topic id %q", id, j.Topic)
		}
	}
	if !backlogLowSince(t, row.DB, time.Time{}) {
		t.Error("no backlog_low alert although the topics ran out")
	}
	// Without the rule (backlog_low_days 0) there is none.
	row, _ = runBacklog(t, Config{Backlog: backlog, PostsPerRun: 2}, 2)
	if backlogLowSince(t, row.DB, time.Time{}) {
		t.Error("backlog_low raised with backlog_low_days 0")
	}
}

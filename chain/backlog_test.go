package chain

import (
	"fmt"
	"math"
	"testing"
	"time"
)

func TestRepeatPeriod(t *testing.T) {
	day := time.Date(2026, 12, 1, 23, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		r    Repeat
		want string
	}{{RepeatNone, "x"}, {RepeatDaily, "x/2026-12-01"}, {RepeatWeekly, "x/2026-W49"}, {RepeatMonthly, "x/2026-12"}} {
		if got := BacklogJobID("x", c.r, day); got != c.want {
			t.Errorf("%q: got %q, want %q", c.r, got, c.want)
		}
	}
	// ISO weeks: 2027-01-01 is a Friday of 2026-W53.
	if got := RepeatWeekly.Period(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)); got != "2026-W53" {
		t.Errorf("iso week: %s", got)
	}
}

func bt(id string, idx, prio int, notBefore string, r Repeat) BacklogTopic {
	var nb time.Time
	if notBefore != "" {
		nb, _ = time.Parse(time.DateOnly, notBefore)
	}
	return BacklogTopic{Job: Job{ID: id, Topic: id}, Priority: prio, NotBefore: nb, Repeat: r, Index: idx}
}

func ids(plan []BacklogEntry) []string {
	var out []string
	for _, e := range plan {
		out = append(out, e.Topic.Job.ID+":"+string(e.State))
	}
	return out
}

func TestPlanOrder(t *testing.T) {
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	topics := []BacklogTopic{
		bt("first", 0, 0, "", RepeatNone),
		bt("done", 1, 5, "", RepeatNone),
		bt("later", 2, 9, "2026-12-05", RepeatNone),
		bt("urgent", 3, 3, "", RepeatNone),
		bt("tried", 4, 3, "", RepeatNone),
		bt("yesterday", 5, 0, "", RepeatNone),
		bt("daily", 6, 0, "", RepeatDaily),
		bt("early", 7, 0, "2026-11-01", RepeatNone),
	}
	jobs := map[string]JobRecord{
		"done":             {ID: "done", Status: JobPublished, PublishedAt: now.Add(-48 * time.Hour)},
		"tried":            {ID: "tried", Status: JobDeferred, UpdatedAt: now.Add(-time.Hour), Deferrals: 2},
		"yesterday":        {ID: "yesterday", Status: JobDeferred, UpdatedAt: now.Add(-20 * time.Hour)},
		"daily/2026-11-30": {ID: "daily/2026-11-30", Status: JobPublished},
	}
	got := ids(Plan(topics, jobs, now))
	// No not_before sorts as the earliest: "first" before "early".
	want := []string{"urgent:due", "first:due", "yesterday:deferred", "daily/2026-12-01:due", "early:due",
		"tried:deferred", "later:scheduled", "done:published"}
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("order:\n got %v\nwant %v", got, want)
		}
	}
	r := BacklogRunway(Plan(topics, jobs, now), 4)
	if r.Left != 6 || r.Repeats != 1 || r.Days != 1.5 {
		t.Errorf("runway: %+v", r)
	}
	if r := BacklogRunway(nil, 0); r.Days != 0 {
		t.Errorf("empty runway: %+v", r)
	}
	if r := BacklogRunway(Plan(topics[:1], nil, now), 0); !math.IsInf(r.Days, 1) {
		t.Errorf("no rate: %+v", r)
	}
}

func TestDayLimit(t *testing.T) {
	for _, c := range []struct{ run, day, done, want int }{{4, 0, 100, 4}, {4, 8, 0, 4}, {4, 8, 6, 2}, {4, 8, 8, 0}, {4, 8, 9, 0}} {
		if got := DayLimit(c.run, c.day, c.done); got != c.want {
			t.Errorf("DayLimit(%d, %d, %d) = %d, want %d", c.run, c.day, c.done, got, c.want)
		}
	}
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	jobs := map[string]JobRecord{
		"a": {Status: JobPublished, PublishedAt: now.Add(-time.Hour)},
		"b": {Status: JobPublished, PublishedAt: now.Add(-15 * time.Hour)},
		"c": {Status: JobReview, PublishedAt: now},
	}
	if n := PublishedOn(jobs, now); n != 1 {
		t.Errorf("PublishedOn = %d, want 1", n)
	}
}

func TestPlanRunAndSeriesRunway(t *testing.T) {
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	topics := []BacklogTopic{
		{Job: Job{Topic: "a"}, Repeat: RepeatDaily, Index: 0},
		{Job: Job{Topic: "b"}, Repeat: RepeatDaily, Index: 1},
		{Job: Job{Topic: "c"}, Repeat: RepeatDaily, Index: 2},
	}
	jobs := map[string]JobRecord{
		"a/2026-12-01": {ID: "a/2026-12-01", Status: JobPublished, PublishedAt: now.Add(-time.Hour)},
		"b/2026-11-30": {ID: "b/2026-11-30", Status: JobPublished, PublishedAt: now.Add(-25 * time.Hour)},
	}
	p := PlanRun(topics, jobs, now, 4, 2)
	if p.PublishedToday != 1 || p.Limit != 1 {
		t.Fatalf("published today %d, limit %d; want 1 and 1 (ceiling 2)", p.PublishedToday, p.Limit)
	}
	if due := DueJobs(p.Entries); len(due) != 2 || due[0].ID != "b/2026-12-01" || due[1].ID != "c/2026-12-01" {
		t.Fatalf("due: %+v", due)
	}
	// Only series: they never run out, whatever the rate.
	if r := BacklogRunway(p.Entries, 2); r.Left != 0 || r.Repeats != 3 || !math.IsInf(r.Days, 1) {
		t.Errorf("series runway: %+v", r)
	}
	if PerDay(4, 0) != 4 || PerDay(4, 8) != 8 {
		t.Error("PerDay: posts_per_day, else posts_per_run")
	}
}

// TestSeriesNoBackfill: a weekly series published for 2026-W50 and a
// monthly one for 2027-01 (by a clock set forward) are not due when the
// clock shows 2026-12-06 (W49, December): a series publishes only periods
// after its latest published one. W51 is due again.
func TestSeriesNoBackfill(t *testing.T) {
	topics := []BacklogTopic{bt("weekly", 0, 0, "", RepeatWeekly), bt("monthly", 1, 0, "", RepeatMonthly), bt("daily", 2, 0, "", RepeatDaily)}
	jobs := map[string]JobRecord{
		"weekly/2026-W50":  {ID: "weekly/2026-W50", Topic: "weekly", Status: JobPublished},
		"monthly/2027-01":  {ID: "monthly/2027-01", Topic: "monthly", Status: JobPublished},
		"daily/2026-12-05": {ID: "daily/2026-12-05", Topic: "daily", Status: JobPublished},
		"weekly/2026-W51":  {ID: "weekly/2026-W51", Topic: "weekly", Status: JobDeferred},
	}
	back := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	got := fmt.Sprint(ids(Plan(topics, jobs, back)))
	if want := "[daily/2026-12-06:due weekly/2026-W49:published monthly/2026-12:published]"; got != want {
		t.Fatalf("at %s:\n got %s\nwant %s", back, got, want)
	}
	later := time.Date(2026, 12, 21, 9, 0, 0, 0, time.UTC) // W52
	if got := fmt.Sprint(ids(Plan(topics[:1], jobs, later))); got != "[weekly/2026-W52:due]" {
		t.Fatalf("at %s: %s", later, got)
	}
}

// TestPlanPublishingFirst: a job left publishing comes before every due
// topic, whatever their priorities: a run reconciles it first, also on a
// day already full.
func TestPlanPublishingFirst(t *testing.T) {
	now := time.Date(2026, 12, 1, 10, 30, 0, 0, time.UTC)
	topics := []BacklogTopic{bt("t0", 0, 0, "", RepeatNone), bt("urgent", 1, 5, "", RepeatNone)}
	jobs := map[string]JobRecord{"t0": {ID: "t0", Topic: "t0", Status: JobPublishing}}
	if got := fmt.Sprint(ids(Plan(topics, jobs, now))); got != "[t0:publishing urgent:due]" {
		t.Fatalf("order %s", got)
	}
}

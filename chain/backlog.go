package chain

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"
)

// Repeat makes a topic a recurring series: one job per period.
type Repeat string

// The repeat values; RepeatNone is a topic published once.
const (
	RepeatNone    Repeat = ""
	RepeatDaily   Repeat = "daily"
	RepeatWeekly  Repeat = "weekly"
	RepeatMonthly Repeat = "monthly"
)

// Period is the UTC period of day for r: 2026-12-01 (daily), 2026-W49
// (ISO week), 2026-12 (monthly); "" for RepeatNone.
func (r Repeat) Period(day time.Time) string {
	day = day.UTC()
	switch r {
	case RepeatDaily:
		return day.Format(time.DateOnly)
	case RepeatWeekly:
		y, w := day.ISOWeek()
		return fmt.Sprintf("%04d-W%02d", y, w)
	case RepeatMonthly:
		return day.Format("2006-01")
	}
	return ""
}

// BacklogJobID is the job id of topic in the period of now: the topic id
// for a topic published once, `<topic>/<period>` for a series.
func BacklogJobID(topic string, r Repeat, now time.Time) string {
	if r == RepeatNone {
		return topic
	}
	return topic + "/" + r.Period(now)
}

// BacklogTopic is one entry of the backlog: the job it makes and how it
// is ordered. Index is its position in the topics file.
type BacklogTopic struct {
	Job       Job // ID and Slot are set by Plan
	Priority  int
	NotBefore time.Time // zero = none; a UTC date
	Repeat    Repeat
	Index     int
}

// TopicState is what a backlog entry is waiting for.
type TopicState string

// The topic states, as `contentpipe topics` shows them.
const (
	TopicPublished  TopicState = "published"
	TopicPublishing TopicState = "publishing"
	TopicReview     TopicState = "review"
	TopicRejected   TopicState = "rejected"
	TopicRunning    TopicState = "running"
	TopicDue        TopicState = "due"
	TopicDeferred   TopicState = "deferred" // due, tried before and deferred
	TopicScheduled  TopicState = "scheduled"
)

// BacklogEntry is one topic's place in the plan of a run.
type BacklogEntry struct {
	Topic BacklogTopic
	State TopicState
	// Record is the stored job of the current period (zero when never tried).
	Record JobRecord
	Known  bool
	// TriedToday is a due job that was already tried (and deferred) on
	// now's UTC day: it goes behind the due topics not yet tried that day.
	TriedToday bool
}

// Due reports whether a run may take the entry.
func (e BacklogEntry) Due() bool {
	switch e.State {
	case TopicDue, TopicDeferred, TopicRunning, TopicPublishing:
		return true
	}
	return false
}

// Plan orders the backlog at now, given the stored jobs by id. Jobs left
// publishing come first (a run reconciles them even when the day is full),
// then the due entries: those not yet tried on now's UTC day by priority (higher
// first), then not_before, then file order; then those already tried
// today in the same order. Scheduled (not_before in the future) and
// finished entries follow. Every job gets its id (BacklogJobID) and slot
// (now's UTC date, the date of publication).
func Plan(topics []BacklogTopic, jobs map[string]JobRecord, now time.Time) []BacklogEntry {
	now = now.UTC()
	today := now.Format(time.DateOnly)
	latest := latestPeriods(jobs)
	out := make([]BacklogEntry, 0, len(topics))
	for _, t := range topics {
		t.Job.ID = BacklogJobID(t.Job.Topic, t.Repeat, now)
		t.Job.Slot = today
		e := BacklogEntry{Topic: t}
		e.Record, e.Known = jobs[t.Job.ID]
		if p := t.Repeat.Period(now); !e.Known && p != "" {
			// A series publishes only periods after its latest published
			// one: a clock set back never back-fills an earlier period.
			if l, ok := latest[seriesKey{t.Job.Topic, len(p)}]; ok && p < l.period {
				e.Record, e.Known = l.rec, true
			}
		}
		e.State = stateOf(e, now)
		e.TriedToday = e.Known && e.State == TopicDeferred && e.Record.UpdatedAt.UTC().Format(time.DateOnly) == today
		out = append(out, e)
	}
	sort.SliceStable(out, func(i, j int) bool { return planLess(out[i], out[j]) })
	return out
}

// seriesLatest is a series' latest published period and its job.
type seriesLatest struct {
	period string
	rec    JobRecord
}

// latestPeriods maps each topic and period shape to the latest period of
// its published series jobs (ids `<topic>/<period>`). Periods of one
// repeat have one length and compare as strings (2026-W49 < 2026-W50);
// a topic whose repeat changed keeps one latest per shape.
func latestPeriods(jobs map[string]JobRecord) map[seriesKey]seriesLatest {
	out := map[seriesKey]seriesLatest{}
	for id, j := range jobs {
		if j.Status != JobPublished {
			continue
		}
		p, ok := strings.CutPrefix(id, j.Topic+"/")
		if !ok || p == "" {
			continue
		}
		k := seriesKey{j.Topic, len(p)}
		if l, seen := out[k]; !seen || p > l.period {
			out[k] = seriesLatest{period: p, rec: j}
		}
	}
	return out
}

// seriesKey is a topic and the length of its periods' names.
type seriesKey struct {
	topic string
	size  int
}

func stateOf(e BacklogEntry, now time.Time) TopicState {
	if e.Known {
		switch e.Record.Status {
		case JobPublished:
			return TopicPublished
		case JobReview:
			return TopicReview
		case JobRejected:
			return TopicRejected
		case JobPublishing:
			return TopicPublishing
		case JobRunning:
			return TopicRunning
		case JobDeferred, JobHalted:
			return TopicDeferred
		}
	}
	if !e.Topic.NotBefore.IsZero() && now.Before(e.Topic.NotBefore) {
		return TopicScheduled
	}
	return TopicDue
}

// rank groups the entries: left publishing (a reconciliation, already
// counted toward the day's ceiling), due not tried today, due tried today,
// scheduled, finished.
func rank(e BacklogEntry) int {
	switch {
	case e.State == TopicPublishing:
		return 0
	case e.Due() && !e.TriedToday:
		return 1
	case e.Due():
		return 2
	case e.State == TopicScheduled:
		return 3
	}
	return 4
}

func planLess(a, b BacklogEntry) bool {
	if ra, rb := rank(a), rank(b); ra != rb {
		return ra < rb
	}
	if a.Topic.Priority != b.Topic.Priority {
		return a.Topic.Priority > b.Topic.Priority
	}
	if !a.Topic.NotBefore.Equal(b.Topic.NotBefore) {
		return a.Topic.NotBefore.Before(b.Topic.NotBefore)
	}
	return a.Topic.Index < b.Topic.Index
}

// DueJobs returns the jobs of the due entries of plan, in order.
func DueJobs(plan []BacklogEntry) []Job {
	var out []Job
	for _, e := range plan {
		if e.Due() {
			out = append(out, e.Topic.Job)
		}
	}
	return out
}

// DayLimit is how many jobs a run may still publish: postsPerRun, lowered
// to what postsPerDay (0 = no ceiling) leaves after publishedToday.
func DayLimit(postsPerRun, postsPerDay, publishedToday int) int {
	if postsPerDay <= 0 {
		return postsPerRun
	}
	return max(0, min(postsPerRun, postsPerDay-publishedToday))
}

// RunPlan is the backlog at now with what a run may take.
type RunPlan struct {
	Entries        []BacklogEntry
	PublishedToday int
	Limit          int // jobs the run may take: postsPerRun, lowered by postsPerDay (DayLimit)
}

// PlanRun is the planning of a run at now: the backlog ordered (Plan), the
// jobs published on now's UTC day (PublishedOn) and the run's limit
// (DayLimit). jobs are the stored jobs by id; those of the topics' current
// periods are enough, since every job published today is one of them.
func PlanRun(topics []BacklogTopic, jobs map[string]JobRecord, now time.Time, postsPerRun, postsPerDay int) RunPlan {
	p := RunPlan{Entries: Plan(topics, jobs, now), PublishedToday: PublishedOn(jobs, now)}
	p.Limit = DayLimit(postsPerRun, postsPerDay, p.PublishedToday)
	return p
}

// PerDay is the publication rate the runway assumes: postsPerDay, else
// postsPerRun (one run a day).
func PerDay(postsPerRun, postsPerDay int) int {
	if postsPerDay > 0 {
		return postsPerDay
	}
	return postsPerRun
}

// PublishedOn counts the jobs published on day's UTC date.
func PublishedOn(jobs map[string]JobRecord, day time.Time) int {
	d := day.UTC().Format(time.DateOnly)
	n := 0
	for _, j := range jobs {
		if j.Status == JobPublished && !j.PublishedAt.IsZero() && j.PublishedAt.UTC().Format(time.DateOnly) == d {
			n++
		}
	}
	return n
}

// Runway is how long the one-off topics of plan still to publish last.
type Runway struct {
	Left    int     // one-off topics not published, rejected or in review
	PerDay  int     // publications a day it assumes (0 = unknown)
	Days    float64 // Left / PerDay; +Inf when PerDay is 0 and Left > 0
	Repeats int     // recurring series (never run out)
}

// BacklogRunway computes the runway of plan at perDay publications a day.
// A backlog whose one-off topics are all done but that has recurring
// series never runs out: its Days is +Inf.
func BacklogRunway(plan []BacklogEntry, perDay int) Runway {
	r := Runway{PerDay: perDay}
	for _, e := range plan {
		if e.Topic.Repeat != RepeatNone {
			r.Repeats++
			continue
		}
		switch e.State {
		case TopicPublished, TopicRejected, TopicReview:
			continue
		}
		r.Left++
	}
	switch {
	case r.Left == 0 && r.Repeats > 0:
		r.Days = math.Inf(1)
	case perDay > 0:
		r.Days = float64(r.Left) / float64(perDay)
	case r.Left > 0:
		r.Days = math.Inf(1)
	}
	return r
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// envNow is the test seam for the clock: an RFC 3339 time that the run
// and topics commands take as "now" when the process starts (the clock
// then runs on from there). It lets tests drive days without sleeping;
// nothing in production sets it.
const envNow = "CONTENTPIPE_NOW"

// offsetClock is the real clock shifted by a fixed offset (zero in
// production, see envNow).
type offsetClock struct {
	chain.RealClock
	offset time.Duration
}

// Now is the real time plus the offset.
func (c offsetClock) Now() time.Time { return time.Now().Add(c.offset) }

// clock returns the clock of the run and topics commands: the real clock,
// shifted to CONTENTPIPE_NOW when that is set. A malformed value is an error.
func (a *app) clock() (offsetClock, error) {
	v := a.getenv(envNow)
	if v == "" {
		return offsetClock{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return offsetClock{}, fmt.Errorf("%s=%q: want an RFC 3339 time, e.g. 2026-12-01T06:00:00Z", envNow, v)
	}
	return offsetClock{offset: time.Until(t)}, nil
}

// backlogPlan is the backlog at now with what a run may take.
type backlogPlan struct {
	entries        []chain.BacklogEntry
	publishedToday int
	limit          int // jobs this run may take (posts_per_run, lowered by posts_per_day)
}

// planBacklog reads the stored jobs and orders the backlog at now
// (chain.PlanRun, which the simulator uses too).
func planBacklog(ctx context.Context, cfg *config.Config, store *telemetry.Store, topics []config.Topic, now time.Time) (backlogPlan, error) {
	jobs, err := store.Jobs(ctx)
	if err != nil {
		return backlogPlan{}, err
	}
	p := chain.PlanRun(backlogTopics(cfg, topics), jobs, now, cfg.Job.PostsPerRun, cfg.Job.PostsPerDay)
	return backlogPlan{entries: p.Entries, publishedToday: p.PublishedToday, limit: p.Limit}, nil
}

// perDay is the publication rate the runway assumes (chain.PerDay).
func perDay(cfg *config.Config) int { return chain.PerDay(cfg.Job.PostsPerRun, cfg.Job.PostsPerDay) }

// backlogAlert queues the backlog_low alert when the runway is shorter
// than alerts.backlog_low_days.
func (a *app) backlogAlert(ctx context.Context, cfg *config.Config, store *telemetry.Store, topics []config.Topic, now time.Time) {
	ctx = context.WithoutCancel(ctx)
	p, err := planBacklog(ctx, cfg, store, topics, now)
	if err != nil {
		a.log.Warn("backlog alert", "err", err)
		return
	}
	al, ok := alerts.BacklogLowAlert(chain.BacklogRunway(p.entries, perDay(cfg)), cfg.Alerts.BacklogLowDays, now)
	if !ok {
		return
	}
	if err := alerts.NewOutbox(store, a.stderr).Notify(ctx, al); err != nil {
		a.log.Warn("backlog alert", "err", err)
	}
}

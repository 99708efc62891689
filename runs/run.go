// Package runs is the publishing run as one use case: plan the backlog at
// the run's time, let the runner take the due jobs under the run's limit
// and the day's ceiling, wait for the shadow answers in flight, evaluate
// the alert rules, check the backlog's runway and record the run. The
// `run` and `serve` commands run it on the real clock and the product's
// database; the simulator (whatif) runs it on a virtual clock and a
// scenario's database, so a simulated run is the same run in virtual time.
package runs

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
)

// Run is the setting of a publishing run. Chain, Runner and Store are
// required; the zero values of the others are documented.
type Run struct {
	// Chain is the configured chain; its Clock is the run's clock. Each Do
	// runs a fresh copy of it (chain.Chain.ForRun): the halt on an auth
	// failure and the providers skipped end with the run, as in a process.
	Chain *chain.Chain
	// Runner is the runner's template; Do sets its Chain.
	Runner *chain.Runner
	// Store holds the jobs the backlog is planned from.
	Store chain.JobStore
	// Backlog is the topics file as planned (chain.PlanRun).
	Backlog []chain.BacklogTopic
	// StoredJobs reads the stored jobs a plan at now needs; nil = the
	// jobs of the backlog's current periods, read one by one (every job
	// published today is among them).
	StoredJobs func(ctx context.Context, now time.Time) (map[string]chain.JobRecord, error)
	// PostsPerRun and PostsPerDay are job.posts_per_run and
	// job.posts_per_day; 0 = no limit.
	PostsPerRun, PostsPerDay int
	// ShadowWait bounds the wait for the shadow calls in flight after the
	// last job (the job deadline); on a cancelled context none is waited.
	ShadowWait time.Duration
	// Rules, when set, are evaluated at the run's end with the caps and
	// the token and money limits of the chain (Limits); nil = no alert
	// rules and no backlog alert.
	Rules *alerts.Rules
	// Notifier takes the backlog_low alert when the runway is shorter
	// than BacklogLowDays (0 = no such alert).
	Notifier       chain.Notifier
	BacklogLowDays float64
	// Planned, when set, is told the plan and the due jobs before the
	// runner starts; Ran when the runner and the shadows are done, before
	// the rules; Record last, with the whole result (the run's metrics).
	Planned func(plan chain.RunPlan, due []chain.Job)
	Ran     func(res Result)
	Record  func(ctx context.Context, res Result)
}

// Result is what one run did.
type Result struct {
	Plan    chain.RunPlan
	Due     []chain.Job
	Summary chain.Summary
	// Chain is the run's own chain (its links and counts).
	Chain *chain.Chain
	// Start and End are the run's clock at the plan and after the shadows.
	Start, End time.Time
	// Abandoned is the number of shadow calls still in flight at the end.
	Abandoned int
	// After joins the errors of the steps after the runner (rules,
	// backlog alert): the run happened; its alerts may be missing.
	After error
}

// Do is one run. Its error is a failure to plan, before any job started.
func (r *Run) Do(ctx context.Context) (Result, error) {
	ch := r.Chain.ForRun()
	res := Result{Chain: ch, Start: ch.Clock.Now()}
	plan, err := r.Plan(ctx, res.Start)
	if err != nil {
		return res, err
	}
	res.Plan, res.Due = plan, chain.DueJobs(plan.Entries)
	if r.Planned != nil {
		r.Planned(res.Plan, res.Due)
	}
	r.Runner.Chain = ch
	res.Summary = r.Runner.Run(ctx, res.Due, plan.Limit)
	wait := r.ShadowWait
	if ctx.Err() != nil {
		wait = 0
	}
	res.Abandoned = ch.WaitShadows(wait)
	res.End = ch.Clock.Now()
	if r.Ran != nil {
		r.Ran(res)
	}
	res.After = r.alerts(context.WithoutCancel(ctx), ch, res.End)
	if r.Record != nil {
		r.Record(ctx, res)
	}
	return res, nil
}

// Plan is the backlog at now with what a run may take (chain.PlanRun over
// the stored jobs).
func (r *Run) Plan(ctx context.Context, now time.Time) (chain.RunPlan, error) {
	jobs, err := r.storedJobs(ctx, now)
	if err != nil {
		return chain.RunPlan{}, fmt.Errorf("plan the backlog: %w", err)
	}
	return chain.PlanRun(r.Backlog, jobs, now, r.PostsPerRun, r.PostsPerDay), nil
}

func (r *Run) storedJobs(ctx context.Context, now time.Time) (map[string]chain.JobRecord, error) {
	if r.StoredJobs != nil {
		return r.StoredJobs(ctx, now)
	}
	jobs := make(map[string]chain.JobRecord, len(r.Backlog))
	for _, t := range r.Backlog {
		id := chain.BacklogJobID(t.Job.Topic, t.Repeat, now)
		j, ok, err := r.Store.Job(ctx, id)
		if err != nil {
			return nil, err
		}
		if ok {
			jobs[id] = j
		}
	}
	return jobs, nil
}

// alerts is the end of a run: the alert rules at now, then the backlog's
// runway. It tries both and returns the errors joined.
func (r *Run) alerts(ctx context.Context, ch *chain.Chain, now time.Time) error {
	if r.Rules == nil {
		return nil
	}
	rules := *r.Rules
	rules.Caps, rules.Spend = Limits(ch.Links, ch.Budget, now)
	var errs []error
	if err := rules.Evaluate(ctx, now); err != nil {
		errs = append(errs, fmt.Errorf("alert rules: %w", err))
	}
	if err := r.backlogAlert(ctx, now); err != nil {
		errs = append(errs, fmt.Errorf("backlog alert: %w", err))
	}
	return errors.Join(errs...)
}

// backlogAlert queues the backlog_low alert when the runway of the backlog
// planned at now is shorter than BacklogLowDays.
func (r *Run) backlogAlert(ctx context.Context, now time.Time) error {
	if r.BacklogLowDays <= 0 || r.Notifier == nil {
		return nil
	}
	plan, err := r.Plan(ctx, now)
	if err != nil {
		return err
	}
	al, ok := alerts.BacklogLowAlert(chain.BacklogRunway(plan.Entries, chain.PerDay(r.PostsPerRun, r.PostsPerDay)), r.BacklogLowDays, now)
	if !ok {
		return nil
	}
	return r.Notifier.Notify(ctx, al)
}

// Limits lists what the alert rules check at now for links and the
// chain's budget: the daily caps with the start of their day, and the
// token and money limits with the start of their period (link: its cap
// day; chain: the UTC day and month).
func Limits(links []*chain.Link, budget chain.Budget, now time.Time) ([]alerts.CapLimit, []alerts.SpendCheck) {
	var caps []alerts.CapLimit
	var spend []alerts.SpendCheck
	for _, l := range links {
		day := l.CapReset.DayStart(now)
		if l.DailyCap > 0 {
			caps = append(caps, alerts.CapLimit{Provider: l.Name, Cap: l.DailyCap, DayStart: day})
		}
		if l.DailyTokens > 0 {
			spend = append(spend, alerts.SpendCheck{Limit: chain.LimitTokens, Provider: l.Name, From: day, Max: float64(l.DailyTokens)})
		}
		if l.DailyBudgetUSD > 0 {
			spend = append(spend, alerts.SpendCheck{Limit: chain.LimitLinkUSD, Provider: l.Name, From: day, Max: l.DailyBudgetUSD})
		}
	}
	y, m, d := now.UTC().Date()
	if budget.DailyUSD > 0 {
		spend = append(spend, alerts.SpendCheck{Limit: chain.LimitChainDay, From: time.Date(y, m, d, 0, 0, 0, 0, time.UTC), Max: budget.DailyUSD})
	}
	if budget.MonthlyUSD > 0 {
		spend = append(spend, alerts.SpendCheck{Limit: chain.LimitChainMonth, From: time.Date(y, m, 1, 0, 0, 0, 0, time.UTC), Max: budget.MonthlyUSD})
	}
	return caps, spend
}

package main

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/runs"
	"github.com/contentpipe/contentpipe/telemetry"
)

func (a *app) runCmd() *cobra.Command {
	var opts runOptions
	cmd := &cobra.Command{
		Use:   "run",
		Short: "One publishing run: generate, gate and publish the due jobs",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.doRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.demo, "demo", false, "run on the embedded default: simulated providers on loopback, demo topics, out/ and data/pipeline.db")
	cmd.Flags().StringVar(&opts.metricsFile, "metrics-file", "", "write the run's metrics in the Prometheus text format to this file (node_exporter textfile collector)")
	cmd.Flags().BoolVar(&opts.clockBehindOK, "clock-behind-ok", false, "run although the clock is behind the database's newest record: once a person has fixed the clock and the newer records came from a clock that ran ahead (they are then acknowledged for every later run)")
	return cmd
}

// runOptions are the flags of one publishing run.
type runOptions struct {
	demo          bool
	metricsFile   string
	clockBehindOK bool
}

// clockTolerance is how far a run's clock may be behind the database's
// newest record before the run refuses to start.
const clockTolerance = 5 * time.Minute

// checkClock refuses a run whose clock is more than clockTolerance behind
// the newest record of the database (telemetry.Store.NewestRecord) not yet
// acknowledged: its day and month counts would start afresh on a day
// already spent. It raises the clock_behind alert naming both times. With
// override (--clock-behind-ok) the records are acknowledged instead and
// the run goes on.
func (a *app) checkClock(ctx context.Context, cfg *config.Config, store *telemetry.Store, now time.Time, override bool) error {
	newest, where, err := store.NewestRecord(ctx)
	if err != nil || !newest.After(now.Add(clockTolerance)) {
		return err
	}
	if ack, err := store.ClockAck(ctx); err != nil || !newest.After(ack) {
		return err
	}
	ts, nt := now.UTC().Format(time.RFC3339), newest.UTC().Format(time.RFC3339)
	if override {
		a.log.Warn("clock behind the database's newest record: acknowledged by --clock-behind-ok", "clock", ts, "newest_record", nt, "table", where)
		return store.AckClock(ctx, newest, now)
	}
	behind := newest.Sub(now).Round(time.Second)
	al := chain.Alert{Key: string(alerts.RuleClockBehind) + ":" + nt, Rule: alerts.RuleClockBehind, Severity: alerts.SeverityCritical,
		Text: fmt.Sprintf("The run did not start: its clock reads %s, %s behind the database's newest record (%s, %s). Fix the clock (NTP); if it is right and that record came from a clock that ran ahead, run `contentpipe run --clock-behind-ok` once.", ts, behind, where, nt)}
	if err := alerts.NewOutbox(store, a.stderr).Notify(context.WithoutCancel(ctx), al); err != nil {
		a.log.Warn("clock_behind alert", "err", err)
	}
	a.flushAlerts(ctx, cfg, store)
	return fmt.Errorf("the clock reads %s, %s behind the database's newest record (%s, %s): a run now would count limits already spent today afresh; fix the clock (NTP), or if it is right and that record came from a clock that ran ahead, rerun with --clock-behind-ok once", ts, behind, where, nt)
}

// doRun is one publishing run (also called by `serve`). It returns nil or
// an *exitError carrying the exit status of the README's Commands table.
func (a *app) doRun(ctx context.Context, opts runOptions) error {
	l, err := a.load(opts.demo)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer l.close()
	cfg := l.cfg
	store, proc, err := openPublishing(ctx, cfg)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer store.Close()
	defer proc.Close()
	a.logConfigWarnings(ctx, cfg, store, opts.demo)
	clock, err := a.clock()
	if err != nil {
		return exitWith(exitConfig, err)
	}
	if err := a.checkClock(ctx, cfg, store, clock.Now(), opts.clockBehindOK); err != nil {
		return exitWith(exitConfig, err)
	}
	ch, err := buildChain(ctx, cfg, store)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	ch.Clock = clock
	slot := clock.Now().UTC().Format(time.DateOnly)
	pub := buildPublisher(cfg)
	newCrashPoints().arm(store, pub)
	a.purgeOutputs(ctx, cfg, store)
	run := a.publishingRun(cfg, store, ch, proc.Owner, pub, l.topics)
	var prog *progress
	ch.Progress = func(e chain.Event) { prog.event(e) } // set before the runner starts
	var runStart time.Time
	run.Planned = func(plan chain.RunPlan, due []chain.Job) {
		prog, runStart = newProgress(a.stdout, min(plan.Limit, len(due))), time.Now()
	}
	run.Ran = func(res runs.Result) {
		if res.Abandoned > 0 {
			a.log.Warn("shadow calls abandoned at exit", "count", res.Abandoned)
		}
		prog.close()
		a.printSummary(cfg, slot, res.Summary, res.Plan)
		if ctx.Err() != nil && res.Summary.Unstarted > 0 {
			// SIGTERM/SIGINT: the job in flight finished; the rest stays due.
			fmt.Fprintf(a.stdout, "stopped by a signal: the job in flight finished; %d due topics not reached stay due for the next run\n", res.Summary.Unstarted)
		}
	}
	run.Record = func(ctx context.Context, res runs.Result) { a.recordRun(ctx, store, res, runStart, opts.metricsFile) }
	res, err := run.Do(ctx)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	if res.After != nil {
		a.log.Warn("after the run", "err", res.After)
	}
	a.flushAlerts(ctx, cfg, store)
	sum := res.Summary
	switch {
	case sum.Halt != nil && chain.AsPublishAuthError(sum.Halt) != nil:
		pa := chain.AsPublishAuthError(sum.Halt)
		return exitWith(exitHalted, fmt.Errorf("halted: %s; %s, then rerun", pa.Error(), pa.Fix))
	case sum.Halt != nil:
		return exitWith(exitHalted, fmt.Errorf("halted: %s refused our credentials; fix %s and rerun", sum.Halt.Provider, keyOf(cfg, sum.Halt.Provider)))
	case sum.Review > 0 || sum.Deferred > 0 || sum.Errors > 0 || sum.Unstarted > 0:
		return exitWith(exitPartial, nil)
	}
	return nil
}

// publishingRun is the run of the product (runs.Run) on cfg's store and
// chain: the backlog of topics, the runner publishing with pub as owner,
// and the alert rules and backlog alert of the config.
func (a *app) publishingRun(cfg *config.Config, store *telemetry.Store, ch *chain.Chain, owner chain.Owner, pub chain.Publisher, topics []config.Topic) *runs.Run {
	out := alerts.NewOutbox(store, a.stderr)
	return &runs.Run{
		Chain: ch, Store: store, Backlog: backlogTopics(cfg, topics),
		// Every stored job: the day's publications count those of topics
		// since removed from the backlog too.
		StoredJobs:  func(ctx context.Context, _ time.Time) (map[string]chain.JobRecord, error) { return store.Jobs(ctx) },
		PostsPerRun: cfg.Job.PostsPerRun, PostsPerDay: cfg.Job.PostsPerDay,
		// Shadow answers still in flight are recorded before the store
		// closes, each bounded by the job deadline.
		ShadowWait: cfg.Job.Deadline,
		Runner: &chain.Runner{
			Jobs:      store,
			Publisher: pub,
			Notifier:  out,
			Owner:     owner,
			Alive:     store.Alive,
			Parallel:  cfg.Job.Parallel,
			Lease:     cfg.Job.Lease,
			// The ceiling is held in each claim too: concurrent runs never
			// together pass it.
			PostsPerDay: cfg.Job.PostsPerDay,
			AuthAlert: func(provider string, cause error, now time.Time) chain.Alert {
				return alerts.AuthAlert(provider, keyEnvOf(cfg, provider), cause.Error(), now)
			},
		},
		Rules:    a.rules(cfg, store),
		Notifier: out, BacklogLowDays: cfg.Alerts.BacklogLowDays,
	}
}

// purgeOutputs drops the prompt and answer texts older than
// retention_days.
func (a *app) purgeOutputs(ctx context.Context, cfg *config.Config, store *telemetry.Store) {
	if cfg.RetentionDays <= 0 {
		return
	}
	if n, err := store.PurgeOutputs(ctx, time.Now().AddDate(0, 0, -cfg.RetentionDays)); err != nil {
		a.log.Warn("purge old outputs", "err", err)
	} else if n > 0 {
		a.log.Info("purged old prompt/answer texts", "rows", n, "retention_days", cfg.RetentionDays)
	}
}

// printSummary writes the human summary of a run on stdout.
func (a *app) printSummary(cfg *config.Config, slot string, sum chain.Summary, plan chain.RunPlan) {
	w := a.stdout
	fmt.Fprintf(w, "\nrun for slot %s: %d published, %d review, %d deferred", slot, sum.Published, sum.Review, sum.Deferred)
	if sum.Halted > 0 {
		fmt.Fprintf(w, ", %d halted", sum.Halted)
	}
	if sum.Active > 0 {
		fmt.Fprintf(w, ", %d held by another active run", sum.Active)
	}
	if sum.Errors > 0 {
		fmt.Fprintf(w, ", %d errors", sum.Errors)
	}
	fmt.Fprintf(w, " — total cost $%.4f\n", sum.CostUSD)
	if len(sum.Reports) == 0 {
		if sum.Active > 0 {
			fmt.Fprintln(w, "another run is active; nothing to do")
		} else {
			a.printNothingDue(cfg, plan, sum.DayFull)
		}
	}
	for _, r := range sum.Reports {
		switch r.Status {
		case chain.JobPublished:
			fmt.Fprintf(w, "  published  %-28s by %s (%s), quality %.0f, $%.4f → %s\n", r.Job.Topic, r.Provider, r.Model, r.Score, r.CostUSD, r.Location)
		case chain.JobReview:
			fmt.Fprintf(w, "  review     %-28s best answer %.0f from %s; see: contentpipe review show %s\n", r.Job.Topic, r.Score, r.Provider, r.Job.ID)
		case chain.JobDeferred:
			fmt.Fprintf(w, "  deferred   %-28s no provider answered; due again next run\n", r.Job.Topic)
		case chain.JobHalted:
			fmt.Fprintf(w, "  halted     %-28s auth failure\n", r.Job.Topic)
		case chain.JobActive:
			fmt.Fprintf(w, "  active     %-28s another run is working on it\n", r.Job.Topic)
		default:
			msg := "unknown"
			if r.Err != nil {
				msg = r.Err.Error()
			}
			fmt.Fprintf(w, "  error      %-28s %s\n", r.Job.Topic, msg)
		}
		if r.Result != nil && r.Status != chain.JobPublished {
			for _, s := range r.Result.Story {
				fmt.Fprintf(w, "             %s\n", s)
			}
		}
	}
	if len(sum.Reports) > 0 && sum.DayFull {
		fmt.Fprintf(w, "posts_per_day %d reached with the jobs of other runs: the other due topics wait for tomorrow (UTC)\n", cfg.Job.PostsPerDay)
	}
	if len(sum.Reports) > 0 {
		fmt.Fprintf(w, "every attempt is in %s: contentpipe sql \"SELECT provider, outcome, COUNT(*) FROM calls GROUP BY 1, 2\"\n", cfg.DatabaseName())
	}
}

// printNothingDue says why a run took no job: the day's ceiling, or an
// empty backlog.
func (a *app) printNothingDue(cfg *config.Config, plan chain.RunPlan, dayFull bool) {
	w := a.stdout
	if dayFull && plan.Limit > 0 {
		fmt.Fprintf(w, "nothing taken: posts_per_day reached (%d published today and the jobs other runs are writing, ceiling %d); the next topics are due tomorrow (UTC)\n", plan.PublishedToday, cfg.Job.PostsPerDay)
		return
	}
	if plan.Limit == 0 && cfg.Job.PostsPerDay > 0 {
		fmt.Fprintf(w, "nothing taken: posts_per_day reached (%d published today, ceiling %d); the next topics are due tomorrow (UTC)\n", plan.PublishedToday, cfg.Job.PostsPerDay)
		return
	}
	fmt.Fprintln(w, "nothing due: every topic of the backlog is published, in review or scheduled for later (see contentpipe topics)")
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// serveFlushEvery is how often `serve` delivers pending alerts between
// scheduled jobs (alerts kept by flood control or an outage).
const serveFlushEvery = 5 * time.Minute

// serveOptions are the flags of `serve`.
type serveOptions struct {
	metricsDir  string
	metricsAddr string
}

func (a *app) serveCmd() *cobra.Command {
	var opts serveOptions
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run `run`, `health` and `report` on the cron expressions of schedule: until SIGTERM/SIGINT",
		Long: `Long-running scheduler: runs run, health and report on the cron expressions of
the config's schedule: section (standard 5 fields, or @daily, @every 10m, ...; in the
local time zone, or CRON_TZ=Area/City prefixed). Scheduled jobs never overlap: one job
runs at a time, and a job that comes due while another runs waits for it (a run that
comes due while a run is still going is skipped). Pending alerts are delivered every
5 minutes. On SIGTERM or SIGINT the job in flight finishes, then serve exits 0.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.doServe(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.metricsDir, "metrics-dir", "", "write run.prom and health.prom (Prometheus text format) into this directory (created if missing) after each run and health walk")
	cmd.Flags().StringVar(&opts.metricsAddr, "metrics-addr", "", "serve the same metrics live on http://HOST:PORT/metrics")
	return cmd
}

// serveJob is one scheduled command.
type serveJob struct {
	name string
	spec string
	fn   func(ctx context.Context) error
}

// doServe schedules the jobs and blocks until ctx ends (the signal), then
// waits for the job in flight.
func (a *app) doServe(ctx context.Context, opts serveOptions) error {
	cfg, err := config.Load(a.configPath, a.getenv)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	store, err := openStore(cfg)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer store.Close()
	a.logConfigWarnings(ctx, cfg, store, false)
	// This worker's identity for the schedule slots it takes: with several
	// serve workers on one database, each slot runs on one of them.
	proc, err := store.Register()
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer proc.Close()
	slots := slotClaimer{store: store, owner: proc.Owner}
	metricsDir, cleanup, err := a.startMetrics(ctx, cfg, opts)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer cleanup()
	jobs := a.serveJobs(cfg, metricsDir)
	var one sync.Mutex // one job at a time; the alert flush takes it too
	c, err := a.scheduleJobs(ctx, cfg, jobs, &one, slots)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	c.Start()
	fmt.Fprintf(a.stdout, "serve: scheduled %s; waiting (SIGTERM or SIGINT stops after the job in flight)\n", describeSchedule(jobs))
	tick := time.NewTicker(serveFlushEvery)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			if one.TryLock() {
				a.serveFlush(ctx)
				one.Unlock()
			}
		}
	}
	a.log.Info("stopping: waiting for the job in flight")
	<-c.Stop().Done() // waits for the job in flight
	fmt.Fprintln(a.stdout, "serve stopped")
	return nil
}

// serveJobs are the scheduled commands of a config; metricsDir ("" =
// none) gets their textfiles.
func (a *app) serveJobs(cfg *config.Config, metricsDir string) []serveJob {
	metrics := func(name string) string {
		if metricsDir == "" {
			return ""
		}
		return filepath.Join(metricsDir, name)
	}
	return []serveJob{
		{"run", cfg.Schedule.Run, func(ctx context.Context) error {
			return a.doRun(ctx, runOptions{metricsFile: metrics("run.prom")})
		}},
		{"health", cfg.Schedule.Health, func(ctx context.Context) error {
			// A health walk is short and bounded: it finishes on a signal.
			return a.doHealth(context.WithoutCancel(ctx), healthOptions{metricsFile: metrics("health.prom")})
		}},
		{"report", cfg.Schedule.Report, func(ctx context.Context) error {
			return a.subcommand(context.WithoutCancel(ctx), "report")
		}},
	}
}

// slotClaimer takes a schedule slot for this worker: a scheduled job runs
// only on the worker that took its slot, so several serve workers on one
// database run each slot once.
type slotClaimer struct {
	store *telemetry.Store
	owner chain.Owner
}

// scheduleJobs adds the jobs with a cron expression to a new, not yet
// started scheduler. One job runs at a time (under one): a job that comes
// due while another runs waits; the same job coming due again while it
// still runs is skipped. Each start first takes its schedule slot (the job's
// name and the time it came due) in the database: a slot another worker
// took is skipped. No job starts once ctx is done.
func (a *app) scheduleJobs(ctx context.Context, cfg *config.Config, jobs []serveJob, one *sync.Mutex, slots slotClaimer) (*cron.Cron, error) {
	var (
		busy = map[string]bool{}
		bmu  sync.Mutex
	)
	c := cron.New()
	scheduled := 0
	for _, j := range jobs {
		if j.spec == "" {
			a.log.Info("not scheduled", "job", j.name)
			continue
		}
		sched, err := parseSchedule(j.spec)
		if err != nil {
			return nil, fmt.Errorf("%s: schedule.%s: bad cron expression %q: %w", cfg.Path, j.name, j.spec, err)
		}
		var id cron.EntryID
		id = c.Schedule(sched, cron.FuncJob(func() {
			// The time the job came due: the same on every worker, so it
			// names the slot.
			slot := c.Entry(id).Prev.UTC()
			if ctx.Err() != nil {
				return
			}
			bmu.Lock()
			if busy[j.name] {
				bmu.Unlock()
				a.log.Warn("skipped: the previous one is still running", "job", j.name)
				return
			}
			busy[j.name] = true
			bmu.Unlock()
			defer func() {
				bmu.Lock()
				busy[j.name] = false
				bmu.Unlock()
			}()
			one.Lock()
			defer one.Unlock()
			if ctx.Err() != nil {
				return // stopping: do not start a new job
			}
			if slots.store != nil {
				ok, err := slots.store.ClaimSlot(ctx, j.name, slot, slots.owner)
				if err != nil {
					a.log.Warn("scheduled job not started: cannot take its slot", "job", j.name, "slot", slot.Format(time.RFC3339), "err", err)
					return
				}
				if !ok {
					a.log.Info("scheduled job taken by another worker", "job", j.name, "slot", slot.Format(time.RFC3339))
					return
				}
			}
			a.runScheduled(ctx, j)
		}))
		scheduled++
	}
	if scheduled == 0 {
		return nil, fmt.Errorf("%s: schedule: nothing to schedule; set schedule.run, schedule.health or schedule.report", cfg.Path)
	}
	return c, nil
}

// cronParser reads the schedule: expressions (5 fields or a descriptor).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseSchedule parses a schedule: expression. @every D fires on multiples
// of D since the Unix epoch (not D after the process started), so that
// every worker computes the same times and slots.
func parseSchedule(spec string) (cron.Schedule, error) {
	s, err := cronParser.Parse(spec)
	if err != nil {
		return nil, err
	}
	if e, ok := s.(cron.ConstantDelaySchedule); ok {
		return alignedEvery(e.Delay), nil
	}
	return s, nil
}

// alignedEvery is @every D aligned on multiples of D.
type alignedEvery time.Duration

// Next is the first multiple of the interval after t.
func (d alignedEvery) Next(t time.Time) time.Time {
	return t.Truncate(time.Duration(d)).Add(time.Duration(d))
}

// startMetrics prepares serve's metrics: the --metrics-dir directory
// (created when missing), and with --metrics-addr the live /metrics, which
// without --metrics-dir reads the textfiles from a private temporary
// directory that cleanup removes. It returns the directory the jobs write
// their textfiles into ("" = none).
func (a *app) startMetrics(ctx context.Context, cfg *config.Config, opts serveOptions) (dir string, cleanup func(), err error) {
	dir, cleanup = opts.metricsDir, func() {}
	if dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return "", nil, fmt.Errorf("--metrics-dir: %w", err)
		}
	}
	if opts.metricsAddr == "" {
		return dir, cleanup, nil
	}
	if dir == "" {
		if dir, err = os.MkdirTemp("", "contentpipe-metrics-"); err != nil {
			return "", nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		tmp := dir
		cleanup = func() { os.RemoveAll(tmp) }
	}
	live, err := newLiveMetrics(cfg, dir)
	if err == nil {
		var addr string
		if addr, err = a.serveMetrics(ctx, opts.metricsAddr, live); err == nil {
			fmt.Fprintf(a.stdout, "serve: metrics on http://%s/metrics\n", addr)
			return dir, cleanup, nil
		}
	}
	cleanup()
	return "", nil, err
}

// runScheduled runs one scheduled job and logs its result; a job's failure
// never stops serve.
func (a *app) runScheduled(ctx context.Context, j serveJob) {
	start := time.Now()
	a.log.Info("scheduled job starting", "job", j.name)
	err := j.fn(ctx)
	code := exitOK
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	} else if err != nil {
		code = exitPartial
	}
	if err != nil && (ee == nil || ee.err != nil) {
		a.log.Warn("scheduled job finished", "job", j.name, "exit", code, "took", time.Since(start).Round(time.Millisecond), "err", err)
		return
	}
	a.log.Info("scheduled job finished", "job", j.name, "exit", code, "took", time.Since(start).Round(time.Millisecond))
}

// subcommand runs another subcommand of this binary (with the same
// --config) in-process, as if it had been started on its own.
func (a *app) subcommand(ctx context.Context, name string, args ...string) error {
	b := &app{stdout: a.stdout, stderr: a.stderr, logOut: a.logOut, getenv: a.getenv, log: a.log, logFormat: a.logFormat, logLevel: a.logLevel}
	root := b.rootCmd()
	root.SetArgs(append([]string{name, "--config", a.configPath}, args...))
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	return root.ExecuteContext(ctx)
}

// serveFlush delivers pending alerts between scheduled jobs.
func (a *app) serveFlush(ctx context.Context) {
	cfg, err := config.Load(a.configPath, a.getenv)
	if err != nil {
		a.log.Warn("alerts flush: config", "err", err)
		return
	}
	if !dbExists(cfg.Database) {
		return // no database yet: nothing pending
	}
	store, err := openStore(cfg)
	if err != nil {
		a.log.Warn("alerts flush", "err", err)
		return
	}
	defer store.Close()
	if n, err := store.PendingAlerts(ctx); err == nil && n > 0 {
		a.flushAlerts(ctx, cfg, store)
	}
}

// describeSchedule lists the scheduled jobs with their next start.
func describeSchedule(jobs []serveJob) string {
	var parts []string
	for _, j := range jobs {
		if j.spec == "" {
			continue
		}
		s := fmt.Sprintf("%s %q", j.name, j.spec)
		if sch, err := parseSchedule(j.spec); err == nil {
			s += " (next " + sch.Next(time.Now()).Format("2006-01-02 15:04 MST") + ")"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

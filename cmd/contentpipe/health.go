package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/prompts"
	"github.com/contentpipe/contentpipe/telemetry"
)

// healthOptions are the flags of `health`.
type healthOptions struct {
	demo        bool
	metricsFile string
}

func (a *app) healthCmd() *cobra.Command {
	var opts healthOptions
	cmd := &cobra.Command{
		Use:   "health",
		Short: "Walk every provider of the chain with a tiny JSON request and record the results",
		Long: `Walks every link of the chain with a tiny JSON request ({"ok":true}), records
latency, first-token time and state in health_checks (and the call in calls with
purpose 'health'), and alerts on an unhealthy link. First runs the full PRAGMA
integrity_check of the database. Each link gets one state:
  healthy       answered {"ok":true} in its usual time
  cold          answered, but slower than cold_factor (3x) times the median of its
                job calls of the last 14 days (else of its earlier health calls)
                and than cold_floor (2s); with neither, slower than cold_floor: a warning
  rate_limited  answered 429 for the minute: reachable, not unhealthy
  capped, over_budget, exhausted   out until a reset: not called
  misconfigured only a person can fix it (model, region, credits, a quota of 0):
                jobs skip it until its config changes; health probes it
  unhealthy     an error status, a timeout or a wrong answer; a link whose
                circuit is open is probed all the same, with its last failure
Exit 0 when no link is unhealthy (cold and rate-limited included), 1 any
unhealthy, 2 config error or a damaged database.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.doHealth(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.demo, "demo", false, "check the embedded demo chain (simulated providers on loopback)")
	cmd.Flags().StringVar(&opts.metricsFile, "metrics-file", "", "write the results in the Prometheus text format to this file (node_exporter textfile collector)")
	return cmd
}

// healthStore adapts telemetry.Store to chain.HealthRecorder. The outcome
// column holds the call's outcome, the skip reason of a link not called
// (cap, exhausted, circuit_open, …), or "cold" for a slow answer, so that
// chain.RecordedHealthState reads the state back.
type healthStore struct{ s *telemetry.Store }

func (h healthStore) RecordHealth(ctx context.Context, c chain.HealthCheck) error {
	outcome := c.Outcome
	switch {
	case c.Skip != "":
		outcome = chain.Outcome(c.Skip)
	case c.State == chain.HealthCold:
		outcome = chain.Outcome(chain.HealthCold)
	}
	return h.s.RecordHealth(ctx, telemetry.HealthCheck{TS: c.TS, Provider: c.Provider, Model: c.Model, OK: c.OK,
		HTTPStatus: c.HTTPStatus, Latency: c.Latency, FirstToken: c.FirstToken, Outcome: outcome, Detail: c.Detail})
}

// doHealth is one health walk (also called by `serve`): the full integrity
// check of the database (a damaged file exits 2 naming it), then the walk.
func (a *app) doHealth(ctx context.Context, opts healthOptions) error {
	l, err := a.load(opts.demo)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer l.close()
	cfg := l.cfg
	store, err := openStore(cfg)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer store.Close()
	if err := store.IntegrityCheck(ctx); err != nil {
		return exitWith(exitConfig, err)
	}
	ch, err := buildChain(ctx, cfg, store)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	set := prompts.Default()
	if cfg.PromptsDir != "" {
		if set, err = prompts.Load(cfg.PromptsDir); err != nil {
			return exitWith(exitConfig, fmt.Errorf("prompts_dir: %w", err))
		}
	}
	ch.Progress = func(e chain.Event) {
		if e.Kind == chain.EventTry {
			fmt.Fprintf(a.stdout, "checking %s …\n", e.Provider)
		}
	}
	start := time.Now()
	checks, walkErr := ch.Health(ctx, chain.HealthWalk{
		Prompt: func(family string) chain.Prompt {
			r := set.Health(family)
			return chain.Prompt{System: r.System, User: r.User, Version: r.Version}
		},
		Recorder:  healthStore{store},
		Baselines: store,
		Failures:  store,
		Cold:      chain.ColdRule{Factor: cfg.Health.ColdFactor, Floor: cfg.Health.ColdFloor},
	})
	end := time.Now()
	unhealthy := a.reportHealth(ctx, store, checks, end.Sub(start))
	fmt.Fprintf(a.stdout, "results are in %s: contentpipe sql \"SELECT ts, provider, ok, outcome, latency_ms, first_token_ms FROM health_checks ORDER BY ts DESC LIMIT 10\"\n", cfg.DatabaseName())
	if opts.metricsFile != "" {
		if err := writeMetrics(opts.metricsFile, healthMetrics(checks, end)); err != nil {
			a.log.Warn("metrics file", "path", opts.metricsFile, "err", err)
		}
	}
	a.evaluateRules(ctx, cfg, store, ch.Links, end)
	a.flushAlerts(ctx, cfg, store)
	if walkErr != nil {
		return exitWith(exitPartial, fmt.Errorf("health: %w", walkErr))
	}
	if unhealthy > 0 {
		return exitWith(exitPartial, fmt.Errorf("%d of %d providers unhealthy", unhealthy, len(checks)))
	}
	return nil
}

// reportHealth prints the walk's table and tally and queues the health
// alert of every unhealthy link (not a cold, rate-limited, capped,
// over-budget or exhausted one). It returns how many are unhealthy.
func (a *app) reportHealth(ctx context.Context, store *telemetry.Store, checks []chain.HealthCheck, took time.Duration) int {
	out := alerts.NewOutbox(store, a.stderr)
	fmt.Fprintf(a.stdout, "\nhealth of the chain (%d providers, %s):\n", len(checks), took.Round(time.Millisecond))
	printHealthTable(a.stdout, checks)
	tally := map[chain.HealthState]int{}
	for _, h := range checks {
		tally[h.State]++
	}
	for _, al := range alerts.HealthAlerts(checks) {
		_ = out.Notify(context.WithoutCancel(ctx), al)
	}
	var parts []string
	for _, st := range chain.HealthStates() {
		if n := tally[st]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, st))
		}
	}
	fmt.Fprintf(a.stdout, "%s\n", strings.Join(parts, ", "))
	return tally[chain.HealthUnhealthy] + tally[chain.HealthMisconfigured]
}

// printHealthTable writes one row per link: provider, state (the words of
// chain.HealthState), model and what was measured against the link's
// baseline, in columns as wide as their longest cell.
func printHealthTable(w io.Writer, checks []chain.HealthCheck) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, h := range checks {
		var what string
		switch {
		case h.Skip != "" || h.Outcome == "":
			what = h.Detail
		case h.OK:
			what = fmt.Sprintf("latency %s, first token %s", ms(h.Latency), ms(h.FirstToken))
			switch {
			case h.Baseline != nil && h.Baseline.Calls > 0:
				what = strings.TrimPrefix(h.Detail, "cold: ") // the figures, measured and usual
			case h.Detail != "":
				what += "; " + h.Detail
			}
		default:
			status := ""
			if h.HTTPStatus != 0 {
				status = fmt.Sprintf(" (HTTP %d)", h.HTTPStatus)
			}
			what = fmt.Sprintf("%s%s after %s: %s", h.Outcome, status, ms(h.Latency), h.Detail)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", h.Provider, h.State, h.Model, what)
	}
	_ = tw.Flush()
}

func ms(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/prompts"
	"github.com/contentpipe/contentpipe/telemetry"
)

func init() { register((*app).healthCmd) }

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
latency, first-token time and status in health_checks (and the call in calls with
purpose 'health'), and alerts on a failure. A capped, exhausted or circuit-open
provider is reported as such and not called. Exit 0 all healthy, 1 any unhealthy,
2 config error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.doHealth(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.demo, "demo", false, "check the embedded demo chain (simulated providers on loopback)")
	cmd.Flags().StringVar(&opts.metricsFile, "metrics-file", "", "write the results in the Prometheus text format to this file (node_exporter textfile collector)")
	return cmd
}

// healthStore adapts telemetry.Store to chain.HealthRecorder.
type healthStore struct{ s *telemetry.Store }

func (h healthStore) RecordHealth(ctx context.Context, c chain.HealthCheck) error {
	detail := c.Detail
	outcome := c.Outcome
	if c.Skip != "" {
		outcome = chain.Outcome(c.Skip) // cap, exhausted, circuit_open: not called
	}
	return h.s.RecordHealth(ctx, telemetry.HealthCheck{TS: c.TS, Provider: c.Provider, Model: c.Model, OK: c.OK,
		HTTPStatus: c.HTTPStatus, Latency: c.Latency, FirstToken: c.FirstToken, Outcome: outcome, Detail: detail})
}

// doHealth is one health walk (also called by `serve`).
func (a *app) doHealth(ctx context.Context, opts healthOptions) error {
	l, err := a.load(opts.demo)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer l.close()
	cfg := l.cfg
	store, err := telemetry.Open(cfg.Database)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer store.Close()
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
		if e.Kind == "try" {
			fmt.Fprintf(a.stdout, "checking %s …\n", e.Provider)
		}
	}
	start := time.Now()
	checks, walkErr := ch.Health(ctx, func(family string) chain.Prompt {
		r := set.Health(family)
		return chain.Prompt{System: r.System, User: r.User, Version: r.Version}
	}, healthStore{store})
	end := time.Now()

	out := alerts.NewOutbox(store, a.stderr)
	unhealthy := 0
	fmt.Fprintf(a.stdout, "\nhealth of the chain (%d providers, %s):\n", len(ch.Links), end.Sub(start).Round(time.Millisecond))
	printHealthTable(a.stdout, checks)
	for _, h := range checks {
		if h.Unhealthy() {
			unhealthy++
			outcome := string(h.Outcome)
			if h.Skip != "" {
				outcome = h.Status
			}
			_ = out.Notify(context.WithoutCancel(ctx), alerts.HealthAlert(h.Provider, outcome, h.HTTPStatus, h.Detail))
		}
	}
	fmt.Fprintf(a.stdout, "results are in %s: contentpipe sql \"SELECT ts, provider, ok, outcome, latency_ms, first_token_ms FROM health_checks ORDER BY ts DESC LIMIT 10\"\n", cfg.Database)
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

// printHealthTable writes one row per link: provider, status, model and
// what was measured, in columns as wide as their longest cell.
func printHealthTable(w io.Writer, checks []chain.HealthCheck) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, h := range checks {
		switch {
		case h.Status == chain.HealthOK:
			fmt.Fprintf(tw, "  %s\thealthy\t%s\tlatency %s, first token %s\n", h.Provider, h.Model, ms(h.Latency), ms(h.FirstToken))
		case h.Skip != "":
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", h.Provider, h.Status, h.Model, h.Detail)
		default:
			status := ""
			if h.HTTPStatus != 0 {
				status = fmt.Sprintf(" (HTTP %d)", h.HTTPStatus)
			}
			fmt.Fprintf(tw, "  %s\tUNHEALTHY\t%s\t%s%s after %s: %s\n", h.Provider, h.Model, h.Outcome, status, ms(h.Latency), h.Detail)
		}
	}
	_ = tw.Flush()
}

func ms(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/alerts/telegramtest"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/runs"
	"github.com/contentpipe/contentpipe/telemetry"
)

// started is when this process started: alerts queued before it were not
// echoed on this process's stderr.
var started = time.Now()

// flushTimeout bounds the outbox flush at the end of a command.
const flushTimeout = 90 * time.Second

// telegramOnce logs the "Telegram disabled" notice at most once per process
// (serve flushes many times).
var telegramOnce sync.Once

// notifier returns where outbox alerts go: Telegram when configured, else
// the console (stderr), which prints only alerts queued by earlier
// commands, since Outbox echoes new ones on stderr when they are queued.
func (a *app) notifier(cfg *config.Config) (alerts.Deliverer, string) {
	t := cfg.Alerts.Telegram
	if t.Enabled() {
		return alerts.NewTelegram(t.Token, t.ChatID, t.APIEndpoint, nil), "telegram"
	}
	return &alerts.Console{W: a.stderr, Since: started}, "console"
}

// flushAlerts delivers the pending alerts of the outbox at the end of a
// command that opened the store (run, health, report, review, serve's
// jobs). It never fails the command: Telegram being down or flooding
// leaves the alerts pending for a later command, with a warning. It runs
// even when ctx was cancelled (SIGTERM), within flushTimeout (and, but
// in run and serve, within stopGrace of the signal: see stopWatch; an
// alert cut short stays pending, its lease freed with the process). The result
// counts what this flush did (alerts leased by another process at the same
// moment are that process's concern).
func (a *app) flushAlerts(ctx context.Context, cfg *config.Config, store *telemetry.Store) alerts.FlushResult {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), flushTimeout)
	defer cancel()
	to, kind := a.notifier(cfg)
	if kind == "console" {
		telegramOnce.Do(func() {
			a.log.Debug("telegram not configured: alerts go to stderr and the alerts table")
		})
	}
	// The sender holds its leases as a registered process, so that a sender
	// killed mid-send frees its alerts at once (telemetry.Store.Alive).
	proc, err := store.Register()
	if err != nil {
		a.log.Warn("alerts outbox", "err", err)
		return alerts.FlushResult{Stopped: true}
	}
	defer proc.Close()
	s := &alerts.Sender{Store: store, To: to, Owner: telemetry.OwnerKey(proc.Owner), Log: a.log,
		Warn: alerts.NewOutbox(store, a.stderr)}
	res, err := s.Flush(ctx)
	if err != nil {
		a.log.Warn("alerts outbox", "err", err)
		res.Stopped = true
		return res
	}
	if res.Sent > 0 && kind == "telegram" {
		a.log.Info("alerts sent to telegram", "sent", res.Sent)
	}
	if res.Failed > 0 || res.Stopped {
		n, _ := store.PendingAlerts(ctx)
		a.log.Warn("some alerts could not be delivered and stay in the outbox for the next command", "via", kind, "pending", n)
	}
	return res
}

// rules are the database-wide alert rules of cfg, checked after a command
// that made calls: the chain_down and provider_down incidents (derived
// from the recorded calls, skips and jobs), caps, budget and review_queue.
func (a *app) rules(cfg *config.Config, store *telemetry.Store) *alerts.Rules {
	return &alerts.Rules{Store: store, Notifier: alerts.NewOutbox(store, a.stderr), Console: a.stderr,
		BudgetWarnAt: cfg.Alerts.BudgetWarnAt, ProviderDownAfter: cfg.Alerts.ProviderDownAfter}
}

// evaluateRules runs the rules after a command that made calls outside a
// run (health), with the caps and limits of links (runs.Limits).
func (a *app) evaluateRules(ctx context.Context, cfg *config.Config, store *telemetry.Store, links []*chain.Link, now time.Time) {
	r := a.rules(cfg, store)
	r.Caps, r.Spend = runs.Limits(links, chain.Budget{DailyUSD: cfg.Budget.DailyUSD, MonthlyUSD: cfg.Budget.MonthlyUSD}, now)
	if err := r.Evaluate(context.WithoutCancel(ctx), now); err != nil {
		a.log.Warn("alert rules", "err", err)
	}
}

// recordRun keeps the run's summary in the database and, with a metrics
// file, writes the run's metrics there (runs.Run.Record).
func (a *app) recordRun(ctx context.Context, store *telemetry.Store, res runs.Result, start time.Time, metricsFile string) {
	ctx = context.WithoutCancel(ctx)
	run := runSummary(res.Chain.Links, res.Summary, start, res.End)
	summary, err := run.text()
	if err == nil {
		err = store.SaveLastRun(ctx, summary, res.End)
	}
	if err != nil {
		a.log.Warn("the last run's metrics", "err", err)
	}
	if metricsFile != "" {
		addStoreMetrics(ctx, run, store, res.Chain.Links, res.End)
		if err := writeMetrics(metricsFile, run); err != nil {
			a.log.Warn("metrics file", "path", metricsFile, "err", err)
		}
	}
}

func (a *app) alertsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "alerts",
		Short: "The alerts outbox: deliver pending alerts, or send a test message",
	}
	cmd.AddCommand(&cobra.Command{
		Use:   "flush",
		Short: "Deliver the pending alerts now (every command does this at its end); exit 1 if some could not be delivered",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			cfg, store, err := a.openForAlerts()
			if err != nil {
				return err
			}
			defer store.Close()
			res := a.flushAlerts(c.Context(), cfg, store)
			n, err := store.PendingAlerts(c.Context())
			if err != nil {
				return exitWith(exitPartial, err)
			}
			fmt.Fprintf(a.stdout, "%d alert(s) delivered, %d pending\n", res.Sent, n)
			if res.Failed > 0 || res.Stopped {
				return exitWith(exitPartial, errors.New("some alerts could not be delivered; they stay in the outbox"))
			}
			return nil
		},
	})
	var demo bool
	test := &cobra.Command{
		Use:   "test",
		Short: "Send a test message to the configured Telegram chat; --demo shows what alerts look like, without a bot",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, _ []string) error {
			if demo {
				return a.alertsTestDemo(c.Context())
			}
			cfg, err := config.LoadForReading(a.configPath, a.getenv)
			if err != nil {
				return exitWith(exitConfig, err)
			}
			t := cfg.Alerts.Telegram
			if !t.Enabled() {
				return exitWith(exitConfig, fmt.Errorf("telegram is not configured: set %s and %s (see alerts.telegram in %s)", t.TokenEnv, t.ChatIDEnv, cfg.Path))
			}
			host, _ := os.Hostname()
			tg := alerts.NewTelegram(t.Token, t.ChatID, t.APIEndpoint, nil)
			if err := tg.SendText(c.Context(), fmt.Sprintf("contentpipe test message from %s (%s). Alerts reach this chat.", host, time.Now().UTC().Format(time.RFC3339))); err != nil {
				return exitWith(exitPartial, err)
			}
			fmt.Fprintln(a.stdout, "test message sent to telegram")
			return nil
		},
	}
	test.Flags().BoolVar(&demo, "demo", false, "show example alerts as a Telegram chat displays them (sent to a loopback fake of the Bot API; no bot, no config, no database)")
	cmd.AddCommand(test)
	return cmd
}

// alertsTestDemo delivers alerts.DemoAlerts through the real Telegram
// notifier to a loopback fake of the Bot API (alerts/telegramtest, which
// parses the HTML as Telegram does) and prints each message as the chat
// shows it.
func (a *app) alertsTestDemo(ctx context.Context) error {
	srv := telegramtest.NewServer("100000:demo-token-not-secret", "4242")
	defer srv.Close()
	tg := alerts.NewTelegram(srv.Token, srv.ChatID, srv.Endpoint, nil)
	demo := alerts.DemoAlerts(time.Now())
	out := a.stdout // examples to read, not a log of deeds: never stamped
	if s, ok := out.(*lineStamper); ok {
		out = s.w
	}
	fmt.Fprintf(out, "%d example alerts as a Telegram chat shows them (sent to a loopback fake of the Bot API: no bot needed).\n", len(demo))
	fmt.Fprintln(out, "Without Telegram the same text goes to stderr as ALERT [SEVERITY] lines. Set-up: README \"Setting up Telegram\".")
	for _, al := range demo {
		before := len(srv.Messages())
		if err := tg.Deliver(ctx, al); err != nil {
			return exitWith(exitPartial, fmt.Errorf("alerts test --demo: %s: %w", al.Rule, err))
		}
		for _, m := range srv.Messages()[before:] {
			fmt.Fprintf(out, "\n── %s ──\n%s\n", al.Rule, m.Text)
		}
	}
	return nil
}

// openForAlerts loads the config and opens the store for `alerts flush`.
func (a *app) openForAlerts() (*config.Config, *telemetry.Store, error) {
	cfg, err := config.LoadForReading(a.configPath, a.getenv)
	if err != nil {
		return nil, nil, exitWith(exitConfig, err)
	}
	store, err := openStore(cfg)
	if err != nil {
		return nil, nil, exitWith(exitConfig, err)
	}
	return cfg, store, nil
}

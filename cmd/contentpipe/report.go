package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// reportSender is what the report needs from a chat: *alerts.Telegram.
type reportSender interface {
	SendSections(ctx context.Context, sections []string) error
	SendPhoto(ctx context.Context, name string, png []byte, caption string) error
}

var _ reportSender = (*alerts.Telegram)(nil)

func (a *app) reportCmd() *cobra.Command {
	var (
		days  int
		chart string
	)
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Health/cost report of the last N days: calls, fallback share, cost, quality trend, shadow readiness, review queue",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 1 {
				return exitWith(exitConfig, fmt.Errorf("--days %d: use a whole number of days, 1 or more", days))
			}
			return a.doReport(cmd.Context(), cmd, days, cmd.Flags().Changed("days"), chart)
		},
	}
	cmd.Flags().IntVar(&days, "days", 7, "days to report on: the window starts at 00:00 UTC that many days ago and ends now")
	cmd.Flags().StringVar(&chart, "chart", "", "also write the chart (cost per provider per day, quality trend) to this PNG file")
	return cmd
}

// doReport prints the report of the last days and, when the decay detectors
// flag a new trend, queues the weekly trend alert. It reads through a
// read-only store; only a trend alert opens the database for writing.
// With Telegram configured the chart and the short chat version of the
// report (alerts.Report.Telegram) go there too. The chart spans the days
// with data, or every day of the window when --days was given.
func (a *app) doReport(ctx context.Context, cmd *cobra.Command, days int, daysGiven bool, chart string) error {
	cfg, err := a.readConfig(cmd)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	now := time.Now().UTC()
	since := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC).AddDate(0, 0, -days)
	firstLink := ""
	if len(cfg.Chain) > 0 {
		firstLink = cfg.Chain[0].Name
	}

	var (
		d       telemetry.ReportData
		pending int
		spend   strings.Builder // budgets, cost per article, estimate error
	)
	store, err := telemetry.OpenReadOnly(cfg.Database)
	switch {
	case err == nil:
		d, err = store.Report(ctx, since, now, firstLink)
		if err == nil {
			pending, err = store.PendingAlerts(ctx)
		}
		if err == nil {
			err = writeSpend(ctx, &spend, cfg, store, since, now)
		}
		if err == nil {
			var lines []string
			if lines, err = misconfiguredWords(ctx, store, cfg); len(lines) > 0 {
				spend.WriteString("\nmisconfigured links (a person must act):\n")
				writeMisconfigured(&spend, lines)
			}
		}
		store.Close()
		if err != nil {
			return exitWith(exitPartial, err)
		}
	case !dbExists(cfg.Database):
		a.log.Warn("no database yet: nothing to report", "database", cfg.DatabaseName())
		d = telemetry.ReportData{Since: since, Until: now, HistoryFrom: since.Add(-now.Sub(since)), FirstLink: firstLink}
	default:
		return exitWith(exitPartial, err)
	}

	rep := alerts.NewReport(d)
	text := rep.Text()
	fmt.Fprint(a.stdout, text)
	fmt.Fprint(a.stdout, spend.String())
	copt := alerts.ChartOptions{FullWindow: daysGiven, Threshold: cfg.Quality.Threshold}
	if chart != "" {
		png, err := alerts.Chart(rep.Data, copt)
		if err == nil {
			err = os.WriteFile(chart, png, 0o644)
		}
		if err != nil {
			return exitWith(exitPartial, fmt.Errorf("chart %s: %w", chart, err))
		}
		fmt.Fprintf(a.stdout, "\nchart written to %s\n", chart)
	}

	// Writing is needed only to queue a trend alert or deliver pending ones.
	if trends := rep.Alerts(); len(trends) > 0 || pending > 0 {
		a.queueAndFlush(ctx, cfg, rep)
	}

	tg := cfg.Alerts.Telegram
	if !tg.Enabled() {
		return nil
	}
	var to reportSender = alerts.NewTelegram(tg.Token, tg.ChatID, tg.APIEndpoint, nil)
	if err := sendReport(ctx, to, rep, copt); err != nil {
		a.log.Warn("report not sent to Telegram", "err", err)
		var de *alerts.DeliveryError
		if errors.As(err, &de) && de.ClampedFrom > 0 {
			a.queueClamped(ctx, cfg, de.ClampedFrom)
		}
		return nil
	}
	fmt.Fprintln(a.stdout, "\nreport sent to Telegram")
	return nil
}

// queueAndFlush opens the database for writing, puts the report's trend
// alerts into the outbox (rule "trend", quiet a week) and delivers the
// pending alerts like every other command. Failures are warnings: the
// report itself was printed.
func (a *app) queueAndFlush(ctx context.Context, cfg *config.Config, rep alerts.Report) {
	store, err := openStore(cfg)
	if err != nil {
		a.log.Warn("trend alerts not queued", "err", err)
		return
	}
	defer store.Close()
	out := alerts.NewOutbox(store, a.stderr)
	for _, al := range rep.Alerts() {
		if err := out.Notify(ctx, al); err != nil {
			a.log.Warn("trend alert not queued", "key", al.Key, "err", err)
		}
	}
	a.flushAlerts(ctx, cfg, store)
}

// queueClamped raises the delay_clamped warning for a retry_after Telegram
// named while the report was sent; it goes out with the next flush.
func (a *app) queueClamped(ctx context.Context, cfg *config.Config, sent time.Duration) {
	store, err := openStore(cfg)
	if err != nil {
		a.log.Warn("delay_clamped alert not queued", "err", err)
		return
	}
	defer store.Close()
	if err := alerts.NewOutbox(store, a.stderr).Notify(ctx, alerts.ClampedAlert(sent, time.Now())); err != nil {
		a.log.Warn("delay_clamped alert not queued", "err", err)
	}
}

// sendReport sends the chart with a short caption, then the report's chat
// sections (the full text stays on stdout).
func sendReport(ctx context.Context, to reportSender, rep alerts.Report, copt alerts.ChartOptions) error {
	png, err := alerts.Chart(rep.Data, copt)
	if err != nil {
		return err
	}
	if err := to.SendPhoto(ctx, "contentpipe-report.png", png, rep.Caption()); err != nil {
		return fmt.Errorf("send chart: %w", err)
	}
	if err := to.SendSections(ctx, rep.Telegram()); err != nil {
		return fmt.Errorf("send report text: %w", err)
	}
	return nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

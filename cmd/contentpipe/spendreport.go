package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// writeSpend writes the report's money part: spend against each token and
// money limit (current period), the cost per published article per link
// and the estimate error per link in the window since since.
func writeSpend(ctx context.Context, w io.Writer, cfg *config.Config, store *telemetry.Store, since, now time.Time) error {
	fmt.Fprintln(w, "\nBudgets (settled cost plus calls in flight, current period)")
	checks := 0
	for _, l := range cfg.Chain {
		reset, err := chain.ParseCapReset(l.CapReset)
		if err != nil {
			return err
		}
		if l.DailyTokens == 0 && l.DailyBudgetUSD == 0 {
			continue
		}
		tok, usd, err := store.LinkSpend(ctx, l.Name, reset.DayStart(now))
		if err != nil {
			return err
		}
		if l.DailyTokens > 0 {
			checks++
			fmt.Fprintf(w, "  %-12s daily_tokens       %10d of %10d (%3.0f%%)\n", l.Name, tok, l.DailyTokens, 100*float64(tok)/float64(l.DailyTokens))
		}
		if l.DailyBudgetUSD > 0 {
			checks++
			fmt.Fprintf(w, "  %-12s daily_budget_usd   $%9.4f of $%9.4f (%3.0f%%)\n", l.Name, usd, l.DailyBudgetUSD, 100*usd/l.DailyBudgetUSD)
		}
	}
	y, m, d := now.UTC().Date()
	for _, b := range []struct {
		name     string
		from, to time.Time
		max      float64
	}{{"budget.daily_usd", time.Date(y, m, d, 0, 0, 0, 0, time.UTC), time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC), cfg.Budget.DailyUSD},
		{"budget.monthly_usd", time.Date(y, m, 1, 0, 0, 0, 0, time.UTC), time.Date(y, m+1, 1, 0, 0, 0, 0, time.UTC), cfg.Budget.MonthlyUSD}} {
		if b.max <= 0 {
			continue
		}
		usd, err := store.ChainSpend(ctx, b.from, b.to)
		if err != nil {
			return err
		}
		checks++
		fmt.Fprintf(w, "  %-12s %-18s $%9.4f of $%9.4f (%3.0f%%)\n", "chain", b.name, usd, b.max, 100*usd/b.max)
	}
	if checks == 0 {
		fmt.Fprintln(w, "  no token or money limit configured (daily_tokens, daily_budget_usd, budget.daily_usd, budget.monthly_usd)")
	}
	costs, err := store.ArticleCosts(ctx, since)
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "\nCost per published article per link (every call of the link, over the articles it published)")
	for _, c := range costs {
		per := "-"
		if c.Published > 0 {
			per = fmt.Sprintf("$%.4f", c.PerArticle)
		}
		fmt.Fprintf(w, "  %-12s %4d published  $%9.4f spent  %s per article\n", c.Provider, c.Published, c.SpendUSD, per)
	}
	errs, err := store.SpendErrors(ctx, since)
	if err != nil {
		return err
	}
	if len(errs) > 0 {
		fmt.Fprintln(w, "\nEstimate error per link (reserved estimate against settled cost)")
		for _, e := range errs {
			fmt.Fprintf(w, "  %-12s %4d calls  estimated $%.4f, settled $%.4f, mean |error| $%.6f, max $%.6f\n", e.Provider, e.Calls, e.EstUSD, e.ActualUSD, e.MeanAbsErr, e.MaxAbsErr)
		}
	}
	return nil
}

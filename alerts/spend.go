package alerts

import (
	"context"
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// SpendStore is what the money and token rules read; *telemetry.Store
// implements it.
type SpendStore interface {
	LinkSpend(ctx context.Context, provider string, dayStart time.Time) (tokens int, usd float64, err error)
	ChainSpend(ctx context.Context, from, to time.Time) (float64, error)
	SkipsSince(ctx context.Context, reason chain.SkipReason, provider string, from, to time.Time) (int, error)
}

// SpendCheck is one token or money limit to watch: a link's daily_tokens
// or daily_budget_usd (Provider set), or the chain's budget.daily_usd or
// budget.monthly_usd (Provider ""), for the period that started at From.
type SpendCheck struct {
	Limit    chain.SpendLimit
	Provider string
	From     time.Time
	Max      float64
}

// end is the end of c's period: a UTC day, or a month for the chain's
// monthly budget. Use dated after it (a clock set back) does not count.
func (c SpendCheck) end() time.Time {
	if c.Limit == chain.LimitChainMonth {
		return c.From.AddDate(0, 1, 0)
	}
	return c.From.AddDate(0, 0, 1)
}

// SpendUse is a SpendCheck with its use and whether calls were skipped
// for it (jobs fell through or were deferred).
type SpendUse struct {
	SpendCheck
	Used    float64
	Skipped bool
}

// SpendAlerts returns, for each limit, the warning when its use passed
// warnAt (0 = DefaultBudgetWarnAt) or calls were skipped for it, and the
// reached alert when calls were skipped for it. Keys carry the limit, the provider and the period's
// start date, so each is raised at most once per limit per period.
func SpendAlerts(uses []SpendUse, warnAt float64) []chain.Alert {
	if warnAt <= 0 {
		warnAt = DefaultBudgetWarnAt
	}
	var out []chain.Alert
	for _, u := range uses {
		if u.Max <= 0 {
			continue
		}
		who := "the chain"
		if u.Provider != "" {
			who = "provider " + u.Provider
		}
		key := string(RuleBudget) + ":" + string(u.Limit) + ":" + u.Provider + ":" + u.From.Format("2006-01-02")
		since := "the period that started " + u.From.Format("2006-01-02 15:04 MST")
		if u.Skipped {
			m := message{severity: SeverityWarning, what: fmt.Sprintf("%s reached its %s of %s: calls were skipped (%s used).", who, u.Limit, amount(u.Limit, u.Max), amount(u.Limit, u.Used)),
				since: since, done: "Calls that would cross it are skipped; jobs fall through to the other links or are deferred until it resets.",
				run: "contentpipe report --days 1"}
			out = append(out, chain.Alert{Key: key + ":reached", Rule: RuleBudget, Severity: m.severity, Text: m.text()})
		}
		// A limit reached was passed on the way: the warning is raised too
		// (once, by its key) even when no evaluation fell between the two.
		if u.Used < warnAt*u.Max && !u.Skipped {
			continue
		}
		m := message{severity: SeverityWarning, what: fmt.Sprintf("%s has used %s of its %s of %s (%.0f%%, warning at %.0f%%).", who, amount(u.Limit, u.Used), u.Limit, amount(u.Limit, u.Max), 100*u.Used/u.Max, 100*warnAt),
			since: since, done: "Nothing yet: calls go on until the next one would cross the limit.", run: "contentpipe report --days 1"}
		out = append(out, chain.Alert{Key: key + ":warn", Rule: RuleBudget, Severity: m.severity, Text: m.text()})
	}
	return out
}

// amount is v in the unit of limit.
func amount(limit chain.SpendLimit, v float64) string {
	if limit == chain.LimitTokens {
		return fmt.Sprintf("%.0f tokens", v)
	}
	return fmt.Sprintf("$%.4f", v)
}

// spendUses reads the use of every check.
func spendUses(ctx context.Context, st SpendStore, checks []SpendCheck) ([]SpendUse, error) {
	var out []SpendUse
	for _, c := range checks {
		u := SpendUse{SpendCheck: c}
		var err error
		if c.Provider == "" {
			u.Used, err = st.ChainSpend(ctx, c.From, c.end())
		} else {
			var tok int
			tok, u.Used, err = st.LinkSpend(ctx, c.Provider, c.From)
			if c.Limit == chain.LimitTokens {
				u.Used = float64(tok)
			}
		}
		if err != nil {
			return nil, err
		}
		n, err := st.SkipsSince(ctx, c.Limit.Reason(), c.Provider, c.From, c.end())
		if err != nil {
			return nil, err
		}
		u.Skipped = n > 0
		out = append(out, u)
	}
	return out, nil
}

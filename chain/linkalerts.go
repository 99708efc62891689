package chain

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// linkAlert words an alert in the parts every alert has (what happened,
// since when, what automation did, the one command to run), in the plain
// text alerts.FormatAlert reads.
func linkAlert(what, since, done, run string) string {
	var b strings.Builder
	b.WriteString(what)
	for _, p := range [][2]string{{"Since: ", since}, {"Automation: ", done}, {"Run: ", run}} {
		if p[1] == "" {
			continue
		}
		v := p[1]
		if p[0] == "Run: " {
			v = "`" + v + "`"
		}
		b.WriteString("\n" + p[0] + v)
	}
	return b.String()
}

// notifyTooLarge raises the warning that l cannot take a request of this
// size: the limit and the size the provider named and the fix. Its key
// carries the UTC day, so the outbox queues one per link and day.
func (c *Chain) notifyTooLarge(ctx context.Context, l *Link, pe *ProviderError, now time.Time) {
	if c.Notifier == nil {
		return
	}
	size := "the provider named no limit"
	if tl := pe.TooLarge; tl.Limit > 0 || tl.Requested > 0 {
		unit := tl.Unit
		if unit == "" {
			unit = "tokens"
		}
		size = fmt.Sprintf("limit %d %s, this request %d", tl.Limit, unit, tl.Requested)
	}
	fix := pe.Fix
	if fix == "" {
		fix = "lower the link's max_tokens or shorten the prompt, or move the link to a tier with a larger limit"
	}
	day := now.UTC().Format(time.DateOnly)
	text := linkAlert(
		fmt.Sprintf("Provider %s cannot take the request: too large (%s). Fix: %s. Provider said: %s", l.Name, size, fix, clipWords(pe.Message, 300)),
		now.UTC().Format("2006-01-02 15:04 UTC"),
		"The link is skipped for each job it cannot take (never retried or waited for); the next providers take them. One warning a day per link.",
		"contentpipe report --days 1")
	_ = c.Notifier.Notify(ctx, Alert{Key: string(RuleTooLarge) + ":" + l.Name + ":" + day, Rule: RuleTooLarge, Severity: SeverityWarning, Text: text})
}

// notifyMisconfigured raises the one alert of a misconfigured link's
// incident: the provider's words (scrubbed) and the fix. Its key carries
// the incident's start, so the outbox queues it once.
func (c *Chain) notifyMisconfigured(ctx context.Context, l *Link, m Misconfig) {
	if c.Notifier == nil {
		return
	}
	fix := m.Fix
	if fix == "" {
		fix = "check the link's model, account and region in the config"
	}
	text := linkAlert(
		fmt.Sprintf("Provider %s is misconfigured: %s. Fix: %s.", l.Name, clipWords(m.Detail, 800), fix),
		m.Since.UTC().Format("2006-01-02 15:04 UTC"),
		fmt.Sprintf("No job calls %s until its config changes or the daily probe (next %s) answers; jobs go to the next providers. No further message for this incident.",
			l.Name, m.ProbeAfter.UTC().Format("2006-01-02 15:04 UTC")),
		"contentpipe health")
	_ = c.Notifier.Notify(ctx, Alert{Key: string(RuleMisconfigured) + ":" + l.Name + ":" + m.Since.UTC().Format(time.RFC3339), Rule: RuleMisconfigured,
		Severity: SeverityWarning, Text: text})
}

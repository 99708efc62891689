package alerts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// Deliverer delivers one outbox alert to a human. *Telegram and *Console
// implement it. An error that is a *DeliveryError says what happened
// (flood control, unreachable, parts already delivered).
type Deliverer interface {
	Deliver(ctx context.Context, a telemetry.Alert) error
}

// OutboxStore is the part of the alerts table the Sender needs;
// *telemetry.Store implements it. Every method is safe across processes.
type OutboxStore interface {
	ClaimPendingAlerts(ctx context.Context, owner string, now time.Time, limit int) ([]telemetry.Alert, error)
	MarkAlertSent(ctx context.Context, id int64, now time.Time) error
	MarkAlertFailed(ctx context.Context, id int64, errText string, nextTry time.Time) error
	SetAlertText(ctx context.Context, id int64, text string) error
}

// DefaultMaxWait is the flood-control (429 retry_after) wait a Sender sits
// out within one command; a longer one leaves the alert to a later command.
const DefaultMaxWait = 10 * time.Second

// continued prefixes the rest of an alert whose first parts were sent.
const continued = "(continued) "

// Sender drains the alerts outbox into a Deliverer. Each alert is claimed
// (leased) before it is sent and marked sent right after, one at a time,
// so two processes flushing at once never send the same alert, and an
// alert whose delivery fails stays pending for a later flush: at once when
// Telegram was unreachable, after retry_after on flood control, with a
// growing backoff when Telegram refused it (e.g. chat not found).
//
// A retry_after larger than MaxRetryAfter is clamped to it (the alert
// waits a day, not ten years) and, when Warn is set, raises a
// delay_clamped warning naming the value, once a day.
//
// Store, To and Owner are required. MaxWait is the total flood-control wait
// sat out in one Flush (0 = DefaultMaxWait). Clock is where the sender
// reads the time and sits out flood control (nil = the wall clock). Warn
// and Log may be nil. A Sender is not for concurrent use; run several
// Senders (processes) instead.
type Sender struct {
	Store   OutboxStore
	To      Deliverer
	Owner   string
	MaxWait time.Duration
	Clock   chain.Clock
	Warn    chain.Notifier
	Log     *slog.Logger
}

// FlushResult counts what one Flush did.
type FlushResult struct {
	Sent    int
	Failed  int  // alerts that stay pending after a failed attempt
	Stopped bool // the drain stopped early (Telegram unreachable or flooding)
}

// perAlertTimeout bounds one alert's delivery, well inside
// telemetry.AlertLease, so a lease never runs out during a send.
const perAlertTimeout = 60 * time.Second

// Flush delivers every pending alert that is due, oldest first. It returns
// an error only when the outbox itself cannot be read or written; delivery
// failures are recorded on the alerts and counted.
func (s *Sender) Flush(ctx context.Context) (FlushResult, error) {
	var res FlushResult
	budget := s.MaxWait
	if budget <= 0 {
		budget = DefaultMaxWait
	}
	for {
		if ctx.Err() != nil {
			return res, nil
		}
		claimed, err := s.Store.ClaimPendingAlerts(ctx, s.Owner, s.now(), 1)
		if err != nil {
			return res, fmt.Errorf("flush alerts: %w", err)
		}
		if len(claimed) == 0 {
			return res, nil
		}
		a := claimed[0]
		sent, stop, err := s.deliver(ctx, a, &budget)
		if err != nil {
			return res, err
		}
		if sent {
			res.Sent++
		} else {
			res.Failed++
		}
		if stop {
			res.Stopped = true
			return res, nil
		}
	}
}

// deliver sends one claimed alert, sitting out flood control within
// budget. stop says the drain should end (no point trying others now).
func (s *Sender) deliver(ctx context.Context, a telemetry.Alert, budget *time.Duration) (sent, stop bool, err error) {
	actx, cancel := context.WithTimeout(ctx, perAlertTimeout)
	defer cancel()
	stored := a.Text
	for {
		// The "(… ago)" of a Since line is as old as the alert: say it as
		// of this send (an alert kept in the outbox for a day says so).
		a.Text = SinceAsOf(stored, a.CreatedAt, s.now())
		derr := s.To.Deliver(actx, a)
		if derr == nil {
			if err := s.Store.MarkAlertSent(ctx, a.ID, s.now()); err != nil {
				return false, true, fmt.Errorf("flush alerts: %w", err)
			}
			return true, false, nil
		}
		var de *DeliveryError
		if !errors.As(derr, &de) {
			de = &DeliveryError{Err: derr}
		}
		if de.Sent > 0 && de.Remaining != "" {
			// Never send a delivered part twice: keep only the rest.
			a.Text = continued + strings.TrimPrefix(de.Remaining, continued)
			// The rest is stored with its ages as of its queueing, like
			// the whole was, so a later send adds only its own delay.
			a.Text = SinceAsOf(a.Text, s.now(), a.CreatedAt)
			stored = a.Text
			if err := s.Store.SetAlertText(ctx, a.ID, a.Text); err != nil {
				return false, true, fmt.Errorf("flush alerts: %w", err)
			}
		}
		if de.ClampedFrom > 0 {
			s.warnClamped(ctx, de.ClampedFrom)
		}
		if de.RetryAfter > 0 && de.RetryAfter <= *budget {
			*budget -= de.RetryAfter
			s.logf("telegram flood control: waiting", "alert", a.Key, "retry_after", de.RetryAfter)
			if err := s.sleep(actx, de.RetryAfter); err == nil {
				continue
			}
		}
		now := s.now()
		next := now
		switch {
		case de.RetryAfter > 0:
			next = now.Add(de.RetryAfter)
		case de.Unreachable:
			next = now // the next command of any kind tries again
		default:
			next = now.Add(Backoff(a.Attempts + 1))
		}
		s.logf("alert not delivered, kept in the outbox", "alert", a.Key, "err", de.Error(), "next_try", next.UTC().Format(time.RFC3339))
		if err := s.Store.MarkAlertFailed(ctx, a.ID, de.Error(), next); err != nil {
			return false, true, fmt.Errorf("flush alerts: %w", err)
		}
		return false, de.Unreachable || de.RetryAfter > 0 || ctx.Err() != nil, nil
	}
}

// Backoff is the wait before the next try of an alert Telegram refused for
// the attempts-th time: 1m, 2m, 4m, … up to 6h.
func Backoff(attempts int) time.Duration {
	d := time.Minute
	for i := 1; i < attempts && d < 6*time.Hour; i++ {
		d *= 2
	}
	return min(d, 6*time.Hour)
}

func (s *Sender) now() time.Time { return clockOf(s.Clock).Now() }

func (s *Sender) sleep(ctx context.Context, d time.Duration) error {
	return clockOf(s.Clock).Sleep(ctx, d)
}

// warnClamped raises the delay_clamped warning for a retry_after of
// sent: once a day (the key carries the day).
func (s *Sender) warnClamped(ctx context.Context, sent time.Duration) {
	s.logf("telegram retry_after beyond the bound: clamped", "retry_after", sent, "bound", MaxRetryAfter)
	if s.Warn == nil {
		return
	}
	a := ClampedAlert(sent, s.now())
	if err := s.Warn.Notify(ctx, a); err != nil {
		s.logf("delay_clamped alert not queued", "err", err)
	}
}

// ClampedAlert is the delay_clamped warning for a Telegram retry_after of
// sent seconds, clamped to MaxRetryAfter at now; its key carries the day,
// so it is raised once a day.
func ClampedAlert(sent time.Duration, now time.Time) chain.Alert {
	m := message{severity: SeverityWarning,
		what:  fmt.Sprintf("Telegram asked to wait %s (retry_after %d s) before the next message; that is beyond belief, so the wait was clamped to %s.", roundDur(sent), int64(sent/time.Second), roundDur(MaxRetryAfter)),
		since: stamp(now),
		done:  fmt.Sprintf("Pending alerts are kept in the outbox and tried again after %s; nothing is lost.", roundDur(MaxRetryAfter)),
		run:   "contentpipe alerts flush"}
	return chain.Alert{Key: string(RuleDelayClamped) + ":telegram:" + now.UTC().Format("2006-01-02"), Rule: RuleDelayClamped, Severity: m.severity, Text: m.text()}
}

func (s *Sender) logf(msg string, args ...any) {
	if s.Log != nil {
		s.Log.Warn(msg, args...)
	}
}

// Console is the Deliverer when Telegram is not configured: the alerts go
// to stderr. Outbox.Notify already prints each alert on the console when it
// is queued, so Console prints only alerts queued before Since (by an
// earlier command, e.g. kept while Telegram was down and since removed
// from the config) and marks the rest delivered without printing them again.
// The zero Since prints none.
type Console struct {
	W     io.Writer
	Since time.Time
}

// Deliver prints a when it was queued before c.Since.
func (c *Console) Deliver(_ context.Context, a telemetry.Alert) error {
	if c.W == nil || c.Since.IsZero() || !a.CreatedAt.Before(c.Since) {
		return nil
	}
	EchoAlert(c.W, a.Rule, a.Severity, a.Key, fmt.Sprintf("ALERT [%s] (queued %s) %s", strings.ToUpper(a.Severity), a.CreatedAt.UTC().Format(time.RFC3339), a.Text))
	return nil
}

// sinceAgo is the "(… ago)" of a Since line, with the optional "the
// oldest, " that ReviewQueueAlert writes.
var sinceAgo = regexp.MustCompile(`\((the oldest, )?([0-9][0-9a-z.µ ]*?) ago\)`)

// SinceAsOf returns text with the age in each "Since: … (X ago)" line
// moved from queued (when the text was written) to now, so that an alert
// delivered later than it was queued says its true age. Other lines, and
// an age it cannot read, are left as they are. With now before queued it
// takes the age back (used to store a text as of its queueing).
func SinceAsOf(text string, queued, now time.Time) string {
	if queued.IsZero() || now.Equal(queued) || !strings.Contains(text, labelSince) {
		return text
	}
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(strings.TrimPrefix(l, continued), labelSince) {
			continue
		}
		lines[i] = sinceAgo.ReplaceAllStringFunc(l, func(m string) string {
			sub := sinceAgo.FindStringSubmatch(m)
			age, ok := parseAge(sub[2])
			if !ok {
				return m
			}
			return "(" + sub[1] + roundDur(max(0, age+now.Sub(queued))) + " ago)"
		})
	}
	return strings.Join(lines, "\n")
}

// parseAge reads an age as roundDur writes it: "2.5 days", "2h5m", "40s".
func parseAge(s string) (time.Duration, bool) {
	if d, ok := strings.CutSuffix(s, " days"); ok {
		f, err := strconv.ParseFloat(d, 64)
		return time.Duration(f * float64(24*time.Hour)), err == nil
	}
	d, err := time.ParseDuration(s)
	return d, err == nil
}

// Package alerts turns the conditions automation cannot fix into messages
// for a human: rules with dedupe keys and quiet periods, incidents, the
// outbox that keeps alerts until they are delivered, and the notifiers
// (console, and Telegram when configured), and renders the report.
package alerts

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// Outbox queues alerts in the database's alerts table; the Sender delivers
// them. It implements chain.Notifier. Store is required. Console, when
// set, also gets each newly queued alert as plain text (stderr). Clock nil
// means the wall clock. Quiet overrides the quiet period of some rules; a
// rule missing from it (every rule, with the zero value) gets the default
// of quiet.
// An Outbox is safe for concurrent use when Console is.
type Outbox struct {
	Store   *telemetry.Store
	Console io.Writer
	Clock   chain.Clock
	Quiet   map[Rule]time.Duration
}

var _ chain.Notifier = (*Outbox)(nil)

// NewOutbox returns an Outbox on store that echoes new alerts to console.
func NewOutbox(store *telemetry.Store, console io.Writer) *Outbox {
	return &Outbox{Store: store, Console: console}
}

// QuietFor returns the quiet period of rule.
func (o *Outbox) QuietFor(rule Rule) time.Duration {
	if d, ok := o.Quiet[rule]; ok {
		return d
	}
	return quiet(rule)
}

// Notify queues a unless its key is within its rule's quiet period.
func (o *Outbox) Notify(ctx context.Context, a chain.Alert) error {
	now := clockOf(o.Clock).Now()
	queued, err := o.Store.EnqueueAlert(ctx, telemetry.Alert{Key: a.Key, Rule: string(a.Rule), Severity: string(a.Severity), Text: a.Text}, o.QuietFor(a.Rule), now)
	if err != nil {
		EchoAlert(o.Console, string(a.Rule), string(a.Severity), a.Key, fmt.Sprintf("ALERT (not queued: %v) [%s] %s", err, a.Severity, a.Text))
		return fmt.Errorf("queue alert %s: %w", a.Key, err)
	}
	if queued {
		EchoAlert(o.Console, string(a.Rule), string(a.Severity), a.Key, fmt.Sprintf("ALERT [%s] %s", strings.ToUpper(string(a.Severity)), a.Text))
	}
	return nil
}

// RecordWriter is a console that takes an alert as one record (a
// structured log, `--log-format json`) instead of its lines one by one.
type RecordWriter interface {
	WriteAlert(rule, severity, key, text string) error
}

// EchoAlert writes text, the console form of the alert of rule, severity
// and key, to w (nil: nowhere): as one record when w is a RecordWriter,
// else as its lines.
func EchoAlert(w io.Writer, rule, severity, key, text string) {
	switch rw := w.(type) {
	case nil:
	case RecordWriter:
		_ = rw.WriteAlert(rule, severity, key, text)
	default:
		fmt.Fprintln(w, text)
	}
}

// clockOf returns c, or the wall clock when c is nil.
func clockOf(c chain.Clock) chain.Clock {
	if c == nil {
		return chain.RealClock{}
	}
	return c
}

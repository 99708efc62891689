// Package alerts turns the conditions automation cannot fix into messages
// for a human: rules with dedupe keys and quiet periods, the outbox that
// keeps them until they are delivered, and the notifiers (console, and
// Telegram when configured).
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

// Quiet is the quiet period of each rule (SPEC §8): an alert whose key was
// sent within it is not queued again. Rules not listed get DefaultQuiet.
var Quiet = map[string]time.Duration{
	"all_failed":    24 * time.Hour,     // key is per job: once per job
	"auth_error":    time.Hour,          // at once, then at most hourly per provider
	"provider_down": 24 * time.Hour,     // once a day
	"budget":        24 * time.Hour,     // key carries the day: once per provider per day
	"health":        time.Hour,          // at once
	"trend":         7 * 24 * time.Hour, // weekly
	"review_queue":  24 * time.Hour,     // once a day
}

// DefaultQuiet is the quiet period of a rule missing from Quiet.
const DefaultQuiet = time.Hour

// Outbox queues alerts in the database's alerts table; the outbox sender
// delivers them. It implements chain.Notifier. Console, when set, also gets
// each newly queued alert as a plain line (stderr).
type Outbox struct {
	Store   *telemetry.Store
	Console io.Writer
	Now     func() time.Time // nil = time.Now
}

var _ chain.Notifier = (*Outbox)(nil)

// NewOutbox returns an Outbox on store that echoes new alerts to console.
func NewOutbox(store *telemetry.Store, console io.Writer) *Outbox {
	return &Outbox{Store: store, Console: console}
}

// Notify queues a unless its key is within its rule's quiet period.
func (o *Outbox) Notify(ctx context.Context, a chain.Alert) error {
	now := time.Now()
	if o.Now != nil {
		now = o.Now()
	}
	quiet, ok := Quiet[a.Rule]
	if !ok {
		quiet = DefaultQuiet
	}
	queued, err := o.Store.EnqueueAlert(ctx, telemetry.Alert{Key: a.Key, Rule: a.Rule, Severity: a.Severity, Text: a.Text}, quiet, now)
	if err != nil {
		if o.Console != nil {
			fmt.Fprintf(o.Console, "ALERT (not queued: %v) [%s] %s\n", err, a.Severity, a.Text)
		}
		return fmt.Errorf("queue alert %s: %w", a.Key, err)
	}
	if queued && o.Console != nil {
		fmt.Fprintf(o.Console, "ALERT [%s] %s\n", strings.ToUpper(a.Severity), a.Text)
	}
	return nil
}

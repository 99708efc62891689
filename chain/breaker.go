package chain

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// BreakerState is the state of a circuit breaker, as stored in
// Breaker.State and named in provider_events.
type BreakerState string

// Breaker states. The empty state is closed.
const (
	BreakerClosed   BreakerState = "closed"
	BreakerOpen     BreakerState = "open"
	BreakerHalfOpen BreakerState = "half_open"
)

// maxBreakerEvents bounds Breaker.Events so that a busy provider's stored
// state stays small; only the most recent events are kept.
const maxBreakerEvents = 64

// BreakerSettings tunes a circuit breaker. The zero value of every field
// means its default: Window 10m, MinSamples 4, FailureRate 0.5, Cooldown 2m,
// MaxCooldown 1h, CloseAfter 2. Off switches the breaker off: it records
// nothing and always allows.
type BreakerSettings struct {
	Off         bool
	Window      time.Duration // sliding window of recorded calls
	MinSamples  int           // calls in the window before the rate counts
	FailureRate float64       // share of failures in the window that opens the circuit
	Cooldown    time.Duration // first open period; doubles on each failed probe
	MaxCooldown time.Duration // ceiling of the doubled cooldown
	CloseAfter  int           // consecutive probe successes that close the circuit
}

// WithDefaults returns s with every zero field set to its default.
func (s BreakerSettings) WithDefaults() BreakerSettings {
	if s.Window <= 0 {
		s.Window = 10 * time.Minute
	}
	if s.MinSamples <= 0 {
		s.MinSamples = 4
	}
	if s.FailureRate <= 0 {
		s.FailureRate = 0.5
	}
	if s.Cooldown <= 0 {
		s.Cooldown = 2 * time.Minute
	}
	if s.MaxCooldown <= 0 {
		s.MaxCooldown = time.Hour
	}
	if s.MaxCooldown < s.Cooldown {
		s.MaxCooldown = s.Cooldown
	}
	if s.CloseAfter <= 0 {
		s.CloseAfter = 2
	}
	return s
}

// BreakerEvent is one recorded call in the breaker's sliding window. In
// JSON it is one number, the call's time in Unix milliseconds, negative
// for a failure: the state is read and written on every call, and a
// window of 64 events as numbers decodes several times faster than as
// objects with time strings.
type BreakerEvent struct {
	At   time.Time
	Fail bool
}

// MarshalJSON encodes e as ±Unix milliseconds (negative = failure).
func (e BreakerEvent) MarshalJSON() ([]byte, error) {
	ms := e.At.UnixMilli()
	if e.Fail {
		ms = -ms
	}
	return strconv.AppendInt(nil, ms, 10), nil
}

// UnmarshalJSON decodes the form MarshalJSON writes.
func (e *BreakerEvent) UnmarshalJSON(b []byte) error {
	return e.parse(string(b))
}

func (e *BreakerEvent) parse(s string) error {
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("breaker event %s: %w", s, err)
	}
	e.Fail = ms < 0
	if ms < 0 {
		ms = -ms
	}
	e.At = time.UnixMilli(ms).UTC()
	return nil
}

// BreakerEvents is the breaker's sliding window. It is coded as one JSON
// array of BreakerEvent numbers by hand: the state is read and written on
// every call, and decoding 64 elements through encoding/json's per-element
// calls costs more than the rest of the row.
type BreakerEvents []BreakerEvent

// MarshalJSON encodes the window as an array of ±Unix milliseconds.
func (es BreakerEvents) MarshalJSON() ([]byte, error) {
	if es == nil {
		return []byte("null"), nil
	}
	out := make([]byte, 0, 2+15*len(es))
	out = append(out, '[')
	for i, e := range es {
		if i > 0 {
			out = append(out, ',')
		}
		ms := e.At.UnixMilli()
		if e.Fail {
			ms = -ms
		}
		out = strconv.AppendInt(out, ms, 10)
	}
	return append(out, ']'), nil
}

// UnmarshalJSON decodes the form MarshalJSON writes (whitespace allowed).
func (es *BreakerEvents) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if s == "null" {
		*es = nil
		return nil
	}
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return fmt.Errorf("breaker events %.40q: not an array", s)
	}
	body := strings.TrimSpace(s[1 : len(s)-1])
	out := make(BreakerEvents, 0, strings.Count(body, ",")+1)
	for body != "" {
		num, rest, _ := strings.Cut(body, ",")
		var e BreakerEvent
		if err := e.parse(strings.TrimSpace(num)); err != nil {
			return err
		}
		out = append(out, e)
		body = strings.TrimSpace(rest)
	}
	*es = out
	return nil
}

// Breaker is the persisted circuit breaker of one provider (closed → open →
// half-open → closed). Its zero value is a closed breaker with no history.
// It is plain data: it is not safe for concurrent use, and callers mutate it
// inside Store.UpdateProviderState so that several processes see one state.
// Every method is a pure function of the receiver, the settings and now.
//
// Only 5xx answers, timeouts and broken streams are failures; any answer
// (even one the quality gate rejects) is a success; 429s are not recorded at
// all. Results recorded while the circuit is open (calls that started before
// it opened) are ignored.
type Breaker struct {
	State    BreakerState  `json:"state"`            // BreakerClosed, BreakerOpen, BreakerHalfOpen; "" = closed
	Events   BreakerEvents `json:"events,omitempty"` // sliding window (closed state only)
	OpenedAt time.Time     `json:"opened_at,omitempty"`
	// Cooldown is the current open period; 0 means the settings' Cooldown.
	Cooldown time.Duration `json:"cooldown,omitempty"`
	// Successes counts consecutive successful probes in half-open.
	Successes int `json:"successes,omitempty"`
	// ProbeAt is when the current half-open probe was let through; zero when
	// none is in flight. A probe whose result never came (a killed process)
	// expires after the cooldown, so the breaker cannot stick half-open.
	ProbeAt time.Time `json:"probe_at,omitempty"`
}

// Current returns the state name, with "" reported as BreakerClosed.
func (b *Breaker) Current() BreakerState {
	if b.State == "" {
		return BreakerClosed
	}
	return b.State
}

// Until returns when an open circuit lets its next probe through (zero when
// the circuit is not open). It is the "until" of a circuit_open skip.
func (b *Breaker) Until(s BreakerSettings) time.Time {
	if b.Current() != BreakerOpen {
		return time.Time{}
	}
	return b.OpenedAt.Add(b.cooldown(s.WithDefaults()))
}

func (b *Breaker) cooldown(s BreakerSettings) time.Duration {
	if b.Cooldown > 0 {
		return b.Cooldown
	}
	return s.Cooldown
}

// Allow reports whether a call may be made now. An open circuit whose
// cooldown has passed moves to half-open (returned as a Transition) and lets
// one probe through; while that probe is in flight further calls are refused.
// A closed circuit always allows.
func (b *Breaker) Allow(s BreakerSettings, now time.Time) (ok bool, tr *Transition) {
	s = s.WithDefaults()
	if s.Off {
		return true, nil
	}
	switch b.Current() {
	case BreakerOpen:
		if now.Before(b.OpenedAt.Add(b.cooldown(s))) {
			return false, nil
		}
		tr = b.move(BreakerHalfOpen, now, fmt.Sprintf("cooldown %s over, probing", b.cooldown(s)))
		b.Successes = 0
		b.ProbeAt = now
		return true, tr
	case BreakerHalfOpen:
		if !b.ProbeAt.IsZero() && now.Before(b.ProbeAt.Add(b.cooldown(s))) {
			return false, nil
		}
		b.ProbeAt = now
		return true, nil
	default:
		return true, nil
	}
}

// Record records the result of one call (failure: 5xx, timeout, broken
// stream) and returns the transition it caused, or nil. A closed circuit
// opens when its window holds at least MinSamples calls and the failure
// share reaches FailureRate. A failed half-open probe reopens the circuit
// with its cooldown doubled (at most MaxCooldown); CloseAfter consecutive
// successful probes close it and reset the cooldown.
func (b *Breaker) Record(s BreakerSettings, now time.Time, failure bool) *Transition {
	s = s.WithDefaults()
	if s.Off {
		return nil
	}
	switch b.Current() {
	case BreakerOpen:
		return nil
	case BreakerHalfOpen:
		b.ProbeAt = time.Time{}
		if failure {
			next := b.cooldown(s) * 2
			if next > s.MaxCooldown {
				next = s.MaxCooldown
			}
			b.Cooldown = next
			b.OpenedAt = now
			b.Successes = 0
			return b.move(BreakerOpen, now, fmt.Sprintf("probe failed, cooldown %s", next))
		}
		b.Successes++
		if b.Successes < s.CloseAfter {
			return nil
		}
		n := b.Successes
		b.Successes = 0
		b.Cooldown = 0
		b.OpenedAt = time.Time{}
		b.Events = nil
		return b.move(BreakerClosed, now, fmt.Sprintf("%d probes succeeded", n))
	}
	b.add(s, now, BreakerEvent{At: now, Fail: failure})
	// Only a failure can open the circuit: a success never makes a
	// provider look worse, even when it completes MinSamples.
	fails, total := b.counts()
	if !failure || total < s.MinSamples || float64(fails) < s.FailureRate*float64(total) {
		return nil
	}
	b.OpenedAt = now
	b.Cooldown = s.Cooldown
	b.Successes = 0
	b.ProbeAt = time.Time{}
	b.Events = nil
	return b.move(BreakerOpen, now, fmt.Sprintf("%d of %d calls failed within %s, cooldown %s", fails, total, s.Window, s.Cooldown))
}

// add appends e to the window, drops the events older than the window
// and keeps at most maxBreakerEvents of the newest. The window is a new
// slice of its exact size: a copy of the Breaker never shares it.
func (b *Breaker) add(s BreakerSettings, now time.Time, e BreakerEvent) {
	old := b.Events
	at := func(k int) BreakerEvent {
		if k < len(old) {
			return old[k]
		}
		return e
	}
	n := len(old) + 1
	cut := now.Add(-s.Window)
	i := 0
	for i < n && !at(i).At.After(cut) {
		i++
	}
	if n-i > maxBreakerEvents {
		i = n - maxBreakerEvents
	}
	out := make(BreakerEvents, 0, n-i)
	if i < len(old) {
		out = append(out, old[i:]...)
	}
	if i < n {
		out = append(out, e)
	}
	b.Events = out
}

func (b *Breaker) counts() (fails, total int) {
	for _, e := range b.Events {
		if e.Fail {
			fails++
		}
	}
	return fails, len(b.Events)
}

func (b *Breaker) move(to BreakerState, now time.Time, detail string) *Transition {
	from := b.Current()
	b.State = to
	return &Transition{TS: now, Kind: TransitionBreaker, From: string(from), To: string(to), Detail: detail}
}

package chain

import (
	"fmt"
	"time"
)

// learner returns the state update that persists the lesson in the
// attempt's transaction, or nil when the call taught nothing.
func (l Lesson) learner(provider string, s BreakerSettings, now time.Time) func(*ProviderState) []Transition {
	if l.ExhaustUntil.IsZero() && l.Sample == SampleNone && l.Misconfig == nil && !l.Reached {
		return nil
	}
	return func(st *ProviderState) []Transition { return l.Apply(st, s, now, provider) }
}

// Apply writes the lesson into st, the stored state of provider, and
// returns the transitions it caused: the breaker sample first, then an
// exhaustion that ends later than the stored one. It only changes st, so a
// store may run it again on a fresh state (a busy transaction retried).
func (l Lesson) Apply(st *ProviderState, s BreakerSettings, now time.Time, provider string) []Transition {
	var trs []*Transition
	if l.Sample != SampleNone {
		trs = append(trs, st.Breaker.Record(s, now, l.Sample == SampleFailure))
	}
	if !l.ExhaustUntil.IsZero() && l.ExhaustUntil.After(st.ExhaustedUntil) {
		from := "available"
		if now.Before(st.ExhaustedUntil) {
			from = "exhausted"
		}
		st.ExhaustedUntil, st.ExhaustedReason = l.ExhaustUntil, l.ExhaustReason
		trs = append(trs, &Transition{TS: now, Kind: TransitionExhausted, From: from, To: "exhausted",
			Detail: fmt.Sprintf("%s until %s", l.ExhaustReason, l.ExhaustUntil.UTC().Format(time.RFC3339))})
	}
	if tr := l.applyMisconfig(st, now); tr != nil {
		trs = append(trs, tr)
	}
	return transitions(provider, trs...)
}

// applyMisconfig opens, keeps or closes st's misconfigured incident and
// returns the transition when one opened or closed.
func (l Lesson) applyMisconfig(st *ProviderState, now time.Time) *Transition {
	old := st.Misconfigured
	switch {
	case l.Misconfig != nil:
		m := *l.Misconfig
		st.Misconfigured = &m
		if old != nil && old.ConfigHash == m.ConfigHash {
			m.Since = old.Since // the same incident: a probe found it still so
			return nil
		}
		return &Transition{TS: now, Kind: TransitionMisconfigured, From: "available", To: "misconfigured", Detail: m.Detail}
	case l.Reached && old != nil:
		st.Misconfigured = nil
		return &Transition{TS: now, Kind: TransitionMisconfigured, From: "misconfigured", To: "available",
			Detail: "the provider took a call again (misconfigured since " + old.Since.UTC().Format(time.RFC3339) + ")"}
	}
	return nil
}

package chain

import (
	"context"
	"fmt"
	"time"
)

// HealthState is the state of one link in a health walk, in the words
// that `health`, `report`, the alerts and the metrics share.
type HealthState string

// The health states. HealthUnhealthy and HealthMisconfigured fail a
// health walk; a cold or rate-limited link answered, and a capped,
// over-budget or exhausted one is out until a reset that automation waits
// for (it is not called). A misconfigured link has its own alert (one per
// incident), not the health alert.
const (
	HealthHealthy     HealthState = "healthy"      // answered {"ok":true} in its usual time
	HealthCold        HealthState = "cold"         // answered, but far slower than its job calls (a warning)
	HealthRateLimited HealthState = "rate_limited" // answered 429 for the minute (or our own pacing): reachable
	HealthCapped      HealthState = "capped"       // daily cap used up: not called
	HealthOverBudget  HealthState = "over_budget"  // a token limit or budget reached: not called
	HealthExhausted   HealthState = "exhausted"    // quota exhausted until a reset: not called (or learnt now)
	HealthUnhealthy   HealthState = "unhealthy"    // failed: error status, timeout, bad answer
	// HealthMisconfigured: the link answered that only a person can make
	// it work (model not found, region, credits, a quota of 0).
	HealthMisconfigured HealthState = "misconfigured"
)

// HealthStates lists every state, healthiest first (the metrics' state set).
func HealthStates() []HealthState {
	return []HealthState{HealthHealthy, HealthCold, HealthRateLimited, HealthCapped, HealthOverBudget, HealthExhausted, HealthMisconfigured, HealthUnhealthy}
}

// Unhealthy reports whether the state fails the walk.
func (s HealthState) Unhealthy() bool { return s == HealthUnhealthy || s == HealthMisconfigured }

// skipState is the state of a link that was not called for reason r. An
// open circuit (or a halt) follows failures, so it is unhealthy; a reason
// this function does not name (token limits, budgets) is a limit of the
// chain's own, so over budget.
func skipState(r SkipReason) HealthState {
	switch r {
	case SkipCap:
		return HealthCapped
	case SkipExhausted:
		return HealthExhausted
	case SkipCircuitOpen, SkipHalted:
		return HealthUnhealthy
	case SkipMisconfigured:
		return HealthMisconfigured
	default:
		return HealthOverBudget
	}
}

// callState is the state of a link that was called: the outcome of its
// call, and whether the answer passed.
func callState(o Outcome, pass bool) HealthState {
	switch {
	case pass:
		return HealthHealthy
	case o == OutcomeRateLimited:
		return HealthRateLimited
	case o == OutcomeQuotaExhausted:
		return HealthExhausted
	case o == OutcomeMisconfigured:
		return HealthMisconfigured
	default:
		return HealthUnhealthy
	}
}

// RecordedHealthState is the state of a health_checks row from its outcome
// column (a call outcome, a skip reason, or "cold") and its ok flag.
func RecordedHealthState(outcome string, ok bool) HealthState {
	switch outcome {
	case string(HealthCold), string(HealthCapped), string(HealthOverBudget):
		return HealthState(outcome)
	case string(SkipCap), string(SkipExhausted), string(SkipCircuitOpen), string(SkipHalted),
		"tokens", "budget": // the skip reasons of token limits and budgets
		return skipState(SkipReason(outcome))
	}
	return callState(Outcome(outcome), ok)
}

// BaselineWindow is how far back a link's latency baseline reaches.
const BaselineWindow = 14 * 24 * time.Hour

// LatencyBaseline is a link's usual speed: the medians of first-token time
// and total latency over its answered job calls of BaselineWindow, or
// (Health set) over its earlier answered health calls. Calls is 0 when
// there is none; FirstToken is 0 when no call measured it.
type LatencyBaseline struct {
	Calls      int
	FirstToken time.Duration
	Total      time.Duration
	Health     bool
}

// HealthBaselineSource gives a link's latency baseline from its earlier
// answered health calls (before a time), for a link without job calls:
// the backup nobody calls (telemetry's store implements it).
type HealthBaselineSource interface {
	HealthBaseline(ctx context.Context, provider string, before time.Time) (LatencyBaseline, error)
}

// BaselineSource gives a link's latency baseline from its job calls since
// a time (telemetry's store implements it).
type BaselineSource interface {
	LatencyBaseline(ctx context.Context, provider string, since time.Time) (LatencyBaseline, error)
}

// ColdRule says when a health call is cold: slower than Factor times the
// link's baseline (first token or total) and slower than Floor. The zero
// value means Factor 3 and Floor 2s.
type ColdRule struct {
	Factor float64
	Floor  time.Duration
}

// Default cold rule.
const (
	DefaultColdFactor = 3.0
	DefaultColdFloor  = 2 * time.Second
)

func (r ColdRule) limits() (float64, time.Duration) {
	f, floor := r.Factor, r.Floor
	if f <= 0 {
		f = DefaultColdFactor
	}
	if floor <= 0 {
		floor = DefaultColdFloor
	}
	return f, floor
}

// Judge reports whether a health call that took latency, with its first
// token after firstToken (0 = unknown: the total counts), is cold against
// b, and says why in words with the figures. Without a baseline the floor
// alone decides: a link never used before is the one most likely cold.
func (r ColdRule) Judge(latency, firstToken time.Duration, b LatencyBaseline) (bool, string) {
	f, floor := r.limits()
	if b.Calls == 0 {
		got, what := firstToken, "first token"
		if got <= 0 {
			got, what = latency, "total"
		}
		words := fmt.Sprintf("%s %s; no baseline (no answered job calls in 14 days, no earlier health call): cold above the floor %s", what, roundMS(got), floor)
		if got > floor {
			return true, "cold: " + words
		}
		return false, words
	}
	slow := func(got, usual time.Duration) bool {
		return got > 0 && usual > 0 && got >= floor && float64(got) > f*float64(usual)
	}
	ft, total := slow(firstToken, b.FirstToken), slow(latency, b.Total)
	calls := "calls"
	if b.Calls == 1 {
		calls = "call"
	}
	of := fmt.Sprintf("job %s of 14 days", calls)
	if b.Health {
		of = fmt.Sprintf("earlier health %s (no job calls in 14 days)", calls)
	}
	figures := fmt.Sprintf("first token %s vs median %s, total %s vs median %s over %d %s (cold above %g× and %s)",
		roundMS(firstToken), roundMS(b.FirstToken), roundMS(latency), roundMS(b.Total), b.Calls, of, f, floor)
	if ft || total {
		return true, "cold: " + figures
	}
	return false, figures
}

func roundMS(d time.Duration) string {
	if d <= 0 {
		return "-"
	}
	return d.Round(time.Millisecond).String()
}

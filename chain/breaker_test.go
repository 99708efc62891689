package chain

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

var brkT0 = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

// record feeds n results to b one second apart from at and returns the last
// transition and the time after the last result.
func record(t *testing.T, b *Breaker, s BreakerSettings, at time.Time, fails ...bool) (*Transition, time.Time) {
	t.Helper()
	var last *Transition
	for _, f := range fails {
		if tr := b.Record(s, at, f); tr != nil {
			last = tr
		}
		at = at.Add(time.Second)
	}
	return last, at
}

func TestBreakerOpensOnFailureRate(t *testing.T) {
	var s BreakerSettings
	var b Breaker
	if b.Current() != BreakerClosed {
		t.Fatalf("zero breaker is %q", b.Current())
	}
	// Three failures are below MinSamples 4: still closed.
	if tr, _ := record(t, &b, s, brkT0, true, true, true); tr != nil || b.Current() != BreakerClosed {
		t.Fatalf("opened below min samples: %+v %q", tr, b.State)
	}
	at := brkT0.Add(10 * time.Second)
	tr := b.Record(s, at, true)
	if tr == nil || b.Current() != BreakerOpen {
		t.Fatalf("4 of 4 failures did not open: %q", b.State)
	}
	want := Transition{TS: at, Kind: "breaker", From: string(BreakerClosed), To: string(BreakerOpen)}
	if tr.TS != want.TS || tr.Kind != want.Kind || tr.From != want.From || tr.To != want.To || tr.Detail == "" {
		t.Fatalf("transition = %+v, want %+v with a detail", *tr, want)
	}
	if ok, _ := b.Allow(s, at.Add(time.Second)); ok {
		t.Fatal("open breaker allowed a call")
	}
	if got := b.Until(s); !got.Equal(at.Add(2 * time.Minute)) {
		t.Fatalf("Until = %s, want opened+2m", got)
	}
}

func TestBreakerRateThreshold(t *testing.T) {
	var s BreakerSettings
	// 1 failure in 4 (25%) stays closed; 2 in 4 (50%) opens.
	var b Breaker
	if tr, _ := record(t, &b, s, brkT0, false, true, false, false); tr != nil {
		t.Fatalf("25%% failures opened: %+v", tr)
	}
	var c Breaker
	if tr, _ := record(t, &c, s, brkT0, false, true, false, true); tr == nil || c.Current() != BreakerOpen {
		t.Fatalf("50%% failures did not open: %q", c.State)
	}
	// Custom settings: 3 samples at 0.6.
	cs := BreakerSettings{MinSamples: 3, FailureRate: 0.6}
	var d Breaker
	if tr, _ := record(t, &d, cs, brkT0, true, false, false, true); tr != nil {
		t.Fatalf("2 of 4 opened at rate 0.6: %+v", tr)
	}
	if tr, _ := record(t, &d, cs, brkT0.Add(time.Minute), true); tr == nil {
		t.Fatal("3 of 5 did not open at rate 0.6")
	}
}

// TestBreakerIgnoresRateLimits drives the breaker as the chain does: only
// decisions with Breaker set are recorded as failures, so 429s never open it.
func TestBreakerIgnoresRateLimits(t *testing.T) {
	var s BreakerSettings
	p := DefaultRetryPolicy()
	feed := func(b *Breaker, at time.Time, e *ProviderError) *Transition {
		d := p.Decide(e, 0, at, at.Add(15*time.Minute), at.Add(6*time.Hour), half)
		if d.Outcome == OutcomeRateLimited || d.Outcome == OutcomeQuotaExhausted || d.Outcome == OutcomeAuthError {
			return nil // not recorded
		}
		return b.Record(s, at, d.Breaker)
	}
	var b Breaker
	at := brkT0
	for i := range 20 {
		e := &ProviderError{Status: 429, Outcome: OutcomeRateLimited, RetryAfter: 26 * time.Second}
		if i%2 == 1 {
			e = &ProviderError{Status: 429, Outcome: OutcomeQuotaExhausted, Scope: ScopeDay}
		}
		if tr := feed(&b, at, e); tr != nil {
			t.Fatalf("a 429 moved the breaker: %+v", tr)
		}
		at = at.Add(time.Second)
	}
	feed(&b, at, &ProviderError{Status: 400, Outcome: OutcomeBadRequest})
	feed(&b, at, &ProviderError{Status: 200, Outcome: OutcomeBlocked})
	feed(&b, at, &ProviderError{Status: 503, Outcome: OutcomeServerError})
	if b.Current() != BreakerClosed || len(b.Events) != 3 {
		t.Fatalf("after 20 429s and 3 mixed results: state %q, %d events", b.State, len(b.Events))
	}
	// bad_request and blocked were successes: 2 failures of 4 opens it.
	if tr := feed(&b, at, &ProviderError{Outcome: OutcomeTimeoutFirstToken}); tr == nil || b.Current() != BreakerOpen {
		t.Fatalf("2 breaker failures of 4 did not open: %q %+v", b.State, b.Events)
	}
	// stream_broken is a breaker failure too.
	var c Breaker
	for range 4 {
		feed(&c, at, &ProviderError{Status: 200, Outcome: OutcomeStreamBroken})
	}
	if c.Current() != BreakerOpen {
		t.Fatalf("4 broken streams: %q", c.State)
	}
}

func TestBreakerHalfOpenAndClose(t *testing.T) {
	var s BreakerSettings
	var b Breaker
	_, at := record(t, &b, s, brkT0, true, true, true, true)
	opened := b.OpenedAt
	if ok, tr := b.Allow(s, opened.Add(2*time.Minute-time.Millisecond)); ok || tr != nil {
		t.Fatal("allowed before the cooldown ended")
	}
	probe := opened.Add(2 * time.Minute)
	ok, tr := b.Allow(s, probe)
	if !ok || tr == nil || tr.From != string(BreakerOpen) || tr.To != string(BreakerHalfOpen) || !tr.TS.Equal(probe) {
		t.Fatalf("Allow after cooldown = %v, %+v", ok, tr)
	}
	if ok, _ := b.Allow(s, probe.Add(time.Second)); ok {
		t.Fatal("a second call was let through while the probe is in flight")
	}
	if tr := b.Record(s, probe.Add(5*time.Second), false); tr != nil || b.Current() != BreakerHalfOpen {
		t.Fatalf("one success of 2 closed: %+v", tr)
	}
	if ok, _ := b.Allow(s, probe.Add(6*time.Second)); !ok {
		t.Fatal("second probe refused after the first succeeded")
	}
	tr = b.Record(s, probe.Add(9*time.Second), false)
	if tr == nil || tr.From != string(BreakerHalfOpen) || tr.To != string(BreakerClosed) || b.Current() != BreakerClosed {
		t.Fatalf("2 consecutive successes did not close: %+v %q", tr, b.State)
	}
	if b.Cooldown != 0 || len(b.Events) != 0 || !b.OpenedAt.IsZero() {
		t.Fatalf("closing did not reset: %+v", b)
	}
	if ok, _ := b.Allow(s, at.Add(time.Hour)); !ok {
		t.Fatal("closed breaker refused")
	}
}

func TestBreakerFailedProbeDoublesCooldown(t *testing.T) {
	var s BreakerSettings
	var b Breaker
	record(t, &b, s, brkT0, true, true, true, true)
	want := 2 * time.Minute
	var seen []time.Duration
	for i := range 8 {
		at := b.OpenedAt.Add(want)
		if ok, _ := b.Allow(s, at.Add(-time.Second)); ok {
			t.Fatalf("round %d: allowed a second before the %s cooldown ended", i, want)
		}
		if ok, _ := b.Allow(s, at); !ok {
			t.Fatalf("round %d: refused after the %s cooldown", i, want)
		}
		tr := b.Record(s, at.Add(time.Second), true)
		if tr == nil || tr.From != string(BreakerHalfOpen) || tr.To != string(BreakerOpen) {
			t.Fatalf("round %d: failed probe did not reopen: %+v", i, tr)
		}
		want = min(2*want, time.Hour)
		if b.Cooldown != want {
			t.Fatalf("round %d: cooldown = %s, want %s", i, b.Cooldown, want)
		}
		seen = append(seen, b.Cooldown)
	}
	if seen[0] != 4*time.Minute || seen[len(seen)-1] != time.Hour {
		t.Fatalf("cooldowns = %v", seen)
	}
	// A success after the failures: half-open, then closed, then a fresh
	// open starts again at the base cooldown.
	at := b.OpenedAt.Add(time.Hour)
	b.Allow(s, at)
	record(t, &b, s, at, false, false)
	if b.Current() != BreakerClosed {
		t.Fatalf("state %q after two successful probes", b.State)
	}
	record(t, &b, s, at.Add(time.Minute), true, true, true, true)
	if b.Current() != BreakerOpen || b.Cooldown != 2*time.Minute {
		t.Fatalf("reopened with cooldown %s, want 2m", b.Cooldown)
	}
}

func TestBreakerHalfOpenSuccessThenFailure(t *testing.T) {
	// CloseAfter counts consecutive successes: a failure in between reopens.
	var s BreakerSettings
	var b Breaker
	record(t, &b, s, brkT0, true, true, true, true)
	at := b.OpenedAt.Add(2 * time.Minute)
	b.Allow(s, at)
	b.Record(s, at, false)
	b.Allow(s, at.Add(time.Second))
	if tr := b.Record(s, at.Add(2*time.Second), true); tr == nil || tr.To != string(BreakerOpen) || b.Successes != 0 {
		t.Fatalf("failure after one success: %+v, successes %d", tr, b.Successes)
	}
}

func TestBreakerStaleProbeExpires(t *testing.T) {
	// A probe whose process died never records; after a cooldown another
	// probe is let through.
	var s BreakerSettings
	var b Breaker
	record(t, &b, s, brkT0, true, true, true, true)
	at := b.OpenedAt.Add(2 * time.Minute)
	if ok, _ := b.Allow(s, at); !ok {
		t.Fatal("no probe")
	}
	if ok, _ := b.Allow(s, at.Add(time.Minute)); ok {
		t.Fatal("second probe within the cooldown")
	}
	if ok, tr := b.Allow(s, at.Add(2*time.Minute)); !ok || tr != nil {
		t.Fatalf("stale probe did not expire: %v %+v", ok, tr)
	}
}

func TestBreakerIgnoresResultsWhileOpen(t *testing.T) {
	var s BreakerSettings
	var b Breaker
	record(t, &b, s, brkT0, true, true, true, true)
	before := b
	for _, f := range []bool{false, false, true} {
		if tr := b.Record(s, brkT0.Add(time.Minute), f); tr != nil {
			t.Fatalf("result while open moved the breaker: %+v", tr)
		}
	}
	if !reflect.DeepEqual(before, b) {
		t.Fatalf("state changed while open: %+v → %+v", before, b)
	}
}

func TestBreakerWindowSlides(t *testing.T) {
	var s BreakerSettings
	var b Breaker
	record(t, &b, s, brkT0, true, true, true)
	// Eleven minutes later the three old failures are out of the window.
	late := brkT0.Add(11 * time.Minute)
	if tr := b.Record(s, late, true); tr != nil {
		t.Fatalf("stale failures counted: %+v", tr)
	}
	if len(b.Events) != 1 {
		t.Fatalf("window holds %d events, want 1", len(b.Events))
	}
	// Within the window they count.
	var c Breaker
	record(t, &c, s, brkT0, true, true, true)
	if tr := c.Record(s, brkT0.Add(9*time.Minute), true); tr == nil {
		t.Fatal("failures within 10m did not open")
	}
	// Many successes keep the stored window bounded, and a burst of
	// failures still opens it.
	var d Breaker
	at := brkT0
	for range 500 {
		d.Record(s, at, false)
		at = at.Add(100 * time.Millisecond)
	}
	if len(d.Events) > maxBreakerEvents {
		t.Fatalf("%d events stored", len(d.Events))
	}
	n := 0
	for d.Current() == BreakerClosed && n < 200 {
		d.Record(s, at, true)
		n++
	}
	if d.Current() != BreakerOpen || n != maxBreakerEvents/2 {
		t.Fatalf("opened after %d failures following 500 successes, want %d", n, maxBreakerEvents/2)
	}
}

func TestBreakerJSONRoundTrip(t *testing.T) {
	var s BreakerSettings
	states := map[string]Breaker{}
	var closed Breaker
	record(t, &closed, s, brkT0, true, false, true)
	states["closed with events"] = closed
	var open Breaker
	record(t, &open, s, brkT0, true, true, true, true)
	open.Allow(s, open.OpenedAt.Add(2*time.Minute))
	open.Record(s, open.OpenedAt.Add(2*time.Minute), true) // cooldown 4m
	states["open doubled"] = open
	half := open
	half.Allow(s, half.OpenedAt.Add(4*time.Minute))
	half.Record(s, half.OpenedAt.Add(4*time.Minute+time.Second), false)
	half.Allow(s, half.OpenedAt.Add(4*time.Minute+2*time.Second))
	states["half-open, probe in flight"] = half
	states["zero"] = Breaker{}
	for name, b := range states {
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		var got Breaker
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(b, got) {
			t.Fatalf("%s: round trip changed\n%+v\n%s\n%+v", name, b, raw, got)
		}
	}
	// The restored half-open breaker behaves like the original: probe in
	// flight refused, one more success closes it.
	raw, _ := json.Marshal(half)
	var got Breaker
	_ = json.Unmarshal(raw, &got)
	at := half.ProbeAt.Add(time.Second)
	if ok, _ := got.Allow(s, at); ok {
		t.Fatal("restored breaker let a second probe through")
	}
	if tr := got.Record(s, at, false); tr == nil || tr.To != string(BreakerClosed) {
		t.Fatalf("restored breaker did not close: %+v", tr)
	}
}

func TestBreakerSettingsDefaults(t *testing.T) {
	got := BreakerSettings{}.WithDefaults()
	want := BreakerSettings{Window: 10 * time.Minute, MinSamples: 4, FailureRate: 0.5, Cooldown: 2 * time.Minute, MaxCooldown: time.Hour, CloseAfter: 2}
	if got != want {
		t.Fatalf("defaults = %+v", got)
	}
	if got := (BreakerSettings{Cooldown: 2 * time.Hour}).WithDefaults(); got.MaxCooldown != 2*time.Hour {
		t.Fatalf("max cooldown below cooldown: %+v", got)
	}
}

func TestBreakerNeverOpensOnASuccess(t *testing.T) {
	s := BreakerSettings{Window: 10 * time.Minute, MinSamples: 4, FailureRate: 0.5, Cooldown: time.Minute}
	var b Breaker
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	for i, fail := range []bool{false, true, true, false} {
		if tr := b.Record(s, t0.Add(time.Duration(i)*time.Second), fail); tr != nil {
			t.Fatalf("call %d (fail=%v) moved the breaker %s→%s", i, fail, tr.From, tr.To)
		}
	}
	if tr := b.Record(s, t0.Add(5*time.Second), true); tr == nil || tr.To != string(BreakerOpen) {
		t.Fatalf("3 of 5 failed: want open, got %+v", tr)
	}
}

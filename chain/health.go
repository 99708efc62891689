package chain

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// HealthCheck is the result of one link in a health walk. For a link that
// was not called, Skip says why (SkipCap, SkipExhausted, SkipCircuitOpen, …)
// and Until until when. Baseline is the link's latency baseline when the
// walk had a BaselineSource and the link was called.
type HealthCheck struct {
	TS         time.Time
	Provider   string
	Model      string
	State      HealthState
	OK         bool // the provider answered {"ok":true}
	HTTPStatus int
	Latency    time.Duration
	FirstToken time.Duration
	Outcome    Outcome // the call's outcome; "" when not called
	Skip       SkipReason
	Until      time.Time
	Detail     string
	Baseline   *LatencyBaseline
}

// Unhealthy reports whether the check counts against the chain (see
// HealthState.Unhealthy).
func (h HealthCheck) Unhealthy() bool { return h.State.Unhealthy() }

// HealthRecorder stores health check results (telemetry's health_checks).
type HealthRecorder interface {
	RecordHealth(ctx context.Context, h HealthCheck) error
}

// HealthPromptFunc renders the health-check prompt of a prompt family.
type HealthPromptFunc func(family string) Prompt

// HealthWalk configures one health walk. Prompt is required; a nil
// Recorder records nothing; a nil Baselines detects no cold start (one
// that is also a HealthBaselineSource gives links without job calls their
// earlier health calls as the baseline); the zero Cold is the default
// ColdRule. Failures, when set, names the last failure of a link whose
// circuit is open.
type HealthWalk struct {
	Prompt    HealthPromptFunc
	Recorder  HealthRecorder
	Baselines BaselineSource
	Cold      ColdRule
	Failures  FailureSource
}

// Failure is a link's last failed call, for the words of a health check.
type Failure struct {
	TS      time.Time
	Outcome Outcome
	Status  int
	Detail  string
}

// String words the failure: "server_error (HTTP 503) at … : detail".
func (f Failure) String() string {
	s := string(f.Outcome)
	if f.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", f.Status)
	}
	s += " at " + f.TS.UTC().Format(time.RFC3339)
	if f.Detail != "" {
		s += ": " + clipWords(f.Detail, 200)
	}
	return s
}

// FailureSource gives a link's last failed call (telemetry's store
// implements it); ok is false when it never failed.
type FailureSource interface {
	LastFailure(ctx context.Context, provider string) (f Failure, ok bool, err error)
}

// healthSchema is the JSON schema of the health answer.
var healthSchema = []byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)

// Health walks every link of the chain once with the tiny health request
// and returns one result per link, in chain order. It honours the gates of
// the day: a capped or exhausted link is reported as such and not called
// (and the skip recorded). A link whose circuit is open is called (a
// health check is what tells whether it is still down): its check says so
// with the last failure's cause (w.Failures). A misconfigured link is
// called too, as its probe: an answer ends the incident. A called link's attempt is
// recorded as a call with purpose "health", feeds the breaker and teaches
// exhaustion like any call, and every result goes to w.Recorder. An
// answer far slower than the link's baseline (w.Cold) is HealthCold. Each
// call is bounded by the chain's Deadline. The error is for the store only.
func (c *Chain) Health(ctx context.Context, w HealthWalk) ([]HealthCheck, error) {
	start := c.Clock.Now()
	job := Job{ID: "health/" + start.UTC().Format("2006-01-02T15:04:05Z"), Topic: "health", Title: "health check"}
	numbers := &numbering{}
	var out []HealthCheck
	for _, l := range c.Links {
		h, err := c.healthLink(ctx, l, job, numbers, w)
		if err != nil {
			return out, err
		}
		if h.Skip == "" && w.Baselines != nil {
			if err := c.judgeCold(ctx, &h, w, start); err != nil {
				return out, err
			}
		}
		if w.Recorder != nil {
			if err := w.Recorder.RecordHealth(ctx, h); err != nil {
				return out, fmt.Errorf("record health %s: %w", l.Name, err)
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// judgeCold compares a called link's answer with its latency baseline:
// a healthy answer far slower than usual becomes HealthCold, and the
// figures join the detail.
func (c *Chain) judgeCold(ctx context.Context, h *HealthCheck, w HealthWalk, start time.Time) error {
	b, err := w.Baselines.LatencyBaseline(ctx, h.Provider, start.Add(-BaselineWindow))
	if err != nil {
		return fmt.Errorf("latency baseline %s: %w", h.Provider, err)
	}
	if hb, ok := w.Baselines.(HealthBaselineSource); ok && b.Calls == 0 {
		if b, err = hb.HealthBaseline(ctx, h.Provider, start); err != nil {
			return fmt.Errorf("health baseline %s: %w", h.Provider, err)
		}
		b.Health = b.Calls > 0
	}
	h.Baseline = &b
	if h.State != HealthHealthy {
		return nil
	}
	cold, why := w.Cold.Judge(h.Latency, h.FirstToken, b)
	if cold {
		h.State = HealthCold
	}
	h.Detail = joinDetail(h.Detail, why)
	return nil
}

// healthLink makes one health call through the attempt pipeline, bounded
// by the chain's deadline, and reports it.
func (c *Chain) healthLink(ctx context.Context, l *Link, job Job, numbers *numbering, w HealthWalk) (HealthCheck, error) {
	prompt := w.Prompt
	// The failure before this walk's call, should the call go through an
	// open circuit.
	var last *Failure
	if w.Failures != nil {
		f, ok, err := w.Failures.LastFailure(ctx, l.Name)
		if err != nil {
			return HealthCheck{}, fmt.Errorf("last failure %s: %w", l.Name, err)
		}
		if ok {
			last = &f
		}
	}
	budget := c.JobDeadline()
	now := c.Clock.Now()
	h := HealthCheck{TS: now, Provider: l.Name, Model: l.Model}
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	out, err := c.attempt(cctx, try{rules: &healthRules, link: l, job: job, deadline: now.Add(budget), numbers: numbers,
		render: func(l *Link) (Prompt, error) { return prompt(string(l.Family)), nil }})
	if err != nil {
		return h, err
	}
	if no := out.refused; no != nil {
		why := no.why + "; not called"
		c.emit(Event{Job: job, Kind: EventSkip, Provider: l.Name, Reason: why})
		h.State, h.Skip, h.Until, h.Detail = skipState(no.reason), no.reason, no.until, why
		return h, nil
	}
	if out.stopped != "" {
		h.State, h.Detail = HealthRateLimited, "not called: the link's own pacing wait does not fit the deadline"
		return h, nil
	}
	call := out.call
	h.Latency, h.Outcome, h.HTTPStatus, h.FirstToken = call.Latency, call.Outcome, call.HTTPStatus, call.FirstToken
	h.Model, h.Detail = call.Model, call.Detail
	h.OK = out.failure == nil && out.verdict.pass
	h.State = callState(call.Outcome, h.OK)
	if out.circuit != "" {
		// Called through an open circuit: say so, the probe's result and
		// what failed before (jobs still skip it until the circuit's time).
		note := out.circuit + " (jobs skip it until then)"
		if last != nil {
			note += "; last failure: " + last.String()
		}
		probe := "probe answered"
		if !h.OK {
			probe = "probe failed"
		}
		h.Detail = joinDetail(note+"; "+probe, h.Detail)
	}
	c.emit(Event{Job: job, Kind: EventOutcome, Provider: l.Name, Attempt: call.Attempt, Outcome: call.Outcome, Reason: call.Detail})
	return h, nil
}

// joinDetail joins two parts of a check's detail with "; ".
func joinDetail(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + "; " + b
}

// healthAnswerProblem says what is wrong with a health answer ("" when it
// is {"ok":true}, code fences and surrounding whitespace tolerated).
func healthAnswerProblem(resp Response) string {
	if resp.Truncated {
		return "health answer truncated (" + resp.FinishReason + ")"
	}
	raw, err := quality.Extract(resp.Text)
	if err == nil {
		var v struct {
			OK *bool `json:"ok"`
		}
		if json.Unmarshal(raw, &v) == nil && v.OK != nil && *v.OK {
			return ""
		}
	}
	t := strings.TrimSpace(resp.Text)
	if len(t) > 80 {
		t = t[:80] + "…"
	}
	return fmt.Sprintf(`health answer is not {"ok":true}: %q`, t)
}

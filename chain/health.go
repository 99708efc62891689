package chain

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// Health statuses of one link in a health walk.
const (
	HealthOK         = "healthy"
	HealthFailed     = "unhealthy"
	HealthCapped     = "capped"       // daily cap reached: not called
	HealthExhausted  = "exhausted"    // known exhausted until a reset: not called
	HealthCircuit    = "circuit_open" // breaker open: not called; counts as unhealthy
	HealthOverBudget = "over_budget"  // a token or money limit would be crossed: not called
)

// HealthCheck is the result of one link in a health walk. For a link that
// was not called, Skip says why (SkipCap, SkipExhausted, SkipCircuitOpen)
// and Until until when.
type HealthCheck struct {
	TS         time.Time
	Provider   string
	Model      string
	Status     string // HealthOK, HealthFailed, HealthCapped, HealthExhausted, HealthCircuit
	OK         bool   // the provider answered {"ok":true}
	HTTPStatus int
	Latency    time.Duration
	FirstToken time.Duration
	Outcome    Outcome // the call's outcome; "" when not called
	Skip       SkipReason
	Until      time.Time
	Detail     string
}

// Unhealthy reports whether the check counts against the chain: a failed
// call or an open circuit. A capped or exhausted link is known to be out
// until its reset, which automation handles; it is not unhealthy.
func (h HealthCheck) Unhealthy() bool { return h.Status == HealthFailed || h.Status == HealthCircuit }

// HealthRecorder stores health check results (telemetry's health_checks).
type HealthRecorder interface {
	RecordHealth(ctx context.Context, h HealthCheck) error
}

// HealthPromptFunc renders the health-check prompt of a prompt family.
type HealthPromptFunc func(family string) Prompt

// healthSchema is the JSON schema of the health answer.
var healthSchema = []byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)

// Health walks every link of the chain once with the tiny health request
// and returns one result per link, in chain order. It honours the same
// gates as a job: a capped, exhausted or circuit-open link is reported as
// such and not called (and the skip recorded). A called link's attempt is
// recorded as a call with purpose "health", feeds the breaker and teaches
// exhaustion like any call, and every result goes to rec. Each call is
// bounded by the chain's Deadline. The error is for the store only.
func (c *Chain) Health(ctx context.Context, prompt HealthPromptFunc, rec HealthRecorder) ([]HealthCheck, error) {
	start := c.Clock.Now()
	job := Job{ID: "health/" + start.UTC().Format("2006-01-02T15:04:05Z"), Topic: "health", Title: "health check"}
	numbers := &numbering{}
	var out []HealthCheck
	for _, l := range c.Links {
		h, err := c.healthLink(ctx, l, job, numbers, prompt)
		if err != nil {
			return out, err
		}
		if rec != nil {
			if err := rec.RecordHealth(ctx, h); err != nil {
				return out, fmt.Errorf("record health %s: %w", l.Name, err)
			}
		}
		out = append(out, h)
	}
	return out, nil
}

// healthStatus is the health status of a link that was not called.
var healthStatus = map[SkipReason]string{SkipExhausted: HealthExhausted, SkipCircuitOpen: HealthCircuit, SkipCap: HealthCapped,
	SkipTokens: HealthOverBudget, SkipBudget: HealthOverBudget}

// healthLink makes one health call through the attempt pipeline, bounded
// by the chain's deadline, and reports it.
func (c *Chain) healthLink(ctx context.Context, l *Link, job Job, numbers *numbering, prompt HealthPromptFunc) (HealthCheck, error) {
	budget := c.JobDeadline()
	now := c.Clock.Now()
	h := HealthCheck{TS: now, Provider: l.Name, Model: l.Model}
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	out, err := c.attempt(cctx, try{rules: &healthRules, link: l, job: job, deadline: now.Add(budget), numbers: numbers,
		render: func(family string) (Prompt, error) { return prompt(family), nil }})
	if err != nil {
		return h, err
	}
	if no := out.refused; no != nil {
		why := no.why + "; not called"
		c.emit(Event{Job: job, Kind: EventSkip, Provider: l.Name, Reason: why})
		h.Status, h.Skip, h.Until, h.Detail = healthStatus[no.reason], no.reason, no.until, why
		return h, nil
	}
	if out.stopped != "" {
		h.Status, h.Detail = HealthFailed, "not called: pacing wait does not fit the deadline"
		return h, nil
	}
	call := out.call
	h.Latency, h.Outcome, h.HTTPStatus, h.FirstToken = call.Latency, call.Outcome, call.HTTPStatus, call.FirstToken
	h.Model, h.Detail = call.Model, call.Detail
	switch {
	case out.failure != nil:
		h.Status = HealthFailed
	case out.verdict.pass:
		h.Status, h.OK = HealthOK, true
	default:
		h.Status = HealthFailed
	}
	c.emit(Event{Job: job, Kind: EventOutcome, Provider: l.Name, Attempt: call.Attempt, Outcome: call.Outcome, Reason: call.Detail})
	return h, nil
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

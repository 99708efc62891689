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
	HealthOK        = "healthy"
	HealthFailed    = "unhealthy"
	HealthCapped    = "capped"       // daily cap reached: not called
	HealthExhausted = "exhausted"    // known exhausted until a reset: not called
	HealthCircuit   = "circuit_open" // breaker open: not called; counts as unhealthy
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
	Skip       string
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
	id := "health/" + start.UTC().Format("2006-01-02T15:04:05Z")
	var out []HealthCheck
	for _, l := range c.Links {
		h, err := c.healthLink(ctx, l, id, prompt)
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

func (c *Chain) healthLink(ctx context.Context, l *Link, id string, prompt HealthPromptFunc) (HealthCheck, error) {
	budget := c.Deadline
	if budget <= 0 {
		budget = 15 * time.Minute
	}
	now := c.Clock.Now()
	w := &walk{c: c, job: Job{ID: id, Topic: "health", Title: "health check"}, deadline: now.Add(budget)}
	h := HealthCheck{TS: now, Provider: l.Name, Model: l.Model}
	skip := func(reason string, until time.Time, status, why string) (HealthCheck, error) {
		w.skip(ctx, l, reason, until, why)
		h.Status, h.Skip, h.Until, h.Detail = status, reason, until, why
		return h, nil
	}
	status := map[string]string{SkipExhausted: HealthExhausted, SkipCircuitOpen: HealthCircuit, SkipCap: HealthCapped}
	no, err := w.admit(ctx, l, now)
	if err != nil {
		return h, err
	}
	var resID int64
	if no == nil {
		if resID, no, err = w.reserve(ctx, l, now, l.DailyCap); err != nil {
			return h, err
		}
	}
	if no != nil {
		return skip(no.reason, no.until, status[no.reason], no.why+"; not called")
	}
	p := prompt(l.Family)
	attempt, err := c.Store.NextAttempt(ctx, id)
	if err != nil {
		w.settle(ctx, resID, false, 0)
		return h, fmt.Errorf("next attempt: %w", err)
	}
	c.emit(Event{Job: w.job, Kind: "try", Provider: l.Name, Attempt: attempt})
	cctx, cancel := context.WithTimeout(ctx, budget)
	callStart := c.Clock.Now()
	resp, callErr := l.Provider.Generate(cctx, Request{JobID: id, System: p.System, Prompt: p.User, Schema: healthSchema, Stream: l.Stream})
	cancel()
	h.Latency = c.Clock.Now().Sub(callStart)
	call := Call{Provider: l.Name, Model: l.Model, RequestID: id, Attempt: attempt, TS: callStart, Latency: h.Latency,
		PromptVersion: p.Version, Purpose: PurposeHealth}
	if callErr != nil {
		pe := AsProviderError(callErr)
		if pe == nil {
			pe = &ProviderError{Provider: l.Name, Outcome: OutcomeError, Message: callErr.Error(), Cause: callErr}
			if cctx.Err() != nil {
				pe.Outcome = OutcomeTimeoutTotal
			}
		}
		w.settle(ctx, resID, pe.Status != 0 || pe.Outcome != OutcomeTimeoutConnect, 0)
		d := c.Policy.Decide(pe, 1<<20, c.Clock.Now(), w.deadline, l.CapReset.Next(c.Clock.Now()), c.jitter)
		call.Outcome, call.HTTPStatus, call.FirstToken, call.Detail = d.Outcome, pe.Status, pe.FirstToken, pe.Message
		if err := c.Store.RecordCall(ctx, call); err != nil {
			return h, fmt.Errorf("record call: %w", err)
		}
		if err := w.afterError(ctx, l, pe, d); err != nil {
			return h, err
		}
		h.Status, h.Outcome, h.HTTPStatus, h.FirstToken, h.Detail = HealthFailed, d.Outcome, pe.Status, pe.FirstToken, pe.Message
		c.emit(Event{Job: w.job, Kind: "outcome", Provider: l.Name, Attempt: attempt, Outcome: d.Outcome, Reason: pe.Message})
		return h, nil
	}
	tokens := resp.InputTokens + resp.OutputTokens
	w.settle(ctx, resID, true, tokens)
	if err := w.recordSuccess(ctx, l, resp); err != nil {
		return h, err
	}
	cost := l.Price.Cost(resp.InputTokens, resp.OutputTokens)
	if resp.CostKnown {
		cost = resp.CostUSD
	}
	if resp.Model != "" {
		call.Model, h.Model = resp.Model, resp.Model
	}
	call.HTTPStatus, call.FirstToken = resp.HTTPStatus, resp.FirstToken
	call.InputTokens, call.OutputTokens, call.CostUSD, call.Truncated = resp.InputTokens, resp.OutputTokens, cost, resp.Truncated
	call.Text = resp.Text
	h.HTTPStatus, h.FirstToken = resp.HTTPStatus, resp.FirstToken
	if why := healthAnswerProblem(resp); why != "" {
		call.Outcome, call.Detail = OutcomeRejected, why
		h.Status, h.Outcome, h.Detail = HealthFailed, OutcomeRejected, why
	} else {
		call.Outcome = OutcomeOK
		h.Status, h.OK, h.Outcome = HealthOK, true, OutcomeOK
	}
	if err := c.Store.RecordCall(ctx, call); err != nil {
		return h, fmt.Errorf("record call: %w", err)
	}
	c.emit(Event{Job: w.job, Kind: "outcome", Provider: l.Name, Attempt: attempt, Outcome: h.Outcome, Reason: h.Detail})
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

package chain

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// rules configures the one attempt pipeline (Chain.attempt) for one
// purpose. A job call, a shadow call and a health call differ only here;
// the simulator runs job calls on a virtual Clock. The rules that hold for
// every call (a cap slot given back after a connect timeout, pacing,
// recording under a context that survives cancellation, secret scrubbing,
// the one durable write) are not switches: they live in the pipeline.
type rules struct {
	purpose Purpose
	// runScoped: a link skipped for the run (or a halted run) is not
	// called, and an auth failure halts the run or skips the link for it.
	runScoped bool
	// probe: admission asks the breaker, which may let one half-open probe
	// through; without it only a closed circuit admits.
	probe bool
	// sampled: the call's result is a breaker sample.
	sampled bool
	// retry: a per-minute 429 may be retried at the link.
	retry bool
	// paceWait: a pacing delay is slept when it fits the deadline; without
	// it the call is skipped (reason cap) rather than wait.
	paceWait bool
	// numbered: the call takes the job's next attempt number; without it
	// the call is attempt 0 (not an attempt of the job's chain).
	numbered bool
	// events: "try" and pacing "wait" progress events are emitted.
	events bool
	// health: the request is the health request and the answer passes
	// when it is {"ok":true}; otherwise the quality gate judges it.
	health bool
	// cutMessage is the detail of a call cut short by its context ("" = the
	// error's own text).
	cutMessage string
	// note is appended to the reason of an exhaustion the call teaches.
	note string
	// capLimit is the ceiling of the cap reservation; nil = daily_cap.
	capLimit func(*Link) int
}

var (
	jobRules = rules{purpose: PurposeJob, runScoped: true, probe: true, sampled: true, retry: true,
		paceWait: true, numbered: true, events: true, cutMessage: "job deadline reached"}
	healthRules = rules{purpose: PurposeHealth, probe: true, sampled: true, paceWait: true, numbered: true,
		events: true, health: true}
)

// shadowRules are the rules of a shadow call (see Shadow).
func (c *Chain) shadowRules() rules {
	return rules{purpose: PurposeShadow, runScoped: true, cutMessage: "shadow call cancelled: job deadline or process exit",
		note: " (shadow call)", capLimit: c.shadowLimit}
}

// try is one call to make: the link, the job, and where the job stands.
type try struct {
	rules    *rules
	link     *Link
	job      Job
	render   func(l *Link) (Prompt, error)
	deadline time.Time
	retries  int        // retries already made at this link
	admitted bool       // the link was admitted already (a retry)
	prevErr  string     // the previous attempt's error, for calls.previous_error
	numbers  *numbering // nil unless rules.numbered
}

// attemptOut is what one pass through the pipeline did.
type attemptOut struct {
	refused  *refusal       // not called; the skip is recorded
	stopped  string         // not called, nothing recorded: why ("" = called)
	call     Call           // the recorded call
	failure  *ProviderError // the failure, scrubbed (nil for an answer)
	decision Decision
	resp     Response // the answer, scrubbed
	verdict  verdict
	// circuit is the open circuit a health call was made through (its
	// words; "" when the circuit admitted the call).
	circuit string
}

// verdict is the gate's judgement of an answer.
type verdict struct {
	pass    bool
	score   *float64
	detail  string
	article *quality.Article
	result  quality.Result // the gate's whole result (zero for a health call)
}

// recordTimeout bounds the writes after a call: longer than the store's own
// lock retries, so that only a store that is gone ends them.
const recordTimeout = 2 * time.Minute

// attempt is one call's story, top to bottom, for every purpose: admit →
// render → reserve (cap slot, pacing; the place every call passes) → call →
// classify (and scrub) → judge (what next, what it taught) → gate → record
// (one transaction) → tell a person (record). Errors are the store's (and
// the prompt's) only; a failed call is an outcome.
func (c *Chain) attempt(ctx context.Context, t try) (attemptOut, error) {
	l, r := t.link, t.rules
	// Records must land even when ctx ended (job deadline, process exit).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	now := c.Clock.Now()
	circuit := ""
	if !t.admitted {
		no, note, err := c.admit(ctx, r, l, now)
		if err != nil || no != nil {
			return c.refuse(rctx, t, no), err
		}
		circuit = note
	}
	prompt, err := t.render(l)
	if err != nil {
		return attemptOut{}, fmt.Errorf("render prompt for %s: %w", l.Name, err)
	}
	res, no, stopped, err := c.reserve(ctx, rctx, t, prompt, now)
	if err != nil || no != nil || stopped != "" {
		out := c.refuse(rctx, t, no)
		out.stopped = stopped
		return out, err
	}
	call := Call{Provider: l.Name, Model: l.Model, RequestID: t.job.ID, PromptVersion: prompt.Version,
		PreviousError: t.prevErr, Purpose: r.purpose, Shadow: r.purpose == PurposeShadow}
	if r.numbered {
		if call.Attempt, err = t.numbers.take(ctx, c.Store, t.job.ID); err != nil {
			c.release(rctx, res)
			return attemptOut{}, err
		}
	}
	if r.events {
		c.emit(Event{Job: t.job, Kind: EventTry, Provider: l.Name, Attempt: call.Attempt})
	}
	call.TS = c.Clock.Now()
	resp, callErr := l.Provider.Generate(ctx, c.request(r, l, t.job, prompt))
	call.Latency = c.Clock.Now().Sub(call.TS)

	pe := classifyErr(ctx, r, l, callErr)
	resp, pe, call.SecretRedacted = c.scrubAnswer(resp, pe)
	now = c.Clock.Now()
	d, lesson := c.Policy.Judge(Observation{Err: pe, Quota: resp.Quota},
		Standing{Retries: t.retries, NoRetry: !r.retry, Deadline: t.deadline, NextReset: l.CapReset.Next(now), Jitter: c.jitter}, now)
	lesson = r.teach(lesson, l, pe, d, now)
	out := attemptOut{failure: pe, decision: d, resp: resp, circuit: circuit}
	tokens := 0
	if pe != nil {
		call.Outcome, call.HTTPStatus, call.FirstToken, call.Detail = d.Outcome, pe.Status, pe.FirstToken, pe.Message
		if pe.Partial != "" {
			call.Text, call.Partial = pe.Partial, true
		}
	} else {
		tokens = resp.InputTokens + resp.OutputTokens
		out.verdict = c.gate(r, t.job, resp)
		c.answered(&call, l, resp, out.verdict)
	}
	outTokens := resp.OutputTokens
	if call.UsageSuspect != "" {
		// Usage that cannot be true never lowers the spend: the call counts
		// at least at the estimate its reservation took (or the upper
		// estimate of the prompt and max_tokens), its figures as reported.
		est := res.estimate(l, prompt)
		call.CostUSD = max(call.CostUSD, est.usd)
		tokens, outTokens = max(max(resp.InputTokens, 0)+max(resp.OutputTokens, 0), est.tokens), max(resp.OutputTokens, 0)
	}
	res.pace.Settle(tokens)
	rec := AttemptRecord{Call: call}
	if res.capID != 0 {
		rec.Cap = &CapSettlement{ID: res.capID, Sent: sentRequest(pe), Tokens: tokens, OutputTokens: outTokens, CostUSD: call.CostUSD}
	}
	out.call = call
	return out, c.record(rctx, l, rec, lesson, pe, d, now)
}

// teach adds to the policy's lesson what the rules and the link decide:
// a call that is no breaker sample, the note of an exhaustion, the
// misconfigured incident a call opens (or keeps), and that a call reached
// the provider (which ends one).
func (r *rules) teach(lesson Lesson, l *Link, pe *ProviderError, d Decision, now time.Time) Lesson {
	if !r.sampled {
		lesson.Sample = SampleNone
	}
	if lesson.ExhaustReason != "" {
		lesson.ExhaustReason += r.note
	}
	switch {
	case pe != nil && d.Outcome == OutcomeMisconfigured:
		lesson.Misconfig = &Misconfig{Since: now.UTC(), Detail: misconfigDetail(pe), Fix: pe.Fix, ConfigHash: l.configKey(),
			ProbeAfter: now.Add(MisconfigProbeEvery).UTC()}
	case pe == nil || pe.Status != 0:
		lesson.Reached = true
	}
	return lesson
}

// record writes the attempt's rows with what the call taught in one
// transaction, then tells a person what only a person can act on: a
// clamped delay, a misconfigured incident that just opened, a request too
// large for the link.
func (c *Chain) record(rctx context.Context, l *Link, rec AttemptRecord, lesson Lesson, pe *ProviderError, d Decision, now time.Time) error {
	var opened *Misconfig
	if learn := lesson.learner(l.Name, c.Breaker, now); learn != nil {
		rec.Learn = func(st *ProviderState) []Transition {
			trs := learn(st)
			opened = nil // the store may run it again on a fresh state
			for _, tr := range trs {
				if tr.Kind == TransitionMisconfigured && tr.To == "misconfigured" && st.Misconfigured != nil {
					m := *st.Misconfigured
					opened = &m
				}
			}
			return trs
		}
	}
	if err := c.Store.RecordAttempt(rctx, rec); err != nil {
		return fmt.Errorf("record call: %w", err)
	}
	if lesson.Clamp != nil {
		c.notifyClamp(rctx, l, lesson.Clamp)
	}
	if opened != nil {
		c.notifyMisconfigured(rctx, l, *opened)
	}
	if pe != nil && d.Outcome == OutcomeTooLarge {
		c.notifyTooLarge(rctx, l, pe, now)
	}
	return nil
}

// misconfigDetail is what a misconfigured link's incident quotes: the
// status and the provider's words (scrubbed already).
func misconfigDetail(pe *ProviderError) string {
	s := what(pe)
	if pe.Message != "" {
		s += ": " + pe.Message
	}
	return clipWords(s, 1000)
}

// request is the generic request of one call.
func (c *Chain) request(r *rules, l *Link, j Job, p Prompt) Request {
	if r.health {
		return Request{JobID: j.ID, System: p.System, Prompt: p.User, Schema: healthSchema, Stream: l.Stream}
	}
	return Request{JobID: j.ID, System: p.System, Prompt: p.User, Schema: c.Schema, MaxTokens: l.MaxTokens, Stream: l.Stream}
}

// classifyErr returns the call's failure as a *ProviderError (nil for an
// answer). An error that is none, from a call its context cut short, is a
// total timeout.
func classifyErr(ctx context.Context, r *rules, l *Link, callErr error) *ProviderError {
	if callErr == nil {
		return nil
	}
	if pe := AsProviderError(callErr); pe != nil {
		return pe
	}
	pe := &ProviderError{Provider: l.Name, Outcome: OutcomeError, Message: callErr.Error(), Cause: callErr}
	if ctx.Err() != nil && (r.purpose != PurposeJob || errors.Is(callErr, context.DeadlineExceeded)) {
		pe.Outcome = OutcomeTimeoutTotal
		if r.cutMessage != "" {
			pe.Message = r.cutMessage
		}
	}
	return pe
}

// sentRequest reports whether a failed call reached the provider: a connect
// that timed out or failed sent nothing, and its cap slot goes back.
func sentRequest(pe *ProviderError) bool {
	return pe == nil || pe.Status != 0 || (pe.Outcome != OutcomeTimeoutConnect && pe.Outcome != OutcomeConnectFailed)
}

// gate judges an answer: the health check for a health call, the quality
// gate otherwise.
func (c *Chain) gate(r *rules, j Job, resp Response) verdict {
	if r.health {
		why := healthAnswerProblem(resp)
		return verdict{pass: why == "", detail: why}
	}
	g := c.Gate.Evaluate(resp.Text, quality.Spec{Language: j.Language, TargetWords: j.TargetWords, Truncated: resp.Truncated})
	score := g.Score
	v := verdict{pass: g.Pass, score: &score, article: g.Article, result: g}
	if !g.Pass {
		v.detail = "quality gate: " + g.Reasons()
	}
	return v
}

// storedChecks is the stored form of the gate's checks (Call.Checks): each
// quality.Check.String. nil for none.
func storedChecks(checks []quality.Check) []string {
	var out []string
	for _, ch := range checks {
		out = append(out, ch.String())
	}
	return out
}

// answered fills the call row of an answer.
func (c *Chain) answered(call *Call, l *Link, resp Response, v verdict) {
	call.CostUSD = l.Price.Cost(resp.InputTokens, resp.OutputTokens)
	if resp.CostKnown {
		call.CostUSD = resp.CostUSD
	}
	if resp.Model != "" {
		call.Model = resp.Model
	}
	call.HTTPStatus, call.FirstToken = resp.HTTPStatus, resp.FirstToken
	call.InputTokens, call.OutputTokens = resp.InputTokens, resp.OutputTokens
	call.Truncated, call.Text = resp.Truncated, resp.Text
	call.UsageSuspect = resp.UsageSuspect
	call.QualityScore, call.Checks, call.Detail = v.score, storedChecks(v.result.Checks), v.detail
	call.Outcome = OutcomeOK
	if !v.pass {
		call.Outcome = OutcomeRejected
	}
}

// notifyClamp raises the warning that a provider named a delay beyond the
// bound (deduplicated per link by the Notifier).
func (c *Chain) notifyClamp(ctx context.Context, l *Link, cl *Clamp) {
	if c.Notifier == nil {
		return
	}
	_ = c.Notifier.Notify(ctx, Alert{Key: string(RuleDelayClamped) + ":" + l.Name, Rule: RuleDelayClamped, Severity: SeverityWarning,
		Text: fmt.Sprintf("Provider %s named a delay of %s; believed only until %s (its next cap reset + %s). Check the provider's status page if it stays out.",
			l.Name, cl.Sent, cl.Until.Format(time.RFC3339), MaxNamedDelay)})
}

// numbering hands out a job's attempt numbers: the store's next number
// once, then one more per call (a job is held by one run at a time).
type numbering struct{ next int }

func (n *numbering) take(ctx context.Context, st Store, id string) (int, error) {
	if n.next == 0 {
		v, err := st.NextAttempt(ctx, id)
		if err != nil {
			return 0, fmt.Errorf("next attempt: %w", err)
		}
		n.next = v
	}
	v := n.next
	n.next++
	return v, nil
}

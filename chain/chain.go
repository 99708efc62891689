package chain

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// Price is a link's list price in USD per million tokens.
type Price struct {
	InputPerMTok  float64
	OutputPerMTok float64
}

// Cost returns the estimated USD cost of a call with these token counts.
func (p Price) Cost(in, out int) float64 {
	return float64(in)*p.InputPerMTok/1e6 + float64(out)*p.OutputPerMTok/1e6
}

// Link is one provider of the chain with its own limits. The zero values of
// DailyCap, Pacer and MaxTokens mean no cap, no pacing, provider default.
type Link struct {
	Name      string
	Model     string
	Family    string // prompt family: "gemini" or "openai"
	Infra     string
	Provider  Provider
	DailyCap  int
	CapReset  CapReset
	Price     Price
	Pacer     *Pacer
	MaxTokens int
	Stream    bool
}

// Job is one unit of work: one topic for one slot.
type Job struct {
	ID          string // JobID(Topic, Slot)
	Topic       string
	Slot        string
	Title       string
	Category    string
	Language    string
	Keywords    []string
	TargetWords int
}

// JobID derives a job's idempotency key from the work unit (topic id and
// slot date), never from the prompt text.
func JobID(topic, slot string) string { return slot + "/" + topic }

// Prompt is a rendered request for one provider family.
type Prompt struct {
	System, User, Version string
}

// PromptFunc renders the article prompt of a job for a prompt family.
type PromptFunc func(family string, j Job) (Prompt, error)

// Gate scores an answer; *quality.Gate implements it.
type Gate interface {
	Evaluate(text string, spec quality.Spec) quality.Result
}

// Clock is the time seam: the real clock in production, a virtual one in
// tests and in `simulate`. Sleep returns early with ctx's error.
type Clock interface {
	Now() time.Time
	Sleep(ctx context.Context, d time.Duration) error
}

// RealClock is the wall clock.
type RealClock struct{}

// Now returns time.Now().
func (RealClock) Now() time.Time { return time.Now() }

// Sleep waits d or until ctx is done.
func (RealClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Event is a progress report of the walk, for live progress lines.
type Event struct {
	Job      Job
	Kind     string // "try", "wait", "skip", "outcome"
	Provider string
	Attempt  int
	Wait     time.Duration
	Outcome  Outcome
	Score    float64
	Reason   string
}

// Chain walks the links for a job. Store, Gate, Clock and Prompt are
// required; Links must not be empty. A Chain is safe for concurrent use by
// several jobs (job.parallel); its run-scoped state (links skipped for the
// rest of the run after an auth failure) lives as long as the Chain.
type Chain struct {
	Links    []*Link
	Policy   RetryPolicy
	Breaker  BreakerSettings
	Deadline time.Duration // whole budget of one job; 0 = 15m
	Store    Store
	Gate     Gate
	Clock    Clock
	Prompt   PromptFunc
	Schema   []byte
	Jitter   func() float64 // [0,1); nil = math/rand
	Progress func(Event)    // optional
	Shadow   Shadow         // shadow mode; the zero value is off (see shadow.go)

	shadows shadowSet
	mu      sync.Mutex
	skipRun map[string]bool
	halted  *ProviderError
}

// Attempt is the summary of one call of a job.
type Attempt struct {
	Provider string
	Model    string
	Number   int
	Outcome  Outcome
	Score    *float64
	CostUSD  float64
	Latency  time.Duration
	Reason   string
}

// Result is what the walk produced for one job.
type Result struct {
	Status   string // JobPublished (an answer passed the gate), JobReview, JobDeferred, JobHalted
	Winner   *Winner
	Best     *Winner // best rejected candidate (status review)
	Attempts []Attempt
	CostUSD  float64
	Halt     *ProviderError
	Story    []string // one line per attempt or skip, in order
}

// Winner is an answer with its article and score.
type Winner struct {
	Provider string
	Model    string
	Attempt  int
	Score    float64
	Article  quality.Article
}

func (c *Chain) jitter() float64 {
	if c.Jitter != nil {
		return c.Jitter()
	}
	return rand.Float64()
}

func (c *Chain) emit(e Event) {
	if c.Progress != nil {
		c.Progress(e)
	}
}

// Halted returns the auth error that halted the run, or nil.
func (c *Chain) Halted() *ProviderError {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.halted
}

func (c *Chain) skippedForRun(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.skipRun[name]
}

func (c *Chain) skipForRun(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.skipRun == nil {
		c.skipRun = map[string]bool{}
	}
	c.skipRun[name] = true
}

func (c *Chain) halt(e *ProviderError) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.halted == nil {
		c.halted = e
	}
}

// Generate walks the chain for one job: skip, call, gate, and act on each
// outcome per the policy, within the job's deadline. It records every
// attempt and every skip in the Store. It never publishes.
func (c *Chain) Generate(ctx context.Context, job Job) (Result, error) {
	deadlineBudget := c.Deadline
	if deadlineBudget <= 0 {
		deadlineBudget = 15 * time.Minute
	}
	deadline := c.Clock.Now().Add(deadlineBudget)
	// The context bounds real time (calls, real sleeps); deadline bounds the
	// Clock's time, which is virtual in tests and `simulate`.
	ctx, cancel := context.WithTimeout(ctx, deadlineBudget)
	defer cancel()

	w := &walk{c: c, job: job, deadline: deadline, res: Result{Status: JobDeferred}}
	// Shadow calls run beside the walk and never delay it; they get the
	// walk's result for their comparison when it ends.
	sh := c.startShadow(ctx, job, deadlineBudget)
	defer func() { sh.done(w.res) }()
	for _, l := range c.Links {
		if c.Halted() != nil {
			w.skip(ctx, l, SkipHalted, time.Time{}, "run halted on an auth failure")
			continue
		}
		if ctx.Err() != nil || !c.Clock.Now().Before(deadline) {
			w.story("deadline reached before %s", l.Name)
			break
		}
		done, err := w.link(ctx, l)
		if err != nil {
			return w.res, err
		}
		if done {
			break
		}
	}
	if h := c.Halted(); h != nil && w.res.Winner == nil {
		w.res.Status = JobHalted
		w.res.Halt = h
	} else if w.res.Winner != nil {
		w.res.Status = JobPublished
	} else if w.res.Best != nil {
		w.res.Status = JobReview
	}
	return w.res, nil
}

type walk struct {
	c        *Chain
	job      Job
	deadline time.Time
	res      Result
	prevErr  string
}

func (w *walk) story(format string, args ...any) {
	w.res.Story = append(w.res.Story, fmt.Sprintf(format, args...))
}

func (w *walk) skip(ctx context.Context, l *Link, reason string, until time.Time, why string) {
	now := w.c.Clock.Now()
	if err := w.c.Store.RecordSkip(ctx, Skip{TS: now, RequestID: w.job.ID, Provider: l.Name, Reason: reason, Until: until}); err != nil {
		w.story("skip %s not recorded: %v", l.Name, err)
	}
	w.story("skip %s: %s", l.Name, why)
	w.c.emit(Event{Job: w.job, Kind: "skip", Provider: l.Name, Reason: why})
}

// link tries one provider (with its retries). done reports that the walk
// must stop (an answer passed, or the run halted).
func (w *walk) link(ctx context.Context, l *Link) (done bool, err error) {
	c := w.c
	if c.skippedForRun(l.Name) {
		w.skip(ctx, l, SkipHalted, time.Time{}, "auth failure earlier in this run")
		return false, nil
	}
	now := c.Clock.Now()
	if no, err := w.admit(ctx, l, now); err != nil || no != nil {
		if no != nil {
			w.skip(ctx, l, no.reason, no.until, no.why)
		}
		return false, err
	}

	retries := 0
	for {
		now = c.Clock.Now()
		if ctx.Err() != nil || !now.Before(w.deadline) {
			return false, nil
		}
		resID, no, err := w.reserve(ctx, l, now, l.DailyCap)
		if err != nil || no != nil {
			if no != nil {
				w.skip(ctx, l, no.reason, no.until, no.why)
			}
			return false, err
		}
		prompt, err := c.Prompt(l.Family, w.job)
		if err != nil {
			w.settle(ctx, resID, false, 0)
			return false, fmt.Errorf("render prompt for %s: %w", l.Name, err)
		}
		var pace *PaceReservation
		if l.Pacer != nil {
			delay, r := l.Pacer.Reserve(now, EstimateTokens(prompt.System+prompt.User, l.MaxTokens))
			pace = r
			if delay > 0 {
				if now.Add(delay).After(w.deadline) {
					w.settle(ctx, resID, false, 0)
					pace.Cancel()
					w.story("%s: pacing wait %s does not fit the deadline", l.Name, delay.Round(time.Millisecond))
					return false, nil
				}
				c.emit(Event{Job: w.job, Kind: "wait", Provider: l.Name, Wait: delay, Reason: "pacing (rpm/tpm)"})
				if err := c.Clock.Sleep(ctx, delay); err != nil {
					w.settle(ctx, resID, false, 0)
					pace.Cancel()
					return false, nil
				}
			}
		}
		attempt, err := c.Store.NextAttempt(ctx, w.job.ID)
		if err != nil {
			w.settle(ctx, resID, false, 0)
			return false, fmt.Errorf("next attempt: %w", err)
		}
		c.emit(Event{Job: w.job, Kind: "try", Provider: l.Name, Attempt: attempt})
		start := c.Clock.Now()
		resp, callErr := l.Provider.Generate(ctx, Request{
			JobID: w.job.ID, System: prompt.System, Prompt: prompt.User,
			Schema: c.Schema, MaxTokens: l.MaxTokens, Stream: l.Stream,
		})
		latency := c.Clock.Now().Sub(start)
		// The attempt is recorded even when the job deadline cut it short:
		// the writes after a call must not inherit that deadline.
		rctx := context.WithoutCancel(ctx)
		call := Call{
			Provider: l.Name, Model: l.Model, RequestID: w.job.ID, Attempt: attempt, TS: start,
			Latency: latency, PromptVersion: prompt.Version, PreviousError: w.prevErr, Purpose: PurposeJob,
		}
		if callErr != nil {
			d, err := w.failed(ctx, rctx, l, call, callErr, retries, resID, pace)
			if err != nil {
				return false, err
			}
			switch d.Action {
			case ActionHalt:
				return true, nil
			case ActionSkipRun:
				return false, nil
			case ActionRetry:
				retries++
				if !w.wait(ctx, l, d) {
					return false, nil
				}
				continue
			default:
				w.wait(ctx, l, d)
				return false, nil
			}
		}
		return w.answered(rctx, l, call, resp, resID, pace)
	}
}

// failed records a failed call, learns from it (exhaustion, breaker) and
// returns the policy's decision; a halt or an auth skip is applied to the
// run here, the wait is left to the caller.
func (w *walk) failed(ctx, rctx context.Context, l *Link, call Call, callErr error, retries int, resID int64, pace *PaceReservation) (Decision, error) {
	c := w.c
	pe := AsProviderError(callErr)
	if pe == nil {
		if ctx.Err() != nil && errors.Is(callErr, context.DeadlineExceeded) {
			pe = &ProviderError{Provider: l.Name, Outcome: OutcomeTimeoutTotal, Message: "job deadline reached", Cause: callErr}
		} else {
			pe = &ProviderError{Provider: l.Name, Outcome: OutcomeError, Message: callErr.Error(), Cause: callErr}
		}
	}
	// A connect that never completed sent nothing: its cap slot goes back.
	w.settle(rctx, resID, pe.Status != 0 || pe.Outcome != OutcomeTimeoutConnect, 0)
	if pace != nil {
		pace.Settle(0)
	}
	now := c.Clock.Now()
	d := c.Policy.Decide(pe, retries, now, w.deadline, l.CapReset.Next(now), c.jitter)
	call.Outcome = d.Outcome
	call.HTTPStatus = pe.Status
	call.FirstToken = pe.FirstToken
	call.Detail = pe.Message
	if pe.Partial != "" {
		call.Text, call.Partial = pe.Partial, true
	}
	if err := c.Store.RecordCall(rctx, call); err != nil {
		return d, fmt.Errorf("record call: %w", err)
	}
	w.res.Attempts = append(w.res.Attempts, Attempt{Provider: l.Name, Model: l.Model, Number: call.Attempt, Outcome: d.Outcome, Latency: call.Latency, Reason: d.Reason})
	w.story("%s attempt %d: %s — %s", l.Name, call.Attempt, d.Outcome, d.Reason)
	c.emit(Event{Job: w.job, Kind: "outcome", Provider: l.Name, Attempt: call.Attempt, Outcome: d.Outcome, Reason: d.Reason})
	w.prevErr = previousError(pe, d.Outcome)
	if err := w.afterError(rctx, l, pe, d); err != nil {
		return d, err
	}
	switch d.Action {
	case ActionHalt:
		c.halt(pe)
	case ActionSkipRun:
		c.skipForRun(l.Name)
	}
	return d, nil
}

// answered settles, gates and records an answer. done reports that it
// passed the gate and is the job's winner; a rejected answer is kept as a
// candidate and the walk goes on to the next link at once.
func (w *walk) answered(rctx context.Context, l *Link, call Call, resp Response, resID int64, pace *PaceReservation) (done bool, err error) {
	c := w.c
	tokens := resp.InputTokens + resp.OutputTokens
	w.settle(rctx, resID, true, tokens)
	if pace != nil {
		pace.Settle(tokens)
	}
	if err := w.recordSuccess(rctx, l, resp); err != nil {
		return false, err
	}
	cost := l.Price.Cost(resp.InputTokens, resp.OutputTokens)
	if resp.CostKnown {
		cost = resp.CostUSD
	}
	model := l.Model
	if resp.Model != "" {
		model = resp.Model
	}
	g := c.Gate.Evaluate(resp.Text, quality.Spec{Language: w.job.Language, TargetWords: w.job.TargetWords, Truncated: resp.Truncated})
	score := g.Score
	call.Model = model
	call.HTTPStatus = resp.HTTPStatus
	call.InputTokens, call.OutputTokens = resp.InputTokens, resp.OutputTokens
	call.FirstToken = resp.FirstToken
	call.CostUSD = cost
	call.QualityScore = &score
	call.Truncated = resp.Truncated
	call.Text = resp.Text
	for _, ch := range g.Checks {
		call.Checks = append(call.Checks, ch.String())
	}
	call.Outcome = OutcomeOK
	if !g.Pass {
		call.Outcome = OutcomeRejected
		call.Detail = "quality gate: " + strings.Join(call.Checks, "; ")
	}
	if err := c.Store.RecordCall(rctx, call); err != nil {
		return false, fmt.Errorf("record call: %w", err)
	}
	attempt := call.Attempt
	w.res.CostUSD += cost
	w.res.Attempts = append(w.res.Attempts, Attempt{Provider: l.Name, Model: model, Number: attempt, Outcome: call.Outcome, Score: &score, CostUSD: cost, Latency: call.Latency})
	c.emit(Event{Job: w.job, Kind: "outcome", Provider: l.Name, Attempt: attempt, Outcome: call.Outcome, Score: score, Reason: call.Detail})
	if g.Pass && g.Article != nil {
		w.story("%s attempt %d: ok, quality %.0f, $%.4f", l.Name, attempt, score, cost)
		w.res.Winner = &Winner{Provider: l.Name, Model: model, Attempt: attempt, Score: score, Article: *g.Article}
		return true, nil
	}
	w.story("%s attempt %d: rejected, quality %.0f (%s)", l.Name, attempt, score, strings.Join(call.Checks, "; "))
	w.prevErr = "rejected: " + strings.Join(call.Checks, "; ")
	if g.Article != nil && (w.res.Best == nil || score > w.res.Best.Score) {
		w.res.Best = &Winner{Provider: l.Name, Model: model, Attempt: attempt, Score: score, Article: *g.Article}
	}
	return false, nil
}

func previousError(pe *ProviderError, o Outcome) string {
	s := string(o)
	if pe.Status != 0 {
		s += fmt.Sprintf(" %d", pe.Status)
	}
	if pe.Message != "" {
		m := pe.Message
		if len(m) > 200 {
			m = m[:200]
		}
		s += ": " + m
	}
	return s
}

// wait sleeps a decided wait, announcing it. It reports false when the
// context ended during the wait.
func (w *walk) wait(ctx context.Context, l *Link, d Decision) bool {
	if d.Wait <= 0 {
		return ctx.Err() == nil
	}
	w.c.emit(Event{Job: w.job, Kind: "wait", Provider: l.Name, Wait: d.Wait, Reason: d.Reason})
	return w.c.Clock.Sleep(ctx, d.Wait) == nil
}

func (w *walk) settle(ctx context.Context, id int64, sent bool, tokens int) {
	if id == 0 {
		return
	}
	if err := w.c.Store.SettleCap(ctx, id, sent, tokens); err != nil {
		w.story("settle cap reservation %d: %v", id, err)
	}
}

// refusal is why a link is not called now: a skip reason, until when, and
// the words for the job's story.
type refusal struct {
	reason string
	until  time.Time
	why    string
}

// admit decides, in one state transaction, whether l may be called now: not
// while it is known exhausted, and only when its breaker lets a call
// through (an open circuit past its cooldown lets one probe through and
// moves to half-open, a recorded transition).
func (w *walk) admit(ctx context.Context, l *Link, now time.Time) (*refusal, error) {
	var no *refusal
	err := w.c.Store.UpdateProviderState(ctx, l.Name, func(st *ProviderState) []Transition {
		no = nil
		if now.Before(st.ExhaustedUntil) {
			no = &refusal{SkipExhausted, st.ExhaustedUntil,
				fmt.Sprintf("exhausted until %s (%s)", st.ExhaustedUntil.UTC().Format(time.RFC3339), st.ExhaustedReason)}
			return nil
		}
		ok, tr := st.Breaker.Allow(w.c.Breaker, now)
		if !ok {
			until := st.Breaker.Until(w.c.Breaker)
			no = &refusal{SkipCircuitOpen, until, fmt.Sprintf("circuit open until %s", until.UTC().Format(time.RFC3339))}
		}
		return transitions(l.Name, tr)
	})
	if err != nil {
		return nil, fmt.Errorf("provider state %s: %w", l.Name, err)
	}
	return no, nil
}

// reserve takes one request of l's daily cap for the cap day of now, with
// limit as the ceiling (the link's daily_cap, or less for a shadow call).
// It returns the reservation to settle (0 when l has no cap).
func (w *walk) reserve(ctx context.Context, l *Link, now time.Time, limit int) (int64, *refusal, error) {
	if l.DailyCap <= 0 {
		return 0, nil, nil
	}
	next := l.CapReset.Next(now)
	no := &refusal{SkipCap, next, fmt.Sprintf("daily cap %d reached until %s", l.DailyCap, next.UTC().Format(time.RFC3339))}
	if limit <= 0 {
		return 0, no, nil
	}
	id, _, ok, err := w.c.Store.ReserveCap(ctx, l.Name, l.CapReset.DayStart(now), limit, now)
	if err != nil {
		return 0, nil, fmt.Errorf("reserve cap %s: %w", l.Name, err)
	}
	if !ok {
		return 0, no, nil
	}
	return id, nil, nil
}

func transitions(provider string, trs ...*Transition) []Transition {
	var out []Transition
	for _, t := range trs {
		if t != nil {
			t.Provider = provider
			out = append(out, *t)
		}
	}
	return out
}

// afterError persists what an error taught: exhaustion and breaker failures.
func (w *walk) afterError(ctx context.Context, l *Link, pe *ProviderError, d Decision) error {
	if d.ExhaustUntil.IsZero() && !d.Breaker {
		return nil
	}
	now := w.c.Clock.Now()
	err := w.c.Store.UpdateProviderState(ctx, l.Name, func(st *ProviderState) []Transition {
		var trs []*Transition
		if !d.ExhaustUntil.IsZero() && d.ExhaustUntil.After(st.ExhaustedUntil) {
			from := "available"
			if now.Before(st.ExhaustedUntil) {
				from = "exhausted"
			}
			st.ExhaustedUntil = d.ExhaustUntil
			st.ExhaustedReason = string(d.Outcome)
			trs = append(trs, &Transition{TS: now, Kind: "exhausted", From: from, To: "exhausted",
				Detail: fmt.Sprintf("%s until %s", d.Outcome, d.ExhaustUntil.UTC().Format(time.RFC3339))})
		}
		if d.Breaker {
			trs = append(trs, st.Breaker.Record(w.c.Breaker, now, true))
		}
		return transitions(l.Name, trs...)
	})
	if err != nil {
		return fmt.Errorf("update provider state %s: %w", l.Name, err)
	}
	return nil
}

// recordSuccess feeds the breaker a success and learns a daily exhaustion
// from the provider's own headers (remaining requests for the day = 0).
func (w *walk) recordSuccess(ctx context.Context, l *Link, resp Response) error {
	now := w.c.Clock.Now()
	err := w.c.Store.UpdateProviderState(ctx, l.Name, func(st *ProviderState) []Transition {
		trs := []*Transition{st.Breaker.Record(w.c.Breaker, now, false)}
		if resp.Quota.Known() && resp.Quota.Remaining == 0 {
			until := l.CapReset.Next(now)
			if resp.Quota.Reset > 0 {
				until = now.Add(resp.Quota.Reset)
			}
			if until.After(st.ExhaustedUntil) {
				st.ExhaustedUntil = until
				st.ExhaustedReason = "daily requests used up (provider headers)"
				trs = append(trs, &Transition{TS: now, Kind: "exhausted", From: "available", To: "exhausted", Detail: st.ExhaustedReason})
			}
		}
		return transitions(l.Name, trs...)
	})
	if err != nil {
		return fmt.Errorf("update provider state %s: %w", l.Name, err)
	}
	return nil
}

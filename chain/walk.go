package chain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// walk is one job's pass over the links: a thin loop over the attempt
// pipeline that keeps the job's story, its candidates and its attempts.
type walk struct {
	c        *Chain
	job      Job
	deadline time.Time
	res      Result
	prevErr  string
	numbers  *numbering
	best     quality.Result // the gate's result of res.Best
}

func (w *walk) story(format string, args ...any) {
	w.res.Story = append(w.res.Story, fmt.Sprintf(format, args...))
}

// skip records a link passed over without a call and tells it.
func (w *walk) skip(ctx context.Context, l *Link, reason SkipReason, until time.Time, why string) {
	if err := w.c.Store.RecordSkip(ctx, Skip{TS: w.c.Clock.Now(), RequestID: w.job.ID, Provider: l.Name, Reason: reason, Until: until}); err != nil {
		w.story("skip %s not recorded: %v", l.Name, err)
	}
	w.told(l, why)
}

// told tells a skip already recorded.
func (w *walk) told(l *Link, why string) {
	w.story("skip %s: %s", l.Name, why)
	w.c.emit(Event{Job: w.job, Kind: EventSkip, Provider: l.Name, Reason: why})
}

// link tries one provider (with its retries). done reports that the walk
// must stop (an answer passed, or the run halted). last says l is the last
// link: a wait after its final call has nobody to wait for.
func (w *walk) link(ctx context.Context, l *Link, last bool) (done bool, err error) {
	c := w.c
	t := try{rules: &jobRules, link: l, job: w.job, deadline: w.deadline, numbers: w.numbers,
		render: func(l *Link) (Prompt, error) { return c.Prompt(l.PromptName(), w.job) }}
	for {
		if now := c.Clock.Now(); ctx.Err() != nil || !now.Before(w.deadline) {
			return false, nil
		}
		t.prevErr = w.prevErr
		out, err := c.attempt(ctx, t)
		t.admitted = true
		switch {
		case err != nil:
			return false, err
		case out.refused != nil:
			w.told(l, out.refused.why)
			return false, nil
		case out.stopped != "":
			if out.stopped != stopQuietly {
				w.story("%s", out.stopped)
			}
			return false, nil
		case out.failure == nil:
			return w.answered(l, out), nil
		}
		d := w.failed(l, out, last)
		switch d.Action {
		case ActionHalt:
			return true, nil
		case ActionSkipRun:
			return false, nil
		case ActionRetry:
			t.retries++
			if !w.wait(ctx, l, d) {
				return false, nil
			}
		default:
			w.wait(ctx, l, d) // no wait after the last link (failed)
			return false, nil
		}
	}
}

// failed tells a failed call and applies a halt or an auth skip to the
// run; the wait is left to the caller. After the last link's final call
// there is nobody to wait for: its reason says so instead of a wait.
func (w *walk) failed(l *Link, out attemptOut, last bool) Decision {
	c, d, call := w.c, out.decision, out.call
	if last && d.Action == ActionNext && d.Wait > 0 {
		d.Wait = 0
		d.Reason = fmt.Sprintf("%s: the last provider, no wait", what(out.failure))
	}
	w.res.Attempts = append(w.res.Attempts, Attempt{Provider: l.Name, Model: l.Model, Number: call.Attempt, Outcome: d.Outcome, Latency: call.Latency, Reason: d.Reason})
	w.story("%s attempt %d: %s — %s", l.Name, call.Attempt, d.Outcome, d.Reason)
	c.emit(Event{Job: w.job, Kind: EventOutcome, Provider: l.Name, Attempt: call.Attempt, Outcome: d.Outcome, Reason: d.Reason})
	w.prevErr = previousError(out.failure, d.Outcome)
	switch d.Action {
	case ActionHalt:
		c.halt(out.failure)
	case ActionSkipRun:
		c.skipForRun(l.Name)
	}
	return d
}

// answered tells a gated answer. done reports that it passed the gate and
// is the job's winner; a rejected answer is kept as a candidate and the
// walk goes on to the next link at once.
func (w *walk) answered(l *Link, out attemptOut) (done bool) {
	call, v := out.call, out.verdict
	score := *v.score
	attempt, model := call.Attempt, call.Model
	w.res.CostUSD += call.CostUSD
	w.res.Attempts = append(w.res.Attempts, Attempt{Provider: l.Name, Model: model, Number: attempt, Outcome: call.Outcome, Score: &score, CostUSD: call.CostUSD, Latency: call.Latency})
	w.c.emit(Event{Job: w.job, Kind: EventOutcome, Provider: l.Name, Attempt: attempt, Outcome: call.Outcome, Score: score, Reason: call.Detail})
	if v.pass && v.article != nil {
		w.story("%s attempt %d: ok, quality %.0f, $%.4f", l.Name, attempt, score, call.CostUSD)
		w.res.Winner = &Winner{Provider: l.Name, Model: model, Attempt: attempt, Score: score, Article: *v.article}
		return true
	}
	w.story("%s attempt %d: rejected, quality %.0f (%s)", l.Name, attempt, score, strings.Join(call.Checks, "; "))
	w.prevErr = "rejected: " + strings.Join(call.Checks, "; ")
	// The kept candidate is the one an editor can fix with the least work
	// (quality.Better: fewest and least severe defects), not the highest
	// score: a full article with one assistant sentence (rejected outright)
	// beats an 80-word one.
	if v.article != nil && (w.res.Best == nil || quality.Better(v.result, w.best)) {
		w.res.Best = &Winner{Provider: l.Name, Model: model, Attempt: attempt, Score: score, Article: *v.article}
		w.best = v.result
	}
	return false
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
	w.c.emit(Event{Job: w.job, Kind: EventWait, Provider: l.Name, Wait: d.Wait, Reason: d.Reason})
	return w.c.Clock.Sleep(ctx, d.Wait) == nil
}

package chain

import (
	"context"
	"fmt"
	"time"
)

// refusal is why a link is not called now: a skip reason, until when, and
// the words for the job's story.
type refusal struct {
	reason SkipReason
	until  time.Time
	why    string
}

// refuse records the skip of a refusal (none for nil) and returns it as the
// attempt's result.
func (c *Chain) refuse(rctx context.Context, t try, no *refusal) attemptOut {
	if no == nil {
		return attemptOut{}
	}
	sk := Skip{TS: c.Clock.Now(), RequestID: t.job.ID, Provider: t.link.Name, Reason: no.reason, Until: no.until}
	if err := c.Store.RecordSkip(rctx, sk); err != nil {
		no.why += fmt.Sprintf(" (skip not recorded: %v)", err)
	}
	return attemptOut{refused: no}
}

// admit decides whether l may be called now: not in a halted run or after
// an auth failure of l in this run (run-scoped rules), not while it is
// known exhausted, and only when its breaker lets a call through. With
// rules.probe an open circuit past its cooldown lets one probe through and
// moves to half-open, a recorded transition, in one state transaction;
// without it only a closed circuit admits. A closed, available link is
// admitted on a plain read.
func (c *Chain) admit(ctx context.Context, r *rules, l *Link, now time.Time) (*refusal, error) {
	if r.runScoped && c.Halted() != nil {
		return &refusal{SkipHalted, time.Time{}, "run halted on an auth failure"}, nil
	}
	if r.runScoped && c.skippedForRun(l.Name) {
		return &refusal{SkipHalted, time.Time{}, "auth failure earlier in this run"}, nil
	}
	st, err := c.Store.ProviderState(ctx, l.Name)
	if err != nil {
		return nil, fmt.Errorf("provider state %s: %w", l.Name, err)
	}
	no := c.refusal(&st, now)
	if no != nil || st.Breaker.Current() == BreakerClosed {
		return no, nil
	}
	if !r.probe {
		until := st.Breaker.Until(c.Breaker)
		return &refusal{SkipCircuitOpen, until, fmt.Sprintf("circuit %s until %s", st.Breaker.Current(), until.UTC().Format(time.RFC3339))}, nil
	}
	err = c.Store.UpdateProviderState(ctx, l.Name, func(st *ProviderState) []Transition {
		no = c.refusal(st, now)
		if no != nil {
			return nil
		}
		ok, tr := st.Breaker.Allow(c.Breaker, now)
		if !ok {
			until := st.Breaker.Until(c.Breaker)
			no = &refusal{SkipCircuitOpen, until, fmt.Sprintf("circuit open until %s", until.UTC().Format(time.RFC3339))}
		}
		return transitions(l.Name, tr)
	})
	if err != nil {
		return nil, fmt.Errorf("provider state %s: %w", l.Name, err)
	}
	return no, nil
}

// refusal is the exhaustion refusal of a state, or nil.
func (c *Chain) refusal(st *ProviderState, now time.Time) *refusal {
	if now.Before(st.ExhaustedUntil) {
		return &refusal{SkipExhausted, st.ExhaustedUntil,
			fmt.Sprintf("exhausted until %s (%s)", st.ExhaustedUntil.UTC().Format(time.RFC3339), st.ExhaustedReason)}
	}
	return nil
}

// reservation is what the reserve step took for one call: a request of the
// link's daily cap and a pacing slot. The token and money reservations of
// budgets belong here too: every call passes Chain.reserve.
type reservation struct {
	capID int64 // 0 = the link has no cap
	pace  *PaceReservation
}

// reserve takes what a call needs before it is made, with now as the time
// of the call: one request of l's daily cap for the cap day of now (up to
// the rules' limit), then the pacing slot for the prompt's estimated
// tokens, sleeping its delay when the rules wait and it fits the deadline.
// A refusal is a skip; stopped says why the call is not made without one
// (a pacing wait past the deadline, the context ended in it). Whatever was
// taken is given back when the call is not made.
func (c *Chain) reserve(ctx, rctx context.Context, t try, p Prompt, now time.Time) (res reservation, no *refusal, stopped string, err error) {
	l := t.link
	if l.DailyCap > 0 {
		limit := l.DailyCap
		if t.rules.capLimit != nil {
			limit = t.rules.capLimit(l)
		}
		next := l.CapReset.Next(now)
		full := &refusal{SkipCap, next, fmt.Sprintf("daily cap %d reached until %s", l.DailyCap, next.UTC().Format(time.RFC3339))}
		if limit <= 0 {
			return res, full, "", nil
		}
		id, _, ok, err := c.Store.ReserveCap(ctx, l.Name, l.CapReset.DayStart(now), limit, now)
		if err != nil {
			return res, nil, "", fmt.Errorf("reserve cap %s: %w", l.Name, err)
		}
		if !ok {
			return res, full, "", nil
		}
		res.capID = id
	}
	delay, pace := l.Pacer.Reserve(now, EstimateTokens(p.System+p.User, l.MaxTokens))
	res.pace = pace
	switch {
	case delay <= 0:
		return res, nil, "", nil
	case !t.rules.paceWait:
		c.release(rctx, res)
		return reservation{}, &refusal{SkipCap, now.Add(delay), fmt.Sprintf("pacing would wait %s", delay.Round(time.Millisecond))}, "", nil
	case now.Add(delay).After(t.deadline):
		c.release(rctx, res)
		return reservation{}, nil, fmt.Sprintf("%s: pacing wait %s does not fit the deadline", l.Name, delay.Round(time.Millisecond)), nil
	}
	if t.rules.events {
		c.emit(Event{Job: t.job, Kind: EventWait, Provider: l.Name, Wait: delay, Reason: "pacing (rpm/tpm)"})
	}
	if err := c.Clock.Sleep(ctx, delay); err != nil {
		c.release(rctx, res)
		return reservation{}, nil, stopQuietly, nil
	}
	return res, nil, "", nil
}

// stopQuietly as reserve's stopped means the call is not made and there is
// nothing to tell: the context ended.
const stopQuietly = "\x00"

// release gives back a reservation whose call was not made.
func (c *Chain) release(rctx context.Context, res reservation) {
	res.pace.Cancel()
	if res.capID != 0 {
		_ = c.Store.SettleCap(rctx, res.capID, false, 0)
	}
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

package chain

import (
	"cmp"
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
// known exhausted, not while it is misconfigured with the config it was
// found with (a probe a day excepted, see Misconfig; a health call is
// always let through), and only when its breaker lets a call through. With
// rules.probe an open circuit past its cooldown lets one probe through and
// moves to half-open, a recorded transition, in one state transaction;
// without it only a closed circuit admits. A health call (rules.health) is
// made through an open circuit too: a health check is what tells whether
// it is still down; the circuit's words come back in note. A closed,
// available link is admitted on a plain read.
func (c *Chain) admit(ctx context.Context, r *rules, l *Link, now time.Time) (no *refusal, note string, err error) {
	if r.runScoped && c.Halted() != nil {
		return &refusal{SkipHalted, time.Time{}, "run halted on an auth failure"}, "", nil
	}
	if r.runScoped && c.skippedForRun(l.Name) {
		return &refusal{SkipHalted, time.Time{}, "auth failure earlier in this run"}, "", nil
	}
	st, err := c.Store.ProviderState(ctx, l.Name)
	if err != nil {
		return nil, "", fmt.Errorf("provider state %s: %w", l.Name, err)
	}
	no = c.refusal(r, l, &st, now)
	probeDue := misconfigProbeDue(r, l, &st, now)
	if no != nil || (st.Breaker.Current() == BreakerClosed && !probeDue) {
		return no, "", nil
	}
	if !r.probe && st.Breaker.Current() != BreakerClosed {
		until := st.Breaker.Until(c.Breaker)
		return &refusal{SkipCircuitOpen, until, fmt.Sprintf("circuit %s until %s", st.Breaker.Current(), until.UTC().Format(time.RFC3339))}, "", nil
	}
	err = c.Store.UpdateProviderState(ctx, l.Name, func(st *ProviderState) []Transition {
		no, note = c.refusal(r, l, st, now), ""
		if no != nil {
			return nil
		}
		if misconfigProbeDue(r, l, st, now) {
			// This call is the day's probe: the next one is a day away,
			// also for the other processes and jobs.
			m := *st.Misconfigured
			m.ProbeAfter = now.Add(MisconfigProbeEvery)
			st.Misconfigured = &m
		}
		if st.Breaker.Current() == BreakerClosed {
			return nil
		}
		ok, tr := st.Breaker.Allow(c.Breaker, now)
		if !ok {
			until := st.Breaker.Until(c.Breaker)
			no = &refusal{SkipCircuitOpen, until, fmt.Sprintf("circuit open until %s", until.UTC().Format(time.RFC3339))}
			if r.health {
				no, note = nil, no.why
			}
		}
		return transitions(l.Name, tr)
	})
	if err != nil {
		return nil, "", fmt.Errorf("provider state %s: %w", l.Name, err)
	}
	return no, note, nil
}

// MaxExhaustAhead is the furthest ahead an exhaustion can end: a daily
// quota resets within a day (in any provider's time zone), so an end
// further off than this was learned while the clock ran ahead (README "When
// the clock jumps") and no longer keeps the link off.
const MaxExhaustAhead = 48 * time.Hour

// refusal is the exhaustion or misconfiguration refusal of a state, or
// nil.
func (c *Chain) refusal(r *rules, l *Link, st *ProviderState, now time.Time) *refusal {
	if now.Before(st.ExhaustedUntil) && st.ExhaustedUntil.Sub(now) <= MaxExhaustAhead {
		return &refusal{SkipExhausted, st.ExhaustedUntil,
			fmt.Sprintf("exhausted until %s (%s)", st.ExhaustedUntil.UTC().Format(time.RFC3339), st.ExhaustedReason)}
	}
	if m := st.Misconfigured; m != nil && !r.health && m.ConfigHash == l.configKey() && now.Before(m.ProbeAfter) {
		return &refusal{SkipMisconfigured, m.ProbeAfter,
			fmt.Sprintf("misconfigured since %s (%s); not called until its config changes or the probe at %s",
				m.Since.UTC().Format(time.RFC3339), clipWords(m.Detail, 160), m.ProbeAfter.UTC().Format(time.RFC3339))}
	}
	return nil
}

// misconfigProbeDue reports whether a call of l now is the daily probe of
// its misconfigured incident (its config unchanged, the probe time past).
func misconfigProbeDue(r *rules, l *Link, st *ProviderState, now time.Time) bool {
	m := st.Misconfigured
	return m != nil && !r.health && m.ConfigHash == l.configKey() && !now.Before(m.ProbeAfter)
}

// reservation is what the reserve step took for one call: a request of the
// link's daily cap, tokens and money (and the chain's money) and a pacing
// slot: every call passes Chain.reserve.
type reservation struct {
	capID int64 // 0 = no limit applies to the link
	pace  *PaceReservation
	// estUSD and estTokens are the store's estimate of the call (0 when
	// no limit applies).
	estUSD    float64
	estTokens int
}

// callEstimate is a call's estimated use before it is made.
type callEstimate struct {
	usd    float64
	tokens int
}

// estimate is the reservation's estimate of the call, or without one the
// upper estimate: the prompt's tokens and the link's whole max_tokens.
func (res reservation) estimate(l *Link, p Prompt) callEstimate {
	if res.capID != 0 {
		return callEstimate{res.estUSD, res.estTokens}
	}
	in, out := p.estimate(0), cmp.Or(l.MaxTokens, defaultMaxOutput)
	return callEstimate{l.Price.Cost(in, out), in + out}
}

// reserve takes what a call needs before it is made, with now as the time
// of the call: one reservation of l's daily cap (up to the rules' limit),
// daily tokens and daily money, and of the chain's daily and monthly
// money, estimated from the prompt and the link's output (see
// SpendRequest), taken atomically by the store; then the pacing slot for
// the prompt's estimated tokens, sleeping its delay when the rules wait and
// it fits the deadline. A refusal is a skip (cap, tokens, budget); stopped
// says why the call is not made without one (a pacing wait past the
// deadline, the context ended in it). Whatever was taken is given back
// when the call is not made.
func (c *Chain) reserve(ctx, rctx context.Context, t try, p Prompt, now time.Time) (res reservation, no *refusal, stopped string, err error) {
	l := t.link
	if c.spendLimited(l) {
		if no, err := c.reserveSpend(ctx, t, p, now, &res); err != nil || no != nil {
			return res, no, "", err
		}
	}
	delay, pace := l.Pacer.Reserve(now, p.estimate(l.MaxTokens))
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

// spendLimited reports whether a call of l counts toward any limit the
// store keeps (cap, tokens, money of the link or the chain).
func (c *Chain) spendLimited(l *Link) bool {
	return l.DailyCap > 0 || l.DailyTokens > 0 || l.DailyBudgetUSD > 0 || c.Budget.DailyUSD > 0 || c.Budget.MonthlyUSD > 0
}

// reserveSpend takes the store's reservation of one call of t's link into
// res, or returns the refusal of the limit it would cross.
func (c *Chain) reserveSpend(ctx context.Context, t try, p Prompt, now time.Time, res *reservation) (*refusal, error) {
	l := t.link
	limit := l.DailyCap
	if l.DailyCap > 0 && t.rules.capLimit != nil {
		limit = t.rules.capLimit(l)
	}
	next := l.CapReset.Next(now)
	if l.DailyCap > 0 && limit <= 0 {
		return &refusal{SkipCap, next, fmt.Sprintf("daily cap %d reached until %s", l.DailyCap, next.UTC().Format(time.RFC3339))}, nil
	}
	day := utcDay(now)
	month := time.Date(day.Year(), day.Month(), 1, 0, 0, 0, 0, time.UTC)
	g, err := c.Store.ReserveSpend(ctx, SpendRequest{Provider: l.Name, DayStart: l.CapReset.DayStart(now), Now: now,
		Cap: limit, DailyTokens: l.DailyTokens, DailyUSD: l.DailyBudgetUSD,
		ChainDayStart: day, ChainMonthStart: month, ChainDailyUSD: c.Budget.DailyUSD, ChainMonthlyUSD: c.Budget.MonthlyUSD,
		InputTokens: p.estimate(0), MaxOutput: cmp.Or(l.MaxTokens, defaultMaxOutput), Price: l.Price})
	if err != nil {
		return nil, fmt.Errorf("reserve %s: %w", l.Name, err)
	}
	if g.Refused == "" {
		res.capID, res.estUSD, res.estTokens = g.ID, g.EstUSD, g.EstTokens
		return nil, nil
	}
	until := next
	switch g.Refused {
	case LimitChainDay:
		until = day.AddDate(0, 0, 1)
	case LimitChainMonth:
		until = month.AddDate(0, 1, 0)
	}
	why := fmt.Sprintf("%s %g reached until %s", g.Refused, g.Limit, until.UTC().Format(time.RFC3339))
	if g.Refused != LimitCap {
		why = fmt.Sprintf("%s would be crossed (%.4g used of %g, this call ~%.4g) until %s", g.Refused, g.Used, g.Limit, g.estimate(), until.UTC().Format(time.RFC3339))
	}
	return &refusal{g.Refused.Reason(), until, why}, nil
}

// estimate is the grant's estimate in the unit of its refusing limit.
func (g SpendGrant) estimate() float64 {
	if g.Refused == LimitTokens {
		return float64(g.EstTokens)
	}
	return g.EstUSD
}

// defaultMaxOutput is the output ceiling a link without max_tokens is
// estimated at before it has a history.
const defaultMaxOutput = 8192

// utcDay is the start of t's UTC day.
func utcDay(t time.Time) time.Time {
	y, m, d := t.UTC().Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
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

package chain

import (
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Pacer spaces the calls to one provider under its optional rpm/tpm limits
// (the link's `rpm:` and `tpm:`), so that the chain waits before a call
// instead of earning a 429. It wraps golang.org/x/time/rate limiters and
// never sleeps: Reserve returns the delay and the caller sleeps it through
// its own (possibly virtual) clock. Each dimension allows a burst of one
// minute's allowance and refills evenly over the minute.
//
// A nil *Pacer is unlimited; NewPacer returns nil when both limits are 0.
// A Pacer is safe for concurrent use. It is in-memory: pacing is per process.
type Pacer struct {
	mu   sync.Mutex
	req  *rate.Limiter // nil = no request limit
	tok  *rate.Limiter // nil = no token limit
	last time.Time     // latest time seen, so that give-backs never move a limiter back
}

// NewPacer returns a Pacer allowing rpm requests and tpm tokens per minute;
// 0 (or less) means no limit for that dimension, and nil is returned when
// both are unlimited.
func NewPacer(rpm, tpm int) *Pacer {
	if rpm <= 0 && tpm <= 0 {
		return nil
	}
	p := &Pacer{}
	if rpm > 0 {
		p.req = rate.NewLimiter(rate.Limit(float64(rpm)/60), rpm)
	}
	if tpm > 0 {
		p.tok = rate.NewLimiter(rate.Limit(float64(tpm)/60), tpm)
	}
	return p
}

// PaceReservation is one reserved call: a request and its estimated tokens.
// Settle it once the call's real token count is known, or Cancel it when
// the call is not made. A nil *PaceReservation does nothing.
type PaceReservation struct {
	p      *Pacer
	at     time.Time // when the call may start (now + delay)
	req    *rate.Reservation
	tok    *rate.Reservation
	tokens int // tokens taken so far
	done   bool
}

// Reserve takes one request and estTokens tokens at now and returns how long
// the caller must wait before sending. The reservation is taken even when
// the caller then decides not to wait (a delay past the deadline): it must
// Cancel it. An estimate above the token burst (tpm) is capped at the burst,
// so an oversized request waits for a full minute's allowance instead of
// never being allowed; Settle then charges the rest as debt that later
// calls wait for.
func (p *Pacer) Reserve(now time.Time, estTokens int) (delay time.Duration, r *PaceReservation) {
	if p == nil {
		return 0, nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seen(now)
	r = &PaceReservation{p: p, at: now}
	if p.req != nil {
		r.req = p.req.ReserveN(now, 1)
		delay = max(delay, r.req.DelayFrom(now))
	}
	if p.tok != nil && estTokens > 0 {
		n := min(estTokens, p.tok.Burst())
		r.tok = p.tok.ReserveN(now, n)
		r.tokens = n
		delay = max(delay, r.tok.DelayFrom(now))
	}
	r.at = now.Add(delay)
	return delay, r
}

// Settle charges the call's real token count: unused estimated tokens are
// given back (never above the burst), extra tokens are taken as debt that
// later reservations wait for. A second Settle, or Settle after Cancel, does
// nothing.
func (r *PaceReservation) Settle(actualTokens int) {
	if r == nil || r.done {
		return
	}
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	r.done = true
	if p.tok == nil {
		return
	}
	t := p.seen(r.at)
	switch diff := max(actualTokens, 0) - r.tokens; {
	case diff < 0:
		back := min(-diff, int(float64(p.tok.Burst())-p.tok.TokensAt(t)))
		if back > 0 {
			p.tok.ReserveN(t, -back) // a negative reservation adds tokens
		}
	case diff > 0:
		for diff > 0 {
			n := min(diff, p.tok.Burst())
			p.tok.ReserveN(t, n)
			diff -= n
		}
	}
}

// Cancel gives the reservation back when the call was not made (for
// example its delay did not fit the deadline). Calls reserved after it keep
// their place. Cancel after Settle does nothing.
func (r *PaceReservation) Cancel() {
	if r == nil || r.done {
		return
	}
	p := r.p
	p.mu.Lock()
	defer p.mu.Unlock()
	r.done = true
	// CancelAt restores tokens only while the reservation's time to act is
	// not before the given time; the latest time seen never moves a limiter
	// back and is the reservation time when Cancel follows Reserve at once.
	t := p.seen(time.Time{})
	if r.req != nil {
		r.req.CancelAt(t)
	}
	if r.tok != nil {
		r.tok.CancelAt(t)
	}
}

// seen records t as the latest time seen and returns the later of t and the
// previous latest.
func (p *Pacer) seen(t time.Time) time.Time {
	if t.After(p.last) {
		p.last = t
	}
	return p.last
}

// estimate estimates a call's token use before it is made: about four
// characters of the prompt's system and user text per token plus the
// answer's maxTokens.
func (p Prompt) estimate(maxTokens int) int {
	return (len(p.System)+len(p.User)+3)/4 + max(maxTokens, 0)
}

package whatif

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
)

// behaviour is the fault model of one provider inside a World: the
// sim.Behaviour of its in-process provider. It keeps the provider's own
// state (the day's quota used, the current 429 burst) and is not safe for
// concurrent use; sim.InProc calls it under its lock.
type behaviour struct {
	name    string
	m       ProviderModel
	seed    uint64
	outages []window // sorted by start, own and group outages merged
	reset   reset
	busy    func(time.Time) bool
	factor  float64

	start time.Time // the first simulated day: drift and auth count from it

	perJ    map[string]int // calls per job so far
	burst   time.Time      // end of the current throttle (a per-minute 429 burst, lengthened by penalties)
	ban     time.Time      // end of the current temporary ban
	reqs    []time.Time    // requests of the last minute (RPM bucket), refused ones included
	toks    []tokenUse     // admitted requests' tokens of the last minute (TPM bucket)
	refused []time.Time    // rate-limit refusals of the last minute (ban_after)
	qDay    time.Time      // start of the provider day the quotas count
	qUsed   int            // answered requests this provider day
	tUsed   int            // tokens of the answers this provider day
}

// tokenUse is one admitted request in the TPM bucket.
type tokenUse struct {
	at time.Time
	n  int
}

var (
	_ sim.Behaviour = (*behaviour)(nil)
	_ sim.Meter     = (*behaviour)(nil)
)

// Answered counts an answer's tokens against the provider day's token
// quota.
func (b *behaviour) Answered(now time.Time, _ chain.Request, in, out int) {
	b.rollDay(now)
	b.tUsed += in + out
}

// rollDay starts a new provider day's quota count when now is past the reset.
func (b *behaviour) rollDay(now time.Time) time.Time {
	day := b.reset.dayStart(now)
	if !day.Equal(b.qDay) {
		b.qDay, b.qUsed, b.tUsed = day, 0, 0
	}
	return day
}

// lengthAt is the share of the asked length the model aims at, at now:
// its Quality.Length, slid along its Drift.
func (b *behaviour) lengthAt(now time.Time) float64 {
	base := b.m.Quality.Length
	dr := b.m.Drift
	if dr.Length <= 0 {
		return base
	}
	if base <= 0 {
		base = 1
	}
	from := b.start.Add(dr.After)
	if now.Before(from) {
		return b.m.Quality.Length
	}
	f := 1.0
	if dr.Over > 0 && now.Before(from.Add(dr.Over)) {
		f = float64(now.Sub(from)) / float64(dr.Over)
	}
	return base + f*(dr.Length-base)
}

// revoked reports whether the provider's key is revoked at now.
func (b *behaviour) revoked(now time.Time) bool {
	a := b.m.Auth
	if a.RevokedAfter <= 0 {
		return false
	}
	from := b.start.Add(a.RevokedAfter)
	return !now.Before(from) && (a.RestoredAfter <= 0 || now.Before(from.Add(a.RestoredAfter)))
}

// trim drops the entries older than a minute before now.
func trim(ts []time.Time, now time.Time) []time.Time {
	i := 0
	for i < len(ts) && !ts[i].After(now.Add(-time.Minute)) {
		i++
	}
	return ts[i:]
}

// refuse records a rate-limit refusal at now: while throttled it pushes the
// throttle's end out by the penalty, and BanAfter refusals within a minute
// start (or re-arm) a ban.
func (b *behaviour) refuse(now time.Time, throttled bool) {
	rl := b.m.RateLimit
	if throttled && rl.Penalty > 0 && b.burst.Before(now.Add(rl.Penalty)) {
		b.burst = now.Add(rl.Penalty)
	}
	if rl.BanAfter <= 0 {
		return
	}
	b.refused = append(trim(b.refused, now), now)
	if len(b.refused) >= rl.BanAfter {
		b.ban = now.Add(rl.Ban)
	}
}

// estimateTokens is what a request asks of a TPM bucket: its prompt at
// about four characters a token and the answer its "Target words" line
// asks for at 1.35 tokens a word (1,500 words when it names none).
func estimateTokens(req chain.Request) int {
	words := 1500
	if _, rest, ok := strings.Cut(req.Prompt, "Target words:"); ok {
		if f := strings.Fields(rest); len(f) > 0 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 0 {
				words = n
			}
		}
	}
	return (len(req.System)+len(req.Prompt))/4 + words*135/100
}

// Decide draws the request's fault, latency and text.
func (b *behaviour) Decide(now time.Time, req chain.Request, fault sim.Fault, scripted bool) sim.Decision {
	jobID := req.JobID
	if b.perJ == nil {
		b.perJ = map[string]int{}
	}
	// Draws depend on the job and the how-many-th call of it this is, not
	// on the provider's total count: every scenario meets the same answer
	// for the same job (common random numbers).
	b.perJ[jobID]++
	k := b.perJ[jobID]
	rng := rand.New(rand.NewPCG(b.seed^hash64("call/"+b.name), hash64(jobID)+uint64(k)))
	// The text seed does not depend on the provider either: providers
	// differ by their quality model (thin, length, bad answers), and equal
	// texts let the simulator score each distinct answer once.
	textSeed := int64(rand.New(rand.NewPCG(b.seed^hash64("text"), hash64(jobID)+uint64(k))).Uint64() >> 1)
	d := sim.Decision{Fault: fault, Quota: chain.QuotaHint{Remaining: -1}, TextSeed: textSeed, TextN: k,
		Thin: b.m.Quality.Thin, Length: b.lengthAt(now)}
	if !scripted {
		d = b.draw(rng, now, req, d)
	}
	d.Latency, d.FirstToken = b.latency(rng, d.Fault)
	return d
}

// draw draws a fault from the fault model at now.
func (b *behaviour) draw(rng *rand.Rand, now time.Time, req chain.Request, d sim.Decision) sim.Decision {
	if b.revoked(now) {
		d.Fault = sim.FaultUnauthorized
		return d
	}
	day := b.rollDay(now)
	next := b.reset.next(now)
	if w, ok := b.outageAt(now); ok {
		d.Fault = w.fault
		if w.fault == sim.FaultRateDay {
			d.ResetAt = next
		}
		return d
	}
	rl := b.m.RateLimit
	if now.Before(b.ban) {
		b.reqs = append(trim(b.reqs, now), now)
		b.refuse(now, false)
		d.Fault, d.RetryAfter = sim.FaultRateMinute, b.ban.Sub(now)
		return d
	}
	quota := rl.DailyQuota
	if rl.BusyDayQuota > 0 && b.busy(day) {
		quota = rl.BusyDayQuota
	}
	if quota > 0 {
		d.Quota = chain.QuotaHint{Remaining: max(0, quota-b.qUsed), Reset: next.Sub(now)}
		if b.qUsed >= quota {
			d.Fault, d.ResetAt = sim.FaultRateDay, next
			return d
		}
	}
	if rl.DailyTokens > 0 && b.tUsed >= rl.DailyTokens {
		d.Fault, d.ResetAt = sim.FaultRateDay, next
		d.Quota = chain.QuotaHint{Remaining: 0, Reset: next.Sub(now)}
		return d
	}
	// Every request counts in the minute's request bucket, refused or not.
	b.reqs = append(trim(b.reqs, now), now)
	if now.Before(b.burst) {
		b.refuse(now, true)
		d.Fault, d.RetryAfter = sim.FaultRateMinute, b.burst.Sub(now)
		return d
	}
	if rl.RPM > 0 && len(b.reqs) > rl.RPM {
		// The bucket empties a minute after the oldest request still in it.
		until := b.reqs[len(b.reqs)-rl.RPM-1].Add(time.Minute)
		b.burst = until
		b.refuse(now, true)
		d.Fault, d.RetryAfter = sim.FaultRateMinute, max(time.Second, b.burst.Sub(now))
		return d
	}
	if rl.TPM > 0 && b.overTPM(now, req, rl.TPM) {
		b.refuse(now, true)
		d.Fault, d.RetryAfter = sim.FaultRateMinute, max(time.Second, b.burst.Sub(now))
		return d
	}
	pm := rl.PerMinute
	if v, ok := rl.ByHour[strconv.Itoa(now.UTC().Hour())]; ok {
		pm = v
	}
	if b.busy(day) {
		pm = math.Min(1, pm*b.factor)
	}
	if rng.Float64() < pm {
		mean := rl.Burst
		if mean <= 0 {
			mean = 20 * time.Second
		}
		length := max(time.Second, time.Duration(rng.ExpFloat64()*float64(mean)))
		b.burst = now.Add(length)
		b.refuse(now, false)
		d.Fault, d.RetryAfter = sim.FaultRateMinute, length
		return d
	}
	if f, ok := b.drawError(rng); ok {
		d.Fault = f
	}
	if d.Fault != sim.FaultServerError && d.Fault != sim.FaultUnavailable && d.Fault != sim.FaultHang && d.Fault != sim.FaultStall {
		b.qUsed++ // an answered request counts against the day's quota
		if quota > 0 {
			d.Quota.Remaining = max(0, quota-b.qUsed)
		}
	}
	return d
}

// overTPM counts req's estimated tokens in the minute's token bucket and
// reports, setting the burst's end, when they would overflow it instead.
func (b *behaviour) overTPM(now time.Time, req chain.Request, tpm int) bool {
	i := 0
	for i < len(b.toks) && !b.toks[i].at.After(now.Add(-time.Minute)) {
		i++
	}
	b.toks = b.toks[i:]
	used := 0
	for _, t := range b.toks {
		used += t.n
	}
	est := estimateTokens(req)
	if used+est > tpm && len(b.toks) > 0 {
		b.burst = b.toks[0].at.Add(time.Minute)
		return true
	}
	b.toks = append(b.toks, tokenUse{at: now, n: est})
	return false
}

// drawError draws a server error or, failing one, a bad answer from the
// fault model's rates; ok is false when the call draws neither.
func (b *behaviour) drawError(rng *rand.Rand) (f sim.Fault, ok bool) {
	e, q := b.m.Errors, b.m.Quality
	if f, ok := pickFault(rng.Float64(), []rated{{e.ServerError, sim.FaultServerError}, {e.Unavailable, sim.FaultUnavailable},
		{e.Timeout, sim.FaultHang}, {e.StreamCut, sim.FaultStreamCut}}); ok {
		return f, true
	}
	return pickFault(rng.Float64(), []rated{{q.LowQuality, sim.FaultLowQuality}, {q.MetaPhrase, sim.FaultMetaPhrase},
		{q.BadJSON, sim.FaultBadJSON}, {q.Truncate, sim.FaultTruncate}})
}

// rated is a fault with its rate.
type rated struct {
	rate  float64
	fault sim.Fault
}

// pickFault returns the fault whose share of [0, 1) holds u, the rates laid
// end to end in order; ok is false when u falls past them all.
func pickFault(u float64, faults []rated) (sim.Fault, bool) {
	sum := 0.0
	for _, r := range faults {
		sum += r.rate
		if u < sum {
			return r.fault, true
		}
	}
	return "", false
}

// latency draws the time a call takes.
func (b *behaviour) latency(rng *rand.Rand, f sim.Fault) (total, first time.Duration) {
	l := b.m.Latency
	switch f {
	case sim.FaultNone, sim.FaultLowQuality, sim.FaultMetaPhrase, sim.FaultBadJSON, sim.FaultTruncate, sim.FaultStreamCut, sim.FaultSlowFirstToken, sim.FaultStall:
		med := l.Median
		if med <= 0 {
			med = 12 * time.Second
		}
		p95 := l.P95
		if p95 <= med {
			p95 = med * 5 / 2
		}
		total = lognormal(rng, med, p95)
		share := l.FirstToken
		if share <= 0 {
			share = 0.15
		}
		return total, time.Duration(float64(total) * share)
	}
	if l.Error > 0 {
		return l.Error, 0
	}
	return 300 * time.Millisecond, 0
}

// outageAt returns the outage that t falls in, if any.
func (b *behaviour) outageAt(t time.Time) (window, bool) {
	i := sort.Search(len(b.outages), func(i int) bool { return b.outages[i].to.After(t) })
	for ; i < len(b.outages) && !b.outages[i].from.After(t); i++ {
		if t.Before(b.outages[i].to) {
			return b.outages[i], true
		}
	}
	return window{}, false
}

// lognormal draws a log-normal duration with the given median and p95.
func lognormal(rng *rand.Rand, median, p95 time.Duration) time.Duration {
	sigma := math.Log(float64(p95)/float64(median)) / 1.6449
	return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
}

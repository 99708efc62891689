package whatif

import (
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
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

	perJ  map[string]int // calls per job so far
	burst time.Time      // end of the current per-minute 429 burst
	qDay  time.Time      // start of the provider day the quota counts
	qUsed int
}

var _ sim.Behaviour = (*behaviour)(nil)

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
		Thin: b.m.Quality.Thin, Length: b.m.Quality.Length}
	if !scripted {
		d = b.draw(rng, now, d)
	}
	d.Latency, d.FirstToken = b.latency(rng, d.Fault)
	return d
}

// draw draws a fault from the fault model at now.
func (b *behaviour) draw(rng *rand.Rand, now time.Time, d sim.Decision) sim.Decision {
	if w, ok := b.outageAt(now); ok {
		d.Fault = w.fault
		return d
	}
	rl := b.m.RateLimit
	day := b.reset.dayStart(now)
	if !day.Equal(b.qDay) {
		b.qDay, b.qUsed = day, 0
	}
	quota := rl.DailyQuota
	if rl.BusyDayQuota > 0 && b.busy(day) {
		quota = rl.BusyDayQuota
	}
	next := b.reset.next(now)
	if quota > 0 {
		d.Quota = chain.QuotaHint{Remaining: max(0, quota-b.qUsed), Reset: next.Sub(now)}
		if b.qUsed >= quota {
			d.Fault, d.ResetAt = sim.FaultRateDay, next
			return d
		}
	}
	if now.Before(b.burst) {
		d.Fault, d.RetryAfter = sim.FaultRateMinute, b.burst.Sub(now)
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
		d.Fault, d.RetryAfter = sim.FaultRateMinute, length
		return d
	}
	e := b.m.Errors
	u := rng.Float64()
	switch {
	case u < e.ServerError:
		d.Fault = sim.FaultServerError
	case u < e.ServerError+e.Unavailable:
		d.Fault = sim.FaultUnavailable
	case u < e.ServerError+e.Unavailable+e.Timeout:
		d.Fault = sim.FaultHang
	case u < e.ServerError+e.Unavailable+e.Timeout+e.StreamCut:
		d.Fault = sim.FaultStreamCut
	default:
		q := b.m.Quality
		u = rng.Float64()
		switch {
		case u < q.LowQuality:
			d.Fault = sim.FaultLowQuality
		case u < q.LowQuality+q.MetaPhrase:
			d.Fault = sim.FaultMetaPhrase
		case u < q.LowQuality+q.MetaPhrase+q.BadJSON:
			d.Fault = sim.FaultBadJSON
		case u < q.LowQuality+q.MetaPhrase+q.BadJSON+q.Truncate:
			d.Fault = sim.FaultTruncate
		}
	}
	if d.Fault != sim.FaultServerError && d.Fault != sim.FaultUnavailable && d.Fault != sim.FaultHang {
		b.qUsed++ // an answered request counts against the day's quota
		if quota > 0 {
			d.Quota.Remaining = max(0, quota-b.qUsed)
		}
	}
	return d
}

// latency draws the time a call takes.
func (b *behaviour) latency(rng *rand.Rand, f sim.Fault) (total, first time.Duration) {
	l := b.m.Latency
	switch f {
	case sim.FaultNone, sim.FaultLowQuality, sim.FaultMetaPhrase, sim.FaultBadJSON, sim.FaultTruncate, sim.FaultStreamCut, sim.FaultSlowFirstToken:
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

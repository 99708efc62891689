package chain

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// Shadow is shadow mode (config `shadow:`): for a sampled job, each shadow
// link gets the same job in parallel with the chain's walk. Its answer
// passes the same quality gate, is recorded as a call with Shadow set and
// purpose "shadow" (attempt 0: it is not an attempt of the job's chain), and
// is compared with the primary answer (the published one, or the best kept
// one of a job that went to review) through Record. A shadow answer is never
// published, never becomes the job's candidate and never delays the walk:
// Generate returns without waiting for it.
//
// Rules a shadow call follows, because the failover chain comes first:
//   - Daily caps: a shadow call of a link that is also in the chain takes a
//     cap reservation only while the day's use, after it, stays within
//     CapShare of the link's daily_cap (the rest is kept for failover); a
//     candidate (a link outside the chain) may use its whole daily_cap; a
//     link without a daily_cap is not limited. A refused reservation is a
//     skip with reason "cap" (no call). Pacing (rpm/tpm) is never waited
//     for: a shadow call that would have to wait is skipped the same way.
//   - State: a provider known exhausted, or whose circuit is not closed, is
//     skipped (reasons "exhausted", "circuit_open"); a shadow call never
//     takes the half-open probe, and its failures never feed the circuit
//     breaker (a shadow provider's bad day must not reroute live traffic).
//   - Exhaustion is learned, though: a daily-quota 429 (or a wait beyond
//     max_wait, or remaining-requests-day 0 in the headers) is a fact about
//     the account, not about the sample, and the chain would spend a call
//     to learn it again, so it is persisted as "exhausted until" exactly as
//     the chain does.
//   - A 401/403 from a shadow call is recorded and never halts the run.
//
// The zero value is off (no links). SampleRate ≤ 0 samples no job, ≥ 1
// every job; the sample is a deterministic hash of the job id, so reruns of
// a job agree. CapShare 0 means 0.5.
type Shadow struct {
	Links      []*Link
	SampleRate float64
	CapShare   float64
	// Record stores a comparison (telemetry's shadow_comparisons); nil
	// records none. It is called from the shadow's goroutine.
	Record func(ctx context.Context, c ShadowComparison) error
}

// ShadowComparison is one shadow answer compared with the job's primary
// answer. The primary is the published answer or, for a job in review, the
// best kept one; PrimaryProvider is "" when the chain produced no answer
// (deferred, halted). A nil score means that side produced no scorable
// answer; WordRatio (shadow words / primary words) is nil unless both sides
// produced an article. Latencies and costs are those of the single calls.
type ShadowComparison struct {
	TS              time.Time
	RequestID       string
	PrimaryProvider string
	ShadowProvider  string
	PrimaryScore    *float64
	ShadowScore     *float64
	ShadowPass      bool    // the shadow answer passed the quality gate
	ShadowOutcome   Outcome // the shadow call's outcome (ok, rejected, timeout_total, …)
	WordRatio       *float64
	PrimaryLatency  time.Duration
	ShadowLatency   time.Duration
	PrimaryCostUSD  float64
	ShadowCostUSD   float64
}

// Sampled reports whether a job with this id is shadowed at rate: a
// deterministic hash of the id (SHA-256), uniform in [0,1), below rate.
func Sampled(jobID string, rate float64) bool {
	if rate <= 0 {
		return false
	}
	if rate >= 1 {
		return true
	}
	h := sha256.Sum256([]byte(jobID))
	u := float64(binary.BigEndian.Uint64(h[:8])>>11) / float64(uint64(1)<<53)
	return u < rate
}

// shadowSet tracks the shadow calls in flight of a Chain. Its zero value is
// ready to use.
type shadowSet struct {
	mu      sync.Mutex
	wg      sync.WaitGroup
	cancels map[int]context.CancelFunc
	next    int
}

func (s *shadowSet) add(cancel context.CancelFunc) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cancels == nil {
		s.cancels = map[int]context.CancelFunc{}
	}
	s.next++
	s.cancels[s.next] = cancel
	s.wg.Add(1)
	return s.next
}

func (s *shadowSet) done(id int) {
	s.mu.Lock()
	if c, ok := s.cancels[id]; ok {
		c()
		delete(s.cancels, id)
	}
	s.mu.Unlock()
	s.wg.Done()
}

func (s *shadowSet) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cancels {
		c()
	}
}

func (s *shadowSet) pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.cancels)
}

// shadowRun is the shadow side of one job: the primary's result arrives
// through done when the walk ends.
type shadowRun struct {
	once    sync.Once
	primary chan struct{}
	res     Result
}

// done hands the walk's result to the shadow calls of the job. It is safe
// on a nil *shadowRun (job not sampled) and idempotent.
func (r *shadowRun) done(res Result) {
	if r == nil {
		return
	}
	r.once.Do(func() {
		r.res = res
		close(r.primary)
	})
}

// WaitShadows waits up to timeout for the shadow calls in flight, so that
// their answers are recorded before the process exits; a run calls it after
// its last job, bounded by the job deadline. Calls still running when the
// timeout ends are cancelled (recorded as timeout_total) and given a short
// grace to record. It returns how many calls were still in flight after
// that grace.
func (c *Chain) WaitShadows(timeout time.Duration) int {
	ch := make(chan struct{})
	go func() {
		c.shadows.wg.Wait()
		close(ch)
	}()
	t := time.NewTimer(max(timeout, 0))
	defer t.Stop()
	select {
	case <-ch:
		return 0
	case <-t.C:
	}
	c.shadows.cancelAll()
	g := time.NewTimer(5 * time.Second)
	defer g.Stop()
	select {
	case <-ch:
		return 0
	case <-g.C:
		return c.shadows.pending()
	}
}

// startShadow starts the shadow calls of a sampled job and returns the
// handle the walk's result goes to (nil when the job is not shadowed).
// The calls run on their own context, detached from ctx's cancellation and
// bounded by the job deadline budget.
func (c *Chain) startShadow(ctx context.Context, job Job, budget time.Duration) *shadowRun {
	if len(c.Shadow.Links) == 0 || !Sampled(job.ID, c.Shadow.SampleRate) {
		return nil
	}
	run := &shadowRun{primary: make(chan struct{})}
	deadline := c.Clock.Now().Add(budget)
	for _, l := range c.Shadow.Links {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		id := c.shadows.add(cancel)
		go func() {
			defer c.shadows.done(id)
			c.shadowCall(sctx, job, l, deadline, run)
		}()
	}
	return run
}

// inChain reports whether l is one of the chain's failover links.
func (c *Chain) inChain(l *Link) bool {
	for _, x := range c.Links {
		if x == l || x.Name == l.Name {
			return true
		}
	}
	return false
}

// shadowLimit is the daily-cap limit a shadow reservation is taken
// against: the whole cap for a candidate, CapShare of it for a chain link.
func (c *Chain) shadowLimit(l *Link) int {
	if !c.inChain(l) {
		return l.DailyCap
	}
	share := c.Shadow.CapShare
	if share <= 0 || share > 1 {
		share = 0.5
	}
	return int(math.Floor(float64(l.DailyCap) * share))
}

// shadowCall makes one shadow call through the attempt pipeline and
// records its comparison.
func (c *Chain) shadowCall(ctx context.Context, job Job, l *Link, deadline time.Time, run *shadowRun) {
	r := c.shadowRules()
	// A store error loses the call's rows; the comparison is still tried.
	out, _ := c.attempt(ctx, try{rules: &r, link: l, job: job, deadline: deadline,
		render: func(l *Link) (Prompt, error) { return c.Prompt(l.PromptName(), job) }})
	if out.call.Provider == "" || c.Shadow.Record == nil {
		return // not called (skipped, or the prompt failed)
	}
	cmp := ShadowComparison{RequestID: job.ID, ShadowProvider: l.Name, ShadowLatency: out.call.Latency, ShadowOutcome: out.call.Outcome}
	var shadowWords int
	if out.failure == nil {
		cmp.ShadowScore, cmp.ShadowPass, cmp.ShadowCostUSD = out.verdict.score, out.verdict.pass, out.call.CostUSD
		if out.verdict.article != nil {
			shadowWords = articleWords(*out.verdict.article)
		}
	}
	// Records must land even when ctx was cancelled at process exit.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer rcancel()
	// The comparison needs the primary answer: wait for the walk (it always
	// ends within the job deadline; the process waits in WaitShadows).
	select {
	case <-run.primary:
	case <-ctx.Done():
		select {
		case <-run.primary:
		case <-rctx.Done():
			return
		}
	}
	fillPrimary(&cmp, run.res, shadowWords)
	cmp.TS = c.Clock.Now()
	// A failed write loses only the comparison: the call row is recorded.
	_ = c.Shadow.Record(rctx, cmp)
}

// fillPrimary sets the primary side of a comparison from the walk's result.
func fillPrimary(cmp *ShadowComparison, res Result, shadowWords int) {
	p := res.Winner
	if p == nil {
		p = res.Best
	}
	if p == nil {
		return
	}
	s := p.Score
	cmp.PrimaryProvider, cmp.PrimaryScore = p.Provider, &s
	for _, a := range res.Attempts {
		if a.Number == p.Attempt && a.Provider == p.Provider {
			cmp.PrimaryLatency, cmp.PrimaryCostUSD = a.Latency, a.CostUSD
		}
	}
	if pw := articleWords(p.Article); pw > 0 && shadowWords > 0 {
		r := float64(shadowWords) / float64(pw)
		cmp.WordRatio = &r
	}
}

// articleWords counts the words of an article's section bodies.
func articleWords(a quality.Article) int {
	n := 0
	for _, s := range a.Sections {
		n += len(strings.Fields(s.Body))
	}
	return n
}

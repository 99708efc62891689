package chain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// Alert is one message for a human, deduplicated by Key.
type Alert struct {
	Key      string // dedupe key, e.g. "auth:gemini"
	Rule     Rule
	Severity Severity
	Text     string
}

// Notifier takes alerts (the outbox in production). Notify must not block
// on the network for long; delivery happens from the outbox.
type Notifier interface {
	Notify(ctx context.Context, a Alert) error
}

// Runner takes due jobs through the chain and publishes them at most once.
// Chain, Jobs, Publisher and Owner are required. Lease is how long a claim
// holds without a heartbeat (0 = the chain deadline + 5m); Parallel is how
// many jobs run at once (0 = 1).
type Runner struct {
	Chain     *Chain
	Jobs      JobStore
	Publisher Publisher
	Notifier  Notifier // optional
	Owner     Owner
	Alive     func(Owner) bool
	Lease     time.Duration
	Parallel  int
	// PostsPerDay, when > 0 and Jobs is a DayClaimer, is the ceiling of
	// publications per UTC day across runs, held in the claim itself; the
	// run stops taking jobs when it is reached.
	PostsPerDay int
	// OnJob, when set, is called after each job with its report.
	OnJob func(JobReport)
	// AuthAlert, when set, words the alert of a run halted by provider's
	// auth error at now (the caller knows which variable holds the key);
	// nil: a plain text naming the provider.
	AuthAlert func(provider string, cause error, now time.Time) Alert
}

// JobReport is the result of one job in a run.
type JobReport struct {
	Job      Job
	Status   JobStatus // published, review, deferred, halted; JobActive (held by another run); JobError
	Provider string
	Model    string
	Score    float64
	CostUSD  float64
	Location string
	Result   *Result
	Err      error
}

// Summary counts a run's jobs by what happened to them.
type Summary struct {
	Reports   []JobReport
	Published int
	Review    int
	Deferred  int
	Halted    int
	Active    int // held by another live run
	CostUSD   float64
	Halt      *ProviderError
	Errors    int
	// Unstarted counts the due jobs the run would have taken but did not
	// start because it was stopped (a signal); they stay due.
	Unstarted int
	// DayFull is set when the run stopped taking jobs at the day's
	// ceiling (Runner.PostsPerDay).
	DayFull bool
}

// mark is the write-ahead mark of rec, under the day's ceiling when one is
// set and the store can hold it (see claim).
func (r *Runner) mark(ctx context.Context, rec JobRecord, now time.Time) error {
	if dc, ok := r.Jobs.(DayClaimer); ok && r.PostsPerDay > 0 {
		return dc.MarkPublishingWithin(ctx, rec, r.Owner, r.lease(), now, utcDay(now), r.PostsPerDay)
	}
	return r.Jobs.MarkPublishing(ctx, rec, r.Owner, now)
}

// claim claims j, under the day's ceiling when one is set and the store
// can hold it.
func (r *Runner) claim(ctx context.Context, j JobRecord, lease time.Duration, now time.Time) (bool, JobRecord, error) {
	if dc, ok := r.Jobs.(DayClaimer); ok && r.PostsPerDay > 0 {
		return dc.ClaimJobWithin(ctx, j, r.Owner, r.alive, lease, now, utcDay(now), r.PostsPerDay)
	}
	return r.Jobs.ClaimJob(ctx, j, r.Owner, r.alive, lease, now)
}

// Run processes up to limit due jobs from candidates (in order); jobs that
// are already finished for their slot do not count toward limit. It stops
// taking new jobs when the run halts or ctx is cancelled (the job in flight
// finishes).
func (r *Runner) Run(ctx context.Context, candidates []Job, limit int) Summary {
	par := r.Parallel
	if par <= 0 {
		par = 1
	}
	lease := r.lease()
	var (
		mu      sync.Mutex
		sum     Summary
		taken   int
		next    int
		storeKO bool // a claim failed: the job store is unusable, take no more jobs
	)
	// pick returns the next job this run claims, or false when done.
	pick := func() (Job, JobRecord, bool) {
		mu.Lock()
		defer mu.Unlock()
		for next < len(candidates) {
			if ctx.Err() != nil || r.Chain.Halted() != nil || storeKO {
				return Job{}, JobRecord{}, false
			}
			j := candidates[next]
			// Past the run's limit or the day's ceiling only a job left
			// publishing is taken: reconciling it is no new publication (it
			// is counted already). Those come first (Plan), so the first
			// other job ends the run.
			if (taken >= limit || sum.DayFull) && !r.leftPublishing(ctx, j.ID) {
				return Job{}, JobRecord{}, false
			}
			next++
			now := r.Chain.Clock.Now()
			claimed, cur, err := r.claim(ctx, JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot, Title: j.Title, Category: j.Category, Language: j.Language}, lease, now)
			if err != nil {
				sum.Errors++
				sum.Reports = append(sum.Reports, JobReport{Job: j, Status: JobError, Err: fmt.Errorf("claim job %s: %w", j.ID, err)})
				if errors.Is(err, ErrJobUnstorable) {
					// This job alone: the others go on.
					r.unstorable(ctx, j, err, now)
					continue
				}
				// The store already retried through its busy timeouts: the
				// next claim would fail the same way. The rest stay due.
				storeKO = true
				return Job{}, JobRecord{}, false
			}
			if !claimed {
				switch cur.Status {
				case JobDayFull:
					sum.DayFull = true
				case JobPublished, JobReview, JobRejected:
					// finished for this slot: not due
				default:
					sum.Active++
					sum.Reports = append(sum.Reports, JobReport{Job: j, Status: JobActive})
				}
				continue
			}
			if cur.Status != JobPublishing {
				taken++
			}
			return j, cur, true
		}
		return Job{}, JobRecord{}, false
	}
	var wg sync.WaitGroup
	for i := 0; i < par; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j, cur, ok := pick()
				if !ok {
					return
				}
				rep := r.job(ctx, j, cur)
				mu.Lock()
				sum.add(rep)
				mu.Unlock()
				if r.OnJob != nil {
					r.OnJob(rep)
				}
			}
		}()
	}
	wg.Wait()
	sum.Halt = r.Chain.Halted()
	if ctx.Err() != nil {
		sum.Unstarted = r.stillDue(context.WithoutCancel(ctx), candidates[next:], limit-taken)
	}
	return sum
}

// add counts the report of a job the run worked on.
func (s *Summary) add(rep JobReport) {
	s.Reports = append(s.Reports, rep)
	switch rep.Status {
	case JobPublished:
		s.Published++
	case JobReview:
		s.Review++
	case JobDeferred:
		s.Deferred++
	case JobHalted:
		s.Halted++
	default:
		s.Errors++
	}
	s.CostUSD += rep.CostUSD
}

// leftPublishing reports whether job id is stored in publishing (false
// when it cannot be read).
func (r *Runner) leftPublishing(ctx context.Context, id string) bool {
	rec, ok, err := r.Jobs.Job(ctx, id)
	return err == nil && ok && rec.Status == JobPublishing
}

// unstorable raises the job_unstorable alert for a job the store cannot
// hold (its id or text refused by the database): once a UTC day per job,
// naming it quoted and shortened so that the alert itself can be stored.
func (r *Runner) unstorable(ctx context.Context, j Job, err error, now time.Time) {
	id := j.ID
	if len(id) > 60 {
		id = id[:60] + "…"
	}
	id = strings.ToValidUTF8(strings.ReplaceAll(id, "\x00", `\0`), "?")
	r.notify(context.WithoutCancel(ctx), Alert{Key: "job_unstorable:" + id + ":" + now.UTC().Format(time.DateOnly), Rule: RuleJobUnstorable, Severity: SeverityWarning,
		Text: fmt.Sprintf("Topic %q cannot be stored (%s): it is skipped, the others go on. Fix the topic (contentpipe config check names it).", id, strings.ToValidUTF8(strings.ReplaceAll(err.Error(), "\x00", `\0`), "?"))})
}

// stillDue counts, up to max, the jobs of rest that are not finished.
func (r *Runner) stillDue(ctx context.Context, rest []Job, max int) int {
	n := 0
	for _, j := range rest {
		if n >= max {
			break
		}
		rec, ok, err := r.Jobs.Job(ctx, j.ID)
		if err != nil || !ok || !rec.Status.Finished() {
			n++
		}
	}
	return n
}

// lease is how long a claim holds without a heartbeat: Lease, or the job
// deadline + 5 minutes.
func (r *Runner) lease() time.Duration {
	if r.Lease > 0 {
		return r.Lease
	}
	return r.Chain.JobDeadline() + 5*time.Minute
}

func (r *Runner) alive(o Owner) bool {
	if r.Alive == nil {
		return true
	}
	return r.Alive(o)
}

// job is the story of one claimed job, top to bottom: reconcile an
// interrupted publication, or generate through the chain, then publish at
// most once and record the outcome.
func (r *Runner) job(ctx context.Context, j Job, cur JobRecord) JobReport {
	// The job runs to its end even when ctx is cancelled (SIGTERM lets the
	// job in flight finish); the chain deadline still bounds it.
	jctx := context.WithoutCancel(ctx)
	if cur.Status == JobPublishing {
		return r.reconcile(jctx, j, cur)
	}
	res, err := r.Chain.Generate(jctx, j)
	rep := JobReport{Job: j, Result: &res, CostUSD: res.CostUSD}
	if err != nil {
		rep.Status, rep.Err = JobError, err
		r.finish(jctx, j, JobDeferred, nil, err.Error())
		return rep
	}
	switch res.Status {
	case JobPublished:
		w := res.Winner
		rep.Provider, rep.Model, rep.Score = w.Provider, w.Model, w.Score
		loc, err := r.publish(jctx, j, w)
		if err != nil {
			rep.Status, rep.Err = JobError, err
			return rep
		}
		rep.Status, rep.Location = JobPublished, loc
	case JobReview:
		b := res.Best
		rep.Status, rep.Provider, rep.Model, rep.Score = JobReview, b.Provider, b.Model, b.Score
		r.finish(jctx, j, JobReview, b, "every answer failed the quality gate")
		// No alert per job: the daily review_queue rule (alerts.Rules)
		// reports a non-empty queue once a day.
	case JobHalted:
		rep.Status = JobHalted
		r.finish(jctx, j, JobHalted, nil, res.Halt.Error())
		a := Alert{Key: "auth:" + res.Halt.Provider, Rule: RuleAuthError, Severity: SeverityCritical,
			Text: fmt.Sprintf("Provider %s refused our credentials (%s). The run stopped; no failover for auth errors. Fix the API key, then rerun.", res.Halt.Provider, res.Halt.Error())}
		if r.AuthAlert != nil {
			a = r.AuthAlert(res.Halt.Provider, res.Halt, r.Chain.Clock.Now())
		}
		r.notify(jctx, a)
	default:
		rep.Status = JobDeferred
		last := ""
		if n := len(res.Story); n > 0 {
			last = res.Story[n-1]
		}
		r.finish(jctx, j, JobDeferred, nil, last)
		// No alert per job: a deferred job whose every provider failed
		// opens the chain-down incident of alerts.Rules, once per incident.
	}
	return rep
}

func (r *Runner) notify(ctx context.Context, a Alert) {
	if r.Notifier == nil {
		return
	}
	_ = r.Notifier.Notify(ctx, a)
}

// publish delivers a winning answer at most once. It renders the article
// and chooses its place (Prepare, no side effect), marks the job publishing
// with the winning attempt, that place and the exact bytes — a durable
// commit, and only while the claim is still ours (a run that lost its claim
// discards its late answer) — and only then delivers and records published.
// A crash anywhere leaves either no mark (the job is redone; nothing was
// delivered) or the mark (reconcile delivers the same bytes to the same
// place).
func (r *Runner) publish(ctx context.Context, j Job, w *Winner) (string, error) {
	now := r.Chain.Clock.Now().UTC().Truncate(time.Millisecond)
	d, err := r.Publisher.Prepare(ctx, article(j, w, now))
	if err != nil {
		return "", fmt.Errorf("prepare %s: %w", j.ID, err)
	}
	s := w.Score
	rec := JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot, Title: j.Title, Category: j.Category, Language: j.Language,
		Status: JobPublishing, Provider: w.Provider, Model: w.Model, QualityScore: &s, Attempt: w.Attempt,
		Location: d.Location, Payload: d.Body}
	if err := r.mark(ctx, rec, now); err != nil {
		if errors.Is(err, ErrDayFull) {
			// Nothing delivered: the job waits for a day with room.
			r.finish(ctx, j, JobDeferred, nil, err.Error())
		}
		return "", fmt.Errorf("mark publishing %s (answer discarded): %w", j.ID, err)
	}
	rec.PublishedAt = now
	return r.deliver(ctx, rec, d)
}

// deliver performs a marked delivery and records the job published. On an
// error the job stays publishing: the next run reconciles it.
//
// A store whose claims another machine may take over (DeliveryChecker) is
// asked right before the delivery whether the claim still holds with time
// to spare; the delivery is then bounded by the deadline it names, so it
// ends before any other worker may reconcile the job. Recording the job
// published afterwards keeps ctx: FinishJob is ownership-checked itself.
func (r *Runner) deliver(ctx context.Context, rec JobRecord, d Delivery) (string, error) {
	dctx := ctx
	if dc, ok := r.Jobs.(DeliveryChecker); ok {
		dl, err := dc.CheckDelivery(ctx, rec.ID, r.Owner, r.lease(), r.Chain.Clock.Now())
		if err != nil {
			return "", fmt.Errorf("publish %s: %w", rec.ID, err)
		}
		var cancel context.CancelFunc
		dctx, cancel = context.WithDeadline(ctx, dl)
		defer cancel()
	}
	loc, err := r.Publisher.Deliver(dctx, d)
	if err != nil {
		r.haltOnPublishAuth(ctx, err)
		return "", fmt.Errorf("publish %s: %w", rec.ID, err)
	}
	rec.Status, rec.Location, rec.LastError, rec.Payload = JobPublished, loc, "", nil
	if err := r.Jobs.FinishJob(ctx, rec, r.Owner, r.Chain.Clock.Now()); err != nil {
		return loc, fmt.Errorf("record %s published: %w", rec.ID, err)
	}
	return loc, nil
}

// finish records a job's final status (not published: see deliver) and
// releases its claim.
func (r *Runner) finish(ctx context.Context, j Job, status JobStatus, w *Winner, lastErr string) {
	rec := JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot, Title: j.Title, Category: j.Category, Language: j.Language,
		Status: status, LastError: lastErr}
	if w != nil {
		s := w.Score
		rec.Provider, rec.Model, rec.QualityScore, rec.Attempt = w.Provider, w.Model, &s, w.Attempt
	}
	_ = r.Jobs.FinishJob(ctx, rec, r.Owner, r.Chain.Clock.Now())
}

// article turns a winning answer into the publishable article.
func article(j Job, w *Winner, now time.Time) Article {
	a := Article{JobID: j.ID, Topic: j.Topic, Slot: j.Slot, Title: w.Article.Title, Category: j.Category,
		Language: j.Language, Keywords: j.Keywords, Provider: w.Provider, Model: w.Model, QualityScore: w.Score, Date: now.UTC()}
	if strings.TrimSpace(a.Title) == "" {
		a.Title = j.Title
	}
	for _, s := range w.Article.Sections {
		a.Sections = append(a.Sections, Section{H2: s.H2, Body: s.Body})
	}
	return a
}

// reconcile finishes a job found in the write-ahead "publishing" state: a
// run died (or its delivery failed) between the mark and the record. It
// delivers exactly what the mark holds — the marked attempt's article, byte
// for byte, to the marked location — never another candidate.
func (r *Runner) reconcile(ctx context.Context, j Job, cur JobRecord) JobReport {
	rep := JobReport{Job: j, Provider: cur.Provider, Model: cur.Model}
	if cur.QualityScore != nil {
		rep.Score = *cur.QualityScore
	}
	d, err := r.marked(ctx, j, cur)
	if err != nil {
		rep.Status, rep.Err = JobError, fmt.Errorf("reconcile %s: %w", j.ID, err)
		return rep
	}
	// The mark's time is the publication time, unless the delivery happens
	// on a later UTC day: the job is then published (and counted toward
	// posts_per_day) on the day it reaches the target. The bytes sent stay
	// those of the mark.
	cur.PublishedAt = cur.UpdatedAt
	if now := r.Chain.Clock.Now(); !utcDay(now).Equal(utcDay(cur.UpdatedAt)) {
		cur.PublishedAt = now.UTC().Truncate(time.Millisecond)
	}
	loc, err := r.deliver(ctx, cur, d)
	if err != nil {
		rep.Status, rep.Err = JobError, err
		return rep
	}
	rep.Status, rep.Location = JobPublished, loc
	return rep
}

// marked is the delivery a publishing job's mark names. A mark written
// before payloads were recorded names only its attempt and location: the
// article is rebuilt from that attempt's stored output at the mark's time,
// and must come out at the same location.
func (r *Runner) marked(ctx context.Context, j Job, cur JobRecord) (Delivery, error) {
	if len(cur.Payload) > 0 {
		return Delivery{JobID: cur.ID, Location: cur.Location, Body: cur.Payload}, nil
	}
	cand, ok, err := r.Jobs.CandidateAt(ctx, j.ID, cur.Attempt)
	if err != nil {
		return Delivery{}, err
	}
	if !ok || cand.Partial {
		return Delivery{}, fmt.Errorf("the marked attempt %d has no stored answer", cur.Attempt)
	}
	g := r.Chain.Gate.Evaluate(cand.Text, quality.Spec{Language: j.Language, TargetWords: j.TargetWords})
	if g.Article == nil {
		return Delivery{}, fmt.Errorf("the marked attempt %d's answer is unreadable", cur.Attempt)
	}
	w := &Winner{Provider: cand.Provider, Model: cand.Model, Attempt: cand.Attempt, Score: cand.QualityScore, Article: *g.Article}
	d, err := r.Publisher.Prepare(ctx, article(j, w, cur.UpdatedAt))
	if err != nil {
		return Delivery{}, err
	}
	if d.Location != cur.Location {
		return Delivery{}, fmt.Errorf("the marked attempt %d now renders to %s, not the marked %s: refusing to publish it elsewhere", cur.Attempt, d.Location, cur.Location)
	}
	return d, nil
}

// ReviewClaimer takes a job waiting in review (review → running, claimed by
// the owner) in one atomic step; telemetry.Store implements it.
type ReviewClaimer interface {
	ClaimReview(ctx context.Context, id string, owner Owner, now time.Time) (claimed bool, cur JobRecord, err error)
}

// ErrNotInReview is returned by Approve for a job that is neither in review
// nor published (due, running, deferred, rejected…).
var ErrNotInReview = errors.New("job is not in review")

// approveWait bounds how long Approve waits for another process that holds
// the job (a concurrent approve, or a run reconciling it) to finish.
const approveWait = 30 * time.Second

// Approve publishes cand, the kept candidate of job j waiting in review
// (`review approve`), through the normal at-most-once path: the job is
// claimed out of review first, so a second Approve finds it published and
// reports already=true with its location, publishing nothing. A concurrent
// Approve waits (up to approveWait) for the one that holds the job and then
// reports its result the same way. A job left in "publishing" by a process
// that died mid-approval is reconciled. When publication fails before its
// write-ahead mark the job goes back to review; after it, the job stays
// "publishing" for the next run or approve to reconcile.
func (r *Runner) Approve(ctx context.Context, rc ReviewClaimer, j Job, cand Candidate) (loc string, already bool, err error) {
	deadline := r.Chain.Clock.Now().Add(approveWait)
	for {
		now := r.Chain.Clock.Now()
		claimed, cur, err := rc.ClaimReview(ctx, j.ID, r.Owner, now)
		if err != nil {
			return "", false, fmt.Errorf("claim review %s: %w", j.ID, err)
		}
		if claimed {
			return r.approveClaimed(ctx, j, cand)
		}
		switch cur.Status {
		case JobPublished:
			return cur.Location, true, nil
		case JobPublishing:
			ok, cur2, err := r.Jobs.ClaimJob(ctx, JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot}, r.Owner, r.alive, r.lease(), now)
			if err != nil {
				return "", false, fmt.Errorf("claim job %s: %w", j.ID, err)
			}
			if ok && cur2.Status == JobPublishing {
				rep := r.reconcile(ctx, j, cur2)
				return rep.Location, false, rep.Err
			}
			// held by another live process: wait for it below
		case JobRunning:
			// another approve (or a run) holds it: wait for it below
		case "":
			return "", false, fmt.Errorf("%w: job %s is unknown", ErrNotInReview, j.ID)
		default:
			return "", false, fmt.Errorf("%w: job %s is %s", ErrNotInReview, j.ID, cur.Status)
		}
		if !now.Before(deadline) {
			return "", false, fmt.Errorf("job %s is held by another process (a run or another approve) for over %s; try again later", j.ID, approveWait)
		}
		if err := r.Chain.Clock.Sleep(ctx, 100*time.Millisecond); err != nil {
			return "", false, err
		}
	}
}

// approveClaimed publishes cand for a job this process just claimed out of
// review.
func (r *Runner) approveClaimed(ctx context.Context, j Job, cand Candidate) (string, bool, error) {
	g := r.Chain.Gate.Evaluate(cand.Text, quality.Spec{Language: j.Language, TargetWords: j.TargetWords})
	if g.Article == nil {
		r.finish(ctx, j, JobReview, nil, "approve: the kept answer is unreadable")
		return "", false, fmt.Errorf("approve %s: the kept answer (attempt %d) is unreadable", j.ID, cand.Attempt)
	}
	w := &Winner{Provider: cand.Provider, Model: cand.Model, Attempt: cand.Attempt, Score: cand.QualityScore, Article: *g.Article}
	loc, err := r.publish(ctx, j, w)
	if err != nil {
		if rec, ok, _ := r.Jobs.Job(ctx, j.ID); ok && rec.Status == JobRunning {
			r.finish(ctx, j, JobReview, nil, err.Error())
		}
		return "", false, err
	}
	return loc, false, nil
}

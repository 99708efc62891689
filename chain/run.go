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
	Rule     string // e.g. "auth_error", "all_failed"
	Severity string // "critical" | "warning" | "info"
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
	// OnJob, when set, is called after each job with its report.
	OnJob func(JobReport)
}

// JobReport is the result of one job in a run.
type JobReport struct {
	Job      Job
	Status   string // published, review, deferred, halted, active (held by another run), done (already finished)
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
	lease := r.Lease
	if lease <= 0 {
		d := r.Chain.Deadline
		if d <= 0 {
			d = 15 * time.Minute
		}
		lease = d + 5*time.Minute
	}
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
		for next < len(candidates) && taken < limit {
			if ctx.Err() != nil || r.Chain.Halted() != nil || storeKO {
				return Job{}, JobRecord{}, false
			}
			j := candidates[next]
			next++
			now := r.Chain.Clock.Now()
			claimed, cur, err := r.Jobs.ClaimJob(ctx, JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot, Title: j.Title, Category: j.Category, Language: j.Language}, r.Owner, r.alive, lease, now)
			if err != nil {
				// The store already retried through its busy timeouts: the
				// next claim would fail the same way. The rest stay due.
				sum.Errors++
				sum.Reports = append(sum.Reports, JobReport{Job: j, Status: "error", Err: fmt.Errorf("claim job %s: %w", j.ID, err)})
				storeKO = true
				return Job{}, JobRecord{}, false
			}
			if !claimed {
				switch cur.Status {
				case JobPublished, JobReview, JobRejected:
					// finished for this slot: not due
				default:
					sum.Active++
					sum.Reports = append(sum.Reports, JobReport{Job: j, Status: "active"})
				}
				continue
			}
			taken++
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
				sum.Reports = append(sum.Reports, rep)
				switch rep.Status {
				case JobPublished:
					sum.Published++
				case JobReview:
					sum.Review++
				case JobDeferred:
					sum.Deferred++
				case JobHalted:
					sum.Halted++
				default:
					sum.Errors++
				}
				sum.CostUSD += rep.CostUSD
				mu.Unlock()
				if r.OnJob != nil {
					r.OnJob(rep)
				}
			}
		}()
	}
	wg.Wait()
	sum.Halt = r.Chain.Halted()
	return sum
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
		rep.Status, rep.Err = "error", err
		r.finish(jctx, j, JobDeferred, nil, "", err.Error())
		return rep
	}
	switch res.Status {
	case JobPublished:
		w := res.Winner
		rep.Provider, rep.Model, rep.Score = w.Provider, w.Model, w.Score
		loc, err := r.publish(jctx, j, w, r.Chain.Clock.Now())
		if err != nil {
			rep.Status, rep.Err = "error", err
			return rep
		}
		rep.Status, rep.Location = JobPublished, loc
	case JobReview:
		b := res.Best
		rep.Status, rep.Provider, rep.Model, rep.Score = JobReview, b.Provider, b.Model, b.Score
		r.finish(jctx, j, JobReview, b, "", "every answer failed the quality gate")
		// No alert per job: the daily review_queue rule (alerts.Rules)
		// reports a non-empty queue once a day (SPEC §8).
	case JobHalted:
		rep.Status = JobHalted
		r.finish(jctx, j, JobHalted, nil, "", res.Halt.Error())
		r.notify(jctx, Alert{Key: "auth:" + res.Halt.Provider, Rule: "auth_error", Severity: "critical",
			Text: fmt.Sprintf("Provider %s refused our credentials (%s). The run stopped; no failover for auth errors. Fix the API key, then rerun.", res.Halt.Provider, res.Halt.Error())})
	default:
		rep.Status = JobDeferred
		last := ""
		if n := len(res.Story); n > 0 {
			last = res.Story[n-1]
		}
		r.finish(jctx, j, JobDeferred, nil, "", last)
		r.notify(jctx, Alert{Key: "all_failed:" + j.ID, Rule: "all_failed", Severity: "critical",
			Text: fmt.Sprintf("Every provider failed for job %s (%q); it stays due for the next run.\n%s", j.ID, j.Title, strings.Join(res.Story, "\n"))})
	}
	return rep
}

func (r *Runner) notify(ctx context.Context, a Alert) {
	if r.Notifier == nil {
		return
	}
	_ = r.Notifier.Notify(ctx, a)
}

func (r *Runner) finish(ctx context.Context, j Job, status string, w *Winner, loc, lastErr string) {
	rec := JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot, Title: j.Title, Category: j.Category, Language: j.Language,
		Status: status, Location: loc, LastError: lastErr}
	if w != nil {
		s := w.Score
		rec.Provider, rec.Model, rec.QualityScore, rec.Attempt = w.Provider, w.Model, &s, w.Attempt
	}
	if status == JobPublished {
		rec.PublishedAt = r.Chain.Clock.Now()
	}
	_ = r.Jobs.FinishJob(ctx, rec, r.Chain.Clock.Now())
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

// publish writes the article at most once: write-ahead "publishing" state
// with the deterministic location, then the target, then "published".
// when is the publication time written into the article; a reconciliation
// passes the original write-ahead time so the article comes out identical.
func (r *Runner) publish(ctx context.Context, j Job, w *Winner, when time.Time) (string, error) {
	now := r.Chain.Clock.Now()
	a := article(j, w, when)
	loc := r.Publisher.Location(a)
	s := w.Score
	pre := JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot, Title: j.Title, Category: j.Category, Language: j.Language,
		Status: JobPublishing, Provider: w.Provider, Model: w.Model, QualityScore: &s, Attempt: w.Attempt, Location: loc}
	// The claim must still be ours: a run that lost its claim (lease expired,
	// another run took over) discards its late answer.
	if err := r.Jobs.HeartbeatJob(ctx, j.ID, r.Owner, now); err != nil {
		return "", fmt.Errorf("job %s: claim lost, answer discarded: %w", j.ID, err)
	}
	if err := r.Jobs.MarkPublishing(ctx, pre, when); err != nil {
		return "", fmt.Errorf("mark publishing %s: %w", j.ID, err)
	}
	loc, err := r.Publisher.Publish(ctx, a)
	if err != nil {
		// Stays "publishing": the next run reconciles with the same key.
		return "", fmt.Errorf("publish %s: %w", j.ID, err)
	}
	r.finish(ctx, j, JobPublished, w, loc, "")
	return loc, nil
}

// reconcile finishes a job found in the write-ahead "publishing" state: a
// run died between publishing and recording. The target is checked, and the
// same article is published again with the same key when it is missing.
func (r *Runner) reconcile(ctx context.Context, j Job, cur JobRecord) JobReport {
	rep := JobReport{Job: j, Provider: cur.Provider, Model: cur.Model}
	cand, ok, err := r.Jobs.BestCandidate(ctx, j.ID)
	if err != nil || !ok {
		if err == nil {
			err = errors.New("no stored answer")
		}
		rep.Status, rep.Err = "error", fmt.Errorf("reconcile %s: %w", j.ID, err)
		return rep
	}
	g := r.Chain.Gate.Evaluate(cand.Text, quality.Spec{Language: j.Language, TargetWords: j.TargetWords})
	if g.Article == nil {
		rep.Status, rep.Err = "error", fmt.Errorf("reconcile %s: stored answer unreadable", j.ID)
		return rep
	}
	w := &Winner{Provider: cand.Provider, Model: cand.Model, Attempt: cand.Attempt, Score: cand.QualityScore, Article: *g.Article}
	when := cur.UpdatedAt
	if when.IsZero() {
		when = r.Chain.Clock.Now()
	}
	loc, err := r.publish(ctx, j, w, when)
	if err != nil {
		rep.Status, rep.Err = "error", err
		return rep
	}
	rep.Status, rep.Location, rep.Score = JobPublished, loc, w.Score
	return rep
}

// ReviewClaimer takes a job waiting in review (review → running, claimed by
// the owner) in one atomic step; telemetry.Store implements it.
type ReviewClaimer interface {
	ClaimReview(ctx context.Context, id string, owner Owner, now time.Time) (claimed bool, cur JobRecord, err error)
}

// ErrNotInReview is returned by Approve for a job that is neither in review
// nor published (due, running, deferred, rejected…).
var ErrNotInReview = errors.New("job is not in review")

// Approve publishes cand, the kept candidate of job j waiting in review
// (`review approve`), through the normal at-most-once path: the job is
// claimed out of review first, so a second Approve (or a concurrent one)
// finds it published and reports already=true with its location, publishing
// nothing. A job left in "publishing" by a process that died mid-approval
// is reconciled. When publication fails before its write-ahead mark the job
// goes back to review; after it, the job stays "publishing" for the next run
// or approve to reconcile.
func (r *Runner) Approve(ctx context.Context, rc ReviewClaimer, j Job, cand Candidate) (loc string, already bool, err error) {
	now := r.Chain.Clock.Now()
	claimed, cur, err := rc.ClaimReview(ctx, j.ID, r.Owner, now)
	if err != nil {
		return "", false, fmt.Errorf("claim review %s: %w", j.ID, err)
	}
	if !claimed {
		switch cur.Status {
		case JobPublished:
			return cur.Location, true, nil
		case JobPublishing:
			lease := r.Lease
			if lease <= 0 {
				lease = 20 * time.Minute
			}
			ok, cur2, err := r.Jobs.ClaimJob(ctx, JobRecord{ID: j.ID, Topic: j.Topic, Slot: j.Slot}, r.Owner, r.alive, lease, now)
			if err != nil {
				return "", false, fmt.Errorf("claim job %s: %w", j.ID, err)
			}
			if !ok || cur2.Status != JobPublishing {
				return "", false, fmt.Errorf("job %s is being published by another process", j.ID)
			}
			rep := r.reconcile(ctx, j, cur2)
			return rep.Location, false, rep.Err
		case "":
			return "", false, fmt.Errorf("%w: job %s is unknown", ErrNotInReview, j.ID)
		default:
			return "", false, fmt.Errorf("%w: job %s is %s", ErrNotInReview, j.ID, cur.Status)
		}
	}
	g := r.Chain.Gate.Evaluate(cand.Text, quality.Spec{Language: j.Language, TargetWords: j.TargetWords})
	if g.Article == nil {
		r.finish(ctx, j, JobReview, nil, "", "approve: the kept answer is unreadable")
		return "", false, fmt.Errorf("approve %s: the kept answer (attempt %d) is unreadable", j.ID, cand.Attempt)
	}
	w := &Winner{Provider: cand.Provider, Model: cand.Model, Attempt: cand.Attempt, Score: cand.QualityScore, Article: *g.Article}
	loc, err = r.publish(ctx, j, w, now)
	if err != nil {
		if rec, ok, _ := r.Jobs.Job(ctx, j.ID); ok && rec.Status == JobRunning {
			r.finish(ctx, j, JobReview, nil, "", err.Error())
		}
		return "", false, err
	}
	return loc, false, nil
}

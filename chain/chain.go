package chain

import (
	"context"
	"fmt"
	"math/rand/v2"
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

// Family names the prompt family a link's jobs are worded in: one per link
// kind, each also the name of its default template (prompts).
type Family string

// The prompt families.
const (
	FamilyGemini Family = "gemini"
	FamilyOpenAI Family = "openai"
)

// Link is one provider of the chain with its own limits. The zero values of
// DailyCap, Pacer and MaxTokens mean no cap, no pacing, provider default.
type Link struct {
	Name     string
	Model    string
	Family   Family // prompt family: FamilyGemini or FamilyOpenAI
	Prompt   string // template the link is prompted with (config prompt:); "" = its Family's default
	Infra    string
	Provider Provider
	DailyCap int
	// DailyTokens and DailyBudgetUSD are the link's own limits per cap day
	// (input+output tokens, USD); 0 = none.
	DailyTokens    int
	DailyBudgetUSD float64
	CapReset       CapReset
	Price          Price
	Pacer          *Pacer
	MaxTokens      int
	Stream         bool
	// ConfigHash identifies the link's configuration (cmd hashes its config
	// block): a misconfigured link is called again as soon as it changes.
	// "" means the model alone.
	ConfigHash string
}

// configKey is the key a misconfigured incident remembers the link's
// config by.
func (l *Link) configKey() string {
	if l.ConfigHash != "" {
		return l.ConfigHash
	}
	return "model:" + l.Model
}

// Budget is the chain-wide money limit in USD, per UTC day and UTC month;
// 0 = none.
type Budget struct {
	DailyUSD   float64
	MonthlyUSD float64
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

// Prompt is a rendered request for one provider family.
type Prompt struct {
	System, User, Version string
}

// PromptName is the name of the template the link's prompt renders from:
// its own Prompt, or its Family's default.
func (l *Link) PromptName() string {
	if l.Prompt != "" {
		return l.Prompt
	}
	return string(l.Family)
}

// PromptFunc renders the article prompt of a job from the named template
// (Link.PromptName: a link's own template or its family's default).
type PromptFunc func(template string, j Job) (Prompt, error)

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

// EventKind is the kind of a progress Event.
type EventKind string

// Progress event kinds.
const (
	EventTry     EventKind = "try"
	EventWait    EventKind = "wait"
	EventSkip    EventKind = "skip"
	EventOutcome EventKind = "outcome"
)

// Event is a progress report of the walk, for live progress lines.
type Event struct {
	Job      Job
	Kind     EventKind
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
	Deadline time.Duration // whole budget of one job; 0 = DefaultDeadline
	Store    Store
	Gate     Gate
	Clock    Clock
	Prompt   PromptFunc
	Schema   []byte
	Jitter   func() float64 // [0,1); nil = math/rand
	Progress func(Event)    // optional
	Shadow   Shadow         // shadow mode; the zero value is off (see shadow.go)
	// Notifier, when set, takes the warning that a provider named a delay
	// beyond the bound it is believed to (see MaxNamedDelay).
	Notifier Notifier
	// Secrets are the configured secret values (API keys, bot token,
	// webhook secret): each found in a provider's answer, partial text or
	// error detail is replaced with Redacted before it is stored, gated or
	// published. Values shorter than 8 bytes are not scrubbed.
	Secrets []string
	// Budget is the chain-wide money limit every call counts toward (job,
	// shadow, health); the zero value is none.
	Budget Budget

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
	Status   JobStatus // JobPublished (an answer passed the gate), JobReview, JobDeferred, JobHalted
	Winner   *Winner
	Best     *Winner // the rejected candidate kept for review (status review): quality.Better of them all
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

// history reads job's earlier walks when the store can say (none when
// it cannot): the links that refused its request as too large, and the
// walk's numbering starts at the next attempt.
func (c *Chain) history(ctx context.Context, job Job, numbers *numbering) (tooLarge map[string]bool, err error) {
	src, ok := c.Store.(JobHistorySource)
	if !ok {
		return nil, nil
	}
	h, err := src.JobHistory(ctx, job.ID)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", job.ID, err)
	}
	numbers.next = h.NextAttempt
	tooLarge = map[string]bool{}
	for _, n := range h.TooLarge {
		tooLarge[n] = true
	}
	return tooLarge, nil
}

// DefaultDeadline is the budget of one job when Chain.Deadline is 0.
const DefaultDeadline = 15 * time.Minute

// DefaultMaxTokens is the output ceiling a link gets when its config names
// no max_tokens (sent with each request), and the one the spend budget
// reserves for a link whose MaxTokens is 0.
const DefaultMaxTokens = defaultMaxOutput

// JobDeadline returns the budget of one job: Deadline, or DefaultDeadline.
func (c *Chain) JobDeadline() time.Duration {
	if c.Deadline <= 0 {
		return DefaultDeadline
	}
	return c.Deadline
}

// Generate walks the chain for one job: skip, call, gate, and act on each
// outcome per the policy, within the job's deadline. It records every
// attempt and every skip in the Store. It never publishes.
func (c *Chain) Generate(ctx context.Context, job Job) (Result, error) {
	deadlineBudget := c.JobDeadline()
	deadline := c.Clock.Now().Add(deadlineBudget)
	// The context bounds real time (calls, real sleeps); deadline bounds the
	// Clock's time, which is virtual in tests and `simulate`.
	ctx, cancel := context.WithTimeout(ctx, deadlineBudget)
	defer cancel()

	w := &walk{c: c, job: job, deadline: deadline, res: Result{Status: JobDeferred}, numbers: &numbering{}}
	// Shadow calls run beside the walk and never delay it; they get the
	// walk's result for their comparison when it ends.
	sh := c.startShadow(ctx, job, deadlineBudget)
	defer func() { sh.done(w.res) }()
	tooLarge, err := c.history(ctx, job, w.numbers)
	if err != nil {
		return w.res, err
	}
	for i, l := range c.Links {
		if c.Halted() != nil {
			w.skip(ctx, l, SkipHalted, time.Time{}, "run halted on an auth failure")
			continue
		}
		if tooLarge[l.Name] {
			w.skip(ctx, l, SkipTooLarge, time.Time{}, "an earlier call of this job was refused as too large for this link")
			continue
		}
		if ctx.Err() != nil || !c.Clock.Now().Before(deadline) {
			w.story("deadline reached before %s", l.Name)
			break
		}
		done, err := w.link(ctx, l, i == len(c.Links)-1)
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

// ForRun returns a chain with c's settings and links and none of its
// run-scoped state (the halt on an auth failure, the providers skipped for
// the run, the shadow calls in flight): what each publishing run starts
// from, as a new process does.
func (c *Chain) ForRun() *Chain {
	return &Chain{
		Links: c.Links, Policy: c.Policy, Breaker: c.Breaker, Deadline: c.Deadline, Store: c.Store, Gate: c.Gate,
		Clock: c.Clock, Prompt: c.Prompt, Schema: c.Schema, Jitter: c.Jitter, Progress: c.Progress, Shadow: c.Shadow,
		Notifier: c.Notifier, Secrets: c.Secrets, Budget: c.Budget,
	}
}

package chain

import (
	"context"
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// promptsRules are the rules of a `prompts test` call: one call per link,
// outside any job. Only a closed circuit admits (a test must not take a
// half-open probe), the call is no breaker sample, a 429 is not retried,
// and it is attempt 0 of its own request id.
var promptsRules = rules{purpose: PurposePrompts, paceWait: true, cutMessage: "prompts test call cut short"}

// PromptCheck is one link's result in a prompts test: the rendered
// template's version and, when the link was called, how its answer fared
// at the gate. Outcome is "" for a link that was not called; Detail then
// says why.
type PromptCheck struct {
	Provider string
	Model    string
	Version  string // prompt version rendered for the link (e.g. article@1/llama)
	Outcome  Outcome
	Pass     bool
	Score    *float64        // nil without an answer
	Checks   []quality.Check // the gate's checks that cost points
	Words    int             // words in the section bodies of the answer
	Sections int
	Latency  time.Duration
	CostUSD  float64
	Detail   string
}

// Called reports whether the link was called.
func (p PromptCheck) Called() bool { return p.Outcome != "" }

// CheckPrompts renders every link's own prompt for job and calls each link
// once through the attempt pipeline (admission, cap, pacing, scrubbing and
// the one durable record included), gating each answer. Calls are
// recorded with PurposePrompts under job.ID, each bounded by the chain's
// Deadline; an exhausted, capped or circuit-open link is reported and not
// called. Results are in chain order; the error is the store's or a
// prompt's only.
func (c *Chain) CheckPrompts(ctx context.Context, job Job) ([]PromptCheck, error) {
	out := make([]PromptCheck, 0, len(c.Links))
	for _, l := range c.Links {
		p, err := c.testPrompt(ctx, l, job)
		if err != nil {
			return out, err
		}
		out = append(out, p)
	}
	return out, nil
}

func (c *Chain) testPrompt(ctx context.Context, l *Link, job Job) (PromptCheck, error) {
	p := PromptCheck{Provider: l.Name, Model: l.Model}
	budget := c.JobDeadline()
	cctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	// Rendered first so that a link not called still shows its version.
	pr, err := c.Prompt(l.PromptName(), job)
	if err != nil {
		return p, fmt.Errorf("render prompt for %s: %w", l.Name, err)
	}
	p.Version = pr.Version
	out, err := c.attempt(cctx, try{rules: &promptsRules, link: l, job: job, deadline: c.Clock.Now().Add(budget),
		render: func(*Link) (Prompt, error) { return pr, nil }})
	switch {
	case err != nil:
		return p, err
	case out.refused != nil:
		p.Detail = out.refused.why + "; not called"
		return p, nil
	case out.stopped != "":
		p.Detail = "not called: pacing wait does not fit the deadline"
		return p, nil
	}
	call, v := out.call, out.verdict
	p.Outcome, p.Latency, p.CostUSD, p.Detail = call.Outcome, call.Latency, call.CostUSD, call.Detail
	if call.Model != "" {
		p.Model = call.Model
	}
	if out.failure != nil {
		return p, nil
	}
	p.Pass, p.Score, p.Checks = v.pass, v.score, v.result.Checks
	p.Words = v.result.Words
	if v.article != nil {
		p.Sections = len(v.article.Sections)
	}
	return p, nil
}

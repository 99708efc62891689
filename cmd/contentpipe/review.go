package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/telemetry"
)

// reviewCmd is the manual review queue (README: Manual review): jobs whose every answer
// failed the quality gate, with the best answer kept.
func (a *app) reviewCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "The manual review queue: list, show, approve (publish the kept answer) or reject jobs whose every answer failed the quality gate",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitWith(exitConfig, errors.New("review: name a subcommand: list, show ID, approve ID or reject ID"))
		},
	}
	cmd.AddCommand(
		&cobra.Command{
			Use: "list", Short: "List the jobs waiting in review", Args: cobra.NoArgs,
			RunE: func(cmd *cobra.Command, _ []string) error { return a.reviewList(cmd) },
		},
		&cobra.Command{
			Use: "show ID", Short: "Show a job's attempts, the checks that cost points and the kept answer", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return a.reviewShow(cmd, args[0]) },
		},
		&cobra.Command{
			Use: "approve ID", Short: "Publish the kept answer of a job in review (at most once)", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return a.reviewApprove(cmd, args[0]) },
		},
		&cobra.Command{
			Use: "reject ID", Short: "Close a job in review without publishing it", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error { return a.reviewReject(cmd, args[0]) },
		},
	)
	return cmd
}

// reviewStore opens the database of the config (the demo's without a config
// file, as `report` does). A missing database is an empty queue: store nil.
func (a *app) reviewStore(cmd *cobra.Command, write bool) (*config.Config, *telemetry.Store, error) {
	cfg, err := a.readConfig(cmd)
	if err != nil {
		return nil, nil, exitWith(exitConfig, err)
	}
	if !dbExists(cfg.Database) {
		return cfg, nil, nil
	}
	open := func(cfg *config.Config) (*telemetry.Store, error) { return telemetry.OpenReadOnly(cfg.Database) }
	if write {
		open = openStore
	}
	store, err := open(cfg)
	if err != nil {
		return nil, nil, exitWith(exitPartial, err)
	}
	return cfg, store, nil
}

// unknownJob is the exit-1 answer for an id that is not in the jobs table.
// The hint names the id forms chain.BacklogJobID makes, and for an id in
// the date-first form (`2026-11-29/topic-id`) the topic id it now is.
func unknownJob(id string) error {
	hint := "see `contentpipe review list`; a job's id is its topic id (home-composting), or <topic>/<period> for a repeating topic (weekly-digest/2026-W49, daily-news/2026-12-01, monthly-roundup/2026-12)"
	if m := dateFirstID.FindStringSubmatch(id); m != nil {
		hint = fmt.Sprintf("ids no longer start with the date: try `contentpipe review show %s` (or %s/<period> for a repeating topic); %s", m[1], m[1], hint)
	}
	return exitWith(exitPartial, fmt.Errorf("unknown job ID %q: %s", id, hint))
}

// dateFirstID matches an id in the date-first form, capturing the topic.
var dateFirstID = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}/([^/]+)$`)

func (a *app) reviewList(cmd *cobra.Command) error {
	_, store, err := a.reviewStore(cmd, false)
	if err != nil {
		return err
	}
	if store == nil {
		fmt.Fprintln(a.stdout, "review queue is empty (no database yet)")
		return nil
	}
	defer store.Close()
	jobs, err := store.JobsByStatus(cmd.Context(), chain.JobReview)
	if err != nil {
		return exitWith(exitPartial, err)
	}
	if len(jobs) == 0 {
		fmt.Fprintln(a.stdout, "review queue is empty")
		return nil
	}
	fmt.Fprintf(a.stdout, "%d job(s) waiting in review (every answer failed the quality gate; the best one is kept):\n", len(jobs))
	fmt.Fprintf(a.stdout, "  %-36s  %-14s  %5s  %-17s  %s\n", "ID", "BEST FROM", "SCORE", "SINCE", "TITLE")
	for _, j := range jobs {
		score := "-"
		if j.QualityScore != nil {
			score = fmt.Sprintf("%.0f", *j.QualityScore)
		}
		fmt.Fprintf(a.stdout, "  %-36s  %-14s  %5s  %-17s  %s\n", j.ID, j.Provider, score, j.UpdatedAt.UTC().Format("2006-01-02 15:04Z"), j.Title)
	}
	fmt.Fprintln(a.stdout, "next: contentpipe review show ID, then review approve ID or review reject ID")
	return nil
}

func (a *app) reviewShow(cmd *cobra.Command, id string) error {
	ctx := cmd.Context()
	_, store, err := a.reviewStore(cmd, false)
	if err != nil {
		return err
	}
	if store == nil {
		return unknownJob(id)
	}
	defer store.Close()
	j, ok, err := store.Job(ctx, id)
	if err != nil {
		return exitWith(exitPartial, err)
	}
	if !ok {
		return unknownJob(id)
	}
	w := a.stdout
	fmt.Fprintf(w, "job %s: %q (%s, %s)\n", j.ID, j.Title, j.Category, j.Language)
	fmt.Fprintf(w, "status: %s", j.Status)
	switch j.Status {
	case chain.JobPublished:
		fmt.Fprintf(w, " → %s", j.Location)
	case chain.JobReview:
		fmt.Fprintf(w, " since %s", j.UpdatedAt.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if j.LastError != "" {
		fmt.Fprintf(w, "last error: %s\n", j.LastError)
	}
	calls, err := store.JobCalls(ctx, id)
	if err != nil {
		return exitWith(exitPartial, err)
	}
	fmt.Fprintln(w, "\nattempts:")
	if len(calls) == 0 {
		fmt.Fprintln(w, "  none recorded")
	}
	shadowHeader := false
	for _, c := range calls {
		if c.Shadow && !shadowHeader {
			fmt.Fprintln(w, "\nshadow calls (compared only, never published):")
			shadowHeader = true
		}
		score := "no answer"
		if c.Score != nil {
			score = fmt.Sprintf("quality %.0f", *c.Score)
		}
		mark := " "
		if !c.Shadow && c.Attempt == j.Attempt && j.Attempt > 0 {
			mark = "*"
		}
		label := fmt.Sprintf("#%d", c.Attempt)
		if c.Shadow {
			label = "shadow"
		}
		fmt.Fprintf(w, " %s %-6s %-12s %-20s %-12s %s, $%.4f, %s\n", mark, label, c.Provider, c.Outcome, score,
			c.TS.UTC().Format("2006-01-02 15:04:05Z"), c.CostUSD, c.Latency.Round(time.Millisecond))
		for _, ch := range c.Checks {
			fmt.Fprintf(w, "           - %s\n", ch)
		}
		if len(c.Checks) == 0 && c.Detail != "" && c.Outcome != chain.OutcomeOK {
			fmt.Fprintf(w, "           %s\n", clipText(c.Detail, 200))
		}
	}
	if j.Attempt > 0 {
		cand, ok, err := store.CandidateAt(ctx, id, j.Attempt)
		if err != nil {
			return exitWith(exitPartial, err)
		}
		fmt.Fprintf(w, "\nkept answer (* above: attempt %d from %s):\n", j.Attempt, j.Provider)
		if why := keptWhy(calls, j); why != "" {
			fmt.Fprint(w, why)
		}
		if !ok {
			fmt.Fprintln(w, "  its text is no longer stored")
		} else {
			fmt.Fprintln(w, indent(excerpt(cand.Text), "  "))
		}
	}
	if j.Status == chain.JobReview {
		fmt.Fprintf(w, "\nnext: contentpipe review approve %s (publish the kept answer) or contentpipe review reject %s\n", id, id)
	}
	return nil
}

func (a *app) reviewApprove(cmd *cobra.Command, id string) error {
	ctx := cmd.Context()
	cfg, store, err := a.reviewStore(cmd, true)
	if err != nil {
		return err
	}
	if store == nil {
		return unknownJob(id)
	}
	defer store.Close()
	rec, ok, err := store.Job(ctx, id)
	if err != nil {
		return exitWith(exitPartial, err)
	}
	if !ok {
		return unknownJob(id)
	}
	if rec.Status == chain.JobPublished {
		fmt.Fprintf(a.stdout, "already published: %s → %s (nothing published now)\n", id, rec.Location)
		return nil
	}
	proc, err := readyToPublish(ctx, store, cfg)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer proc.Close()
	gate, _, err := buildGate(cfg)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	job := a.reviewJob(cfg, rec)
	var cand chain.Candidate
	if rec.Status == chain.JobReview {
		c, found, err := store.CandidateAt(ctx, id, rec.Attempt)
		if err != nil {
			return exitWith(exitPartial, err)
		}
		if !found {
			return exitWith(exitPartial, fmt.Errorf("job %s: the kept answer (attempt %d) is no longer stored; reject it and let a later slot redo the topic", id, rec.Attempt))
		}
		cand = c
	}
	r := &chain.Runner{
		Chain:     &chain.Chain{Store: store, Gate: gate, Clock: chain.RealClock{}, Deadline: cfg.Job.Deadline},
		Jobs:      store,
		Publisher: buildPublisher(cfg),
		Owner:     proc.Owner,
		Alive:     store.Alive,
		Lease:     cfg.Job.Lease,
	}
	loc, already, err := r.Approve(context.WithoutCancel(ctx), store, job, cand)
	switch {
	case err != nil:
		return exitWith(exitPartial, fmt.Errorf("approve %s: %w", id, err))
	case already:
		fmt.Fprintf(a.stdout, "already published: %s → %s (nothing published now)\n", id, loc)
	default:
		fmt.Fprintf(a.stdout, "approved and published %s (answer of %s, attempt %d, quality %.0f) → %s\n", id, cand.Provider, cand.Attempt, cand.QualityScore, loc)
	}
	return nil
}

func (a *app) reviewReject(cmd *cobra.Command, id string) error {
	_, store, err := a.reviewStore(cmd, true)
	if err != nil {
		return err
	}
	if store == nil {
		return unknownJob(id)
	}
	defer store.Close()
	rejected, cur, err := store.RejectReview(cmd.Context(), id, time.Now())
	if err != nil {
		return exitWith(exitPartial, err)
	}
	switch {
	case cur.Status == "":
		return unknownJob(id)
	case rejected:
		fmt.Fprintf(a.stdout, "rejected %s: closed without publishing; it is not redone for slot %s\n", id, cur.Slot)
	case cur.Status == chain.JobRejected:
		fmt.Fprintf(a.stdout, "already rejected: %s\n", id)
	default:
		return exitWith(exitPartial, fmt.Errorf("job %s is %s, not in review: nothing to reject", id, cur.Status))
	}
	return nil
}

// reviewJob rebuilds the chain.Job of a stored job from the topics file
// (keywords, target words) when the topic is still there.
func (a *app) reviewJob(cfg *config.Config, rec chain.JobRecord) chain.Job {
	j := chain.Job{ID: rec.ID, Topic: rec.Topic, Slot: rec.Slot, Title: rec.Title, Category: rec.Category,
		Language: rec.Language, TargetWords: cfg.Job.TargetWords}
	if j.Language == "" {
		j.Language = cfg.Job.Language
	}
	topics, err := config.LoadTopics(cfg.Topics)
	if err != nil {
		return j
	}
	for _, tj := range jobsFor(cfg, topics, rec.Slot) {
		if tj.Topic == rec.Topic {
			tj.ID, tj.Title, tj.Category = rec.ID, j.Title, j.Category
			return tj
		}
	}
	return j
}

// keptWhy says why the kept answer of a job in review was kept: the
// candidate with the fewest and least severe defects (quality.Better), and
// what each of its checks found wrong, most severe first. "" for a job not
// in review or whose kept call is not listed.
func keptWhy(calls []telemetry.JobCall, j chain.JobRecord) string {
	if j.Status != chain.JobReview {
		return ""
	}
	for _, c := range calls {
		if c.Shadow || c.Attempt != j.Attempt {
			continue
		}
		checks := make([]quality.Check, 0, len(c.Checks))
		for _, s := range c.Checks {
			checks = append(checks, storedCheck(s))
		}
		var b strings.Builder
		b.WriteString("  why: of the answers that failed the gate, this one has the fewest and least severe defects:\n")
		for _, ch := range (quality.Result{Checks: checks}).Defects() {
			desc := ch.Description()
			if desc == "" {
				desc = string(ch.Name)
			}
			fmt.Fprintf(&b, "  - %s (%s): %s\n", ch.Name, ch.Severity(), desc)
		}
		return b.String()
	}
	return ""
}

// storedCheck reads back a check stored in calls.checks in the form of
// quality.Check.String: `words -20 (640 of 1200 target)`.
func storedCheck(s string) quality.Check {
	name, rest, _ := strings.Cut(s, " -")
	num, detail, _ := strings.Cut(rest, " ")
	p, _ := strconv.ParseFloat(num, 64)
	return quality.Check{Name: quality.CheckName(name), Penalty: p, Detail: strings.TrimSuffix(strings.TrimPrefix(detail, "("), ")")}
}

// excerpt renders a stored answer for a human: the article's title, each
// heading with the start of its body; raw text when it is not an article.
func excerpt(text string) string {
	raw, err := quality.Extract(text)
	var b strings.Builder
	if err == nil {
		var a quality.Article
		if jerr := json.Unmarshal(raw, &a); jerr == nil && len(a.Sections) > 0 {
			fmt.Fprintf(&b, "# %s\n", a.Title)
			for _, s := range a.Sections {
				fmt.Fprintf(&b, "## %s (%d words)\n%s\n", s.H2, len(strings.Fields(s.Body)), clipText(s.Body, 160))
			}
			return strings.TrimRight(b.String(), "\n")
		}
	}
	return clipText(text, 800)
}

// clipText shortens s to about n characters on a rune boundary.
func clipText(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

func indent(s, pre string) string {
	return pre + strings.ReplaceAll(s, "\n", "\n"+pre)
}

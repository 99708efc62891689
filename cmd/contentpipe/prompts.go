package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
)

// promptsOptions are the flags of `prompts test`.
type promptsOptions struct {
	demo  bool
	topic string
}

func (a *app) promptsCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "prompts",
		Short: "Work on the prompt templates: test renders every link's prompt and calls each link once",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return exitWith(exitConfig, errors.New("prompts: name a subcommand: test"))
		},
	}
	var opts promptsOptions
	test := &cobra.Command{
		Use:   "test",
		Short: "Render every link's prompt for a topic, call each link once, gate the answers side by side",
		Long: `Renders every link's prompt (its own template from prompt:, or its family's
default) for one topic, calls each link once, gates each answer and prints one
row per link: prompt version, score, checks, words, sections, latency, cost.
A link that is exhausted, capped or has an open circuit is not called, shown
as "not called (why)" and not counted. The calls are recorded in calls with purpose 'prompts', which the job figures
of report and the alerts leave out. The way to change a template and see every
provider's answer side by side. Exit 0 every link called passes, 1 any fails (or none could be called),
2 config error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.doPromptsTest(cmd.Context(), opts) },
	}
	test.Flags().BoolVar(&opts.demo, "demo", false, "test the embedded demo chain (simulated providers on loopback, answering without injected faults)")
	test.Flags().StringVar(&opts.topic, "topic", "", "the topic ID to write about (default: the first topic)")
	cmd.AddCommand(test)
	return cmd
}

// promptsDemoProfiles are the demo's simulators without their scripted
// faults: a prompts test is about the prompts, not about failover.
func promptsDemoProfiles() map[sim.Flavor]sim.Profile {
	ps := sim.DemoProfiles()
	for f, p := range ps {
		p.Script, p.Rates = nil, nil
		ps[f] = p
	}
	return ps
}

func (a *app) doPromptsTest(ctx context.Context, opts promptsOptions) error {
	var (
		l   *loaded
		err error
	)
	if opts.demo {
		l, err = a.loadDemo(promptsDemoProfiles())
	} else {
		l, err = a.load(false)
	}
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer l.close()
	topic, err := pickTopic(l.topics, opts.topic)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	store, err := openStore(l.cfg)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer store.Close()
	ch, err := buildChain(ctx, l.cfg, store)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	now := time.Now().UTC()
	job := jobsFor(l.cfg, []config.Topic{topic}, now.Format("2006-01-02"))[0]
	job.ID = "prompts/" + now.Format("2006-01-02T15:04:05Z") + "/" + topic.ID
	fmt.Fprintf(a.stdout, "prompts test: topic %s (%s, %d words), %d links\n\n", topic.ID, job.Language, job.TargetWords, len(ch.Links))
	checks, err := ch.CheckPrompts(ctx, job)
	printPromptsTable(a.stdout, checks)
	if err != nil {
		return exitWith(exitPartial, fmt.Errorf("prompts test: %w", err))
	}
	failed, skipped := 0, 0
	for _, c := range checks {
		switch {
		case !c.Called():
			skipped++ // exhausted, capped, circuit open: not the prompt's fault
		case !c.Pass:
			failed++
		}
	}
	called := len(checks) - skipped
	fmt.Fprintf(a.stdout, "\n%d of %d links passed the quality gate", called-failed, called)
	if skipped > 0 {
		fmt.Fprintf(a.stdout, " (%d not called, not counted)", skipped)
	}
	fmt.Fprintf(a.stdout, "; calls are in %s under request_id %s (purpose 'prompts')\n", l.cfg.DatabaseName(), job.ID)
	switch {
	case failed > 0:
		return exitWith(exitPartial, fmt.Errorf("%d of %d links called failed the prompts test", failed, called))
	case called == 0:
		return exitWith(exitPartial, errors.New("prompts test: no link could be called, so no prompt was tested; see the RESULT column for why"))
	}
	return nil
}

// pickTopic is the topic with id, or the first one when id is "".
func pickTopic(topics []config.Topic, id string) (config.Topic, error) {
	if len(topics) == 0 {
		return config.Topic{}, errors.New("prompts test: the topics file has no topic")
	}
	if id == "" {
		return topics[0], nil
	}
	ids := make([]string, 0, len(topics))
	for _, t := range topics {
		if t.ID == id {
			return t, nil
		}
		ids = append(ids, t.ID)
	}
	return config.Topic{}, fmt.Errorf("prompts test: unknown topic %q (topics: %s)", id, strings.Join(ids, ", "))
}

// printPromptsTable writes one row per link: the result at the gate and
// what the answer measured, in columns as wide as their longest cell.
func printPromptsTable(w io.Writer, checks []chain.PromptCheck) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  LINK\tPROMPT\tRESULT\tSCORE\tWORDS\tSECTIONS\tLATENCY\tCOST\tCHECKS")
	for _, c := range checks {
		result, score, words, sections := "pass", "-", "-", "-"
		switch {
		case !c.Called():
			result = "not called"
			if why := strings.TrimSuffix(c.Detail, "; not called"); why != "" && why != c.Detail {
				result = "not called (" + why + ")"
			}
		case c.Score == nil:
			result = string(c.Outcome)
		case !c.Pass:
			result = "FAIL"
		}
		if c.Score != nil {
			score = fmt.Sprintf("%.0f", *c.Score)
			words, sections = fmt.Sprint(c.Words), fmt.Sprint(c.Sections)
		}
		cost := "-"
		if c.Called() {
			cost = fmt.Sprintf("$%.4f", c.CostUSD)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", c.Provider, c.Version, result, score, words, sections,
			ms(c.Latency), cost, promptChecks(c))
	}
	tw.Flush()
}

// promptChecks is the CHECKS cell: each check's name and penalty, or for a
// link without an answer why.
func promptChecks(c chain.PromptCheck) string {
	if !c.Called() && strings.HasSuffix(c.Detail, "; not called") {
		return "-" // the RESULT cell says why
	}
	if c.Score == nil {
		if c.Detail == "" {
			return "-"
		}
		return clipText(c.Detail, 120)
	}
	if len(c.Checks) == 0 {
		return "-"
	}
	parts := make([]string, len(c.Checks))
	for i, ch := range c.Checks {
		parts[i] = fmt.Sprintf("%s -%g", ch.Name, ch.Penalty)
	}
	return strings.Join(parts, ", ")
}

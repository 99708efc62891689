package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/robfig/cron/v3"
	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/telemetry"
	"github.com/contentpipe/contentpipe/whatif"
)

// simulateOptions are the flags of `simulate`.
type simulateOptions struct {
	faults      string
	days        int
	seed        uint64
	seedSet     bool
	postsPerDay int
	// postsPerDaySet: --posts-per-day was given.
	postsPerDaySet bool
	format         string
	db             string
	advise         bool
	history        string
	scenarios      []string
	// progress: show progress on stderr even when it is not a terminal.
	progress bool
	// wide: the table with every column, lines not wrapped.
	wide bool
	// cpuProfile, memProfile: hidden flags, where to write the run's CPU
	// and heap profiles (BENCHMARKS.md, "Where simulate's time goes").
	cpuProfile, memProfile string
}

func (a *app) simulateCmd() *cobra.Command {
	var o simulateOptions
	cmd := &cobra.Command{
		Use:   "simulate",
		Short: "What-if: the configured chain and its baselines under a fault model, in virtual time",
		Long: `simulate drives the real chain code (policy, deadline, caps, exhaustion, circuit
breaker, quality gate) against in-process simulated providers on a virtual clock, for
--days days of the config's backlog (topics file, priority, not_before, repeat,
posts_per_run and posts_per_day, planned before each run as run plans it; without a topics
file, --posts-per-day topics that repeat daily) at the config's schedule.run times, and prints one table:
the configured chain and, in the same run, three baselines — the first link alone, the same
links in cost order, and naive retry (immediate retries, no waits, no quota or breaker memory).
Every figure is read back with SQL from the simulated calls and jobs tables; the same
alert rules and weekly decay detectors as run and report add alerts per 30 days, topics
published twice, days until a drift was flagged and spend against the budget. A verdict
in words follows the table: who wins which figure, why, and what to change.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.seedSet = cmd.Flags().Changed("seed")
			o.postsPerDaySet = cmd.Flags().Changed("posts-per-day")
			stop, err := startProfiles(o.cpuProfile, o.memProfile)
			if err != nil {
				return err
			}
			err = a.simulate(cmd.Context(), o)
			if perr := stop(); err == nil {
				err = perr
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.faults, "faults", "", "fault model YAML (see data/faults/field-notes.yaml); required unless --history")
	f.IntVar(&o.days, "days", 365, "simulated days")
	f.Uint64Var(&o.seed, "seed", 0, "world seed (default: the fault file's seed)")
	f.IntVar(&o.postsPerDay, "posts-per-day", 6, "without a topics file: this many daily topics, so this many jobs are due a day")
	f.StringVar(&o.format, "format", "table", "output: table or json")
	f.StringVar(&o.db, "db", "", "keep the scenario databases in this directory (default: a temporary one, removed)")
	f.BoolVar(&o.advise, "advise", false, "also estimate pairwise failure correlation from the calls history and advise on the order")
	f.StringVar(&o.history, "history", "", "with --advise: read the history from this database (e.g. the real data/pipeline.db) instead of simulating")
	f.StringSliceVar(&o.scenarios, "scenarios", nil, "run only these scenarios (chain, single, cost-order, naive); default all")
	f.BoolVar(&o.progress, "progress", false, "show the days simulated on stderr even when it is not a terminal (on a terminal it is always shown)")
	f.BoolVar(&o.wide, "wide", false, "table: every column (blackout hours and count, wasted $, p50, calls, warning and info alerts, twice, drift, spend) and unwrapped lines, instead of what fits 100 columns")
	f.StringVar(&o.cpuProfile, "cpuprofile", "", "write a CPU profile of the simulation to this file")
	f.StringVar(&o.memProfile, "memprofile", "", "write a heap profile at the end of the simulation to this file")
	_ = f.MarkHidden("cpuprofile")
	_ = f.MarkHidden("memprofile")
	return cmd
}

func (a *app) simulate(ctx context.Context, o simulateOptions) error {
	if o.format != "table" && o.format != "json" {
		return exitWith(exitConfig, fmt.Errorf("--format %q: want table or json", o.format))
	}
	cfg, err := config.LoadForReading(a.configPath, a.getenv)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	placeholderKeys(cfg)
	order := make([]string, len(cfg.Chain))
	for i, l := range cfg.Chain {
		order[i] = l.Name
	}
	if o.history != "" {
		if !o.advise {
			return exitWith(exitConfig, errors.New("--history needs --advise"))
		}
		return a.adviseFromHistory(ctx, o, order)
	}
	wc, err := a.scenarioConfig(ctx, cfg, o)
	if err != nil {
		return err
	}
	dir, cleanup, err := scenarioDir(o.db)
	if err != nil {
		return err
	}
	defer cleanup()
	started := time.Now()
	names := o.scenarios
	if len(names) == 0 {
		names = whatif.ScenarioNames()
	}
	prog := newSimProgress(a.stderr, o.progress, names, o.days)
	defer prog.clear()
	wc.Dir, wc.DayDone = dir, prog.day
	wc.Progress = func(s string, done bool) {
		if done {
			prog.clear()
			a.log.Info("simulate: scenario done", "scenario", s, "elapsed", time.Since(started).Round(time.Millisecond))
		}
	}
	rep, err := whatif.Run(ctx, wc)
	prog.clear()
	if err != nil {
		return err
	}
	return a.printSimulation(ctx, o, rep, order, started)
}

// scenarioConfig is what every scenario of a simulation shares: the chain
// built from cfg, the world and fault model of the --faults file, the run
// and report times of the schedule, and run's backlog, caps and limits.
// Dir, Progress and DayDone are the caller's. Its errors are exit-code
// config errors.
func (a *app) scenarioConfig(ctx context.Context, cfg *config.Config, o simulateOptions) (whatif.Config, error) {
	model, world, err := simulatedWorld(o)
	if err != nil {
		return whatif.Config{}, exitWith(exitConfig, err)
	}
	tpl, err := buildChain(ctx, cfg, nil)
	if err != nil {
		return whatif.Config{}, exitWith(exitConfig, err)
	}
	specs, err := linkSpecs(cfg, model, o.faults, a.configPath)
	if err != nil {
		return whatif.Config{}, exitWith(exitConfig, err)
	}
	runs, err := runTimes(cfg.Schedule.Run, world.Start())
	if err != nil {
		return whatif.Config{}, exitWith(exitConfig, fmt.Errorf("schedule.run: %w", err))
	}
	backlog, err := a.simulatedBacklog(cfg, o)
	if err != nil {
		return whatif.Config{}, exitWith(exitConfig, err)
	}
	if _, err := runTimes(cfg.Schedule.Report, world.Start()); err != nil {
		return whatif.Config{}, exitWith(exitConfig, fmt.Errorf("schedule.report: %w", err))
	}
	return whatif.Config{
		Chain: tpl, Specs: specs, World: world, ProviderDownAfter: cfg.Alerts.ProviderDownAfter, BudgetWarnAt: cfg.Alerts.BudgetWarnAt,
		// The backlog, its ceiling and run limit and the backlog_low rule
		// of run.
		Backlog: backlog, PostsPerDay: cfg.Job.PostsPerDay, PostsPerRun: cfg.Job.PostsPerRun, BacklogLowDays: cfg.Alerts.BacklogLowDays,
		RunTimes: runs, Scenarios: o.scenarios,
		// The weekly report's decay detectors.
		ReportTimes: func(day time.Time) []time.Duration {
			if strings.TrimSpace(cfg.Schedule.Report) == "" {
				return nil
			}
			r, _ := runTimes(cfg.Schedule.Report, day) // checked above
			return r
		},
		Open: func(path string) (whatif.Store, error) { return telemetry.OpenScratch(path) },
	}, nil
}

// printSimulation writes the report of a simulation in o's format: the
// table (or JSON), the advice with --advise, and where --db kept the
// scenario databases.
func (a *app) printSimulation(ctx context.Context, o simulateOptions, rep *whatif.Report, order []string, started time.Time) error {
	var adv *whatif.Advice
	if o.advise {
		var err error
		if adv, err = adviseScenarios(ctx, rep, order); err != nil {
			return err
		}
	}
	if o.format == "json" {
		return writeSimJSON(a.stdout, o, rep, adv)
	}
	writeSimTable(a.stdout, o, rep, adv, time.Since(started))
	var tail strings.Builder
	if adv != nil {
		fmt.Fprintln(&tail)
		fmt.Fprint(&tail, adv.Text())
	}
	if o.db != "" {
		fmt.Fprintf(&tail, "\nscenario databases kept in %s (one per scenario): contentpipe sql works on each with --config pointing database: at it\n", o.db)
	}
	if !o.wide {
		fmt.Fprint(a.stdout, wrapLines(tail.String(), TableWidth))
	} else {
		fmt.Fprint(a.stdout, tail.String())
	}
	return nil
}

// simulatedBacklog is the backlog a simulation plans from: the config's
// topics file as run reads it; without one (the fault-model configs under
// data/faults/), --posts-per-day topics that repeat daily, made from the
// demo topics, so that many jobs are due every day.
func (a *app) simulatedBacklog(cfg *config.Config, o simulateOptions) ([]chain.BacklogTopic, error) {
	if _, err := os.Stat(cfg.Topics); errors.Is(err, fs.ErrNotExist) {
		demo, err := config.ParseTopics("data/demo-topics.yaml", data.DemoTopics)
		if err != nil {
			return nil, err
		}
		a.log.Info("simulate: no topics file, simulating daily topics", "topics", cfg.Topics, "posts_per_day", o.postsPerDay)
		return whatif.DailyTopics(o.postsPerDay, backlogTopics(cfg, demo)), nil
	}
	if o.postsPerDaySet {
		return nil, fmt.Errorf("--posts-per-day sets the load only without a topics file; with %s the backlog and job.posts_per_run/posts_per_day set it, as in run: drop the flag, or remove `topics:` from the config to simulate daily topics", cfg.Topics)
	}
	topics, err := config.LoadTopics(cfg.Topics)
	if err != nil {
		return nil, err
	}
	return backlogTopics(cfg, topics), nil
}

// placeholderKeys gives every link without a key a placeholder: simulate
// calls no real provider, and the wire clients built as templates only
// need a non-empty key.
func placeholderKeys(cfg *config.Config) {
	for _, links := range [][]config.Link{cfg.Chain, cfg.Candidates} {
		for i := range links {
			if links[i].APIKey == "" {
				links[i].APIKey = "simulate-placeholder-not-a-key"
			}
		}
	}
}

// simulatedWorld checks the flags of a simulation, loads the fault model
// and draws its world for the seed (the flag's, else the model's).
func simulatedWorld(o simulateOptions) (*whatif.Model, *whatif.World, error) {
	if o.faults == "" {
		return nil, nil, errors.New("--faults FILE is required (see data/faults/field-notes.yaml)")
	}
	if o.days < 1 || o.postsPerDay < 1 {
		return nil, nil, errors.New("--days and --posts-per-day must be at least 1")
	}
	model, err := loadFaults(o.faults)
	if err != nil {
		return nil, nil, err
	}
	seed := model.Seed
	if o.seedSet {
		seed = o.seed
	}
	world, err := whatif.NewWorld(model, seed, o.days)
	if err != nil {
		return nil, nil, err
	}
	return model, world, nil
}

// linkSpecs returns what the simulator needs to know about each chain link
// beyond the chain: every link must have a provider in the fault model.
func linkSpecs(cfg *config.Config, model *whatif.Model, faults, configPath string) (map[string]whatif.LinkSpec, error) {
	specs := map[string]whatif.LinkSpec{}
	for _, l := range cfg.Chain {
		if _, ok := model.Providers[l.Name]; !ok {
			return nil, fmt.Errorf("%s: no provider %q: every chain link of %s needs an entry under providers:", faults, l.Name, configPath)
		}
		specs[l.Name] = whatif.LinkSpec{Kind: l.Kind, Model: l.Model, Timeouts: chain.Timeouts(l.Timeouts),
			JSONMode: l.JSONMode != "", RPM: l.RPM, TPM: l.TPM}
	}
	return specs, nil
}

// scenarioDir returns the directory of the scenario databases: keep (the
// --db flag), emptied of earlier scenario databases, or a temporary one
// that cleanup removes.
func scenarioDir(keep string) (dir string, cleanup func(), err error) {
	if keep == "" {
		if dir, err = os.MkdirTemp("", "contentpipe-simulate-"); err != nil {
			return "", nil, err
		}
		return dir, func() { os.RemoveAll(dir) }, nil
	}
	if err := os.MkdirAll(keep, 0o700); err != nil {
		return "", nil, exitWith(exitConfig, fmt.Errorf("--db %s: %w", keep, err))
	}
	for _, name := range whatif.ScenarioNames() {
		// A kept directory from an earlier run: start each scenario afresh.
		for _, suf := range []string{"", "-wal", "-shm"} {
			_ = os.Remove(filepath.Join(keep, name+".db"+suf))
		}
	}
	return keep, func() {}, nil
}

// adviseScenarios advises on order from the histories of every scenario
// database of rep, each its own source.
func adviseScenarios(ctx context.Context, rep *whatif.Report, order []string) (*whatif.Advice, error) {
	var obs []whatif.Observation
	for _, r := range rep.Rows {
		s, err := telemetry.OpenReadOnly(r.DB)
		if err != nil {
			return nil, err
		}
		rows, err := whatif.Observations(ctx, s, r.Scenario)
		s.Close()
		if err != nil {
			return nil, err
		}
		obs = append(obs, rows...)
	}
	adv := whatif.Advise(obs, order, time.Hour)
	return &adv, nil
}

// adviseFromHistory advises on the configured order from a real database.
func (a *app) adviseFromHistory(ctx context.Context, o simulateOptions, order []string) error {
	s, err := telemetry.OpenReadOnly(o.history)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	defer s.Close()
	obs, err := whatif.Observations(ctx, s, "")
	if err != nil {
		return err
	}
	adv := whatif.Advise(obs, order, time.Hour)
	if o.format == "json" {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"history": o.history, "advice": adv})
	}
	fmt.Fprintf(a.stdout, "history: %s (%d calls and skips)\n", o.history, len(obs))
	fmt.Fprint(a.stdout, adv.Text())
	return nil
}

// loadFaults reads a fault model: strict YAML (unknown keys and wrong types
// are errors with their line), then the model's own validation, whose
// errors are pointed at their line too.
func loadFaults(path string) (*whatif.Model, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("faults file: %w", err)
	}
	var m whatif.Model
	if err := yaml.UnmarshalWithOptions(b, &m, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("%s: %s", path, yaml.FormatError(err, false, true))
	}
	if err := m.Validate(); err != nil {
		file, perr := parser.ParseBytes(b, 0)
		var lines []string
		for _, e := range unjoin(err) {
			line := 0
			var fe *whatif.FieldError
			if errors.As(e, &fe) && perr == nil {
				line = lineOf(file, fe.Path)
			}
			if line > 0 {
				lines = append(lines, fmt.Sprintf("%s:%d: %v", path, line, e))
			} else {
				lines = append(lines, fmt.Sprintf("%s: %v", path, e))
			}
		}
		return nil, errors.New(strings.Join(lines, "\n"))
	}
	return &m, nil
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// lineOf finds the line of a dotted field path in a parsed YAML file,
// falling back to the nearest parent that exists (0 when none does).
func lineOf(file *ast.File, path string) int {
	parts := strings.Split(path, ".")
	for n := len(parts); n > 0; n-- {
		p, err := yaml.PathString("$." + strings.Join(parts[:n], "."))
		if err != nil {
			continue
		}
		node, err := p.FilterFile(file)
		if err == nil && node != nil && node.GetToken() != nil {
			return node.GetToken().Position.Line
		}
	}
	return 0
}

// runTimes returns the run times of one day of a cron expression as
// offsets from UTC midnight (none when it does not run daily).
func runTimes(expr string, day time.Time) ([]time.Duration, error) {
	if strings.TrimSpace(expr) == "" {
		return nil, nil
	}
	s, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, err
	}
	var out []time.Duration
	end := day.Add(24 * time.Hour)
	for t := s.Next(day.Add(-time.Second)); t.Before(end); t = s.Next(t) {
		out = append(out, t.Sub(day))
	}
	return out, nil
}

func pct(v float64) string { return fmt.Sprintf("%.2f%%", 100*v) }

func dur(d time.Duration) string {
	switch {
	case d >= time.Hour:
		return fmt.Sprintf("%.1fh", d.Hours())
	case d >= time.Minute:
		return fmt.Sprintf("%.1fm", d.Minutes())
	}
	return d.Round(time.Second).String()
}

// simColumn is one column of the simulate table: its header, and the
// header in the table that fits TableWidth ("" = only with --wide), and
// its cell of a row.
type simColumn struct {
	head, narrow string
	cell         func(r whatif.Row, rep *whatif.Report) string
}

// simColumns are the columns of the simulate table, in order.
var simColumns = []simColumn{
	{"scenario", "scenario", func(r whatif.Row, _ *whatif.Report) string { return r.Scenario }},
	{"success", "success", func(r whatif.Row, _ *whatif.Report) string { return pct(r.SuccessRate) }},
	{"blackout h", "", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprintf("%.1f", r.BlackoutHours) }},
	{"blackouts", "", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprint(r.Blackouts) }},
	{"blackout days", "blackout days", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprint(r.BlackoutDays) }},
	{"cost $", "cost $", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprintf("%.4f", r.CostUSD) }},
	{"wasted $", "", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprintf("%.4f", r.WastedUSD) }},
	{"wasted", "wasted", func(r whatif.Row, _ *whatif.Report) string {
		wasted := 0.0
		if r.CostUSD > 0 {
			wasted = r.WastedUSD / r.CostUSD
		}
		return pct(wasted)
	}},
	{"quality", "quality", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprintf("%.1f", r.MeanQuality) }},
	{"fallback", "fallback", func(r whatif.Row, _ *whatif.Report) string { return pct(r.FallbackShare) }},
	{"p50 publish", "", func(r whatif.Row, _ *whatif.Report) string { return dur(r.P50) }},
	{"p95 publish", "p95 publish", func(r whatif.Row, _ *whatif.Report) string { return dur(r.P95) }},
	{"calls", "", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprint(r.Calls) }},
	{"alerts/30d crit", "crit/30d", alertsPer30d(chain.SeverityCritical)},
	{"warn", "", alertsPer30d(chain.SeverityWarning)},
	{"info", "", alertsPer30d(chain.SeverityInfo)},
	{"twice", "", func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprint(r.PublishedTwice) }},
	{"drift flagged", "", driftCell},
	{"spend/budget", "", func(r whatif.Row, _ *whatif.Report) string { return spendCell(r) }},
}

// alertsPer30d is the column of a scenario's alerts of severity sev per 30
// days.
func alertsPer30d(sev chain.Severity) func(r whatif.Row, _ *whatif.Report) string {
	return func(r whatif.Row, _ *whatif.Report) string { return fmt.Sprintf("%.1f", r.Alerts30d[string(sev)]) }
}

// writeSimTable prints the one table of all scenarios, the targets and
// the verdict. Without --wide the table has the columns that fit
// TableWidth (the verdict ranks them) and the prose is wrapped to it.
func writeSimTable(w io.Writer, o simulateOptions, rep *whatif.Report, adv *whatif.Advice, took time.Duration) {
	head := fmt.Sprintf("simulate: %d days × %d posts/day from %s, seed %d, faults %s (%s)\n\n",
		rep.Days, rep.PostsPerDay, rep.Start.Format("2006-01-02"), rep.Seed, o.faults, took.Round(10*time.Millisecond))
	if !o.wide {
		head = wrapLines(head, TableWidth)
	}
	var b strings.Builder
	b.WriteString(head)
	var cols []simColumn
	for _, c := range simColumns {
		if o.wide {
			cols = append(cols, c)
		} else if c.narrow != "" {
			c.head = c.narrow
			cols = append(cols, c)
		}
	}
	tw := tabwriter.NewWriter(&b, 2, 4, 2, ' ', tabwriter.AlignRight)
	for _, c := range cols {
		fmt.Fprint(tw, c.head+"\t")
	}
	fmt.Fprintln(tw)
	for _, r := range rep.Rows {
		for _, c := range cols {
			fmt.Fprint(tw, c.cell(r, rep)+"\t")
		}
		fmt.Fprintln(tw)
	}
	tw.Flush()
	fmt.Fprint(w, b.String()) // the table: never wrapped
	var prose strings.Builder
	if !o.wide {
		fmt.Fprintln(&prose, "  (--wide adds blackout hours and count, wasted $, p50 publish, calls, warning and info alerts, twice, drift flagged, spend/budget)")
	}
	fmt.Fprintln(&prose)
	for _, r := range rep.Rows {
		fmt.Fprintf(&prose, "  %-10s %s\n", r.Scenario, strings.Join(r.Order, " → "))
	}
	writeSimSummary(&prose, rep, adv)
	if o.wide {
		fmt.Fprint(w, prose.String())
	} else {
		fmt.Fprint(w, wrapLines(prose.String(), TableWidth))
	}
}

// writeSimSummary writes the chain against the single provider, the
// targets and the verdict under the table.
func writeSimSummary(w io.Writer, rep *whatif.Report, adv *whatif.Advice) {
	c, s := rep.Row(whatif.ScenarioChain), rep.Row(whatif.ScenarioSingle)
	if c == nil || s == nil || s.CostUSD == 0 {
		return
	}
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	costDelta := c.CostUSD/s.CostUSD - 1
	wasteRel := c.WastedUSD / s.CostUSD
	fmt.Fprintf(w, "\nchain vs single provider: success %s vs %s; blackout days %d vs %d; cost %+.1f%%; wasted spend %.2f%% of the single provider's cost; quality %+.1f%%\n",
		pct(c.SuccessRate), pct(s.SuccessRate), c.BlackoutDays, s.BlackoutDays, 100*costDelta, 100*wasteRel, 100*(c.MeanQuality/s.MeanQuality-1))
	fmt.Fprintf(w, "targets: success ≥ 99.9%% %s; 0 blackout days %s; cost ≤ +15%% %s; wasted ≤ 5%% %s\n",
		mark(c.SuccessRate >= 0.999), mark(c.BlackoutDays == 0), mark(costDelta <= 0.15), mark(wasteRel <= 0.05))
	if v := rep.VerdictWith(adv); len(v) > 0 {
		fmt.Fprintln(w, "\nverdict (which strategy wins on which figure, and why):")
		for _, line := range v {
			fmt.Fprintf(w, "  %s\n", line)
		}
	}
	fmt.Fprintf(w, "success = published on the slot day; blackout = from a job no provider answered to the next publication, counted when ≥ %s with ≥ %d unanswered passes; wasted = cost of calls whose answer was rejected or failed\n", whatif.BlackoutMin, whatif.BlackoutWalks)
}

// wrapLines wraps every line of text longer than width at spaces; the
// continuation lines are indented two more than the line they continue.
// A word longer than the room stays whole.
func wrapLines(text string, width int) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(text, "\n") {
		nl := strings.HasSuffix(line, "\n")
		line = strings.TrimSuffix(line, "\n")
		if utf8.RuneCountInString(line) <= width {
			b.WriteString(line) // fits: kept as it is (a table row keeps its spacing)
			if nl {
				b.WriteString("\n")
			}
			continue
		}
		indent := line[:len(line)-len(strings.TrimLeft(line, " "))]
		cur, n := indent, utf8.RuneCountInString(indent)
		for i, word := range strings.Fields(line) {
			wl := utf8.RuneCountInString(word)
			if i > 0 && n+1+wl > width {
				b.WriteString(cur + "\n")
				cur, n = indent+"  "+word, utf8.RuneCountInString(indent)+2+wl
				continue
			}
			if i > 0 {
				cur, n = cur+" ", n+1
			}
			cur, n = cur+word, n+wl
		}
		b.WriteString(cur)
		if nl {
			b.WriteString("\n")
		}
	}
	return b.String()
}

// driftCell is the days until the weekly report flagged the model's
// quality drift: "-" without a drift, "never" when it was not flagged.
func driftCell(r whatif.Row, rep *whatif.Report) string {
	switch {
	case !rep.Drift:
		return "-"
	case r.DriftDays < 0:
		return "never"
	}
	return fmt.Sprintf("%.0fd", r.DriftDays)
}

// spendCell is the spend against the budget of the period ("$x" without one).
func spendCell(r whatif.Row) string {
	if r.BudgetUSD <= 0 {
		return fmt.Sprintf("$%.2f (no budget)", r.SpendUSD)
	}
	return fmt.Sprintf("$%.2f of $%.2f (%.0f%%)", r.SpendUSD, r.BudgetUSD, 100*r.SpendUSD/r.BudgetUSD)
}

func writeSimJSON(w io.Writer, o simulateOptions, rep *whatif.Report, adv *whatif.Advice) error {
	out := map[string]any{"faults": o.faults, "report": rep, "verdict": rep.VerdictWith(adv)}
	if adv != nil {
		out["advice"] = adv
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

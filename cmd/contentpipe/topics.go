package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/telemetry"
)

func (a *app) topicsCmd() *cobra.Command {
	var (
		format string
		wide   bool
	)
	cmd := &cobra.Command{
		Use:   "topics [--format table|csv|json] [--wide]",
		Short: "Every topic of the backlog with its state, and how many days the backlog lasts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch format {
			case "table", "csv", "json":
			default:
				return exitWith(exitConfig, fmt.Errorf("--format %q: use table, csv or json", format))
			}
			cfg, topics, err := a.readTopics(cmd)
			if err != nil {
				return exitWith(exitConfig, err)
			}
			clock, err := a.clock()
			if err != nil {
				return exitWith(exitConfig, err)
			}
			jobs, err := storedJobs(cmd.Context(), cfg.Database)
			if err != nil {
				return exitWith(exitPartial, err)
			}
			now := clock.Now()
			plan := chain.Plan(backlogTopics(cfg, topics), jobs, now)
			if err := writeTopics(a.stdout, topicsView{format: format, wide: wide, dir: cfg.Dir}, plan, chain.BacklogRunway(plan, perDay(cfg))); err != nil || format != "table" {
				return err
			}
			lines, err := misconfiguredLines(cmd.Context(), cfg)
			if err != nil {
				return exitWith(exitPartial, err)
			}
			writeMisconfigured(a.stdout, lines)
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "table", "output format: table, csv or json")
	cmd.Flags().BoolVar(&wide, "wide", false, "table: every column (topic, job, not_before, repeat, published_at, provider, location, deferrals) instead of what fits 100 columns")
	return cmd
}

// readTopics is the config (the demo's without a config file) and its
// topics file (the embedded demo backlog for the demo).
func (a *app) readTopics(cmd *cobra.Command) (*config.Config, []config.Topic, error) {
	cfg, err := a.readConfig(cmd)
	if err != nil {
		return nil, nil, err
	}
	if _, serr := os.Stat(a.configPath); serr != nil && errors.Is(serr, fs.ErrNotExist) {
		topics, err := config.ParseTopics("data/demo-topics.yaml", data.DemoTopics)
		return cfg, topics, err
	}
	topics, err := config.LoadTopics(cfg.Topics)
	return cfg, topics, err
}

// storedJobs reads the jobs of the database at path; a database that does
// not exist yet has none (and is not created). An existing database is
// opened as `run` opens it, so an older schema is migrated first (a v1
// database's <date>/<topic> jobs read as their topics).
func storedJobs(ctx context.Context, path string) (map[string]chain.JobRecord, error) {
	if !dbExists(path) {
		return map[string]chain.JobRecord{}, nil
	}
	store, err := telemetry.Open(path)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return store.Jobs(ctx)
}

// topicsColumns are the columns of `contentpipe topics`.
func topicsColumns() []string {
	return []string{"topic", "job", "state", "priority", "not_before", "repeat", "published_at", "provider", "location", "deferrals", "title"}
}

// topicRow is one entry of the plan as a table row.
func topicRow(e chain.BacklogEntry) []any {
	t, r := e.Topic, e.Record
	notBefore, published := "", ""
	if !t.NotBefore.IsZero() {
		notBefore = t.NotBefore.Format(time.DateOnly)
	}
	if e.State == chain.TopicPublished && !r.PublishedAt.IsZero() {
		published = r.PublishedAt.UTC().Format("2006-01-02 15:04")
	}
	provider, location := "", ""
	if e.State == chain.TopicPublished || e.State == chain.TopicReview {
		provider, location = r.Provider, r.Location
	}
	return []any{t.Job.Topic, t.Job.ID, stateText(e), int64(t.Priority), notBefore, string(t.Repeat), published, provider, location, int64(r.Deferrals), t.Job.Title}
}

// stateText is an entry's state in words.
func stateText(e chain.BacklogEntry) string {
	switch e.State {
	case chain.TopicReview:
		return "in review"
	case chain.TopicScheduled:
		return "scheduled for " + e.Topic.NotBefore.Format(time.DateOnly)
	case chain.TopicDeferred:
		return fmt.Sprintf("due, deferred %d time(s)", e.Record.Deferrals)
	}
	return string(e.State)
}

// runwayText is the runway in words: "23 topics left: about 4 days at 6 a day".
func runwayText(r chain.Runway) string {
	s := fmt.Sprintf("%d topics left", r.Left)
	switch {
	case r.Left == 0 && r.Repeats > 0:
		s = fmt.Sprintf("no one-off topics left; %d recurring series keep the backlog going", r.Repeats)
		return s
	case r.Left == 0:
		s += ": add topics to the topics file, the next run picks them up"
	case math.IsInf(r.Days, 1):
		s += ": no publication rate to measure the runway by"
	default:
		days := math.Ceil(r.Days)
		unit := "days"
		if days == 1 {
			unit = "day"
		}
		s += fmt.Sprintf(": about %.0f %s at %d a day", days, unit, r.PerDay)
	}
	if r.Repeats > 0 {
		s += fmt.Sprintf("; %d recurring series", r.Repeats)
	}
	return s
}

// topicsView is how `topics` prints: the format, --wide, and the config's
// directory the table shows locations relative to.
type topicsView struct {
	format string
	wide   bool
	dir    string
}

// TableWidth is the width the default tables fit (`topics`, `simulate`);
// --wide prints every column instead.
const TableWidth = 100

// writeTopics writes the plan in the view's format; table adds the runway
// line, json is {"topics": [...], "runway": {...}}. The table shows
// locations relative to the config's directory, and without --wide only
// the job, its state in words (which carries not_before, deferrals, and
// when and by which link it was published), the priority when one is set,
// and the title cut to fit TableWidth.
func writeTopics(w io.Writer, v topicsView, plan []chain.BacklogEntry, r chain.Runway) error {
	rows := make([][]any, 0, len(plan))
	for _, e := range plan {
		rows = append(rows, topicRow(e))
	}
	switch v.format {
	case "json":
		list := make([]map[string]any, 0, len(rows))
		for _, row := range rows {
			m := map[string]any{}
			for i, c := range topicsColumns() {
				m[c] = row[i]
			}
			list = append(list, m)
		}
		days := any(r.Days)
		if math.IsInf(r.Days, 1) {
			days = nil
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"topics": list, "runway": map[string]any{
			"left": r.Left, "per_day": r.PerDay, "days": days, "recurring": r.Repeats, "text": runwayText(r)}})
	case "csv":
		return telemetry.WriteTable(w, topicsColumns(), rows, v.format)
	}
	cols := topicsColumns()
	for _, row := range rows {
		row[8] = relativeTo(v.dir, row[8].(string))
	}
	if !v.wide {
		cols, rows = narrowTopics(plan, rows)
	}
	if err := telemetry.WriteTable(w, cols, rows, v.format); err != nil {
		return err
	}
	_, err := fmt.Fprintln(w, runwayText(r))
	return err
}

// narrowTopics is the default table: job, state (with when and by whom it
// was published), priority when any topic has one, and the title cut with
// "…" to what TableWidth leaves.
func narrowTopics(plan []chain.BacklogEntry, wide [][]any) ([]string, [][]any) {
	prio := false
	for _, row := range wide {
		prio = prio || row[3].(int64) != 0
	}
	cols := []string{"job", "state"}
	if prio {
		cols = append(cols, "priority")
	}
	cols = append(cols, "title")
	rows := make([][]any, len(wide))
	used := make([]int, len(cols)-1) // the widths of the columns before the title
	for i, row := range wide {
		state := row[2].(string)
		switch p := row[7].(string); plan[i].State {
		case chain.TopicPublished:
			state = strings.TrimSpace("published " + row[6].(string))
			if p != "" {
				state += " by " + p
			}
		case chain.TopicReview:
			if p != "" {
				state += " (" + p + ")"
			}
		}
		rows[i] = []any{row[1], state}
		if prio {
			rows[i] = append(rows[i], row[3])
		}
		for c := range used {
			used[c] = max(used[c], utf8.RuneCountInString(cols[c]), utf8.RuneCountInString(fmt.Sprint(rows[i][c])))
		}
		rows[i] = append(rows[i], row[10])
	}
	room := TableWidth
	for _, u := range used {
		room -= u + 2
	}
	for _, row := range rows {
		row[len(row)-1] = cut(row[len(row)-1].(string), max(room, 12))
	}
	return cols, rows
}

// cut shortens s to at most n runes, ending in "…" when it was longer.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}

// relativeTo is path relative to dir when it lies inside dir (a location
// under the config's directory); anything else (another directory, a URL)
// as it is.
func relativeTo(dir, path string) string {
	if dir == "" || !filepath.IsAbs(path) {
		return path
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

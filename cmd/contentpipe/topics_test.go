package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/data"
)

// goldenTopics is a backlog in every state, at a fixed now.
func goldenTopics() ([]chain.BacklogEntry, chain.Runway) {
	now := time.Date(2026, 12, 1, 14, 0, 0, 0, time.UTC)
	cfg := &config.Config{Job: config.Job{PostsPerRun: 4, PostsPerDay: 2, Language: "en", TargetWords: 1500}}
	topics := []config.Topic{
		{ID: "compost", Title: "Home composting"},
		{ID: "backups", Title: "Backups for small offices", Priority: 1},
		{ID: "passwords", Title: "A password manager for a team"},
		{ID: "bikes", Title: "Cargo bikes for deliveries", NotBefore: "2026-12-05"},
		{ID: "weekly-digest", Title: "The week in home energy", Repeat: config.RepeatWeekly},
		{ID: "heat-pumps", Title: "Heat pumps in old houses"},
		{ID: "solar", Title: "Balcony solar panels"},
	}
	jobs := map[string]chain.JobRecord{
		"compost": {ID: "compost", Status: chain.JobPublished, Provider: "groq", Location: "out/2026-11-30/home-composting.md",
			PublishedAt: time.Date(2026, 11, 30, 6, 2, 0, 0, time.UTC)},
		"backups":   {ID: "backups", Status: chain.JobReview, Provider: "cerebras"},
		"passwords": {ID: "passwords", Status: chain.JobDeferred, Deferrals: 2, UpdatedAt: now.Add(-time.Hour)},
		"solar":     {ID: "solar", Status: chain.JobDeferred, Deferrals: 1, UpdatedAt: now.Add(-30 * time.Hour)},
	}
	plan := chain.Plan(backlogTopics(cfg, topics), jobs, now)
	return plan, chain.BacklogRunway(plan, perDay(cfg))
}

// TestTopicsGolden compares `contentpipe topics` in each format with
// testdata/topics/*; CONTENTPIPE_UPDATE_GOLDEN=1 rewrites them.
func TestTopicsGolden(t *testing.T) {
	t.Parallel()
	plan, runway := goldenTopics()
	for _, format := range []string{"table", "csv", "json"} {
		var b bytes.Buffer
		if err := writeTopics(&b, topicsView{format: format}, plan, runway); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("testdata", "topics", format+".golden")
		if os.Getenv("CONTENTPIPE_UPDATE_GOLDEN") == "1" {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (CONTENTPIPE_UPDATE_GOLDEN=1 writes it)", err)
		}
		if !bytes.Equal(b.Bytes(), want) {
			t.Errorf("%s output differs from %s:\n got:\n%s\nwant:\n%s", format, path, b.Bytes(), want)
		}
	}
}

func TestRunwayText(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		r    chain.Runway
		want string
	}{
		{chain.Runway{Left: 23, PerDay: 6, Days: 23.0 / 6}, "23 topics left: about 4 days at 6 a day"},
		{chain.Runway{Left: 1, PerDay: 6, Days: 1.0 / 6, Repeats: 2}, "1 topics left: about 1 day at 6 a day; 2 recurring series"},
		{chain.Runway{}, "0 topics left: add topics to the topics file, the next run picks them up"},
		{chain.Runway{Repeats: 3, Days: math.Inf(1)}, "no one-off topics left; 3 recurring series keep the backlog going"},
	} {
		if got := runwayText(c.r); got != c.want {
			t.Errorf("got %q, want %q", got, c.want)
		}
	}
}

// TestTopicsFitTerminal: the demo backlog with its longest titles, half of
// it published by the longest link name to long absolute paths under the
// config's directory: the default table fits TableWidth columns and shows
// no absolute path; --wide has every column and the paths relative to the
// config's directory.
func TestTopicsFitTerminal(t *testing.T) {
	t.Parallel()
	topics, err := config.ParseTopics("data/demo-topics.yaml", data.DemoTopics)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 2, 6, 0, 0, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "a", "rather", "long", "home", "of", "the", "config")
	jobs := map[string]chain.JobRecord{}
	for i, tp := range topics {
		if i%2 == 0 {
			jobs[tp.ID] = chain.JobRecord{ID: tp.ID, Status: chain.JobPublished, Provider: "openrouter", PublishedAt: now,
				Location: filepath.Join(dir, "out", "2026-12-02", strings.ToLower(strings.ReplaceAll(tp.Title, " ", "-"))+".md")}
		}
	}
	topics[1].Priority, topics[3].Repeat = 2, config.RepeatWeekly
	cfg := &config.Config{Job: config.Job{PostsPerRun: 4, Language: "en", TargetWords: 1500}}
	plan := chain.Plan(backlogTopics(cfg, topics), jobs, now)
	for _, wide := range []bool{false, true} {
		var b bytes.Buffer
		if err := writeTopics(&b, topicsView{format: "table", wide: wide, dir: dir}, plan, chain.BacklogRunway(plan, perDay(cfg))); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if strings.Contains(out, dir) {
			t.Errorf("wide=%v: the table shows the config's directory %s instead of paths relative to it:\n%s", wide, dir, out)
		}
		lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
		widest := 0
		for _, l := range lines {
			widest = max(widest, utf8.RuneCountInString(l))
		}
		if !wide {
			if widest > TableWidth {
				t.Errorf("the default table is %d columns wide, more than %d:\n%s", widest, TableWidth, out)
			}
			for _, want := range []string{"published 2026-12-02 06:00 by openrouter", "priority", "…"} {
				if !strings.Contains(out, want) {
					t.Errorf("the default table lacks %q:\n%s", want, out)
				}
			}
			continue
		}
		for _, c := range topicsColumns() {
			if !strings.Contains(lines[0], c) {
				t.Errorf("--wide lacks the column %s:\n%s", c, lines[0])
			}
		}
		if !strings.Contains(out, filepath.Join("out", "2026-12-02", "home-composting")) || strings.Contains(out, "…") {
			t.Errorf("--wide lacks a relative location or cuts a cell:\n%s", out)
		}
	}
}

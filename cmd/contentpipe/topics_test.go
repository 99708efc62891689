package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
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
	plan, runway := goldenTopics()
	for _, format := range []string{"table", "csv", "json"} {
		var b bytes.Buffer
		if err := writeTopics(&b, format, plan, runway); err != nil {
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

package config

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestTopicsBacklogKeys(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"topics.yaml": `- id: a
  title: A
  priority: 2
  not_before: 2026-12-05
- id: b
  title: B
  repeat: weekly
  priority: -1
`,
		"bad.yaml": `- id: a
  title: A
  not_before: next week
  repeat: hourly
`,
	})
	topics, err := LoadTopics(filepath.Join(dir, "topics.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if topics[0].Priority != 2 || topics[0].NotBefore != "2026-12-05" || topics[1].Repeat != RepeatWeekly || topics[1].Priority != -1 {
		t.Errorf("topics: %+v", topics)
	}
	_, err = LoadTopics(filepath.Join(dir, "bad.yaml"))
	if err == nil {
		t.Fatal("bad not_before and repeat accepted")
	}
	for _, want := range []string{`bad.yaml:3:`, `not_before "next week" is not a date`, `bad.yaml:4:`, `unknown repeat "hourly"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

func TestTopicsDuplicateNamesBothLines(t *testing.T) {
	dir := writeTree(t, map[string]string{"topics.yaml": "- id: a\n  title: A\n- id: b\n  title: B\n- id: a\n  title: A again\n"})
	_, err := LoadTopics(filepath.Join(dir, "topics.yaml"))
	if err == nil || !strings.Contains(err.Error(), "topics.yaml:5:") || !strings.Contains(err.Error(), "first defined at line 1") {
		t.Fatalf("want both lines (5 and 1) named, got %v", err)
	}
}

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

func TestBudgetNeedsKnownPrices(t *testing.T) {
	base := "topics: t.yaml\nchain:\n  - {name: a, kind: openai, base_url: \"http://127.0.0.1:1\", model: llama-3.3-70b-versatile, daily_tokens: 5000}\n  - {name: b, kind: openai, base_url: \"http://127.0.0.1:1\", model: some-new-model}\n"
	dir := writeTree(t, map[string]string{
		"free.yaml":  base,
		"money.yaml": base + "budget: {daily_usd: 1.5}\n",
		"priced.yaml": strings.Replace(base, "model: some-new-model", "model: some-new-model, price: {input_per_mtok: 1, output_per_mtok: 2}", 1) +
			"budget: {daily_usd: 1.5, monthly_usd: 20}\n",
		"t.yaml": "- {id: a, title: A}\n",
	})
	ld := Loader{KeysOptional: true}
	if _, err := ld.Load(filepath.Join(dir, "free.yaml")); err != nil {
		t.Errorf("no money budget, unknown price: %v", err)
	}
	_, err := ld.Load(filepath.Join(dir, "money.yaml"))
	if err == nil || !strings.Contains(err.Error(), `chain[1] (b): no known price for model "some-new-model" while a money budget is set`) || !strings.Contains(err.Error(), "money.yaml:4:") {
		t.Errorf("want the error naming chain[1] (b) at line 4, got %v", err)
	}
	cfg, err := ld.Load(filepath.Join(dir, "priced.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Budget != (Budget{DailyUSD: 1.5, MonthlyUSD: 20}) || cfg.Chain[0].DailyTokens != 5000 || cfg.Chain[0].Price.InputPerMTok != 0.59 || cfg.Chain[1].Price.OutputPerMTok != 2 {
		t.Errorf("cfg: %+v %+v", cfg.Budget, cfg.Chain)
	}
}

// A topic every backend cannot store is refused with its line: a NUL byte
// in any text, an id longer than MaxTopicIDBytes; a priority is a whole
// number, as a count is.
func TestTopicsStorableAndWholePriority(t *testing.T) {
	long := strings.Repeat("a", MaxTopicIDBytes+1)
	dir := writeTree(t, map[string]string{
		"topics.yaml": "- id: ok\n  title: fine\n" +
			"- id: " + long + "\n  title: long id\n" +
			"- id: nul\n  title: \"bad\\0title\"\n" +
			"- id: nulcat\n  title: T\n  category: \"c\\0\"\n  keywords: [\"k\\0\"]\n" +
			"- id: frac\n  title: T\n  priority: 1.5\n" +
			"- id: str\n  title: T\n  priority: \"3\"\n",
		"edge.yaml": "- id: " + strings.Repeat("b", MaxTopicIDBytes) + "\n  title: T\n  priority: 2.0\n",
	})
	_, err := LoadTopics(filepath.Join(dir, "topics.yaml"))
	if err == nil {
		t.Fatal("unstorable topics accepted")
	}
	for _, want := range []string{
		"topics.yaml:3:", "is 201 bytes long, over 200",
		"topics.yaml:6:", "title contains a NUL byte",
		"topics.yaml:9:", "category contains a NUL byte",
		"topics.yaml:10:", "keywords contains a NUL byte",
		"topics.yaml:13:", "topics.yaml:16:", "an integer",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	topics, err := LoadTopics(filepath.Join(dir, "edge.yaml"))
	if err != nil || topics[0].Priority != 2 {
		t.Fatalf("a 200-byte id and priority 2.0: %v %+v", err, topics)
	}
}

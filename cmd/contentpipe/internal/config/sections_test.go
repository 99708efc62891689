package config

// The config's sections one by one (telegram, candidates and shadow, YAML
// anchors, topics, cap_reset, schema, schedule) and the files the
// repository ships; the corpus of bad files is in config_test.go.

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestInfraAdjacencyWarning(t *testing.T) {
	e := fullEnv()
	e["C_KEY"] = fakeOtherKey
	third := "  - {name: vertex, kind: gemini, model: m, api_key_env: C_KEY, infra: google}\n"

	// gemini(google), groq(groq-lpu), vertex(google): not adjacent, no warning.
	cfg, err := parseIn(t, twoLinks+third, e)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range cfg.Warnings {
		if strings.Contains(w, "infra") {
			t.Errorf("unexpected warning %q", w)
		}
	}
	// groq moved to google: gemini and groq adjacent, and groq and vertex too.
	cfg, err = parseIn(t, strings.Replace(twoLinks, "infra: groq-lpu", "infra: google", 1)+third, e)
	if err != nil {
		t.Fatal(err)
	}
	var infra []string
	for _, w := range cfg.Warnings {
		if strings.Contains(w, "share infra") {
			infra = append(infra, w)
		}
	}
	if len(infra) != 2 ||
		!strings.Contains(infra[0], `contentpipe.yaml:12: adjacent links "gemini" and "groq" share infra "google"`) ||
		!strings.Contains(infra[1], `contentpipe.yaml:13: adjacent links "groq" and "vertex" share infra "google"`) {
		t.Errorf("infra warnings = %q", infra)
	}
}

func TestTelegram(t *testing.T) {
	body := twoLinks + "alerts:\n  telegram:\n    token_env: TG_TOKEN\n    chat_id_env: TG_CHAT\n    api_endpoint: \"http://127.0.0.1:8081/bot%s/%s\"\n"
	for _, tc := range []struct {
		chat    string
		ok      bool
		enabled bool
	}{
		{"-1001234567890", true, true},
		{"42", true, true},
		{"@contentpipe_alerts", true, true},
		{"", true, false},
		{"nochat", false, false},
		{"@ab", false, false},
		{"12.5", false, false},
	} {
		e := fullEnv()
		e["TG_TOKEN"] = fakeTGToken
		e["TG_CHAT"] = tc.chat
		cfg, err := parseIn(t, body, e)
		if !tc.ok {
			var ce *Error
			if !errors.As(err, &ce) || ce.Line != 16 || !strings.Contains(ce.Msg, "TG_CHAT is not a chat id") {
				t.Errorf("chat %q: err = %v", tc.chat, err)
			}
			if err != nil && tc.chat != "" && strings.Contains(err.Error(), tc.chat) {
				t.Errorf("chat %q: value echoed: %v", tc.chat, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("chat %q: %v", tc.chat, err)
			continue
		}
		tg := cfg.Alerts.Telegram
		if tg.Enabled() != tc.enabled || tg.APIEndpoint != "http://127.0.0.1:8081/bot%s/%s" {
			t.Errorf("chat %q: %v", tc.chat, tg)
		}
		if tc.enabled && (tg.Token != fakeTGToken || tg.ChatID != tc.chat || len(cfg.Warnings) != 0) {
			t.Errorf("chat %q: token/chat not resolved, warnings %q", tc.chat, cfg.Warnings)
		}
		if !tc.enabled && (tg.Token != "" || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], ":14: telegram alerts disabled (TG_CHAT not set)")) {
			t.Errorf("chat %q: warnings %q", tc.chat, cfg.Warnings)
		}
	}
}

func TestCandidatesShadowAndExtensions(t *testing.T) {
	e := fullEnv()
	body := twoLinks + `  - name: local
    kind: openai
    base_url: http://127.0.0.1:11434/v1
    model: llama3
    json_mode: none
    stream: false
    max_tokens: 4096
    cap_reset: "6:30 Europe/Istanbul"
    price: {input_per_mtok: 0, output_per_mtok: 1e-1}
    timeouts: {connect: 2s, first_token: 0, total: 90s, idle: 1m}
candidates:
  - name: strict
    kind: openai
    base_url: https://api.example.com/v1
    model: m2
    api_key_env: GROQ_API_KEY
    json_mode: json_schema
shadow:
  providers: [strict, groq]
  sample_rate: 0.25
retry:
  rate_limited: {max_retries: 0}
  auth_error: {halt: false}
  circuit: {min_samples: 10, failure_rate: 1, cooldown: 30s, max_cooldown: 30s, close_after: 1}
schedule:
  report: ""
  run: "@hourly"
`
	cfg, err := parseIn(t, body, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Chain) != 3 || len(cfg.Candidates) != 1 || cfg.Candidates[0].Name != "strict" {
		t.Fatalf("chain %v candidates %v", cfg.Chain, cfg.Candidates)
	}
	l := cfg.Chain[2]
	if l.JSONMode != "" || l.Stream || l.MaxTokens != 4096 || l.CapReset != "06:30 Europe/Istanbul" || l.APIKey != "" ||
		l.Price != (Price{0, 0.1}) || l.Timeouts != (Timeouts{Connect: 2 * time.Second, FirstToken: 0, Idle: time.Minute, Total: 90 * time.Second}) {
		t.Errorf("local link %s", detail([]Link{l}))
	}
	if cfg.Chain[0].JSONMode != "" || cfg.Chain[1].JSONMode != "json_object" || cfg.Candidates[0].JSONMode != "json_schema" {
		t.Errorf("json modes %q %q %q", cfg.Chain[0].JSONMode, cfg.Chain[1].JSONMode, cfg.Candidates[0].JSONMode)
	}
	if !reflect.DeepEqual(cfg.Shadow, Shadow{Providers: []string{"strict", "groq"}, SampleRate: 0.25}) {
		t.Errorf("Shadow = %+v", cfg.Shadow)
	}
	r := cfg.Retry
	if r.RateLimited.MaxRetries != 0 || r.RateLimited.Wait != 30*time.Second || r.AuthError.Halt ||
		r.Circuit != (Circuit{Window: 10 * time.Minute, MinSamples: 10, FailureRate: 1, Cooldown: 30 * time.Second, MaxCooldown: 30 * time.Second, CloseAfter: 1}) {
		t.Errorf("Retry = %+v", r)
	}
	if cfg.Schedule != (Schedule{Run: "@hourly", Health: "0 5 * * 1", Report: ""}) {
		t.Errorf("Schedule = %+v", cfg.Schedule)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("Warnings = %q", cfg.Warnings)
	}
	// A candidate outside shadow.providers is never called: a warning.
	cfg, err = parseIn(t, strings.Replace(body, "providers: [strict, groq]", "providers: [groq]", 1), e)
	if err != nil || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], `:24: candidate "strict" is not in shadow.providers`) {
		t.Errorf("unused candidate: %v %q", err, cfg.Warnings)
	}
	// Gemini links take no json_mode.
	_, err = parseIn(t, strings.Replace(twoLinks, "    infra: google\n", "    infra: google\n    json_mode: json_object\n", 1), e)
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 7 || !strings.Contains(ce.Msg, "json_mode applies to kind openai only") {
		t.Errorf("gemini json_mode: %v", err)
	}
}

func TestAnchorsAndMergeKeys(t *testing.T) {
	body := `x-timeouts: &slow {connect: 5s, first_token: 2m, total: 10m, idle: 1m}
chain:
  - &base
    name: a
    kind: openai
    base_url: http://127.0.0.1:1/v1
    model: m
    timeouts: *slow
  - <<: *base
    name: b
    daily_cap: 7
`
	// x-timeouts is not a known key: the walker must still reject it.
	if _, err := parseIn(t, body, nil); err == nil || !strings.Contains(err.Error(), `unknown key "x-timeouts"`) {
		t.Fatalf("err = %v", err)
	}
	body = strings.Replace(body, "x-timeouts: &slow {connect: 5s, first_token: 2m, total: 10m, idle: 1m}\nchain:\n",
		"chain:\n  - name: z\n    kind: openai\n    base_url: http://127.0.0.1:1/v1\n    model: m\n    timeouts: &slow {connect: 5s, first_token: 2m, total: 10m, idle: 1m}\n", 1)
	cfg, err := parseIn(t, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := Timeouts{Connect: 5 * time.Second, FirstToken: 2 * time.Minute, Idle: time.Minute, Total: 10 * time.Minute}
	if len(cfg.Chain) != 3 {
		t.Fatalf("chain = %v", cfg.Chain)
	}
	for _, l := range cfg.Chain {
		if l.Timeouts != want || l.Model != "m" {
			t.Errorf("%s: %s", l.Name, detail([]Link{l}))
		}
	}
	if cfg.Chain[2].Name != "b" || cfg.Chain[2].DailyCap != 7 || cfg.Chain[1].DailyCap != 0 {
		t.Errorf("merge: %s", detail(cfg.Chain))
	}
}

func TestTopics(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"topics.yaml": `- id: go-generics
  title: Go generics in practice
  category: programming
  keywords: [go, generics]
- id: sqlite-wal
  title: "SQLite WAL: what it buys you"
  keywords:
    - sqlite
    - wal
  language: tr
  target_words: 900
- id: bare
  title: Only a title
`,
		"none.yaml": "[]\n",
	})
	topics, err := LoadTopics(filepath.Join(dir, "topics.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Topic{
		{ID: "go-generics", Title: "Go generics in practice", Category: "programming", Keywords: []string{"go", "generics"}},
		{ID: "sqlite-wal", Title: "SQLite WAL: what it buys you", Keywords: []string{"sqlite", "wal"}, Language: "tr", TargetWords: 900},
		{ID: "bare", Title: "Only a title"},
	}
	if !reflect.DeepEqual(topics, want) {
		t.Errorf("topics:\n got %+v\nwant %+v", topics, want)
	}
	topics, err = LoadTopics(filepath.Join(dir, "none.yaml"))
	if err != nil || len(topics) != 0 {
		t.Errorf("empty list: %v %v", topics, err)
	}
}

func TestClosest(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"chian", "chain"},
		{"Chain", "chain"},
		{"retension_days", "retention_days"},
		{"shadoww", "shadow"},
		{"qualty", "quality"},
		{"zzzzzz", ""},
		{"db", ""},
	} {
		if got := closest(tc.in, keysOf(rawType(reflect.TypeOf(Config{})), "")); got != tc.want {
			t.Errorf("closest(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCapResetNormalised(t *testing.T) {
	for in, want := range map[string]string{
		"00:00":                     "00:00 UTC",
		"7:05":                      "07:05 UTC",
		" 23:59   Asia/Tokyo ":      "23:59 Asia/Tokyo",
		"00:00 America/Los_Angeles": "00:00 America/Los_Angeles",
	} {
		got, err := checkCapReset(in)
		if err != nil || got != want {
			t.Errorf("checkCapReset(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "24:00", "12:60", "12", "noon UTC", "00:00 Local", "00:00 UTC extra", "00:00 Nowhere/City"} {
		if _, err := checkCapReset(in); err == nil {
			t.Errorf("checkCapReset(%q) accepted", in)
		}
	}
}

func TestSchemaDefaultAbsent(t *testing.T) {
	dir := t.TempDir()
	link := "chain:\n  - {name: l, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"
	cfg, err := Parse(filepath.Join(dir, "c.yaml"), []byte(link), env(nil))
	if err != nil {
		t.Fatalf("absent key and absent default file: %v", err)
	}
	if cfg.Quality.Schema != "" || cfg.Quality.SchemaJSON != nil {
		t.Errorf("Quality = %q %q, want the built-in schema (\"\")", cfg.Quality.Schema, cfg.Quality.SchemaJSON)
	}
	// Named explicitly, even with the default path, it must exist.
	_, err = Parse(filepath.Join(dir, "c.yaml"), []byte("quality:\n  schema: data/article.schema.json\n"+link), env(nil))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 2 || !strings.Contains(ce.Msg, "quality.schema: cannot read") {
		t.Errorf("explicit missing schema: %v", err)
	}
	if IsNotExist(err) {
		t.Errorf("IsNotExist true for a missing schema: only the config/topics file counts")
	}
}

func TestIsNotExist(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "missing.yaml"), env(nil))
	if !IsNotExist(err) {
		t.Errorf("IsNotExist(%v) = false", err)
	}
	_, err = LoadTopics(filepath.Join(t.TempDir(), "missing.yaml"))
	if !IsNotExist(err) {
		t.Errorf("topics: IsNotExist(%v) = false", err)
	}
	_, err = Load(filepath.Join("testdata", "bad", "empty.yaml"), env(nil))
	if err == nil || IsNotExist(err) {
		t.Errorf("IsNotExist(%v) = true for an existing bad file", err)
	}
	_, err = Load(t.TempDir(), env(nil)) // a directory
	var ce *Error
	if !errors.As(err, &ce) || IsNotExist(err) || !strings.Contains(ce.Msg, "read config") {
		t.Errorf("directory: %v", err)
	}
}

func TestScheduleTimeZone(t *testing.T) {
	cfg, err := parseIn(t, twoLinks+"schedule:\n  run: \"CRON_TZ=Europe/Istanbul 0 6 * * *\"\n  health: \"@weekly\"\n", fullEnv())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Schedule.Run != "CRON_TZ=Europe/Istanbul 0 6 * * *" || cfg.Schedule.Health != "@weekly" {
		t.Errorf("Schedule = %+v", cfg.Schedule)
	}
}

// TestShippedFiles parses the example and demo files the repository ships,
// so that they never drift from the loader.
func TestShippedFiles(t *testing.T) {
	root := filepath.Join("..", "..", "..", "..", "data")
	example := filepath.Join(root, "contentpipe.example.yaml")
	if _, err := os.Stat(example); err != nil {
		t.Skipf("no shipped data dir: %v", err)
	}
	// The example is meant to be copied to the repository root.
	body, err := os.ReadFile(example)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(filepath.Join(root, "..", "contentpipe.yaml"), body, env(fullEnv()))
	if err != nil {
		t.Fatalf("example config: %v", err)
	}
	if len(cfg.Chain) != 4 || cfg.Quality.SchemaJSON == nil {
		t.Errorf("example: chain %v, schema %q", cfg.Chain, cfg.Quality.Schema)
	}
	noSecrets(t, "example warnings", strings.Join(cfg.Warnings, "\n"))

	demo, err := os.ReadFile(filepath.Join(root, "demo.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	y := string(demo)
	for _, name := range []string{"gemini", "groq", "cerebras", "openrouter"} {
		y = strings.ReplaceAll(y, "{{"+name+"}}", "http://127.0.0.1:1/"+name)
	}
	demoEnv := func(k string) string {
		if strings.HasPrefix(k, "DEMO_") {
			return "demo-key"
		}
		return ""
	}
	// From a directory without data/article.schema.json: the built-in schema.
	if _, err := Parse(filepath.Join(t.TempDir(), "contentpipe-demo.yaml"), []byte(y), demoEnv); err != nil {
		t.Errorf("demo config: %v", err)
	}
	for _, f := range []string{"demo-topics.yaml", "topics.example.yaml"} {
		topics, err := LoadTopics(filepath.Join(root, f))
		if err != nil || len(topics) == 0 {
			t.Errorf("%s: %d topics, %v", f, len(topics), err)
		}
	}
}

func TestLoadForReadingAllowsUnsetKeys(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contentpipe.yaml")
	cfg := "chain:\n  - {name: groq, kind: openai, model: m, base_url: \"http://127.0.0.1:1/v1\", api_key_env: UNSET_KEY_FOR_TEST}\n"
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	env := func(string) string { return "" }
	if _, err := Load(path, env); err == nil || !strings.Contains(err.Error(), "UNSET_KEY_FOR_TEST is not set") {
		t.Fatalf("Load: %v, want the unset key error", err)
	}
	c, err := LoadForReading(path, env)
	if err != nil {
		t.Fatalf("LoadForReading: %v", err)
	}
	if c.Chain[0].APIKey != "" || c.Chain[0].APIKeyEnv != "UNSET_KEY_FOR_TEST" {
		t.Fatalf("link %+v", c.Chain[0])
	}
}

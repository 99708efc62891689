package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Recognisable fake secrets: none may ever show up in an error, a warning
// or the printed form of a Config.
const (
	fakeGeminiKey = "FAKEKEY-gemini-7f3a9c11"
	fakeGroqKey   = "FAKEKEY-groq-b81d02ee"
	fakeOtherKey  = "FAKEKEY-other-55aa10c3"
	fakeTGToken   = "123456:FAKETOKEN-telegram-9e9e"
	fakeHookKey   = "FAKEKEY-webhook-hmac-4242"
)

var secrets = []string{fakeGeminiKey, fakeGroqKey, fakeOtherKey, fakeTGToken, fakeHookKey,
	"AIzaFAKE-literal-key-0123456789", "gsk-FAKE-pasted-secret-0123"}

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func fullEnv() map[string]string {
	return map[string]string{
		"GEMINI_API_KEY":     fakeGeminiKey,
		"GROQ_API_KEY":       fakeGroqKey,
		"CEREBRAS_API_KEY":   fakeOtherKey,
		"OPENROUTER_API_KEY": fakeOtherKey,
		"WEBHOOK_SECRET":     fakeHookKey,
		"TELEGRAM_BOT_TOKEN": fakeTGToken,
		"TELEGRAM_CHAT_ID":   "-1001234567890",
	}
}

func noSecrets(t *testing.T, what, s string) {
	t.Helper()
	for _, sec := range secrets {
		if strings.Contains(s, sec) {
			t.Errorf("%s leaks secret %q:\n%s", what, sec, s)
		}
	}
}

type badCase struct {
	file string
	line int
	msg  string // substring of Msg
	fix  string // substring of Fix ("" = any non-empty fix)
}

var badConfigs = []badCase{
	{"unknown_top.yaml", 2, `unknown key "chian" at top level`, `did you mean "chain"?`},
	{"unknown_job_key.yaml", 2, `unknown key "post_per_run" in job`, `did you mean "posts_per_run"?`},
	{"unknown_link_key.yaml", 10, `unknown key "modle" in chain[1]`, `did you mean "model"?`},
	{"api_key_literal.yaml", 5, `unknown key "api_key" in chain[0]`, "secrets never go into the config file"},
	{"type_int.yaml", 2, `job.posts_per_run: want an integer, got "four"`, "whole number"},
	{"type_float.yaml", 14, `quality.threshold: want a number, got "high"`, ""},
	{"type_bool.yaml", 13, `chain[1].stream: want true or false, got "yes"`, ""},
	{"type_mapping.yaml", 1, "job: want a mapping, got 5", ""},
	{"type_list.yaml", 2, "chain: want a list, got a mapping", "- "},
	{"type_string.yaml", 4, "chain[0].model: want a string, got a list", ""},
	{"duration_bad.yaml", 2, `job.deadline: bad duration "15 minutes"`, "use Go syntax like 30s, 10m"},
	{"duration_no_unit.yaml", 15, "retry.other.wait: bad duration 30: a number needs a unit", "use Go syntax like 30s, 10m"},
	{"duration_negative.yaml", 7, `chain[0].timeouts.connect: duration "-5s" must not be negative`, ""},
	{"missing_name.yaml", 7, `chain[1]: missing required key "name"`, "name:"},
	{"missing_kind.yaml", 2, `chain[0]: missing required key "kind"`, "kind:"},
	{"missing_model.yaml", 7, `chain[1]: missing required key "model"`, "model"},
	{"openai_no_base_url.yaml", 7, "chain[1] (groq): kind openai needs base_url", "OpenAI-compatible"},
	{"bad_base_url.yaml", 9, "chain[1] (groq): base_url is not an http(s) URL", "https://"},
	{"chain_empty.yaml", 2, "chain is empty", "at least one provider"},
	{"chain_missing.yaml", 1, `missing required key "chain"`, "data/contentpipe.example.yaml"},
	{"duplicate_name.yaml", 13, `duplicate link name "gemini" (first defined at line 2)`, "unique name"},
	{"duplicate_candidate.yaml", 14, `candidates[0]: duplicate link name "groq" (first defined at line 7)`, "unique name"},
	{"key_unset.yaml", 11, "chain[1] (groq): UNSET_GROQ_KEY is not set", "set UNSET_GROQ_KEY in the environment (export UNSET_GROQ_KEY=...) or remove the link"},
	{"key_env_is_secret.yaml", 11, "chain[1].api_key_env: not an environment variable name", "NAME of an environment variable"},
	{"gemini_no_key_env.yaml", 2, "chain[0] (gemini): the Gemini API needs a key", "api_key_env: GEMINI_API_KEY"},
	{"bad_kind.yaml", 3, `chain[0] (gemini): unknown kind "gemeni"`, `did you mean "gemini"?`},
	{"bad_provider.yaml", 10, `chain[1] (fast): provider: unknown provider "grok"`, `did you mean "groq"?`},
	{"bad_publish_kind.yaml", 2, `publish.kind: unknown kind "wordpres"`, `did you mean "wordpress"?`},
	{"webhook_no_url.yaml", 1, "publish: kind webhook needs url", "url: https://"},
	{"webhook_secret_unset.yaml", 4, "publish.secret_env: UNSET_WEBHOOK_SECRET is not set", "export UNSET_WEBHOOK_SECRET="},
	{"bad_cron.yaml", 14, `schedule.run: bad cron expression "0 25 * * *"`, "5 fields"},
	{"cron_fields.yaml", 14, `schedule.health: bad cron expression "0 5 * *"`, "5 fields"},
	{"cap_reset_zone.yaml", 7, `bad cap_reset "00:00 Mars/Olympus_Mons": unknown time zone "Mars/Olympus_Mons"`, "America/Los_Angeles"},
	{"cap_reset_format.yaml", 7, `bad cap_reset "midnight"`, "HH:MM"},
	{"negative_cap.yaml", 13, "chain[1].daily_cap: must not be negative, got -1", ""},
	{"negative_price.yaml", 7, "chain[0].price.input_per_mtok: must not be negative", ""},
	{"negative_retention.yaml", 1, "retention_days: must not be negative, got -7", ""},
	{"posts_zero.yaml", 2, "job.posts_per_run: must be at least 1, got 0", ""},
	{"threshold_range.yaml", 14, "quality.threshold: 120 is outside 0..100", "0 to 100"},
	{"sample_rate_range.yaml", 15, "shadow.sample_rate: 1.5 is outside 0..1", "0 to 1"},
	{"budget_warn.yaml", 14, "alerts.budget_warn_at: 1.2 is outside (0, 1]", ""},
	{"circuit_rate.yaml", 15, "retry.circuit.failure_rate: 0 is outside (0, 1]", ""},
	{"max_wait_short.yaml", 14, "retry.rate_limited.max_wait (1m0s) is shorter than wait (1m30s)", ""},
	{"schema_missing.yaml", 14, "quality.schema: cannot read", "article.schema.json"},
	{"schema_not_json.yaml", 14, "is not a JSON object", ""},
	{"banned_missing.yaml", 14, "quality.banned_phrases_file:", "one phrase a line"},
	{"shadow_unknown.yaml", 14, `shadow.providers[1]: unknown link "grok"`, `did you mean "groq"?`},
	{"bad_language.yaml", 2, `job.language: bad language code "English"`, "en, tr"},
	{"bad_json_mode.yaml", 13, `unknown json_mode "json_scheme"`, `did you mean "json_schema"?`},
	{"telegram_endpoint.yaml", 15, "alerts.telegram.api_endpoint: not an http(s) URL with two %s", "bot%s/%s"},
	{"syntax_tab.yaml", 2, "YAML syntax error", "spaces, not tabs"},
	{"syntax_quote.yaml", 14, "YAML syntax error", ""},
	{"syntax_indent.yaml", 2, "YAML syntax error: mapping value is not allowed", "indented under a value"},
	{"duplicate_key.yaml", 15, `YAML syntax error: mapping key "job" already defined (first at line 1)`, "only once"},
	{"multi_doc.yaml", 14, "more than one YAML document", "---"},
	{"empty.yaml", 1, "the config file is empty", "contentpipe run --demo"},
	{"top_not_mapping.yaml", 1, "top level: want a mapping", ""},
	{"unknown_alias.yaml", 13, "alias", ""},
}

var badTopics = []badCase{
	{"topics_duplicate_id.yaml", 7, `topics[2]: duplicate topic id "go-generics" (first defined at line 1)`, "unique id"},
	{"topics_missing_id.yaml", 3, `topics[1]: missing required key "id"`, "id:"},
	{"topics_missing_title.yaml", 3, `topics[1] (b): missing required key "title"`, "title:"},
	{"topics_bad_yaml.yaml", 2, "YAML syntax error", ""},
	{"topics_bad_language.yaml", 3, `topics[0] (a): bad language code "Turkish"`, "en, tr"},
	{"topics_unknown_key.yaml", 3, `unknown key "keyword" in topics[0]`, `did you mean "keywords"?`},
	{"topics_not_list.yaml", 1, "topics: want a list of topics, got a mapping", "YAML list"},
	{"topics_empty.yaml", 1, "the topics file is empty", "- id:"},
	{"topics_keywords_type.yaml", 3, `topics[0].keywords: want a list, got "go, sqlite"`, "[a, b]"},
	{"topics_target_words.yaml", 3, "topics[0].target_words: must be at least 1, got -100", ""},
	{"topics_bad_id.yaml", 1, `topics[0]: bad topic id "go generics/intro"`, "letters, digits"},
}

func checkBad(t *testing.T, tc badCase, err error) {
	t.Helper()
	path := filepath.Join("testdata", "bad", tc.file)
	if err == nil {
		t.Fatalf("%s: no error, want line %d %q", tc.file, tc.line, tc.msg)
	}
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("%s: error %T is not a *config.Error: %v", tc.file, err, err)
	}
	if ce.File != path {
		t.Errorf("%s: File = %q, want %q (as given)", tc.file, ce.File, path)
	}
	if ce.Line != tc.line {
		t.Errorf("%s: Line = %d, want %d (%v)", tc.file, ce.Line, tc.line, err)
	}
	if !strings.Contains(ce.Msg, tc.msg) {
		t.Errorf("%s: Msg = %q, want it to contain %q", tc.file, ce.Msg, tc.msg)
	}
	if ce.Fix == "" || !strings.Contains(ce.Fix, tc.fix) {
		t.Errorf("%s: Fix = %q, want a fix containing %q", tc.file, ce.Fix, tc.fix)
	}
	want := fmt.Sprintf("%s:%d: %s\n  fix: ", path, tc.line, ce.Msg)
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("%s: Error() = %q, want prefix %q", tc.file, err.Error(), want)
	}
	noSecrets(t, tc.file, err.Error())
}

func TestBadConfigs(t *testing.T) {
	for _, tc := range badConfigs {
		t.Run(tc.file, func(t *testing.T) {
			cfg, err := Load(filepath.Join("testdata", "bad", tc.file), env(fullEnv()))
			if cfg != nil {
				t.Errorf("got a config with an error")
			}
			checkBad(t, tc, err)
		})
	}
}

func TestBadTopics(t *testing.T) {
	for _, tc := range badTopics {
		t.Run(tc.file, func(t *testing.T) {
			topics, err := LoadTopics(filepath.Join("testdata", "bad", tc.file))
			if topics != nil {
				t.Errorf("got topics with an error: %v", topics)
			}
			checkBad(t, tc, err)
		})
	}
}

// TestCorpusComplete keeps the table and testdata/bad in step.
func TestCorpusComplete(t *testing.T) {
	listed := map[string]bool{}
	for _, tc := range append(append([]badCase(nil), badConfigs...), badTopics...) {
		if listed[tc.file] {
			t.Errorf("%s listed twice", tc.file)
		}
		listed[tc.file] = true
	}
	files, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if !listed[filepath.Base(f)] {
			t.Errorf("%s has no expectation in the table", f)
		}
		delete(listed, filepath.Base(f))
	}
	for f := range listed {
		t.Errorf("%s is in the table but not in testdata/bad", f)
	}
	if len(files) < 20 {
		t.Errorf("only %d bad files", len(files))
	}
}

func TestMissingFile(t *testing.T) {
	path := filepath.Join("testdata", "does-not-exist.yaml")
	_, err := Load(path, env(nil))
	var ce *Error
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want *Error", err)
	}
	if ce.File != path || !strings.Contains(ce.Msg, "not found") ||
		!strings.Contains(ce.Fix, "data/contentpipe.example.yaml") || !strings.Contains(ce.Fix, "contentpipe run --demo") {
		t.Errorf("got %+v", ce)
	}
	if _, err := LoadTopics(path); !errors.As(err, &ce) || !strings.Contains(ce.Msg, "topics file not found") {
		t.Errorf("LoadTopics: %v", err)
	}
}

func TestSpecExample(t *testing.T) {
	path := filepath.Join("testdata", "spec", "contentpipe.yaml")
	cfg, err := Load(path, env(fullEnv()))
	if err != nil {
		t.Fatal(err)
	}
	dir, _ := filepath.Abs(filepath.Join("testdata", "spec"))
	if cfg.Path != path || cfg.Dir != dir {
		t.Errorf("Path, Dir = %q, %q", cfg.Path, cfg.Dir)
	}
	if cfg.Database != filepath.Join(dir, "data", "pipeline.db") || cfg.Topics != filepath.Join(dir, "data", "topics.yaml") {
		t.Errorf("Database, Topics = %q, %q", cfg.Database, cfg.Topics)
	}
	if cfg.PromptsDir != "" {
		t.Errorf("PromptsDir = %q", cfg.PromptsDir)
	}
	if cfg.Publish.Kind != "markdown" || cfg.Publish.Dir != filepath.Join(dir, "out") || cfg.Publish.URL != "" || cfg.Publish.Secret != nil {
		t.Errorf("Publish = %#v %q", cfg.Publish, cfg.Publish.Dir)
	}
	if want := (Job{PostsPerRun: 4, Deadline: 15 * time.Minute, Language: "en", TargetWords: 1500, Parallel: 1}); cfg.Job != want {
		t.Errorf("Job = %+v", cfg.Job)
	}
	if cfg.RetentionDays != 30 {
		t.Errorf("RetentionDays = %d", cfg.RetentionDays)
	}
	deftimeouts := Timeouts{Connect: 10 * time.Second, FirstToken: 60 * time.Second, Idle: 30 * time.Second, Total: 5 * time.Minute}
	want := []Link{
		{Name: "gemini", Kind: "gemini", Model: "gemini-flash-latest", APIKeyEnv: "GEMINI_API_KEY", APIKey: fakeGeminiKey,
			Infra: "google", DailyCap: 200, CapReset: "00:00 America/Los_Angeles",
			Price: Price{InputPerMTok: 0.30, OutputPerMTok: 2.50}, PriceKnown: true, Timeouts: deftimeouts, Stream: true, MaxTokens: 8192},
		// The other prices come from the built-in table (prices.go).
		{Name: "groq", Kind: "openai", Model: "llama-3.3-70b-versatile", APIKeyEnv: "GROQ_API_KEY", APIKey: fakeGroqKey,
			BaseURL: "https://api.groq.com/openai/v1", Infra: "groq-lpu", DailyCap: 600, CapReset: "00:00 UTC",
			Price: Price{InputPerMTok: 0.59, OutputPerMTok: 0.79}, PriceKnown: true, Timeouts: deftimeouts, JSONMode: "json_object", Stream: true, MaxTokens: 8192},
		{Name: "cerebras", Kind: "openai", Model: "gpt-oss-120b", APIKeyEnv: "CEREBRAS_API_KEY", APIKey: fakeOtherKey,
			BaseURL: "https://api.cerebras.ai/v1", Infra: "cerebras-wse", DailyCap: 1000, CapReset: "00:00 UTC",
			Price: Price{InputPerMTok: 0.35, OutputPerMTok: 0.75}, PriceKnown: true, Timeouts: deftimeouts, JSONMode: "json_object", Stream: true, MaxTokens: 8192},
		{Name: "openrouter", Kind: "openai", Model: "meta-llama/llama-3.3-70b-instruct", APIKeyEnv: "OPENROUTER_API_KEY", APIKey: fakeOtherKey,
			BaseURL: "https://openrouter.ai/api/v1", Infra: "broker", CapReset: "00:00 UTC",
			Price: Price{InputPerMTok: 0.12, OutputPerMTok: 0.30}, PriceKnown: true, Timeouts: deftimeouts, JSONMode: "json_object", Stream: true, MaxTokens: 8192},
	}
	if !reflect.DeepEqual(cfg.Chain, want) {
		t.Errorf("Chain differs:\n got %v\nwant %v", detail(cfg.Chain), detail(want))
	}
	if len(cfg.Candidates) != 0 {
		t.Errorf("Candidates = %v", cfg.Candidates)
	}
	wantRetry := Retry{
		RateLimited: RateLimitPolicy{Wait: 30 * time.Second, MaxRetries: 2, MaxWait: 60 * time.Second},
		ServerError: WaitPolicy{Wait: 0}, AuthError: AuthPolicy{Halt: true}, Other: WaitPolicy{Wait: 10 * time.Second},
		Circuit: Circuit{Window: 10 * time.Minute, MinSamples: 4, FailureRate: 0.5, Cooldown: 2 * time.Minute, MaxCooldown: time.Hour, CloseAfter: 2},
	}
	if cfg.Retry != wantRetry {
		t.Errorf("Retry = %+v", cfg.Retry)
	}
	q := cfg.Quality
	if q.Schema != filepath.Join(dir, "data", "article.schema.json") || q.Threshold != 70 || q.MinSections != 5 ||
		q.MinSectionWords != 200 || q.BannedPhrasesFile != "" || !strings.Contains(string(q.SchemaJSON), `"sections"`) {
		t.Errorf("Quality = %+v", q)
	}
	if len(cfg.Shadow.Providers) != 0 || cfg.Shadow.SampleRate != 1.0 {
		t.Errorf("Shadow = %+v", cfg.Shadow)
	}
	tg := cfg.Alerts.Telegram
	if tg.TokenEnv != "TELEGRAM_BOT_TOKEN" || tg.ChatIDEnv != "TELEGRAM_CHAT_ID" || tg.APIEndpoint != "" ||
		tg.Token != fakeTGToken || tg.ChatID != "-1001234567890" || !tg.Enabled() {
		t.Errorf("Telegram = %+v / enabled %v", tg.TokenEnv, tg.Enabled())
	}
	if cfg.Alerts.BudgetWarnAt != 0.8 || cfg.Alerts.ProviderDownAfter != time.Hour {
		t.Errorf("Alerts = %v", cfg.Alerts)
	}
	if want := (Schedule{Run: "0 6,10,14,18 * * *", Health: "0 5 * * 1", Report: "0 9 * * 1"}); cfg.Schedule != want {
		t.Errorf("Schedule = %+v", cfg.Schedule)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("Warnings = %q", cfg.Warnings)
	}
	printed := fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.Chain)
	noSecrets(t, "printed config", printed)

	// Without the Telegram variables: a warning at the telegram: line, no error.
	e := fullEnv()
	delete(e, "TELEGRAM_CHAT_ID")
	cfg, err = Load(path, env(e))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Alerts.Telegram.Enabled() || cfg.Alerts.Telegram.Token != "" {
		t.Errorf("telegram enabled with one variable unset")
	}
	if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0], path+":63: telegram alerts disabled (TELEGRAM_CHAT_ID not set)") {
		t.Errorf("Warnings = %q", cfg.Warnings)
	}
	noSecrets(t, "warnings", strings.Join(cfg.Warnings, "\n"))
}

// detail prints links field by field (Link.String hides most of them).
func detail(ls []Link) string {
	var b strings.Builder
	for _, l := range ls {
		type plain Link
		fmt.Fprintf(&b, "\n  %+v", plain(l))
	}
	return b.String()
}

// writeTree writes files under a new temp dir and returns the dir.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const schemaJSON = `{"type": "object", "required": ["title", "sections"]}`

func TestDefaults(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"contentpipe.yaml":         "chain:\n  - {name: local, kind: openai, base_url: \"http://127.0.0.1:11434/v1\", model: llama3}\n",
		"data/article.schema.json": schemaJSON,
	})
	cfg, err := Load(filepath.Join(dir, "contentpipe.yaml"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		name      string
		got, want any
	}{
		{"Database", cfg.Database, filepath.Join(dir, "data/pipeline.db")},
		{"Topics", cfg.Topics, filepath.Join(dir, "data/topics.yaml")},
		{"PromptsDir", cfg.PromptsDir, ""},
		{"Publish.Kind", string(cfg.Publish.Kind), "markdown"},
		{"Publish.Dir", cfg.Publish.Dir, filepath.Join(dir, "out")},
		{"Job", cfg.Job, Job{PostsPerRun: 4, Deadline: 15 * time.Minute, Language: "en", TargetWords: 1500, Parallel: 1}},
		{"RetentionDays", cfg.RetentionDays, 30},
		{"Retry.RateLimited", cfg.Retry.RateLimited, RateLimitPolicy{Wait: 30 * time.Second, MaxRetries: 2, MaxWait: time.Minute}},
		{"Retry.ServerError", cfg.Retry.ServerError.Wait, time.Duration(0)},
		{"Retry.AuthError", cfg.Retry.AuthError.Halt, true},
		{"Retry.Other", cfg.Retry.Other.Wait, 10 * time.Second},
		{"Retry.Circuit", cfg.Retry.Circuit, Circuit{Window: 10 * time.Minute, MinSamples: 4, FailureRate: 0.5, Cooldown: 2 * time.Minute, MaxCooldown: time.Hour, CloseAfter: 2}},
		{"Quality.Schema", cfg.Quality.Schema, filepath.Join(dir, "data/article.schema.json")},
		{"Quality.SchemaJSON", string(cfg.Quality.SchemaJSON), schemaJSON},
		{"Quality.Threshold", cfg.Quality.Threshold, 70.0},
		{"Quality.MinSections", cfg.Quality.MinSections, 5},
		{"Quality.MinSectionWords", cfg.Quality.MinSectionWords, 200},
		{"Shadow.SampleRate", cfg.Shadow.SampleRate, 1.0},
		{"Alerts.BudgetWarnAt", cfg.Alerts.BudgetWarnAt, 0.8},
		{"Alerts.ProviderDownAfter", cfg.Alerts.ProviderDownAfter, time.Hour},
		{"Telegram.TokenEnv", cfg.Alerts.Telegram.TokenEnv, "TELEGRAM_BOT_TOKEN"},
		{"Telegram.ChatIDEnv", cfg.Alerts.Telegram.ChatIDEnv, "TELEGRAM_CHAT_ID"},
		{"Schedule", cfg.Schedule, Schedule{Run: "0 6,10,14,18 * * *", Health: "0 5 * * 1", Report: "0 9 * * 1"}},
		{"len(Chain)", len(cfg.Chain), 1},
	}
	for _, c := range checks {
		if !reflect.DeepEqual(c.got, c.want) {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	l := cfg.Chain[0]
	wantLink := Link{Name: "local", Kind: "openai", Model: "llama3", BaseURL: "http://127.0.0.1:11434/v1", CapReset: "00:00 UTC",
		Timeouts: Timeouts{Connect: 10 * time.Second, FirstToken: time.Minute, Idle: 30 * time.Second, Total: 5 * time.Minute},
		JSONMode: "json_object", Stream: true, MaxTokens: 8192}
	if !reflect.DeepEqual(l, wantLink) {
		t.Errorf("link:\n got %s\nwant %s", detail([]Link{l}), detail([]Link{wantLink}))
	}
	// Only the Telegram warning: keyless local link, no telegram variables.
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0], "telegram alerts disabled (TELEGRAM_BOT_TOKEN and TELEGRAM_CHAT_ID not set)") {
		t.Errorf("Warnings = %q", cfg.Warnings)
	}
}

func TestPathResolution(t *testing.T) {
	abs := filepath.Join(t.TempDir(), "elsewhere", "x.db")
	dir := writeTree(t, map[string]string{
		"conf/contentpipe.yaml": "database: " + abs + "\n" +
			"topics: ../work/topics.yaml\n" +
			"prompts_dir: prompts\n" +
			"publish: {kind: markdown, dir: site/content}\n" +
			"quality:\n  schema: schemas/a.json\n  banned_phrases_file: lists/banned.txt\n" +
			"chain:\n  - {name: local, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n",
		"conf/schemas/a.json":      schemaJSON,
		"conf/lists/banned.txt":    "delve\n",
		"conf/prompts/article.txt": "x",
	})
	conf := filepath.Join(dir, "conf")
	cfg, err := Load(filepath.Join(conf, "contentpipe.yaml"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, got, want string }{
		{"Dir", cfg.Dir, conf},
		{"Database", cfg.Database, abs},
		{"Topics", cfg.Topics, filepath.Join(dir, "work", "topics.yaml")},
		{"PromptsDir", cfg.PromptsDir, filepath.Join(conf, "prompts")},
		{"Publish.Dir", cfg.Publish.Dir, filepath.Join(conf, "site", "content")},
		{"Quality.Schema", cfg.Quality.Schema, filepath.Join(conf, "schemas", "a.json")},
		{"Quality.BannedPhrasesFile", cfg.Quality.BannedPhrasesFile, filepath.Join(conf, "lists", "banned.txt")},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.name, c.got, c.want)
		}
	}
	// The same file given by a relative path: Dir is still absolute, File as given.
	t.Chdir(dir)
	cfg, err = Load(filepath.Join("conf", "contentpipe.yaml"), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Dir != conf || cfg.Quality.Schema != filepath.Join(conf, "schemas", "a.json") || cfg.Path != filepath.Join("conf", "contentpipe.yaml") {
		t.Errorf("relative load: Dir %q Schema %q Path %q", cfg.Dir, cfg.Quality.Schema, cfg.Path)
	}
	// A missing prompts dir is an error naming the resolved path.
	_, err = Parse(filepath.Join("conf", "contentpipe.yaml"),
		[]byte("prompts_dir: nope\nquality: {schema: schemas/a.json}\nchain:\n  - {name: l, kind: openai, base_url: \"http://h/v1\", model: m}\n"), env(nil))
	var ce *Error
	if !errors.As(err, &ce) || ce.Line != 1 || !strings.Contains(ce.Msg, filepath.Join(conf, "nope")) {
		t.Errorf("missing prompts_dir: %v", err)
	}
}

const twoLinks = `chain:
  - name: gemini
    kind: gemini
    model: gemini-flash-latest
    api_key_env: GEMINI_API_KEY
    infra: google
  - name: groq
    kind: openai
    base_url: https://api.groq.com/openai/v1
    model: llama-3.3-70b-versatile
    api_key_env: GROQ_API_KEY
    infra: groq-lpu
`

func parseIn(t *testing.T, body string, e map[string]string) (*Config, error) {
	t.Helper()
	dir := writeTree(t, map[string]string{"data/article.schema.json": schemaJSON})
	return Parse(filepath.Join(dir, "contentpipe.yaml"), []byte(body), env(e))
}

func TestSecretsNeverInErrors(t *testing.T) {
	e := fullEnv()
	cases := []string{
		// Another link's key is unset while this one's is set.
		twoLinks + "  - {name: x, kind: openai, base_url: \"https://x.example/v1\", model: m, api_key_env: UNSET_X}\n",
		// A later error after keys were resolved.
		twoLinks + "quality: {threshold: 101}\n",
		twoLinks + "shadow: {providers: [nope]}\n",
		// The Telegram chat id is bad while the token is set.
		twoLinks + "alerts: {telegram: {chat_id_env: BAD_CHAT}}\n",
		// The webhook secret variable is named like the secret itself.
		"publish: {kind: webhook, url: \"https://h.example/hook\", secret_env: \"" + fakeHookKey + "\"}\n" + twoLinks,
		// The key pasted where the variable name belongs.
		strings.Replace(twoLinks, "api_key_env: GROQ_API_KEY", "api_key_env: "+fakeGroqKey, 1),
	}
	e["BAD_CHAT"] = "not a chat"
	for i, body := range cases {
		cfg, err := parseIn(t, body, e)
		if err == nil {
			t.Errorf("case %d: no error (warnings %q)", i, cfg.Warnings)
			continue
		}
		noSecrets(t, fmt.Sprintf("case %d", i), err.Error())
		var ce *Error
		if !errors.As(err, &ce) || ce.Line < 1 {
			t.Errorf("case %d: %v", i, err)
		}
	}
	// Warnings of a valid config with every secret set.
	delete(e, "TELEGRAM_CHAT_ID")
	cfg, err := parseIn(t, "publish: {kind: markdown, url: \"https://h/x\"}\n"+strings.ReplaceAll(twoLinks, "groq-lpu", "google"), e)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Warnings) != 3 {
		t.Errorf("Warnings = %q, want publish.url ignored, infra, telegram", cfg.Warnings)
	}
	noSecrets(t, "warnings", strings.Join(cfg.Warnings, "\n"))
	noSecrets(t, "printed config", fmt.Sprintf("%v|%+v|%#v", *cfg, *cfg, *cfg))
	if cfg.Chain[0].APIKey != fakeGeminiKey || cfg.Chain[1].APIKey != fakeGroqKey {
		t.Errorf("keys not resolved")
	}
}

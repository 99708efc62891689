package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

// errorsOf returns err's list, failing the test when err is not an Errors.
func errorsOf(t *testing.T, err error) Errors {
	t.Helper()
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %T %v, want config.Errors", err, err)
	}
	return es
}

// TestEveryErrorReported: one file, one problem in each section, of every
// kind (unknown key, wrong type, bad duration, decode-time *_env refusal,
// semantic checks): all are reported, in line order, each with a fix.
func TestEveryErrorReported(t *testing.T) {
	body := `job:
  post_per_run: 4
  parallel: two
  deadline: 15 minutes
chain:
  - name: gemini
    kind: gemeni
    model: gemini-flash-latest
    api_key_env: GEMINI_API_KEY
  - name: groq
    kind: openai
    base_url: https://api.groq.com/openai/v1
    model: [a, b]
    api_key_env: gsk_abcdefghijklmnop0123456789
    daily_cap: -1
quality:
  threshold: 120
schedule:
  run: "0 25 * * *"
`
	_, err := parseIn(t, body, fullEnv())
	es := errorsOf(t, err)
	want := []struct {
		line int
		msg  string
	}{
		{2, `unknown key "post_per_run" in job`},
		{3, `job.parallel: want an integer, got "two"`},
		{4, `job.deadline: bad duration "15 minutes"`},
		{7, `chain[0] (gemini): unknown kind "gemeni"`},
		{13, "chain[1].model: want a string, got a list"},
		{14, "chain[1].api_key_env: not an environment variable name"},
		{15, "chain[1].daily_cap: must not be negative, got -1"},
		{17, "quality.threshold: 120 is outside 0..100"},
		{19, `schedule.run: bad cron expression "0 25 * * *"`},
	}
	if len(es) != len(want) {
		t.Fatalf("%d errors, want %d:\n%v", len(es), len(want), err)
	}
	for i, w := range want {
		e := es[i]
		if e.Line != w.line || !strings.Contains(e.Msg, w.msg) || e.Fix == "" {
			t.Errorf("error %d = line %d %q (fix %q), want line %d %q", i, e.Line, e.Msg, e.Fix, w.line, w.msg)
		}
	}
	if strings.Contains(err.Error(), "gsk_abc") {
		t.Errorf("pasted key echoed:\n%v", err)
	}
	// errors.As still finds the first one, as callers that print one expect.
	var first *Error
	if !errors.As(err, &first) || first.Line != 2 {
		t.Errorf("errors.As: %v", first)
	}
}

// TestEnvNames: every *_env key takes only a conventional variable name,
// and refuses anything else without echoing it.
func TestEnvNames(t *testing.T) {
	good := []string{"GROQ_API_KEY", "_X", "A1", "K"}
	bad := []string{
		"gsk_0123456789abcdefghijABCDEFGHIJ0123456789abcdefgh", // a Groq key: looks like a lower-case name
		"my_api_key", "1KEY", "MY-VAR", "HAS SPACE", "AIzaFAKE-literal-key-0123456789", "Groq_Key", "sk-or-v1-0123abcd",
	}
	type place struct {
		key, path, example string
		body               func(v string) string
	}
	places := []place{
		{"api_key_env", "chain[1].api_key_env", "GROQ_API_KEY", func(v string) string {
			return strings.Replace(twoLinks, "api_key_env: GROQ_API_KEY", "api_key_env: "+v, 1)
		}},
		{"api_key_env", "candidates[0].api_key_env", "OPEN_ROUTER_API_KEY", func(v string) string {
			return twoLinks + "candidates:\n  - {name: open-router, kind: openai, base_url: \"https://x.example/v1\", model: m, api_key_env: " + v + "}\nshadow: {providers: [open-router]}\n"
		}},
		{"token_env", "alerts.telegram.token_env", "TELEGRAM_BOT_TOKEN", func(v string) string {
			return twoLinks + "alerts:\n  telegram:\n    token_env: " + v + "\n"
		}},
		{"chat_id_env", "alerts.telegram.chat_id_env", "TELEGRAM_CHAT_ID", func(v string) string {
			return twoLinks + "alerts:\n  telegram: {chat_id_env: \"" + v + "\"}\n"
		}},
		{"secret_env", "publish.secret_env", "WEBHOOK_SECRET", func(v string) string {
			return "publish:\n  kind: webhook\n  url: https://h.example/hook\n  secret_env: '" + v + "'\n" + twoLinks
		}},
	}
	for _, pl := range places {
		for _, v := range good {
			e := fullEnv()
			e[v] = "-1001234567890" // a valid chat id, and a value for any other key
			if _, err := parseIn(t, pl.body(v), e); err != nil {
				t.Errorf("%s: %q refused: %v", pl.path, v, err)
			}
		}
		for _, v := range bad {
			_, err := parseIn(t, pl.body(v), fullEnv())
			if err == nil {
				t.Errorf("%s: %q accepted", pl.path, v)
				continue
			}
			es := errorsOf(t, err)
			if len(es) != 1 || !strings.HasPrefix(es[0].Msg, pl.path+": not an environment variable name") ||
				!strings.Contains(es[0].Fix, pl.key+": "+pl.example) {
				t.Errorf("%s: %q: %v", pl.path, v, err)
			}
			if strings.Contains(err.Error(), v) || strings.Contains(strings.ToLower(err.Error()), strings.ToLower(v)) {
				t.Errorf("%s: value %q echoed:\n%v", pl.path, v, err)
			}
		}
	}
}

// TestEnvFieldsAreChecked keeps every *_env key of the raw form on the
// type that refuses a pasted secret.
func TestEnvFieldsAreChecked(t *testing.T) {
	n := 0
	var walk func(reflect.Type, string)
	walk = func(rt reflect.Type, path string) {
		for rt.Kind() == reflect.Pointer || rt.Kind() == reflect.Slice {
			rt = rt.Elem()
		}
		if rt.Kind() != reflect.Struct {
			return
		}
		for i := range rt.NumField() {
			f := rt.Field(i)
			key := yamlKey(f)
			if strings.HasSuffix(key, "_env") {
				n++
				if f.Type != reflect.TypeOf((*envVar)(nil)) {
					t.Errorf("%s.%s is %v, want *envVar", path, key, f.Type)
				}
			}
			walk(f.Type, path+"."+key)
		}
	}
	walk(rawType(reflect.TypeOf(Config{})), "")
	if n < 4 {
		t.Errorf("only %d *_env fields found", n)
	}
}

func TestMergeKeysExplicitWins(t *testing.T) {
	body := `chain:
  - &base
    name: a
    kind: openai
    base_url: http://127.0.0.1:1/v1
    model: m
    daily_cap: 1
  - &other {name: o, kind: openai, base_url: "http://127.0.0.1:2/v1", model: m2, daily_cap: 2, rpm: 9}
  - name: b
    <<: *base
    daily_cap: 7
  - name: c
    <<: [*other, *base]
`
	cfg, err := parseIn(t, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, c := cfg.Chain[2], cfg.Chain[3]
	if b.Name != "b" || b.DailyCap != 7 || b.Model != "m" {
		t.Errorf("b = %s", detail([]Link{b}))
	}
	// The first mapping of a merged list wins over the later ones.
	if c.Name != "c" || c.Model != "m2" || c.DailyCap != 2 || c.RPM != 9 || c.BaseURL != "http://127.0.0.1:2/v1" {
		t.Errorf("c = %s", detail([]Link{c}))
	}
	// An unknown key inside a merged anchor is reported once, at the anchor.
	_, err = parseIn(t, strings.Replace(body, "    daily_cap: 1\n", "    daily_cpa: 1\n", 1), nil)
	if es := errorsOf(t, err); len(es) != 1 || es[0].Line != 7 || !strings.Contains(es[0].Fix, `did you mean "daily_cap"?`) {
		t.Errorf("unknown key in anchor: %v", err)
	}
}

func TestAnchorUnderUnknownKey(t *testing.T) {
	body := "x-timeouts: &slow {connect: 5s}\nchain:\n  - {name: a, kind: openai, base_url: \"http://h/v1\", model: m, timeouts: *slow}\n"
	_, err := parseIn(t, body, nil)
	if es := errorsOf(t, err); len(es) != 1 || !strings.Contains(es[0].Msg, `unknown key "x-timeouts"`) {
		t.Errorf("want only the unknown key, got:\n%v", err)
	}
	_, err = parseIn(t, "chain:\n  - {name: a, kind: openai, base_url: \"http://h/v1\", model: m, timeouts: *nowhere}\n", nil)
	if es := errorsOf(t, err); len(es) != 1 || es[0].Line != 2 || !strings.Contains(es[0].Msg, "unknown alias *nowhere") {
		t.Errorf("unknown alias: %v", err)
	}
}

func TestWholeNumbers(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want int
		ok   bool
	}{{"4", 4, true}, {"4.0", 4, true}, {"0x10", 16, true}, {"4.5", 0, false}, {`"4"`, 0, false}, {"1e400", 0, false}, {"99999999999999999999", 0, false}} {
		cfg, err := parseIn(t, "job: {parallel: "+tc.v+"}\n"+twoLinks, fullEnv())
		if !tc.ok {
			if es := errorsOf(t, err); len(es) != 1 || !strings.Contains(es[0].Msg, "job.parallel: want an integer") {
				t.Errorf("%s: %v", tc.v, err)
			}
			continue
		}
		if err != nil || cfg.Job.Parallel != tc.want {
			t.Errorf("%s: %v %v", tc.v, cfg, err)
		}
	}
	// An explicit 0 is not the default.
	cfg, err := parseIn(t, "retention_days: 0\n"+strings.Replace(twoLinks, "infra: groq-lpu", "infra: groq-lpu\n    max_tokens: 0", 1), fullEnv())
	if err != nil || cfg.RetentionDays != 0 || cfg.Chain[1].MaxTokens != 0 || cfg.Chain[0].MaxTokens != 8192 {
		t.Errorf("explicit zero: %v", err)
	}
}

func TestDuplicateKeyThenMore(t *testing.T) {
	_, err := parseIn(t, "job:\n  parallel: 1\n  parallel: 2\n  deadline: soon\n"+twoLinks, fullEnv())
	es := errorsOf(t, err)
	if len(es) != 2 || es[0].Line != 3 || !strings.Contains(es[0].Msg, `mapping key "parallel" already defined (first at line 2)`) ||
		es[1].Line != 4 || !strings.Contains(es[1].Msg, `job.deadline: bad duration "soon"`) {
		t.Errorf("got:\n%v", err)
	}
}

func TestLinkPrompt(t *testing.T) {
	names := func(dir string) ([]string, error) {
		if dir != "" {
			return nil, fmt.Errorf("prompt file %s/x.tmpl: unknown template", dir)
		}
		return []string{"gemini", "openai", "llama-short"}, nil
	}
	body := strings.Replace(twoLinks, "infra: groq-lpu", "infra: groq-lpu\n    prompt: llama-short", 1)
	dir := writeTree(t, map[string]string{"data/article.schema.json": schemaJSON, "p/x.tmpl": "x"})
	ld := Loader{Getenv: env(fullEnv()), PromptNames: names}
	cfg, err := ld.Parse(dir+"/contentpipe.yaml", []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Chain[0].Prompt != "" || cfg.Chain[1].Prompt != "llama-short" {
		t.Errorf("prompts %q %q", cfg.Chain[0].Prompt, cfg.Chain[1].Prompt)
	}
	_, err = ld.Parse(dir+"/contentpipe.yaml", []byte(strings.Replace(body, "prompt: llama-short", "prompt: llama-shrot", 1)))
	es := errorsOf(t, err)
	if len(es) != 1 || es[0].Line != 13 || es[0].Msg != `chain[1] (groq): unknown prompt "llama-shrot"` ||
		!strings.Contains(es[0].Fix, `did you mean "llama-short"? (available prompts: gemini, llama-short, openai)`) {
		t.Errorf("unknown prompt: %v", err)
	}
	// Without the hook, any name is carried through unchecked.
	if cfg, err := Parse(dir+"/contentpipe.yaml", []byte(strings.Replace(body, "llama-short", "anything", 1)), env(fullEnv())); err != nil || cfg.Chain[1].Prompt != "anything" {
		t.Errorf("no hook: %v", err)
	}
	// The hook's own error is reported at prompts_dir.
	_, err = ld.Parse(dir+"/contentpipe.yaml", []byte("prompts_dir: p\n"+body))
	if es := errorsOf(t, err); len(es) != 1 || es[0].Line != 1 || !strings.Contains(es[0].Msg, "prompts: prompt file") {
		t.Errorf("hook error: %v", err)
	}
}

func TestLanguageHook(t *testing.T) {
	ld := Loader{Getenv: env(fullEnv()), LanguageSupported: func(c string) bool { return c == "en" || c == "tr" }, Languages: []string{"en", "tr"}}
	dir := writeTree(t, map[string]string{"data/article.schema.json": schemaJSON})
	if _, err := ld.Parse(dir+"/c.yaml", []byte("job: {language: tr}\n"+twoLinks)); err != nil {
		t.Errorf("tr: %v", err)
	}
	_, err := ld.Parse(dir+"/c.yaml", []byte("job:\n  language: xx\n"+twoLinks))
	if es := errorsOf(t, err); len(es) != 1 || es[0].Line != 2 || es[0].Msg != `job.language: language "xx" is not supported; supported: en, tr` {
		t.Errorf("job.language: %v", err)
	}
	topics := "- id: a\n  title: A\n- id: b\n  title: B\n  language: tr\n- id: c\n  title: C\n  language: xx\n"
	_, err = ld.ParseTopics("topics.yaml", []byte(topics))
	if es := errorsOf(t, err); len(es) != 1 || es[0].Line != 8 || es[0].Msg != `topics[2] (c): language "xx" is not supported; supported: en, tr` {
		t.Errorf("topic language: %v", err)
	}
	if _, err := ParseTopics("topics.yaml", []byte(topics)); err != nil {
		t.Errorf("no hook: %v", err)
	}
}

func TestTopicsEveryError(t *testing.T) {
	_, err := ParseTopics("topics.yaml", []byte("- id: a\n  title: A\n  keyword: [x]\n- title: B\n- id: a\n  title: C\n  target_words: many\n"))
	es := errorsOf(t, err)
	want := []string{`unknown key "keyword" in topics[0]`, `topics[1]: missing required key "id"`, `topics[2]: duplicate topic id "a" (first defined at line 1)`, `topics[2].target_words: want an integer, got "many"`}
	if len(es) != len(want) {
		t.Fatalf("got:\n%v", err)
	}
	for i, w := range want {
		if !strings.Contains(es[i].Msg, w) {
			t.Errorf("error %d = %q, want %q", i, es[i].Msg, w)
		}
	}
}

func TestDurationsDecoded(t *testing.T) {
	cfg, err := parseIn(t, "retry: {other: {wait: 0}, server_error: {wait: 1m30s}}\n"+twoLinks, fullEnv())
	if err != nil || cfg.Retry.Other.Wait != 0 || cfg.Retry.ServerError.Wait != 90*time.Second {
		t.Errorf("%v %+v", err, cfg)
	}
}

func TestSchemaHook(t *testing.T) {
	ld := Loader{Getenv: env(fullEnv()), CheckSchema: func(b []byte) error {
		if strings.Contains(string(b), `"type": "object"`) {
			return nil
		}
		return errors.New("compile schema: not an object schema")
	}}
	dir := writeTree(t, map[string]string{"data/article.schema.json": schemaJSON, "bad.json": `{"type": 5}`})
	if _, err := ld.Parse(dir+"/c.yaml", []byte(twoLinks)); err != nil {
		t.Errorf("good schema: %v", err)
	}
	_, err := ld.Parse(dir+"/c.yaml", []byte("quality:\n  schema: bad.json\n"+twoLinks))
	if es := errorsOf(t, err); len(es) != 1 || es[0].Line != 2 || !strings.Contains(es[0].Msg, "bad.json: compile schema: not an object schema") {
		t.Errorf("bad schema: %v", err)
	}
}

func TestTooManyProblems(t *testing.T) {
	var b strings.Builder
	b.WriteString(twoLinks)
	for i := range 80 {
		fmt.Fprintf(&b, "x%d: 1\n", i)
	}
	_, err := parseIn(t, b.String(), fullEnv())
	es := errorsOf(t, err)
	if len(es) != maxDecodeErrors+1 || !strings.Contains(es[len(es)-1].Msg, "too many problems") {
		t.Errorf("%d errors, last %v", len(es), es[len(es)-1])
	}
}

package config

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

// TestMergedKeysCountAsGiven: a key a link takes from a merged anchor is
// given as if written there (json_mode, price), a price: that gives one of
// the two prices keeps the built-in other, and null or "" keeps a list
// item's defaults.
func TestMergedKeysCountAsGiven(t *testing.T) {
	body := `chain:
  - &base
    name: a
    kind: openai
    base_url: http://127.0.0.1:1/v1
    model: gemini-2.5-flash
    json_mode: none
    price: {input_per_mtok: 1}
  - name: b
    <<: *base
  - {name: c, kind: openai, base_url: "http://127.0.0.1:2/v1", model: unlisted, timeouts: null, stream: null, cap_reset: ""}
`
	cfg, err := parseIn(t, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range cfg.Chain[:2] {
		if l.JSONMode != "" || !l.PriceKnown || l.Price != (Price{InputPerMTok: 1, OutputPerMTok: 2.50}) {
			t.Errorf("%s: json mode %q, price %+v known %v", l.Name, l.JSONMode, l.Price, l.PriceKnown)
		}
	}
	c, def := cfg.Chain[2], DefaultLink()
	if c.PriceKnown || c.JSONMode != "json_object" || c.Timeouts != def.Timeouts || !c.Stream || c.CapReset != def.CapReset {
		t.Errorf("c = %s", detail([]Link{c}))
	}
}

// TestCheckConfigAsFarAsBuilt: the config Check returns next to its errors
// holds the default where the file's value was refused, and only the
// shadow providers that passed.
func TestCheckConfigAsFarAsBuilt(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contentpipe.yaml")
	body := `env_file: "  "
database: "bogus://x/y"
shadow: {providers: [a, nope]}
chain:
  - {name: a, kind: gemini, model: gemini-flash-latest, api_key_env: GEMINI_API_KEY, json_mode: json_schema}
`
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Loader{Getenv: env(fullEnv())}.Check(path)
	if es := errorsOf(t, err); len(es) != 4 {
		t.Errorf("want 4 errors (env_file, database, json_mode, shadow), got %v", err)
	}
	if cfg == nil {
		t.Fatal("no config next to the errors")
	}
	want := Default(dir)
	if cfg.EnvFile != "" || cfg.Database != want.Database || cfg.Chain[0].JSONMode != "" ||
		!reflect.DeepEqual(cfg.Shadow.Providers, []string{"a"}) || cfg.Job.Deadline != 15*time.Minute {
		t.Errorf("env file %q, database %q, json mode %q, shadow %q", cfg.EnvFile, cfg.Database, cfg.Chain[0].JSONMode, cfg.Shadow.Providers)
	}
}

// TestNoChainNoCandidates: without a chain to check them against, the
// candidates are neither kept nor warned about.
func TestNoChainNoCandidates(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "contentpipe.yaml")
	body := "chain: 5\ncandidates:\n  - {name: x, kind: openai, base_url: \"http://127.0.0.1:1/v1\", model: m}\n"
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := Loader{Getenv: env(fullEnv())}.Check(path)
	if es := errorsOf(t, err); len(es) != 1 || cfg == nil || cfg.Candidates != nil || len(cfg.Warnings) != 0 {
		t.Fatalf("err %v, config %+v", err, cfg)
	}
}

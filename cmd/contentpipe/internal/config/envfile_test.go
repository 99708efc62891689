package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envFileConfig writes a one-link config naming env_file: keys.env and the
// env file itself with content and mode; it returns the config's path.
func envFileConfig(t *testing.T, content string, mode os.FileMode) string {
	t.Helper()
	dir := t.TempDir()
	cfg := "env_file: keys.env\nchain:\n  - name: gemini\n    kind: gemini\n    model: gemini-flash-latest\n    api_key_env: GEMINI_API_KEY\n" +
		"  - name: groq\n    kind: openai\n    model: llama-3.3-70b-versatile\n    base_url: https://api.groq.com/openai/v1\n    api_key_env: GROQ_API_KEY\n"
	path := filepath.Join(dir, "contentpipe.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	if content != "" {
		env := filepath.Join(dir, "keys.env")
		if err := os.WriteFile(env, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(env, mode); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

// TestEnvFileSuppliesKeys: the keys come from env_file: when the process
// environment lacks them (cron's), comments, `export` and quotes are read,
// and a variable set in the process environment wins over the file.
func TestEnvFileSuppliesKeys(t *testing.T) {
	path := envFileConfig(t, "# the keys\n\nexport GEMINI_API_KEY=\""+fakeGeminiKey+"\"\nGROQ_API_KEY="+fakeGroqKey+"#part-of-it\n", 0o600)
	cfg, err := Load(path, env(nil))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := cfg.Chain[0].APIKey; got != fakeGeminiKey {
		t.Errorf("gemini key %q, want the env file's (quotes removed)", got)
	}
	if got := cfg.Chain[1].APIKey; got != fakeGroqKey+"#part-of-it" {
		t.Errorf("groq key %q, want the whole value after = (a # inside a value is part of it)", got)
	}
	if cfg.EnvFile != filepath.Join(filepath.Dir(path), "keys.env") {
		t.Errorf("EnvFile %q, want keys.env next to the config", cfg.EnvFile)
	}
	cfg, err = Load(path, env(map[string]string{"GROQ_API_KEY": fakeOtherKey}))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if cfg.Chain[1].APIKey != fakeOtherKey || cfg.Chain[0].APIKey != fakeGeminiKey {
		t.Errorf("keys %q, %q: the process environment must win, the file fill the rest", cfg.Chain[0].APIKey, cfg.Chain[1].APIKey)
	}
}

// TestEnvFileRefused: an env file readable by others, missing, or with
// malformed lines is a config error naming the file (and line) and the
// fix, and never showing a value.
func TestEnvFileRefused(t *testing.T) {
	cases := []struct {
		name, content string
		mode          os.FileMode
		file          string // suffix of Error.File
		line          int
		msg, fix      string
	}{
		{"group-readable", "GEMINI_API_KEY=" + fakeGeminiKey + "\nGROQ_API_KEY=x\n", 0o640, "contentpipe.yaml", 1, "is mode 0640: readable by others", "chmod 600 "},
		{"world-readable", "GEMINI_API_KEY=" + fakeGeminiKey + "\nGROQ_API_KEY=x\n", 0o644, "contentpipe.yaml", 1, "is mode 0644", "chmod 600 "},
		{"missing", "", 0, "contentpipe.yaml", 1, "keys.env: no such file", "install -m 0600 /dev/null "},
		{"pasted key", "GROQ_API_KEY=x\n" + fakeGeminiKey + "\n", 0o600, "keys.env", 2, "not a KEY=VALUE line", "GEMINI_API_KEY=your-key"},
		{"bad name", "GROQ_API_KEY=x\ngsk-FAKE-pasted-secret-0123=" + fakeGeminiKey + "\n", 0o600, "keys.env", 2, "not an environment variable name", "NAME=value"},
		{"twice", "GROQ_API_KEY=x\nGEMINI_API_KEY=" + fakeGeminiKey + "\nGEMINI_API_KEY=" + fakeOtherKey + "\n", 0o600, "keys.env", 3, "GEMINI_API_KEY is set twice (first at line 2)", "one line per variable"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(envFileConfig(t, c.content, c.mode), env(nil))
			if err == nil {
				t.Fatal("loaded")
			}
			noSecrets(t, "the error", err.Error())
			var errs Errors
			if !errors.As(err, &errs) {
				t.Fatalf("%T %v", err, err)
			}
			for _, e := range errs {
				if strings.HasSuffix(e.File, c.file) && e.Line == c.line && strings.Contains(e.Msg, c.msg) && strings.Contains(e.Fix, c.fix) {
					return
				}
			}
			t.Errorf("no error %s:%d %q (fix %q) in:\n%v", c.file, c.line, c.msg, c.fix, err)
		})
	}
}

// TestEnvFileNamedInUnsetKeyFix: a key in neither place says where it may go.
func TestEnvFileNamedInUnsetKeyFix(t *testing.T) {
	_, err := Load(envFileConfig(t, "GEMINI_API_KEY="+fakeGeminiKey+"\n", 0o600), env(nil))
	if err == nil || !strings.Contains(err.Error(), "GROQ_API_KEY is not set") || !strings.Contains(err.Error(), "add GROQ_API_KEY=... to ") {
		t.Fatalf("want GROQ_API_KEY unset, naming the env file in the fix; got %v", err)
	}
	noSecrets(t, "the error", err.Error())
}

// A quoted amount with a unit ("5$", "0.8 USD") is refused with the
// number it holds as the example, not an unrelated 0.5.
func TestNumberFixUsesTheValue(t *testing.T) {
	for _, c := range []struct{ value, want string }{{`"5$"`, "daily_usd: 5"}, {`"$12.50"`, "daily_usd: 12.50"}, {`"lots"`, "daily_usd: 0.5"}} {
		cfg := "chain:\n  - name: groq\n    kind: openai\n    model: m\n    base_url: https://api.groq.com/openai/v1\nbudget:\n  daily_usd: " + c.value + "\n"
		_, err := Parse(filepath.Join(t.TempDir(), "contentpipe.yaml"), []byte(cfg), env(nil))
		want := c.want
		if err == nil || !strings.Contains(err.Error(), "budget.daily_usd: want a number") || !strings.Contains(err.Error(), "e.g. "+want) {
			t.Errorf("daily_usd: %s: want the fix to suggest %q, got %v", c.value, want, err)
		}
	}
}

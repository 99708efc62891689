package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkFiles writes a config (one groq link with the given prompt line) and
// a topics file into a temp dir and runs `config check` in process on it.
func checkFiles(t *testing.T, promptLine, topics string) (int, string) {
	t.Helper()
	dir := t.TempDir()
	cfg := `topics: topics.yaml
publish: {kind: markdown, dir: out}
chain:
  - name: groq
    kind: openai
    base_url: https://api.groq.com/openai/v1
    model: llama-3.3-70b-versatile
    api_key_env: GROQ_API_KEY
` + promptLine
	for name, text := range map[string]string{"contentpipe.yaml": cfg, "topics.yaml": topics} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var stdout, stderr bytes.Buffer
	code := execute(context.Background(), []string{"config", "check", "--config", filepath.Join(dir, "contentpipe.yaml")}, &stdout, &stderr,
		func(k string) string { return map[string]string{"GROQ_API_KEY": "FAKEKEY-groq-b81d02ee"}[k] })
	return code, stdout.String() + stderr.String()
}

const okTopics = "- id: a\n  title: A title\n"

// A link's prompt: may name any shipped template, not only the family
// defaults; an unknown one is a config error listing the available ones.
func TestConfigPromptNames(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"llama", "gpt-oss", "openai", "gemini"} {
		if code, out := checkFiles(t, "    prompt: "+name+"\n", okTopics); code != exitOK {
			t.Errorf("prompt: %s: exit %d, want 0:\n%s", name, code, out)
		}
	}
	code, out := checkFiles(t, "    prompt: lama\n", okTopics)
	if code != exitConfig || !strings.Contains(out, `unknown prompt "lama"`) || !strings.Contains(out, `did you mean "llama"`) ||
		!strings.Contains(out, "gemini, gpt-oss, llama, openai") {
		t.Errorf("prompt: lama: exit %d, want %d naming the templates:\n%s", code, exitConfig, out)
	}
	code, out = checkFiles(t, "    prompt: completely-different\n", okTopics)
	if code != exitConfig || !strings.Contains(out, "use one of gemini, gpt-oss, llama, openai") {
		t.Errorf("prompt: completely-different: exit %d, want %d naming the templates:\n%s", code, exitConfig, out)
	}
}

// A topic language the gate cannot check is a config error naming the
// supported codes; a supported one with a region passes.
func TestConfigTopicLanguageSupported(t *testing.T) {
	t.Parallel()
	code, out := checkFiles(t, "", okTopics+"  language: xx\n")
	if code != exitConfig || !strings.Contains(out, `language "xx" is not supported`) || !strings.Contains(out, "supported: de, en, es, fr, it, nl, pt, ru, tr") {
		t.Errorf("language: xx: exit %d, want %d naming the supported codes:\n%s", code, exitConfig, out)
	}
	if code, out := checkFiles(t, "", okTopics+"  language: pt-BR\n"); code != exitOK {
		t.Errorf("language: pt-BR: exit %d, want 0:\n%s", code, out)
	}
}

// The shipped example topics name only languages the gate checks.
func TestExampleTopicsLanguagesSupported(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join("..", "..", "data", "topics.example.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if code, out := checkFiles(t, "", string(b)); code != exitOK {
		t.Errorf("topics.example.yaml: exit %d, want 0:\n%s", code, out)
	}
}

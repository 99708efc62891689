package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzParse feeds the loader arbitrary files: it must never panic, and
// every problem must be an *Error with a line and a fix.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	files = append(files, filepath.Join("testdata", "spec", "contentpipe.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("chain:\n  - &a {name: x, kind: openai, base_url: \"http://h/v1\", model: m}\n  - <<: [*a, *a]\n    <<: *a\n    name: y\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, parse := range []func() error{
			func() error { _, err := Parse(filepath.Join(dir, "c.yaml"), data, env(fullEnv())); return err },
			func() error { _, err := ParseTopics("topics.yaml", data); return err },
		} {
			err := parse()
			if err == nil {
				continue
			}
			es := errorsOf(t, err)
			if len(es) == 0 {
				t.Fatal("empty Errors")
			}
			for _, e := range es {
				if e.Line < 1 || e.Fix == "" || strings.TrimSpace(e.Msg) == "" {
					t.Fatalf("incomplete error %+v", *e)
				}
			}
		}
	})
}

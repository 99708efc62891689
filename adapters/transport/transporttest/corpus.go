package transporttest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Want is how a body of the development corpus of real provider answers
// (adapters/testdata/real, sources in its SOURCES.md) must be classified
// (README "Real provider answers"): outcome, window, wait, the sizes of a
// request too large, and words of the provider the error must quote.
type Want struct {
	Outcome          chain.Outcome
	Scope            chain.Scope
	Wait             time.Duration
	Limit, Requested int
	Words            string
}

// CheckWant compares one classified failure of a body sent with status
// with its corpus entry; a misconfigured link and a request too large must
// carry a fix, nothing else one.
func CheckWant(t *testing.T, pe *chain.ProviderError, status int, want Want) {
	t.Helper()
	if pe.Outcome != want.Outcome || pe.Scope != want.Scope || pe.RetryAfter != want.Wait || pe.Status != status {
		t.Fatalf("got %s scope %q wait %v status %d; want %s scope %q wait %v status %d\n%+v",
			pe.Outcome, pe.Scope, pe.RetryAfter, pe.Status, want.Outcome, want.Scope, want.Wait, status, pe)
	}
	if pe.TooLarge.Limit != want.Limit || pe.TooLarge.Requested != want.Requested {
		t.Fatalf("too large %+v; want limit %d requested %d", pe.TooLarge, want.Limit, want.Requested)
	}
	if !strings.Contains(pe.Message, want.Words) {
		t.Fatalf("message %q does not quote the provider's %q", pe.Message, want.Words)
	}
	if fix := pe.Outcome == chain.OutcomeMisconfigured || pe.Outcome == chain.OutcomeTooLarge; fix != (pe.Fix != "") {
		t.Fatalf("outcome %s with fix %q", pe.Outcome, pe.Fix)
	}
}

// CheckCorpusComplete fails unless every body under the named directories
// of root (adapters/testdata/real) has an entry in corpus (keyed
// "dir/file.http"), every entry a body, and root's SOURCES.md names each.
func CheckCorpusComplete(t *testing.T, root string, corpus map[string]Want, dirs ...string) {
	t.Helper()
	sources, err := os.ReadFile(filepath.Join(root, "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, d := range dirs {
		files, _ := filepath.Glob(filepath.Join(root, d, "*.http"))
		for _, f := range files {
			rel := d + "/" + filepath.Base(f)
			if _, ok := corpus[rel]; !ok {
				t.Errorf("%s has no expected classification", rel)
			}
			if !strings.Contains(string(sources), "`"+rel+"`") {
				t.Errorf("%s has no source in SOURCES.md", rel)
			}
			seen++
		}
	}
	if seen != len(corpus) {
		t.Errorf("%d bodies on disk, %d expected classifications", seen, len(corpus))
	}
}

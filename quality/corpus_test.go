package quality

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusItem is one labeled answer of testdata/corpus.
type corpusItem struct {
	name string
	bad  bool
	kind string // defect kind for bad items ("" for good ones)
	lang string // the language the job asked for
	text string
}

// loadCorpus reads testdata/corpus. Names are good_<lang>_… or
// bad_<kind>_<lang>_….
func loadCorpus(t testing.TB) []corpusItem {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("testdata", "corpus", "*"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	var items []corpusItem
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name := filepath.Base(f)
		parts := strings.Split(name, "_")
		it := corpusItem{name: name, text: string(b)}
		switch {
		case parts[0] == "good" && len(parts) >= 3:
			it.lang = parts[1]
		case parts[0] == "bad" && len(parts) >= 4:
			it.bad, it.kind, it.lang = true, parts[1], parts[2]
		default:
			t.Fatalf("corpus file %s: name must be good_<lang>_… or bad_<kind>_<lang>_…", name)
		}
		items = append(items, it)
	}
	return items
}

// corpusGate is the gate at the settings the brief fixes for the corpus.
func corpusGate(t testing.TB) *Gate {
	t.Helper()
	g, err := NewGate(readSchema(t), Settings{MinSections: 5, MinSectionWords: 200})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func readSchema(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "data", "article.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// kindCheck is the check each defect kind must trip.
var kindCheck = map[string]CheckName{
	"schema":        "schema",
	"parse":         "parse",
	"words":         "words",
	"sections":      "sections",
	"shortsections": "short_sections",
	"meta":          "meta",
	"dup":           "duplicates",
	"neardup":       "duplicates",
	"lang":          "language",
	"trunc":         "truncated",
	"placeholder":   "placeholder",
	"degenerate":    "repetition",
}

// TestCorpusShape holds the corpus to what it claims to be: enough items,
// every defect kind in English and Turkish, and good articles of realistic
// length.
func TestCorpusShape(t *testing.T) {
	items := loadCorpus(t)
	if len(items) < 40 {
		t.Fatalf("corpus has %d items, want at least 40", len(items))
	}
	turkish, good := 0, 0
	kinds := map[string]map[string]bool{}
	g := corpusGate(t)
	for _, it := range items {
		if it.lang == "tr" {
			turkish++
		}
		if it.bad {
			if _, ok := kindCheck[it.kind]; !ok {
				t.Errorf("%s: unknown kind %q", it.name, it.kind)
			}
			if kinds[it.kind] == nil {
				kinds[it.kind] = map[string]bool{}
			}
			kinds[it.kind][it.lang] = true
			continue
		}
		good++
		r := g.Evaluate(it.text, Spec{Language: it.lang})
		if r.Article == nil {
			t.Errorf("%s: good article does not parse: %s", it.name, r.Reasons())
			continue
		}
		if r.Words < 1300 || len(r.Article.Sections) < 5 {
			t.Errorf("%s: %d words in %d sections, want ≥ 1300 in ≥ 5", it.name, r.Words, len(r.Article.Sections))
		}
		for i, s := range r.Article.Sections {
			if w := countWords(s.Body); w < 200 {
				t.Errorf("%s: section %d has %d words, want ≥ 200", it.name, i+1, w)
			}
		}
	}
	if turkish < 12 {
		t.Errorf("corpus has %d Turkish items, want at least 12", turkish)
	}
	if good < 10 {
		t.Errorf("corpus has %d good items, want at least 10", good)
	}
	for kind := range kindCheck {
		if !kinds[kind]["en"] || !kinds[kind]["tr"] {
			t.Errorf("defect kind %q lacks an English or a Turkish example: %v", kind, kinds[kind])
		}
	}
}

// TestCorpusPrecisionRecall measures the gate on the labeled corpus
// (positive = rejected) at target 1500 words, 5 sections, 200 words a section.
func TestCorpusPrecisionRecall(t *testing.T) {
	g := corpusGate(t)
	var tp, fp, fn, tn int
	for _, it := range loadCorpus(t) {
		r := g.Evaluate(it.text, Spec{Language: it.lang, TargetWords: 1500})
		rejected := !r.Pass
		switch {
		case rejected && it.bad:
			tp++
			if want := kindCheck[it.kind]; !hasCheck(r, want) {
				t.Errorf("%s: rejected, but without the %q check: %s", it.name, want, r.Reasons())
			}
		case rejected && !it.bad:
			fp++
			t.Errorf("false positive %s: score %.1f: %s", it.name, r.Score, r.Reasons())
		case !rejected && it.bad:
			fn++
			t.Errorf("false negative %s: score %.1f: %s", it.name, r.Score, r.Reasons())
		default:
			tn++
		}
		t.Logf("%-45s pass=%-5v score=%5.1f %s", it.name, r.Pass, r.Score, r.Reasons())
	}
	precision := float64(tp) / float64(max(tp+fp, 1))
	recall := float64(tp) / float64(max(tp+fn, 1))
	t.Logf("corpus: %d items, tp=%d fp=%d fn=%d tn=%d, precision=%.3f recall=%.3f", tp+fp+fn+tn, tp, fp, fn, tn, precision, recall)
	if precision < 0.95 || recall < 0.95 {
		t.Fatalf("precision %.3f, recall %.3f: want both ≥ 0.95", precision, recall)
	}
}

func hasCheck(r Result, name CheckName) bool {
	for _, c := range r.Checks {
		if c.Name == name {
			return true
		}
	}
	return false
}

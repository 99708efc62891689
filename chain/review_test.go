package chain

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/quality"
)

// reviewArticles returns two failing answers built from a good corpus
// article: an 80-word one, and the full one with one assistant sentence.
func reviewArticles(t *testing.T) (thin, withMeta string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "quality", "testdata", "corpus", "good_en_compost.json"))
	if err != nil {
		t.Fatal(err)
	}
	var full quality.Article
	if err := json.Unmarshal(b, &full); err != nil {
		t.Fatal(err)
	}
	short := quality.Article{Title: full.Title, Sections: []quality.Section{{H2: full.Sections[0].H2,
		Body: strings.Join(strings.Fields(full.Sections[0].Body)[:80], " ")}}}
	last := len(full.Sections) - 1
	full.Sections[last].Body += " Would you like me to add a section on worm composting?"
	enc := func(a quality.Article) string {
		out, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	return enc(short), enc(full)
}

// TestReviewKeepsBetterCandidate: when every answer fails, the walk keeps
// the candidate with the fewest and least severe defects, not the highest
// score (both reject outright, at 0 or not) — the full article with one
// meta sentence over the 80-word one, whichever link answered first.
func TestReviewKeepsBetterCandidate(t *testing.T) {
	gate, err := quality.NewGate(data.ArticleSchema, quality.Settings{})
	if err != nil {
		t.Fatal(err)
	}
	thin, withMeta := reviewArticles(t)
	spec := quality.Spec{Language: "en", TargetWords: 1500}
	gt, gm := gate.Evaluate(thin, spec), gate.Evaluate(withMeta, spec)
	if gt.Pass || gm.Pass {
		t.Fatalf("both must fail the gate: thin %v (%s), meta %v (%s)", gt.Pass, gt.Reasons(), gm.Pass, gm.Reasons())
	}
	if gt.Score < gm.Score {
		t.Fatalf("the thin article must score at least as high (%v vs %v) for the test to tell the rules apart", gt.Score, gm.Score)
	}
	for _, order := range [][2]string{{thin, withMeta}, {withMeta, thin}} {
		s := newScenario(t, "a", "b")
		s.chain.Gate = gate
		s.script("a", step{resp: Response{Text: order[0]}})
		s.script("b", step{resp: Response{Text: order[1]}})
		res, err := s.chain.Generate(t.Context(), Job{ID: "2026-11-29/compost", Topic: "compost", Slot: "2026-11-29",
			Title: "Compost", Language: "en", TargetWords: 1500})
		if err != nil {
			t.Fatal(err)
		}
		if res.Status != JobReview || res.Best == nil {
			t.Fatalf("status %s, best %v: want review with a kept candidate", res.Status, res.Best)
		}
		wantProvider := "a"
		if order[1] == withMeta {
			wantProvider = "b"
		}
		if res.Best.Provider != wantProvider || len(res.Best.Article.Sections) != len(gm.Article.Sections) {
			t.Errorf("kept %s's answer (%d sections, score %v), want %s's full article with the meta sentence",
				res.Best.Provider, len(res.Best.Article.Sections), res.Best.Score, wantProvider)
		}
	}
}

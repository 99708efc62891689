package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// When every answer fails, the job keeps the one an editor can fix with the
// least work: a full article with one assistant sentence (groq) over thin
// ones that come first (gemini) or score the same; `review show` says why.
func TestReviewKeepsFullArticleEndToEnd(t *testing.T) {
	t.Parallel()
	thin := sim.Profile{Script: []sim.Fault{sim.FaultLowQuality}}
	w := newSimWorld(t, 1, map[sim.Flavor]sim.Profile{
		sim.FlavorGemini: thin, sim.FlavorGroq: {Script: []sim.Fault{sim.FaultMetaPhrase}},
		sim.FlavorCerebras: thin, sim.FlavorOpenRouter: thin,
	}, "")
	r := run(t, w.dir, w.env, "run")
	if r.code != 1 || !strings.Contains(r.stdout, "1 review") {
		t.Fatalf("run exit %d, want 1 with 1 in review\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	ids := reviewIDs(t, w.dir)
	if len(ids) != 1 {
		t.Fatalf("review jobs %v", ids)
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	var provider string
	if err := db.QueryRow(`SELECT provider FROM jobs WHERE id = ?`, ids[0]).Scan(&provider); err != nil {
		t.Fatal(err)
	}
	if provider != "groq" {
		t.Fatalf("kept the answer of %s, want groq's full article with the meta sentence", provider)
	}
	s := run(t, w.dir, w.env, "review", "show", ids[0])
	if s.code != 0 || !strings.Contains(s.stdout, "attempt 2 from groq") || !strings.Contains(s.stdout, "fewest and least severe defects") ||
		!strings.Contains(s.stdout, "- meta (minor): The text contains assistant talk") {
		t.Fatalf("review show exit %d, want the kept groq answer and why\n%s\n%s", s.code, s.stdout, s.stderr)
	}
}

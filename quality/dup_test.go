package quality

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// editWords returns p with round(rate·n) of its n words, at distinct random
// positions, replaced by other words of pool: the light edit a model makes
// when it rewrites a paragraph it already wrote.
func editWords(rng *rand.Rand, p string, pool []string, rate float64) string {
	ws := strings.Fields(p)
	k := int(rate*float64(len(ws)) + 0.5)
	for _, i := range rng.Perm(len(ws))[:k] {
		w := ws[i]
		for w == ws[i] {
			w = pool[rng.IntN(len(pool))]
		}
		ws[i] = w
	}
	return strings.Join(ws, " ")
}

// TestNearDuplicateEditRate measures near-duplicate detection against
// copies of real paragraphs (the good articles of testdata/corpus, 30+
// words) with 10, 15 and 20 % of their words swapped, placed in another
// section, and holds the detection rate to a floor per edit rate.
func TestNearDuplicateEditRate(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 20))
	floors := []struct {
		rate, min float64
	}{{0.10, 0.97}, {0.15, 0.93}, {0.20, 0.85}}
	var arts []Article
	for _, name := range []string{"good_en_chatbots.json", "good_en_compost.json", "good_en_cycling.json", "good_en_fund.json",
		"good_en_onboarding.json", "good_tr_domates.json", "good_tr_fon.json", "good_tr_sohbetbotu.json", "good_tr_uzaktan.json"} {
		arts = append(arts, baseArticle(t, name))
	}
	for _, f := range floors {
		found, total := 0, 0
		for _, a := range arts {
			var pool []string
			for _, s := range a.Sections {
				pool = append(pool, strings.Fields(s.Body)...)
			}
			for si, s := range a.Sections {
				for _, p := range paragraphs(s.Body) {
					if len(strings.Fields(p)) < 30 {
						continue
					}
					b := a.clone()
					dst := (si + 2) % len(b.Sections)
					b.Sections[dst].Body += "\n\n" + editWords(rng, p, pool, f.rate)
					total++
					if len(findDuplicates(b.Sections)) > len(findDuplicates(a.Sections)) {
						found++
					}
				}
			}
		}
		share := float64(found) / float64(total)
		t.Logf("edit rate %.0f%%: %d of %d near-duplicates found (%.3f)", 100*f.rate, found, total, share)
		if share < f.min {
			t.Errorf("edit rate %.0f%%: found %.3f, want ≥ %.2f", 100*f.rate, share, f.min)
		}
	}
}

// TestDuplicateBorderlines: parallel list items and paragraphs that share a
// frame are not duplicates; a paragraph repeated with light edits is.
func TestDuplicateBorderlines(t *testing.T) {
	p := "Turning the pile with a garden fork every week or two moves material from the cooler edges into the warm centre and lets fresh air in for the microbes that do the work."
	cases := []struct {
		name, a, b string
		dup        bool
	}{
		{"parallel list items under 15 words",
			"Note useSyncExternalStore is intended to be used by libraries, not application code.",
			"Note useInsertionEffect is intended to be used by libraries, not application code.", false},
		{"shared frame, different content",
			"In development your effect will call connect, then immediately disconnect, and then connect again, so the user sees exactly the same behaviour as with one call.",
			"In development your effect will subscribe to the store, then unsubscribe at once, and subscribe again with the same handler, so only one subscription is ever active.", false},
		{"one word in ten changed", p, strings.NewReplacer("garden fork", "pitchfork", "cooler", "colder", "microbes", "bacteria").Replace(p), true},
		{"two words in ten changed", p, strings.NewReplacer("Turning", "Mixing", "garden", "sturdy", "week", "month", "cooler", "outer", "warm", "hot", "fresh", "new", "microbes", "bugs").Replace(p), true},
	}
	for _, c := range cases {
		got := len(findDuplicates([]Section{{H2: "a", Body: c.a}, {H2: "b", Body: c.b}})) > 0
		if got != c.dup {
			t.Errorf("%s: duplicate=%v, want %v", c.name, got, c.dup)
		}
	}
}

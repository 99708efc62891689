package quality

import (
	"math/rand/v2"
	"strconv"
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

// TestRepetitionBorderlines holds the repetition rules to their edges: the
// false refusals of real text (a list of values, an author's frame, a table)
// pass; loops fail.
func TestRepetitionBorderlines(t *testing.T) {
	frame := func(i int) string {
		return "When you plan the budget for the next quarter, remember item " + strconv.Itoa(i) + " on the list of costs that " +
			[]string{"grow", "shrink", "move", "vanish", "double"}[i%5] + " each year."
	}
	var framed []string
	for i := range 5 {
		framed = append(framed, frame(i))
	}
	var prose []string
	for _, s := range baseArticle(t, "good_en_cycling.json").Sections {
		prose = append(prose, s.Body)
	}
	for i, f := range framed {
		prose[i%len(prose)] += " " + f
	}
	sent := "The cat sat on the warm mat by the door. "
	cases := []struct {
		name string
		text string
		loop bool
	}{
		{"a data-types list with 3 five times in a row", "The values are 3 3 3 3 3 and then 4 4 4 4 4 in the second column.", false},
		{"an author's 8-word frame five times in an article", strings.Join(prose, "\n\n"), false},
		{"a markdown table with repeated cells", "Compare the plans.\n\n| yes | no |\n| yes | no |\n| yes | no |\n| yes | no |\n| yes | no |", false},
		{"fenced code with a loop", "Run it:\n\n```\nok ok ok ok ok ok\n```\n\nThat is all.", false},
		{"a sentence twice in a row", strings.Repeat(sent, 2), false},
		{"a sentence three times in a row", strings.Repeat(sent, 3), true},
		{"a sentence three times, not in a row", sent + "Then it left for the garden. " + sent + "Then it came back in. " + sent, false},
		{"a sentence three times, twice in a row", sent + "Then it left for the garden. " + sent + sent, true},
		{"a loop through a fragment", sent + "When a. " + sent + "When a. " + sent, true},
		{"a word five times in a row", "This is very very very very very important.", true},
		{"a phrase four times in a row", "and then we and then we and then we and then we stopped", true},
		{"two sentences alternating over a large share", strings.Repeat("The pump must be primed before use. The valve must stay closed while priming. Then start it. ", 12), true},
	}
	for _, c := range cases {
		d, got := tokenizeBody(c.text).repetition()
		if got != c.loop {
			t.Errorf("%s: loop=%v (%s), want %v", c.name, got, d, c.loop)
		}
	}
}

// tokenizeBody runs the analysis on one body, as the gate does.
func tokenizeBody(body string) *analysis {
	an := new(analysis)
	an.analyze(&Article{Sections: []Section{{H2: "h", Body: body}}})
	return an
}

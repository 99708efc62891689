package sim

import (
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

func TestParseBrief(t *testing.T) {
	cases := []struct {
		name, text string
		want       brief
	}{
		{"contract", topicEN.prompt(), brief{
			title: topicEN.title, category: "devops", keywords: []string{"kubernetes", "cost control", "autoscaling"},
			lang: "en", target: 1500, minSections: 5, minSectionWords: 200,
		}},
		{"indented, CRLF, first wins", "  Title: A: B\r\nTitle: later\r\nLanguage: TR\r\nTarget words: 900 words\r\n", brief{
			title: "A: B", lang: "tr", target: 900,
		}},
		{"health", "Reply now.\nHealth check: reply with {\"ok\":true}\n", brief{health: true}},
		{"not at line start", "Say Title: x and Keywords: y", brief{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := parseBrief(tc.text); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("parseBrief = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestArticlesAcrossSeedsAndSizes checks the generator itself over many
// seeds, both languages and several sizes: minimums met, no near-duplicate
// paragraphs, different seeds give different text.
func TestArticlesAcrossSeedsAndSizes(t *testing.T) {
	sizes := []struct{ target, minSec, minSecWords int }{
		{600, 3, 120}, {1500, 5, 200}, {2500, 6, 250}, {3000, 8, 300},
	}
	worst := 0.0
	for _, base := range []topic{topicEN, topicTR} {
		for _, sz := range sizes {
			tp := base
			tp.target, tp.minSec, tp.minSecWords = sz.target, sz.minSec, sz.minSecWords
			texts := map[string]int64{}
			for seed := int64(1); seed <= 8; seed++ {
				for _, thin := range []bool{false, true} {
					label := tp.lang + "/" + strconv.Itoa(tp.target) + "/seed" + strconv.FormatInt(seed, 10)
					lo, hi := 0.9, 1.2
					if thin {
						label += "/thin"
						lo, hi = 0.82, 0.88
						if floor := float64(tp.minSec*(tp.minSecWords*105/100+5)) / float64(tp.target); floor > 0.82 {
							lo, hi = 0.82, floor+0.05 // the section minimums outweigh the thin target
						}
					}
					g := newGenerator(parseBrief(tp.prompt()), rand.New(rand.NewPCG(uint64(seed), 1)))
					text := encodeArticle(g.article(thin), false)
					a := checkArticle(t, label, text, tp, lo, hi)
					worst = max(worst, maxParagraphJaccard(a))
					if !thin {
						if s, dup := texts[text]; dup {
							t.Errorf("%s: same text as seed %d", label, s)
						}
						texts[text] = seed
					}
				}
			}
		}
	}
	t.Logf("highest paragraph 5-shingle Jaccard over all articles: %.3f", worst)
}

func TestArticleWithoutKeywordsOrCategory(t *testing.T) {
	g := newGenerator(parseBrief("Title: Bread at home\nLanguage: en\nTarget words: 800\nMin sections: 4\nMin section words: 150\n"),
		rand.New(rand.NewPCG(5, 5)))
	tp := topic{title: "Bread at home", keywords: []string{"Bread at home"}, lang: "en", target: 800, minSec: 4, minSecWords: 150}
	checkArticle(t, "no keywords", encodeArticle(g.article(false), false), tp, 0.9, 1.2)
}

func TestFencedAnswersOnlyWithoutJSONMode(t *testing.T) {
	fenced := 0
	for i := range 40 {
		s := startT(t, FlavorGroq, Profile{Seed: int64(i)})
		plain := extract(t, FlavorGroq, false, do(t, s, topicEN.prompt(), reqOpts{}))
		strict := extract(t, FlavorGroq, false, do(t, s, topicEN.prompt(), reqOpts{jsonMode: true}))
		if strings.HasPrefix(strict.text, "```") {
			t.Fatalf("fenced answer despite response_format json_object")
		}
		if strings.HasPrefix(plain.text, "```json\n") {
			fenced++
			if _, err := parseArticle(plain.text); err != nil {
				t.Errorf("fenced answer is not an article inside the fence: %v", err)
			}
		}
	}
	if fenced == 0 || fenced == 40 {
		t.Errorf("%d of 40 plain answers fenced; want some, not all", fenced)
	}
}

func TestCountWordsIsFields(t *testing.T) {
	for _, s := range []string{"", " ", "one", " two  words ", "tab\tnew\nline\r\nvt\vff\f", "nbsp\u00a0sep\u0085nel", "ünïcödé wörds — dash", "bad\xffutf8 x", "\u2003em\u3000ideo"} {
		if got, want := countWords(s), len(strings.Fields(s)); got != want {
			t.Errorf("countWords(%q) = %d, want %d", s, got, want)
		}
	}
}

package quality

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// baseArticle loads a good corpus article to mutate in the table tests.
func baseArticle(t testing.TB, name string) Article {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "corpus", name))
	if err != nil {
		t.Fatal(err)
	}
	var a Article
	if err := json.Unmarshal(b, &a); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a Article) clone() Article {
	b := a
	b.Sections = append([]Section(nil), a.Sections...)
	return b
}

func (a Article) json(t testing.TB) string {
	t.Helper()
	b, err := json.Marshal(a)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func newTestGate(t testing.TB, s Settings) *Gate {
	t.Helper()
	g, err := NewGate(readSchema(t), s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func checkNamed(r Result, name CheckName) (Check, bool) {
	for _, c := range r.Checks {
		if c.Name == name {
			return c, true
		}
	}
	return Check{}, false
}

func firstWords(s string, n int) string {
	ws := strings.Fields(s)
	if len(ws) > n {
		ws = ws[:n]
	}
	return strings.TrimRight(strings.Join(ws, " "), ".,;:") + "."
}

// TestChecks is the table of every check on mutated good articles.
func TestChecks(t *testing.T) {
	g := newTestGate(t, Settings{})
	en := baseArticle(t, "good_en_compost.json")
	tr := baseArticle(t, "good_tr_domates.json")
	other := baseArticle(t, "good_en_cycling.json")

	type tc struct {
		name     string
		base     Article
		mutate   func(a *Article)
		spec     Spec
		check    CheckName // the check that must appear ("" = no check at all)
		penalty  float64   // its penalty, when not NaN
		pass     bool
		outright bool
	}
	nan := math.NaN()
	cases := []tc{
		{name: "good en", base: en, spec: Spec{Language: "en", TargetWords: 1500}, pass: true, penalty: nan},
		{name: "good tr", base: tr, spec: Spec{Language: "tr", TargetWords: 1500}, pass: true, penalty: nan},
		{name: "words proportional", base: en, spec: Spec{TargetWords: 3000}, check: "words", penalty: nan, pass: false},
		{name: "words at 80 % is enough", base: en, spec: Spec{TargetWords: 1400}, pass: true, penalty: nan},
		{name: "four of five sections: the floor rejects outright", base: en, mutate: func(a *Article) { a.Sections = a.Sections[:4] },
			check: "sections", penalty: 100, pass: false, outright: true},
		{name: "two sections", base: en, mutate: func(a *Article) { a.Sections = a.Sections[:2] },
			check: "sections", penalty: 100, pass: false, outright: true},
		{name: "exactly five sections", base: en, mutate: func(a *Article) { a.Sections = a.Sections[:5] }, pass: true, penalty: nan},
		{name: "one short section", base: en, mutate: func(a *Article) { a.Sections[2].Body = firstWords(a.Sections[2].Body, 100) },
			check: "short_sections", penalty: 12, pass: true},
		{name: "repeated heading", base: en, mutate: func(a *Article) { a.Sections[3].H2 = strings.ToUpper(a.Sections[1].H2) + "!" },
			check: "headings", penalty: 10, pass: true},
		{name: "duplicate paragraph", base: en, mutate: func(a *Article) {
			a.Sections[4].Body += "\n\n" + paragraphs(a.Sections[0].Body)[1]
		}, check: "duplicates", penalty: 35, pass: false},
		{name: "duplicate paragraph within a section", base: tr, mutate: func(a *Article) {
			a.Sections[2].Body += "\n\n" + paragraphs(a.Sections[2].Body)[0]
		}, check: "duplicates", penalty: 35, pass: false},
		{name: "near-duplicate: reordered clauses and a changed word", base: en, mutate: func(a *Article) {
			p := paragraphs(a.Sections[1].Body)[0]
			p = strings.Replace(p, "The right container", "The best container", 1)
			a.Sections[5].Body += "\n\n" + p + " It really is that simple."
		}, check: "duplicates", penalty: 35, pass: false},
		{name: "short repeated lines are not duplicates", base: en, mutate: func(a *Article) {
			a.Sections[0].Body += "\n\nKeep the lid closed."
			a.Sections[3].Body += "\n\nKeep the lid closed."
		}, pass: true, penalty: nan},
		{name: "English article asked in Turkish", base: en, spec: Spec{Language: "tr"}, check: "language", penalty: 70, pass: false},
		{name: "Turkish article asked in English", base: tr, spec: Spec{Language: "en-US"}, check: "language", penalty: 70, pass: false},
		{name: "one Turkish section in English", base: en, mutate: func(a *Article) { a.Sections[2] = tr.Sections[2] },
			spec: Spec{Language: "en"}, check: "language", penalty: 35, pass: false},
		{name: "Turkish article asked in German", base: tr, spec: Spec{Language: "de"}, check: "language", penalty: 70, pass: false},
		{name: "Turkish article asked in pt-BR", base: tr, spec: Spec{Language: "pt-BR"}, check: "language", penalty: 70, pass: false},
		{name: "unsupported language is not checked", base: tr, spec: Spec{Language: "sw"}, pass: true, penalty: nan},
		{name: "provider truncation", base: en, spec: Spec{Truncated: true}, check: "truncated", penalty: 50, pass: false},
		{name: "ends mid-sentence", base: en, mutate: func(a *Article) {
			n := len(a.Sections) - 1
			a.Sections[n].Body = strings.TrimSuffix(a.Sections[n].Body, ".") + " and the"
		}, check: "truncated", penalty: 35, pass: false},
		{name: "ends with a list item", base: en, mutate: func(a *Article) {
			a.Sections[len(a.Sections)-1].Body += "\n\n- Keep a bag of leaves by the bin\n- Turn the pile weekly"
		}, pass: true, penalty: nan},
		{name: "ends with a quoted sentence", base: tr, mutate: func(a *Article) {
			a.Sections[len(a.Sections)-1].Body += " \"Sabır, iyi bir hasadın yarısıdır.\""
		}, pass: true, penalty: nan},
		{name: "placeholder", base: en, mutate: func(a *Article) { a.Sections[1].Body += " See [Insert source] for details." },
			check: "placeholder", penalty: 60, pass: false},
		{name: "repetition", base: tr, mutate: func(a *Article) {
			a.Sections[1].Body += "\n\n" + strings.Repeat("Bu çok önemli bir konudur ve dikkat ister. ", 4)
		}, check: "repetition", penalty: 50, pass: false},
		{name: "meta opener", base: en, mutate: func(a *Article) { a.Sections[0].Body = "Sure, here's a practical guide. " + a.Sections[0].Body },
			check: "meta", penalty: 100, pass: false, outright: true},
		{name: "meta in a heading", base: tr, mutate: func(a *Article) { a.Sections[5].H2 = "Başka bir şey eklememi ister misiniz?" },
			check: "meta", penalty: 100, pass: false, outright: true},
		{name: "mixed with another article's sections", base: en, mutate: func(a *Article) {
			a.Sections = append(a.Sections, other.Sections[0])
		}, pass: true, penalty: nan},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := c.base.clone()
			if c.mutate != nil {
				c.mutate(&a)
			}
			r := g.Evaluate(a.json(t), c.spec)
			if r.Pass != c.pass || r.Outright != c.outright {
				t.Errorf("pass=%v outright=%v, want %v/%v (score %.1f: %s)", r.Pass, r.Outright, c.pass, c.outright, r.Score, r.Reasons())
			}
			if c.check == "" {
				if len(r.Checks) != 0 || r.Score != 100 {
					t.Errorf("want no checks and 100, got %.1f: %s", r.Score, r.Reasons())
				}
				return
			}
			ck, ok := checkNamed(r, c.check)
			if !ok {
				t.Fatalf("no %q check: %s", c.check, r.Reasons())
			}
			if !math.IsNaN(c.penalty) && ck.Penalty != c.penalty {
				t.Errorf("%s penalty %v, want %v", c.check, ck.Penalty, c.penalty)
			}
			if ck.Detail == "" {
				t.Errorf("%s has no detail", c.check)
			}
			if r.Article == nil || r.Words == 0 {
				t.Errorf("article not returned: %+v", r)
			}
		})
	}
}

// TestWordsPenalty checks the proportional formula and its detail format.
func TestWordsPenalty(t *testing.T) {
	g := newTestGate(t, Settings{})
	a := baseArticle(t, "good_en_fund.json")
	r := g.Evaluate(a.json(t), Spec{TargetWords: 2400})
	c, ok := checkNamed(r, "words")
	if !ok {
		t.Fatalf("no words check: %s", r.Reasons())
	}
	want := math.Round(100*(1-float64(r.Words)/(0.8*2400))*10) / 10
	if c.Penalty != want {
		t.Errorf("penalty %v, want %v for %d words", c.Penalty, want, r.Words)
	}
	if wantDetail := fmt.Sprintf("%d of 2400 target", r.Words); c.Detail != wantDetail {
		t.Errorf("detail %q, want %q", c.Detail, wantDetail)
	}
	if math.Abs(r.Score-(100-c.Penalty)) > 1e-9 {
		t.Errorf("score %v, want %v", r.Score, 100-c.Penalty)
	}
	// Far too short: capped at 60.
	a.Sections = a.Sections[:1]
	r = g.Evaluate(a.json(t), Spec{TargetWords: 5000})
	if c, _ := checkNamed(r, "words"); c.Penalty != wordsMaxPenalty {
		t.Errorf("cap: penalty %v, want %v", c.Penalty, wordsMaxPenalty)
	}
}

func TestCheckString(t *testing.T) {
	cases := map[string]Check{
		"words -20 (640 of 1200 target)": {Name: "words", Penalty: 20, Detail: "640 of 1200 target"},
		"short_sections -7.4 (x)":        {Name: "short_sections", Penalty: 7.4, Detail: "x"},
		"meta -100":                      {Name: "meta", Penalty: 100},
	}
	for want, c := range cases {
		if got := c.String(); got != want {
			t.Errorf("got %q, want %q", got, want)
		}
	}
}

// TestMetaPhrases injects sentences into the last section of a good article:
// assistant talk must be rejected outright, ordinary prose must pass.
func TestMetaPhrases(t *testing.T) {
	g := newTestGate(t, Settings{ExtraPhrases: []string{"game changer", "[insert", "Sonuç olarak"}})
	en := baseArticle(t, "good_en_onboarding.json")
	tr := baseArticle(t, "good_tr_uzaktan.json")
	type where int
	const (
		middle where = iota // appended to section 3
		start               // prepended to section 1
		end                 // appended to the last section
		title               // the title
	)
	cases := []struct {
		text string
		at   where
		meta bool
	}{
		// English assistant talk.
		{"As an AI, I do not have personal experience with remote teams.", middle, true},
		{"As an AI language model, I can only offer general guidance here.", middle, true},
		{"Keep in mind that I'm just an AI and cannot judge your team.", middle, true},
		{"I cannot provide legal advice about employment contracts.", middle, true},
		{"I can't help with drafting the contract itself.", middle, true},
		{"I'm sorry, but I can only write about general practices.", middle, true},
		{"Here is the article you requested about onboarding.", middle, true},
		{"Here's the blog post, formatted in JSON.", middle, true},
		{"Certainly! Here is a detailed plan.", start, true},
		{"Sure, here's a ninety-day plan for your team.", start, true},
		{"Of course! Below is the article.", start, true},
		{"Absolutely! Remote onboarding deserves care.", start, true},
		{"Would you like me to add a checklist?", end, true},
		{"Let me know if you need a shorter version.", end, true},
		{"I hope this helps!", end, true},
		{"If you'd like, I can expand the section on buddies.", end, true},
		{"Is there anything else you would like to change?", end, true},
		{"CERTAINLY! HERE IS THE ARTICLE.", title, true},
		{"Word count: approximately 1,500 words.", end, true},
		{"This is a real game changer for new hires.", middle, true},
		{"Add a quote here [insert quote from a manager].", middle, true},
		// Turkish assistant talk, in any case.
		{"Bir yapay zeka olarak kişisel deneyimlerim yok.", middle, true},
		{"Bir dil modeli olarak bu konuda kesin bir şey söyleyemem.", middle, true},
		{"BİR YAPAY ZEKA OLARAK KİŞİSEL GÖRÜŞÜM YOK.", middle, true},
		{"Ben bir yapay zekayım ve yalnızca genel bilgi verebilirim.", middle, true},
		{"Yapay zeka olarak, bu konuda kesin bilgi veremem.", middle, true},
		{"Yapay zeka asistanı olarak size birkaç öneri sunabilirim.", middle, true},
		{"Elbette! İşte uzaktan çalışma hakkında istediğiniz makale.", start, true},
		{"Tabii ki, işte yazınız.", start, true},
		{"Bu yazıyı genişletmemi ister misiniz?", end, true},
		{"Devamını yazayım mı?", end, true},
		{"Başka bir şey var mı?", end, true},
		{"Başka bir şey ister misin?", end, true},
		{"Sormaktan çekinmeyin!", end, true},
		{"Umarım bu yardımcı olur!", end, true},
		{"SONUÇ OLARAK, düzen önemlidir.", middle, true},
		// Ordinary prose that must pass.
		{"I cannot stress enough how much a good buddy matters.", middle, false},
		{"I can't help but notice how quiet the first week is.", middle, false},
		{"I cannot help thinking that buddies matter most.", middle, false},
		{"The results were certainly better than the year before.", middle, false},
		{"As an AI researcher once told me, onboarding is a product.", middle, false},
		{"Of course, no checklist survives contact with a real team.", start, false},
		{"Here is a simple rule: keep the first task small.", middle, false},
		{"The bot replied \"I cannot help with that\" far too often.", middle, false},
		{"I hope this guide helps you plan the first week.", end, false},
		{"Daha verimli bir gün geçirmek ister misiniz? O zaman sabahları telefonu kapatın.", middle, false},
		{"Bu başka bir şey değil, dinlenmeye izin vermektir.", middle, false},
		{"Yapay zeka olarak adlandırılan sistemler hızla yayılıyor.", middle, false},
		{"Şirket geçen yıl bir yapay zeka modeli geliştirdi.", middle, false},
		{"Elbette her ekip farklıdır ve kurallar uyarlanmalıdır.", start, false},
		{"Ekibe asistan olarak katılan Ayşe ilk haftasında çok şey öğrendi.", middle, false},
	}
	for _, c := range cases {
		base := en
		if strings.ContainsAny(c.text, "ğışçöüİĞŞÇÖÜ") || strings.Contains(c.text, "Tabii") || strings.Contains(c.text, "yazayım") {
			base = tr
		}
		a := base.clone()
		switch c.at {
		case middle:
			a.Sections[2].Body += " " + c.text
		case start:
			a.Sections[0].Body = c.text + " " + a.Sections[0].Body
		case end:
			a.Sections[len(a.Sections)-1].Body += "\n\n" + c.text
		case title:
			a.Title = c.text
		}
		r := g.Evaluate(a.json(t), Spec{})
		_, hit := checkNamed(r, "meta")
		if hit != c.meta || r.Outright != c.meta {
			t.Errorf("%q: meta=%v outright=%v, want %v (%s)", c.text, hit, r.Outright, c.meta, r.Reasons())
		}
		if c.meta && r.Score != 0 {
			t.Errorf("%q: score %v, want 0 for an outright rejection", c.text, r.Score)
		}
	}
}

func TestPlaceholder(t *testing.T) {
	yes := []string{
		"Lorem ipsum dolor sit amet.", "According to [Insert statistic], most…", "Visit {{url}} today.",
		"Why <topic> matters", "TODO: add an example", "Call XXX for details", "[placeholder]",
		"See [Your Company Name] for more.", "[BURAYA GÖRSEL EKLEYİN]", "Ürün: [ürün adı]", "(insert chart here)",
		"LOREM IPSUM", "Contact [Name] today.",
	}
	no := []string{
		"A to-do list helps.", "Todo el mundo", "The XXL size sold out.", "See the chart below.",
		"Use <br> sparingly", "A [citation needed] tag", "Keep costs in {brackets} of ten.",
	}
	for _, s := range yes {
		if _, ok := placeholder(s); !ok {
			t.Errorf("%q: placeholder not found", s)
		}
	}
	for _, s := range no {
		if p, ok := placeholder(s); ok {
			t.Errorf("%q: false placeholder %q", s, p)
		}
	}
}

func TestRepetition(t *testing.T) {
	yes := []string{
		strings.Repeat("The cat sat on the warm mat. ", 3),
		"This is very very very very very important.",
		"and then we " + strings.Repeat("and then we ", 4) + "stopped",
		strings.Repeat("the best way to learn a new language is daily practice, said one teacher. Another added more. ", 5),
		strings.Repeat("Sulama çok önemlidir ve ihmal edilmemelidir. ", 3),
	}
	no := []string{
		"The cat sat on the mat. The dog sat on the mat. The bird sat on the fence.",
		"Very, very good. Really very good.",
		"no no no",
		"Step one. Step two. Step three. Step four. Step five.", // short sentences
	}
	for _, s := range yes {
		if _, ok := repetition(tokenize(s)); !ok {
			t.Errorf("%q: repetition not found", clip(s, 60))
		}
	}
	for _, s := range no {
		if d, ok := repetition(tokenize(s)); ok {
			t.Errorf("%q: false repetition %s", clip(s, 60), d)
		}
	}
}

func TestDuplicateThresholds(t *testing.T) {
	p := "Turning the pile with a garden fork every week or two moves material from the cooler edges into the warm centre and lets fresh air in for the microbes."
	cases := []struct {
		other string
		dup   bool
	}{
		{p, true},
		{strings.ToUpper(p), true}, // folded
		{strings.Replace(p, "garden fork", "pitchfork", 1), true},
		{p + " Do this gently so the heap does not collapse.", true}, // containment
		{"A broom handle pushed into the pile in several places lets air in too, without any heavy lifting or turning at all.", false},
	}
	for _, c := range cases {
		secs := []Section{{H2: "a", Body: p}, {H2: "b", Body: c.other}}
		got := findDuplicates(secs)
		if (len(got) > 0) != c.dup {
			t.Errorf("%q: duplicate=%v, want %v", clip(c.other, 50), len(got) > 0, c.dup)
		}
	}
}

// TestFold covers Turkish case folding and the token form.
func TestFold(t *testing.T) {
	// strings.ToLower gets Turkish dotless I wrong, so the gate folds
	// runes itself (foldRune).
	if strings.ToLower("IŞIK") == "ışık" {
		t.Error("strings.ToLower unexpectedly knows Turkish")
	}
	same := [][]string{
		{"İSTER MİSİNİZ", "ister misiniz", "ISTER MISINIZ", "ıster mısınız"},
		{"BAŞKA BİR ŞEY", "başka bir şey", "baska bir sey"},
		{"YAPAY ZEKÂ OLARAK", "yapay zeka olarak"},
		{"I\u0307STER", "ister"}, // decomposed İ
		{"Here\u2019s", "here's", "HERE'S"},
		{"ÇÖĞÜŞ", "cogus"},
	}
	for _, group := range same {
		want := fold(group[0])
		for _, s := range group[1:] {
			if got := fold(s); got != want {
				t.Errorf("fold(%q) = %q, want %q (as fold(%q))", s, got, want, group[0])
			}
		}
	}
	tokens := map[string]string{
		"Certainly!  Here’s the\narticle:": " certainly ! here's the article : ",
		"Elbette!!! İşte…":                 " elbette ! iste . ",
		"e-posta ve ChatGPT'nin":           " e-posta ve chatgpt'nin ",
		"  ":                               " ",
		"**Bold** — dash":                  " bold dash ",
	}
	for in, want := range tokens {
		if got := tokenize(in); got != want {
			t.Errorf("tokenize(%q) = %q, want %q", in, got, want)
		}
	}
	if n := countWords("Don't stop — e-posta, ChatGPT'nin 3,5 kat; **bold** 1.500 kelime. Sonra"); n != 10 {
		t.Errorf("countWords = %d, want 10", n)
	}
}

func TestLanguageDetection(t *testing.T) {
	en := baseArticle(t, "good_en_chatbots.json").Sections[1].Body
	tr := baseArticle(t, "good_tr_sohbetbotu.json").Sections[1].Body
	de := "Die Auswahl eines Chatbots für den Kundendienst ist keine leichte Aufgabe. Viele Anbieter versprechen " +
		"schnelle Antworten und zufriedene Kunden, doch die Wirklichkeit sieht oft anders aus. Bevor ein Unternehmen " +
		"sich entscheidet, sollte es die häufigsten Fragen seiner Kunden sammeln und prüfen, ob der Bot diese Fragen " +
		"zuverlässig beantworten kann. Dabei helfen echte Gespräche aus den letzten Monaten mehr als erfundene Beispiele."
	id := newLangID()
	cases := []struct {
		text string
		want Language
		in   bool
	}{
		{en, English, true}, {en, Turkish, false},
		{tr, Turkish, true}, {tr, English, false},
		{de, German, true}, {de, English, false}, {de, Dutch, false},
		{strings.Repeat("1 2 3 4 5 6 7 8 9 10 11 12 ", 20), English, true}, // nothing to judge
	}
	for _, c := range cases {
		if got := id.sectionIn(c.text, c.want); got != c.in {
			t.Errorf("%q in %s: %v, want %v (identified as %q)", clip(c.text, 40), c.want, got, c.in, id.identify(c.text))
		}
	}
	if got := id.identify("12345 67890 !!!"); got != "" {
		t.Errorf("digits identified as %q", got)
	}
}

func TestNewGate(t *testing.T) {
	if _, err := NewGate([]byte("{not json"), Settings{}); err == nil {
		t.Error("bad schema accepted")
	}
	if _, err := NewGate(nil, Settings{}); err == nil {
		t.Error("empty schema accepted")
	}
	if _, err := NewGate(readSchema(t), Settings{Threshold: 120}); err == nil {
		t.Error("threshold 120 accepted")
	}
	g := newTestGate(t, Settings{})
	if s := g.Settings(); s.Threshold != 70 || s.MinSections != 5 || s.MinSectionWords != 200 {
		t.Errorf("defaults: %+v", s)
	}
	// The threshold decides Pass.
	a := baseArticle(t, "good_en_fund.json")
	a.Sections[2].Body = firstWords(a.Sections[2].Body, 100) // short_sections -12
	strict := newTestGate(t, Settings{Threshold: 95})
	if r := strict.Evaluate(a.json(t), Spec{}); r.Pass || r.Score != 88 {
		t.Errorf("threshold 95: %+v", r.Checks)
	}
	if r := g.Evaluate(a.json(t), Spec{}); !r.Pass {
		t.Errorf("threshold 70: %s", r.Reasons())
	}
	lax := newTestGate(t, Settings{MinSections: 3, MinSectionWords: 50})
	if r := lax.Evaluate(a.json(t), Spec{}); !r.Pass || len(r.Checks) != 0 {
		t.Errorf("min sections 3: %s", r.Reasons())
	}
}

func TestLoadPhrases(t *testing.T) {
	in := "\uFEFF# banned\n\ngame changer\n  in today's fast-paced world  \n# another comment\nSonuç olarak\n"
	got, err := LoadPhrases(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"game changer", "in today's fast-paced world", "Sonuç olarak"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("got %q, want %q", got, want)
	}
	g := newTestGate(t, Settings{ExtraPhrases: got})
	a := baseArticle(t, "good_en_compost.json")
	a.Sections[1].Body = "In today's fast-paced   world, compost matters. " + a.Sections[1].Body
	if r := g.Evaluate(a.json(t), Spec{}); !r.Outright {
		t.Errorf("extra phrase not rejected: %s", r.Reasons())
	}
}

// TestConcurrentEvaluate runs the gate from many goroutines (go test -race)
// and compares with sequential results.
func TestConcurrentEvaluate(t *testing.T) {
	g := corpusGate(t)
	items := loadCorpus(t)
	want := make([]Result, len(items))
	for i, it := range items {
		want[i] = g.Evaluate(it.text, Spec{Language: it.lang, TargetWords: 1500})
	}
	var wg sync.WaitGroup
	errs := make(chan string, len(items)*4)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range items {
				it := items[(i+w*7)%len(items)]
				j := (i + w*7) % len(items)
				r := g.Evaluate(it.text, Spec{Language: it.lang, TargetWords: 1500})
				if r.Score != want[j].Score || r.Pass != want[j].Pass || r.Reasons() != want[j].Reasons() {
					errs <- it.name
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for name := range errs {
		t.Errorf("%s: concurrent result differs", name)
	}
}

package quality

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"unicode"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite testdata/golden.json from the current gate")

const goldenPath = "testdata/golden.json"

// goldenResult is what the golden file pins of one evaluation.
type goldenResult struct {
	Name     string  `json:"name"`
	Score    float64 `json:"score"`
	Pass     bool    `json:"pass"`
	Outright bool    `json:"outright"`
	Words    int     `json:"words"`
	Checks   []Check `json:"checks"`
}

// goldenCase is one input of the golden test.
type goldenCase struct {
	name string
	gate int // index into goldenGates
	text string
	spec Spec
}

// goldenGates are the gate settings the golden cases run under.
func goldenGates(t testing.TB) []*Gate {
	return []*Gate{
		corpusGate(t),
		newTestGate(t, Settings{Threshold: 60, MinSections: 7, MinSectionWords: 300,
			ExtraPhrases: []string{"game changer", "[insert", "Sonuç olarak", "in conclusion", "ÖNEMLİ", "—", "!!", "it's", "e-posta"}}),
	}
}

// simItem is one stored answer of the simulated providers (testdata/sim),
// with the spec of the job that asked for it.
type simItem struct {
	Language    string `json:"language"`
	TargetWords int    `json:"target_words"`
	Truncated   bool   `json:"truncated"`
	Text        string `json:"text"`
}

// goldenMetaTexts are inserted into good articles at every position.
var goldenMetaTexts = []string{
	"As an AI, I do not have personal experience with remote teams.",
	"As an AI language model, I can only offer general guidance here.",
	"Keep in mind that I'm just an AI and cannot judge your team.",
	"I cannot provide legal advice about employment contracts.",
	"I can't help with drafting the contract itself.",
	"I'm sorry, but I can only write about general practices.",
	"Here is the article you requested about onboarding.",
	"Here's the blog post, formatted in JSON.",
	"Certainly! Here is a detailed plan.",
	"Of course! Below is the article.",
	"Would you like me to add a checklist?",
	"Let me know if you need a shorter version.",
	"I hope this helps!",
	"If you'd like, I can expand the section on buddies.",
	"Is there anything else you would like to change?",
	"Word count: approximately 1,500 words.",
	"This is a real game changer for new hires.",
	"Add a quote here [insert quote from a manager].",
	"Bir yapay zeka olarak kişisel deneyimlerim yok.",
	"BİR YAPAY ZEKA OLARAK KİŞİSEL GÖRÜŞÜM YOK.",
	"Ben bir yapay zekayım ve yalnızca genel bilgi verebilirim.",
	"Yapay zeka asistanı olarak size birkaç öneri sunabilirim.",
	"Elbette! İşte uzaktan çalışma hakkında istediğiniz makale.",
	"Tabii ki, işte yazınız.",
	"Bu yazıyı genişletmemi ister misiniz?",
	"Devamını yazayım mı?",
	"Başka bir şey var mı?",
	"Sormaktan çekinmeyin!",
	"Umarım bu yardımcı olur!",
	"SONUÇ OLARAK, düzen önemlidir.",
	"I cannot stress enough how much a good buddy matters.",
	"I can't help but notice how quiet the first week is.",
	"As an AI researcher once told me, onboarding is a product.",
	"Of course, no checklist survives contact with a real team.",
	"The bot replied \"I cannot help with that\" far too often.",
	"Daha verimli bir gün geçirmek ister misiniz? O zaman sabahları telefonu kapatın.",
	"Yapay zeka olarak adlandırılan sistemler hızla yayılıyor.",
	"Elbette her ekip farklıdır ve kurallar uyarlanmalıdır.",
	"Sure, here's a ninety-day plan for your team.",
	"The model said “as an AI, I cannot help” and «I'm sorry, but no».",
}

// goldenNoise are fragments the random mutations sprinkle into text: marks
// the tokenizer treats specially, combining and invisible runes, Turkish
// capitals, markdown and placeholders.
var goldenNoise = []string{
	"…", "...", "!!", "?!", " - ", "-", "'", "’", " '", "\u0307", "\u00A0", "\u200B", "\uFEFF", "İ", "I", "ı",
	"Ş", "ğ", "Â", "**", "__", "`", "\n", "\n\n", "\r\n", " , ", ";", ":", " . ", "\"", "“", "”", "«", "»", "„",
	"[Insert source]", "<topic>", "{{url}}", "TODO", "XXX", "lorem ipsum", "(insert chart here)", "[ürün adı]",
	"3,5", "1.500", "e-posta", "ChatGPT'nin", "# ", "- ", "1. ", "> ", "| ", "ﬁ", "ß", "Σ", "ǅ", "\t",
}

// goldenCases builds the golden inputs: every corpus answer and every stored
// simulated answer under several specs and both gates, every good article
// with each meta text at each position, and seeded random mutations of the
// good articles (duplicates, loops, truncation, case, noise).
func goldenCases(t testing.TB) []goldenCase {
	var cs []goldenCase
	add := func(name string, gate int, text string, spec Spec) {
		cs = append(cs, goldenCase{name: fmt.Sprintf("g%d/%s", gate, name), gate: gate, text: text, spec: spec})
	}
	items := loadCorpus(t)
	var goods []corpusItem
	for _, it := range items {
		other := "tr"
		if it.lang == "tr" {
			other = "en"
		}
		for gi := range 2 {
			add("corpus/"+it.name+"/target", gi, it.text, Spec{Language: it.lang, TargetWords: 1500})
			add("corpus/"+it.name+"/plain", gi, it.text, Spec{})
			add("corpus/"+it.name+"/other", gi, it.text, Spec{Language: other, TargetWords: 2500, Truncated: true})
		}
		if !it.bad && strings.HasSuffix(it.name, ".json") {
			goods = append(goods, it)
		}
	}
	files, err := filepath.Glob(filepath.Join("testdata", "sim", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var s simItem
		if err := json.Unmarshal(b, &s); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for gi := range 2 {
			add("sim/"+filepath.Base(f), gi, s.Text, Spec{Language: s.Language, TargetWords: s.TargetWords, Truncated: s.Truncated})
		}
	}
	articles := make([]Article, len(goods))
	for i, it := range goods {
		if err := json.Unmarshal([]byte(it.text), &articles[i]); err != nil {
			t.Fatalf("%s: %v", it.name, err)
		}
	}
	enc := func(a Article) string {
		var buf bytes.Buffer
		e := json.NewEncoder(&buf)
		e.SetEscapeHTML(false)
		if err := e.Encode(a); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	// Meta texts at each position, in one English and one Turkish article.
	for mi, m := range goldenMetaTexts {
		for bi, base := range []int{0, len(articles) - 1} {
			for pos := range 4 {
				a := articles[base].clone()
				switch pos {
				case 0:
					a.Sections[2].Body += " " + m
				case 1:
					a.Sections[0].Body = m + " " + a.Sections[0].Body
				case 2:
					a.Sections[len(a.Sections)-1].Body += "\n\n" + m
				case 3:
					a.Title = m
				}
				add(fmt.Sprintf("meta/%02d/%d/%d", mi, bi, pos), (mi+pos)%2, enc(a), Spec{Language: goods[base].lang})
			}
		}
	}
	// Seeded random mutations.
	rng := rand.New(rand.NewPCG(20250101, 7))
	for n := range 400 {
		bi := rng.IntN(len(articles))
		a := articles[bi].clone()
		ops := 1 + rng.IntN(3)
		var desc []string
		truncateRaw := false
		for range ops {
			op := rng.IntN(13)
			desc = append(desc, fmt.Sprint(op))
			si := rng.IntN(len(a.Sections))
			s := &a.Sections[si]
			ps := paragraphs(s.Body)
			if len(ps) == 0 || len(strings.Fields(ps[0])) == 0 {
				continue
			}
			switch op {
			case 0: // exact duplicate paragraph elsewhere
				p := ps[rng.IntN(len(ps))]
				d := &a.Sections[rng.IntN(len(a.Sections))]
				d.Body += "\n\n" + p
			case 1: // near duplicate: some words replaced, a clause added
				ws := strings.Fields(ps[rng.IntN(len(ps))])
				for k := 0; len(ws) > 0 && k < 1+rng.IntN(max(1, len(ws)/5)); k++ {
					ws[rng.IntN(len(ws))] = "changed"
				}
				d := &a.Sections[rng.IntN(len(a.Sections))]
				d.Body += "\n\n" + strings.Join(ws, " ") + " It really is that simple."
			case 2: // a sentence loop
				sent := firstWords(ps[rng.IntN(len(ps))], 5+rng.IntN(10))
				s.Body += " " + strings.Repeat(sent+" ", 2+rng.IntN(3))
			case 3: // a k-gram run
				ws := strings.Fields(ps[0])
				k := 1 + rng.IntN(6)
				if k > len(ws) {
					k = len(ws)
				}
				i := rng.IntN(len(ws) - k + 1)
				s.Body += " " + strings.Repeat(strings.Join(ws[i:i+k], " ")+" ", 3+rng.IntN(4)) + "end."
			case 4: // cut the last body mid-sentence
				last := &a.Sections[len(a.Sections)-1]
				r := []rune(last.Body)
				last.Body = string(r[:rng.IntN(len(r))])
			case 5: // Turkish upper case
				s.Body = strings.ToUpperSpecial(unicode.TurkishCase, s.Body)
			case 6: // strip diacritics
				s.Body = strings.NewReplacer("ş", "s", "ğ", "g", "ı", "i", "ç", "c", "ö", "o", "ü", "u", "İ", "I").Replace(s.Body)
			case 7: // a section from another article
				o := articles[rng.IntN(len(articles))]
				*s = o.Sections[rng.IntN(len(o.Sections))]
			case 8: // a heading repeated
				s.H2 = strings.ToUpper(a.Sections[rng.IntN(len(a.Sections))].H2) + "!"
			case 9: // noise sprinkled over the body
				r := []rune(s.Body)
				var b strings.Builder
				for i, c := range r {
					if rng.IntN(25) == 0 {
						b.WriteString(goldenNoise[rng.IntN(len(goldenNoise))])
					}
					b.WriteRune(c)
					_ = i
				}
				s.Body = b.String()
			case 10: // a meta text at a random place
				m := goldenMetaTexts[rng.IntN(len(goldenMetaTexts))]
				i := rng.IntN(len(s.Body) + 1)
				for i < len(s.Body) && !strings.HasPrefix(s.Body[i:], " ") {
					i++
				}
				s.Body = s.Body[:i] + " " + m + s.Body[i:]
			case 11: // sections dropped or bodies shortened
				if rng.IntN(2) == 0 && len(a.Sections) > 1 {
					a.Sections = a.Sections[:1+rng.IntN(len(a.Sections)-1)]
				} else {
					s.Body = firstWords(s.Body, 20+rng.IntN(200))
				}
			case 12: // the raw JSON cut off
				truncateRaw = true
			}
		}
		text := enc(a)
		if truncateRaw {
			text = text[:len(text)/2+rng.IntN(len(text)/2)]
		}
		spec := Spec{Language: goods[bi].lang, TargetWords: []int{0, 800, 1500, 2000}[rng.IntN(4)], Truncated: rng.IntN(8) == 0}
		if rng.IntN(6) == 0 {
			spec.Language = []string{"", "de", "EN-us", "tr_TR"}[rng.IntN(4)]
		}
		add(fmt.Sprintf("rand/%03d/%s/%s", n, goods[bi].name, strings.Join(desc, ",")), rng.IntN(2), text, spec)
	}
	return cs
}

// TestGolden holds Evaluate to the results recorded in testdata/golden.json
// (run with -update-golden to record them): score, verdict, word count and
// every check with its penalty and detail must be identical.
func TestGolden(t *testing.T) {
	gates := goldenGates(t)
	cases := goldenCases(t)
	got := make([]goldenResult, len(cases))
	for i, c := range cases {
		r := gates[c.gate].Evaluate(c.text, c.spec)
		got[i] = goldenResult{Name: c.name, Score: r.Score, Pass: r.Pass, Outright: r.Outright, Words: r.Words, Checks: r.Checks}
	}
	if *updateGolden {
		b, err := json.MarshalIndent(got, "", " ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(goldenPath, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote %d results to %s", len(got), goldenPath)
		return
	}
	b, err := os.ReadFile(goldenPath)
	if err != nil {
		t.Fatalf("read golden (record it with -update-golden): %v", err)
	}
	var want []goldenResult
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(got) {
		t.Fatalf("%d golden results, %d cases", len(want), len(got))
	}
	bad := 0
	for i := range got {
		g, w := got[i], want[i]
		if g.Name != w.Name {
			t.Fatalf("case %d is %q, golden has %q", i, g.Name, w.Name)
		}
		gj, _ := json.Marshal(g)
		wj, _ := json.Marshal(w)
		if !bytes.Equal(gj, wj) {
			bad++
			if bad <= 20 {
				t.Errorf("%s:\n got %s\nwant %s", g.Name, gj, wj)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d results differ from the golden file", bad, len(got))
	}
	// The golden set must exercise every check, or it proves little.
	seen := map[CheckName]bool{}
	for _, w := range want {
		for _, c := range w.Checks {
			seen[c.Name] = true
		}
	}
	for _, name := range []CheckName{"schema", "parse", "meta", "words", "sections", "short_sections", "headings", "duplicates", "language", "truncated", "placeholder", "repetition"} {
		if !seen[name] {
			t.Errorf("no golden case trips the %q check", name)
		}
	}
}

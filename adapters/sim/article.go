package sim

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// brief is what the prompt contract (see the prompts package's templates)
// tells the simulated model about the article to write.
type brief struct {
	title, category string
	keywords        []string
	lang            string
	target          int // target words
	minSections     int
	minSectionWords int
	health          bool // a `Health check:` prompt
}

// parseBrief reads the contract lines, each at the start of a line:
// Title:, Category:, Keywords:, Language:, Target words:, Min sections:,
// Min section words:, and `Health check:`. The first occurrence wins.
func parseBrief(text string) brief {
	var b brief
	seen := map[string]bool{}
	for _, raw := range strings.Split(text, "\n") {
		line := strings.TrimSpace(raw)
		if strings.HasPrefix(line, "Health check:") {
			b.health = true
			continue
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok || seen[key] {
			continue
		}
		val = strings.TrimSpace(val)
		num, _ := strconv.Atoi(strings.Fields(val + " 0")[0])
		switch key {
		case "Title":
			b.title = val
		case "Category":
			b.category = val
		case "Keywords":
			for _, k := range strings.Split(val, ",") {
				if k = strings.TrimSpace(k); k != "" {
					b.keywords = append(b.keywords, k)
				}
			}
		case "Language":
			b.lang = strings.ToLower(val)
		case "Target words":
			b.target = num
		case "Min sections":
			b.minSections = num
		case "Min section words":
			b.minSectionWords = num
		default:
			continue
		}
		seen[key] = true
	}
	return b
}

// bank is one language's sentence material. See bank_en.go for the slots.
type bank struct {
	lang        string
	defCategory string
	intro       []string // the article's first sentence; each names {T}
	openers     []string // more sentences for the first paragraph
	closing     []string // sentences ending the last section
	whole       []string // standalone sentences, used at most once an article
	subjects    []string // combined with predicates (3rd person singular)
	predicates  []string
	transitions []string
	introHeads  []string
	bodyHeads   []string
	endHeads    []string
	metaOpen    string
	metaClose   string
	proseLead   string
}

// bankFor returns the bank of lang: Turkish for "tr…", English otherwise
// (other languages are answered in English, which the gate will catch).
func bankFor(lang string) *bank {
	if strings.HasPrefix(lang, "tr") {
		return &bankTR
	}
	return &bankEN
}

func upperFirst(s, lang string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	if lang == "tr" {
		return string(unicode.TurkishCase.ToUpper(r)) + s[n:]
	}
	return string(unicode.ToUpper(r)) + s[n:]
}

func lowerFirst(s, lang string) string {
	r, n := utf8.DecodeRuneInString(s)
	if n == 0 {
		return s
	}
	if lang == "tr" {
		return string(unicode.TurkishCase.ToLower(r)) + s[n:]
	}
	return string(unicode.ToLower(r)) + s[n:]
}

// countWords is len(strings.Fields(s)) without building the slice: the
// simulator counts the words of every paragraph it writes.
func countWords(s string) int {
	n, in := 0, false
	for i := 0; i < len(s); {
		var space bool
		if c := s[i]; c < utf8.RuneSelf {
			space = c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
			i++
		} else {
			r, size := utf8.DecodeRuneInString(s[i:])
			space = unicode.IsSpace(r)
			i += size
		}
		if !space && !in {
			n++
		}
		in = !space
	}
	return n
}

// deck deals a list's items in a shuffled order; once dealt out it either
// reshuffles (cycle) or reports exhaustion.
type deck struct {
	items []string
	order []int
	pos   int
}

func newDeck(items []string, rng *rand.Rand) *deck {
	return &deck{items: items, order: rng.Perm(len(items))}
}

func (d *deck) empty() bool { return d.pos >= len(d.order) }

func (d *deck) next(rng *rand.Rand) string {
	if d.empty() {
		d.order, d.pos = rng.Perm(len(d.items)), 0
	}
	d.pos++
	return d.items[d.order[d.pos-1]]
}

// generator writes the articles of one request.
type generator struct {
	b     brief
	bank  *bank
	rng   *rand.Rand
	kw    int
	whole *deck
	subj  *deck
	pred  *deck
	trans *deck
}

func newGenerator(b brief, rng *rand.Rand) *generator {
	bk := bankFor(b.lang)
	if b.title == "" {
		b.title = "Untitled"
	}
	if b.category == "" {
		b.category = bk.defCategory
	}
	if len(b.keywords) == 0 {
		b.keywords = []string{b.title}
	}
	if b.target <= 0 {
		b.target = 1000
	}
	if b.minSections <= 0 {
		b.minSections = 4
	}
	if b.minSectionWords <= 0 {
		b.minSectionWords = 120
	}
	b.lang = bk.lang
	return &generator{
		b: b, bank: bk, rng: rng, kw: rng.IntN(len(b.keywords)),
		whole: newDeck(bk.whole, rng),
		subj:  newDeck(bk.subjects, rng),
		pred:  newDeck(bk.predicates, rng),
		trans: newDeck(bk.transitions, rng),
	}
}

// fill replaces the slots of tpl. Keywords are dealt round-robin so that
// every keyword appears in a long enough text.
func (g *generator) fill(tpl string) string {
	if strings.Contains(tpl, "{K") {
		n := len(g.b.keywords)
		k1 := g.b.keywords[g.kw%n]
		k2 := g.b.keywords[(g.kw+1)%n]
		if n == 1 {
			k2 = g.b.category
		}
		g.kw++
		tpl = strings.ReplaceAll(tpl, "{K2}", k2)
		tpl = strings.ReplaceAll(tpl, "{K}", k1)
	}
	tpl = strings.ReplaceAll(tpl, "{T}", g.b.title)
	return strings.ReplaceAll(tpl, "{C}", g.b.category)
}

// sentence writes one new sentence: a standalone one while they last, or a
// subject + predicate combination, sometimes after a transition.
func (g *generator) sentence() string {
	var tpl, s string
	if !g.whole.empty() && g.rng.IntN(100) < 55 {
		tpl = g.whole.next(g.rng)
		s = g.fill(tpl)
	} else {
		tpl = g.subj.next(g.rng)
		s = g.fill(tpl) + " " + g.fill(g.pred.next(g.rng))
	}
	if !strings.HasPrefix(tpl, "{") && g.rng.IntN(100) < 22 {
		return g.trans.next(g.rng) + " " + lowerFirst(s, g.b.lang)
	}
	return upperFirst(s, g.b.lang)
}

// paragraph writes sentences after lead until the paragraph has at least
// goal words, then appends tail. It returns the paragraph and its words
// (the parts' words: a space between two parts never joins two words).
func (g *generator) paragraph(goal int, lead, tail []string) (string, int) {
	var parts []string
	words := 0
	for _, s := range lead {
		s = upperFirst(g.fill(s), g.b.lang)
		parts = append(parts, s)
		words += countWords(s)
	}
	var end []string
	for _, s := range tail {
		s = upperFirst(g.fill(s), g.b.lang)
		end = append(end, s)
		words += countWords(s)
	}
	for words < goal || len(parts)+len(end) < 2 {
		s := g.sentence()
		parts = append(parts, s)
		words += countWords(s)
	}
	return strings.Join(append(parts, end...), " "), words
}

// articleJSON is the answer shape of data/article.schema.json.
type articleJSON struct {
	Title    string        `json:"title"`
	Sections []sectionJSON `json:"sections"`
}

type sectionJSON struct {
	H2   string `json:"h2"`
	Body string `json:"body"`
}

// headings picks n distinct headings: an opening one, body ones, a closing one.
func (g *generator) headings(n int) []string {
	bk := g.bank
	out := []string{bk.introHeads[g.rng.IntN(len(bk.introHeads))]}
	body := newDeck(bk.bodyHeads, g.rng)
	for len(out) < n-1 {
		out = append(out, body.next(g.rng))
	}
	out = append(out, bk.endHeads[g.rng.IntN(len(bk.endHeads))])
	for i, h := range out {
		out[i] = upperFirst(g.fill(h), g.b.lang)
	}
	return out
}

// article writes a full article. A normal one reaches 101-108% of the
// target words; a thin one (smaller model) 83-86%, never under the section
// minimums.
func (g *generator) article(thin bool) articleJSON {
	b := g.b
	n := max(b.minSections, 3)
	floor := b.minSectionWords*105/100 + 5
	pct := 101 + g.rng.IntN(8)
	if thin {
		pct = 83 + g.rng.IntN(3)
	} else if g.rng.IntN(2) == 0 && b.target/(n+1) >= floor {
		n++
	}
	goal := b.target * pct / 100
	heads := g.headings(n)
	art := articleJSON{Title: b.title}
	written := 0
	for i := range n {
		secGoal := max(floor, (goal-written+(n-i)-1)/(n-i))
		body, words := g.section(i, n, secGoal)
		written += words
		art.Sections = append(art.Sections, sectionJSON{H2: heads[i], Body: body})
	}
	return art
}

// section writes section i of n with about goal words in one to four
// paragraphs; the first opens the article, the last closes it. It returns
// the section's body and its words.
func (g *generator) section(i, n, goal int) (string, int) {
	p := min(max(goal/95, 1), 4)
	bk := g.bank
	var paras []string
	words := 0
	for j := range p {
		var lead, tail []string
		if i == 0 && j == 0 {
			lead = []string{bk.intro[g.rng.IntN(len(bk.intro))], bk.openers[g.rng.IntN(len(bk.openers))]}
		}
		if i == n-1 && j == p-1 {
			c := newDeck(bk.closing, g.rng)
			tail = []string{c.next(g.rng), c.next(g.rng)}
		}
		para, pw := g.paragraph((goal-words+(p-j)-1)/(p-j), lead, tail)
		words += pw
		paras = append(paras, para)
	}
	return strings.Join(paras, "\n\n"), words
}

// lowQuality writes a schema-valid but thin article: two or three short
// sections of one short paragraph each.
func (g *generator) lowQuality() articleJSON {
	n := 2 + g.rng.IntN(2)
	heads := g.headings(n)
	art := articleJSON{Title: g.b.title}
	for i := range n {
		body, _ := g.paragraph(20+g.rng.IntN(20), nil, nil)
		art.Sections = append(art.Sections, sectionJSON{H2: heads[i], Body: body})
	}
	return art
}

// withMeta writes a good article carrying the assistant's chat framing: an
// opener at the start of the first body, or a closer at the end of the last.
func (g *generator) withMeta(thin, opener bool) articleJSON {
	art := g.article(thin)
	if opener {
		art.Sections[0].Body = g.fill(g.bank.metaOpen) + "\n\n" + art.Sections[0].Body
	} else {
		last := &art.Sections[len(art.Sections)-1]
		last.Body += "\n\n" + g.bank.metaClose
	}
	return art
}

// badJSON writes an answer that does not satisfy the schema: 0 markdown
// prose, 1 JSON of the wrong shape, 2 JSON with a syntax error.
func (g *generator) badJSON(variant int) string {
	art := g.article(false)
	switch variant {
	case 0:
		var sb strings.Builder
		sb.WriteString(g.fill(g.bank.proseLead) + "\n\n# " + art.Title + "\n")
		for _, s := range art.Sections {
			sb.WriteString("\n## " + s.H2 + "\n\n" + s.Body + "\n")
		}
		return sb.String()
	case 1:
		var bodies []string
		for _, s := range art.Sections {
			bodies = append(bodies, s.Body)
		}
		type wrong struct {
			Heading string `json:"heading"`
			Content string `json:"content"`
		}
		return string(marshal(map[string]wrong{"article": {Heading: art.Title, Content: strings.Join(bodies, "\n\n")}}, true))
	}
	s := string(marshal(art, true))
	// A trailing comma after the last section, as models sometimes write.
	i := strings.LastIndex(s, "}")     // end of the object
	j := strings.LastIndex(s[:i], "}") // end of the last section
	return s[:j+1] + "," + s[j+1:]
}

// encodeArticle renders the article as a model would: indented JSON,
// optionally inside a ```json fence.
func encodeArticle(a articleJSON, fence bool) string {
	s := string(marshal(a, true))
	if fence {
		return "```json\n" + s + "\n```"
	}
	return s
}

// thoughtSummary is the Gemini thought part sent when includeThoughts is on.
func thoughtSummary(b brief) string {
	return "**Planning the article structure**\n\nI'm outlining the sections for “" + b.title +
		"”, making sure each one is long enough and that the answer is only the JSON object the schema asks for."
}

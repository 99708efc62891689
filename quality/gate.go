package quality

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/xeipuuv/gojsonschema"
)

// Settings are the gate's knobs (config `quality:`). The zero value of each
// field selects its documented default.
type Settings struct {
	Threshold       float64  // pass mark 0..100; 0 means 70
	MinSections     int      // sections required; 0 means 5 (never fewer than 3 are accepted)
	MinSectionWords int      // words per section; 0 means 200
	ExtraPhrases    []string // more banned phrases (banned_phrases_file), rejected outright like meta phrases
}

// Spec is what one job asked for.
type Spec struct {
	Language    string // "en", "tr", …; "" or a language without a detector: not checked
	TargetWords int    // 0: the words check is skipped
	Truncated   bool   // the provider said the answer hit its length limit
}

// Article is the article JSON of data/article.schema.json.
type Article struct {
	Title    string    `json:"title"`
	Sections []Section `json:"sections"`
}

// Section is one h2 section of an Article.
type Section struct {
	H2   string `json:"h2"`
	Body string `json:"body"`
}

// Check is one check that cost the candidate points.
type Check struct {
	Name    string  // check name: schema, parse, meta, words, sections, short_sections, headings, duplicates, language, truncated, placeholder, repetition
	Penalty float64 // points taken off (100 for an outright rejection)
	Detail  string  // what was found, for humans
}

// String formats the check as `words -20 (640 of 1200 target)`.
func (c Check) String() string {
	s := c.Name + " -" + strconv.FormatFloat(c.Penalty, 'f', -1, 64)
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// Result is the gate's verdict on one candidate.
type Result struct {
	Score    float64  // 0..100
	Pass     bool     // !Outright && Score >= Threshold
	Outright bool     // rejected regardless of score: unparseable, schema failure, meta or banned phrase
	Checks   []Check  // only the checks that cost points, in a fixed order
	Article  *Article // the parsed article; nil when unparseable
	Words    int      // words in the section bodies
}

// Reasons joins the checks for logs and the review queue, "" when none.
func (r Result) Reasons() string {
	parts := make([]string, len(r.Checks))
	for i, c := range r.Checks {
		parts[i] = c.String()
	}
	return strings.Join(parts, "; ")
}

// Gate scores candidates. It is immutable after NewGate and safe for
// concurrent use.
type Gate struct {
	schema *gojsonschema.Schema
	s      Settings
	extra  []phrase
	fast   bool // schema is articleSchema: articleDocValid may answer first
}

// NewGate compiles the article schema (draft-07 JSON, see
// data/article.schema.json) once and returns a gate with the settings'
// defaults filled in.
func NewGate(schemaJSON []byte, s Settings) (*Gate, error) {
	if len(strings.TrimSpace(string(schemaJSON))) == 0 {
		return nil, errors.New("compile schema: empty schema")
	}
	sc, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	if s.Threshold == 0 {
		s.Threshold = 70
	}
	if s.Threshold < 0 || s.Threshold > 100 || math.IsNaN(s.Threshold) {
		return nil, fmt.Errorf("quality settings: threshold %v outside 0..100", s.Threshold)
	}
	if s.MinSections <= 0 {
		s.MinSections = 5
	}
	if s.MinSectionWords <= 0 {
		s.MinSectionWords = 200
	}
	g := &Gate{schema: sc, s: s, fast: isArticleSchema(schemaJSON)}
	for _, p := range s.ExtraPhrases {
		if ph, ok := compilePhrase(p); ok {
			g.extra = append(g.extra, ph)
		}
	}
	return g, nil
}

// Settings returns the gate's settings with the defaults filled in.
func (g *Gate) Settings() Settings { return g.s }

// Penalties (see the table in the package documentation).
const (
	outrightPenalty   = 100
	wordsMaxPenalty   = 60
	fewSectionsPen    = 50 // fewer than 3 sections
	missingSectionPen = 12 // per section below MinSections
	shortSectionBase  = 4  // per short section ...
	shortSectionScale = 16 // ... plus this times its shortfall share
	shortSectionsMax  = 48
	dupHeadingPen     = 10
	dupHeadingMax     = 20
	dupParagraphPen   = 35
	dupParagraphMax   = 70
	wrongLangPen      = 70 // the whole article
	wrongLangSecPen   = 35 // per section
	truncFlagPen      = 50 // provider reported truncation, or JSON recovered
	truncTextPen      = 35 // text ends mid-sentence
	placeholderPen    = 60
	repetitionPen     = 50
)

// Evaluate scores one provider answer against the spec. It never panics and
// does bounded work on any input.
func (g *Gate) Evaluate(text string, spec Spec) Result {
	var res Result
	x := extract(text)
	if x.err != nil {
		return g.finish(res, Check{"parse", outrightPenalty, x.err.Error()}, true)
	}
	docs := [][]byte{x.raw}
	if x.raw == nil {
		docs = x.repaired
	}
	var (
		art     *Article
		schemaE string
	)
	for _, doc := range docs {
		errs, err := g.validate(doc)
		if err != nil {
			if schemaE == "" {
				schemaE = err.Error()
			}
			continue
		}
		if len(errs) > 0 {
			if schemaE == "" {
				schemaE = strings.Join(errs, "; ")
				var a Article
				if json.Unmarshal(doc, &a) == nil {
					res.Article = &a
				}
			}
			continue
		}
		var a Article
		if err := json.Unmarshal(doc, &a); err != nil {
			if schemaE == "" {
				schemaE = "decode: " + err.Error()
			}
			continue
		}
		art = &a
		break
	}
	if art == nil {
		if res.Article != nil {
			res.Words = bodyWords(res.Article)
		}
		return g.finish(res, Check{"schema", outrightPenalty, clip(schemaE, 200)}, true)
	}
	res.Article = art
	return g.score(res, spec, x.raw == nil)
}

// validate runs the schema and returns its error lines (at most three).
func (g *Gate) validate(doc []byte) ([]string, error) {
	if g.fast && articleDocValid(doc) {
		return nil, nil
	}
	r, err := g.schema.Validate(gojsonschema.NewBytesLoader(doc))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	if r.Valid() {
		return nil, nil
	}
	// gojsonschema reports in map order; sort for a stable detail.
	all := make([]string, 0, len(r.Errors()))
	for _, e := range r.Errors() {
		all = append(all, e.String())
	}
	sort.Strings(all)
	out := all
	if len(all) > 3 {
		out = append(all[:3:3], fmt.Sprintf("and %d more", len(all)-3))
	}
	return out, nil
}

func bodyWords(a *Article) int {
	n := 0
	for _, s := range a.Sections {
		n += countWords(s.Body)
	}
	return n
}

// finish adds c and computes the score and verdict.
func (g *Gate) finish(res Result, c Check, outright bool) Result {
	res.Checks = append(res.Checks, c)
	res.Outright = res.Outright || outright
	return g.verdict(res)
}

func (g *Gate) verdict(res Result) Result {
	total := 0.0
	for _, c := range res.Checks {
		total += c.Penalty
	}
	res.Score = math.Round(math.Max(0, 100-total)*10) / 10
	if res.Outright {
		res.Score = 0
	}
	res.Pass = !res.Outright && res.Score >= g.s.Threshold
	return res
}

// score runs every check on a schema-valid article and sets res.Words.
func (g *Gate) score(res Result, spec Spec, recovered bool) Result {
	a := res.Article
	an := analysisPool.Get().(*analysis)
	defer func() {
		an.text, an.fields = "", an.fields[:0] // drop references to this article
		analysisPool.Put(an)
	}()
	an.analyze(a)
	res.Words = 0
	for _, b := range an.bodies {
		res.Words += b.count
	}
	add := func(name string, pen float64, detail string) {
		if pen > 0 {
			res.Checks = append(res.Checks, Check{Name: name, Penalty: math.Round(pen*10) / 10, Detail: detail})
		}
	}
	fields := an.fields
	lastBody := ""
	lastMeta := ""
	if n := len(a.Sections); n > 0 {
		lastBody = a.Sections[n-1].Body
		lastMeta = fields[len(fields)-1].meta
	} else {
		lastMeta = tokenize(stripQuotes(lastBody))
	}

	// Meta phrases: outright.
	if hit, ok := g.findMeta(fields, lastMeta, an); ok {
		res.Outright = true
		add("meta", outrightPenalty, fmt.Sprintf("%q in %s: %q", hit.name, hit.where, strings.TrimSpace(hit.excerpt)))
	}

	// Words vs 80 % of the target.
	if spec.TargetWords > 0 {
		floor := 0.8 * float64(spec.TargetWords)
		if w := float64(res.Words); w < floor {
			pen := math.Min(wordsMaxPenalty, 100*(1-w/floor))
			add("words", pen, strconv.Itoa(res.Words)+" of "+strconv.Itoa(spec.TargetWords)+" target")
		}
	}

	// Sections.
	n := len(a.Sections)
	switch {
	case n < 3:
		add("sections", fewSectionsPen, strconv.Itoa(n)+" sections, need at least 3")
	case n < g.s.MinSections:
		add("sections", float64(missingSectionPen*(g.s.MinSections-n)), strconv.Itoa(n)+" of "+strconv.Itoa(g.s.MinSections)+" sections")
	}

	// Short sections.
	var short []string
	shortPen := 0.0
	for i, b := range an.bodies {
		if w := b.count; w < g.s.MinSectionWords {
			shortPen += shortSectionBase + shortSectionScale*(1-float64(w)/float64(g.s.MinSectionWords))
			short = append(short, "#"+strconv.Itoa(i+1)+" "+strconv.Itoa(w))
		}
	}
	if len(short) > 0 {
		add("short_sections", math.Min(shortSectionsMax, shortPen),
			strconv.Itoa(len(short))+" under "+strconv.Itoa(g.s.MinSectionWords)+" words: "+strings.Join(short, ", "))
	}

	// Headings repeated.
	seen := map[string]int{}
	var dupH []string
	for i := range a.Sections {
		k := headingKey(fields[1+2*i].tokens)
		if k == "" {
			continue
		}
		if j, ok := seen[k]; ok {
			dupH = append(dupH, "#"+strconv.Itoa(i+1)+" = #"+strconv.Itoa(j))
			continue
		}
		seen[k] = i + 1
	}
	if len(dupH) > 0 {
		add("headings", math.Min(dupHeadingMax, float64(dupHeadingPen*len(dupH))), "repeated heading "+strings.Join(dupH, ", "))
	}

	// Duplicated and near-duplicated paragraphs.
	if d := an.duplicates(a.Sections); len(d) > 0 {
		parts := make([]string, 0, 3)
		for i, f := range d {
			if i == 3 {
				parts = append(parts, "and "+strconv.Itoa(len(d)-3)+" more")
				break
			}
			parts = append(parts, f.String())
		}
		add("duplicates", math.Min(dupParagraphMax, float64(dupParagraphPen*len(d))), strings.Join(parts, "; "))
	}

	// Language.
	if lang := normLang(spec.Language); lang != "" {
		var wrong []string
		judged := 0
		var words, en, tr, letters, special int
		for i, b := range an.bodies {
			nw := b.to - b.from
			words, en, tr, letters, special = words+nw, en+b.en, tr+b.tr, letters+b.letters, special+b.special
			if m, ok := judgeLang(signal(nw, b.en, b.tr, b.letters, b.special), lang); ok {
				judged++
				if !m {
					wrong = append(wrong, "#"+strconv.Itoa(i+1))
				}
			}
		}
		m, ok := judgeLang(signal(words, en, tr, letters, special), lang)
		switch {
		case ok && !m || judged > 0 && len(wrong) == judged:
			add("language", wrongLangPen, "article is not in "+strconv.Quote(lang))
		case len(wrong) > 0:
			add("language", math.Min(wrongLangPen, float64(wrongLangSecPen*len(wrong))),
				"sections not in "+strconv.Quote(lang)+": "+strings.Join(wrong, ", "))
		}
	}

	// Truncation.
	var tr []string
	trPen := 0.0
	if spec.Truncated {
		tr, trPen = append(tr, "provider reported truncation"), truncFlagPen
	}
	if recovered {
		tr, trPen = append(tr, "unbalanced JSON recovered"), truncFlagPen
	}
	if tail, cut := endsMidSentence(lastBody); cut {
		tr = append(tr, "ends mid-sentence: "+strconv.Quote(tail))
		trPen = math.Max(trPen, truncTextPen)
	}
	if len(tr) > 0 {
		add("truncated", trPen, strings.Join(tr, "; "))
	}

	// Placeholders.
	var ph []string
	for _, f := range fields {
		if p, ok := fieldPlaceholder(f); ok {
			ph = append(ph, strconv.Quote(p)+" in "+f.where())
			if len(ph) == 3 {
				break
			}
		}
	}
	if len(ph) > 0 {
		add("placeholder", placeholderPen, strings.Join(ph, "; "))
	}

	// Degenerate repetition over the whole body text.
	if d, ok := an.repetition(); ok {
		add("repetition", repetitionPen, d)
	}
	return g.verdict(res)
}

// headingKey is a heading's words joined by spaces (strings.Join(words(h),
// " ")), from its tokens.
func headingKey(tokens string) string {
	t := strings.TrimSpace(tokens)
	if !strings.ContainsAny(t, ".,!?:;") {
		return t
	}
	var b strings.Builder
	for _, w := range strings.Fields(t) {
		if markCode(w) < 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	return b.String()
}

// fieldPlaceholder is placeholder(f.text), skipped when the field holds
// nothing that could match.
func fieldPlaceholder(f field) (string, bool) {
	if f.seen&seenPlaceholder == 0 && !strings.Contains(f.tokens, "lorem ipsum") &&
		!strings.Contains(f.text, "TODO") && !strings.Contains(f.text, "FIXME") &&
		!strings.Contains(f.text, "XXX") && !strings.Contains(f.text, "PLACEHOLDER") {
		return "", false
	}
	return placeholder(f.text)
}

// listItem matches a markdown list item, heading, table row or quote line.
var listItem = regexp.MustCompile(`^\s*(?:[-*+•>|#]|\d{1,3}[.)])\s*`)

// endsMidSentence reports whether body stops in the middle of a sentence:
// its last character is not a sentence end (. ! ? …, possibly inside quotes,
// brackets or markdown emphasis) and its last line is not a list item, a
// heading or a table row. It returns the last words for the detail.
func endsMidSentence(body string) (string, bool) {
	t := strings.TrimRightFunc(body, unicode.IsSpace)
	if t == "" {
		return "", false
	}
	lastLine := t
	if i := strings.LastIndexByte(t, '\n'); i >= 0 {
		lastLine = t[i+1:]
	}
	core := strings.TrimRight(t, "*_~`\"'”’»)]}")
	if core == "" {
		return "", false
	}
	r, _ := utf8.DecodeLastRuneInString(core)
	switch r {
	case '.', '!', '?', '…', '。', '؟':
		return "", false
	}
	if listItem.MatchString(lastLine) && r != ',' && r != ':' && r != ';' {
		return "", false
	}
	tail := []rune(t)
	if len(tail) > 40 {
		tail = tail[len(tail)-40:]
	}
	return "…" + strings.TrimSpace(string(tail)), true
}

// Placeholder patterns: on the folded text, and case-sensitive markers on
// the raw text. Each pattern runs only when its trigger is in the text.
var (
	placeholderBracket = regexp.MustCompile(`\[(?:insert|placeholder|your |add |buraya|ekle |kendi )[^\]\n]{0,60}|\[(?:topic|keyword|keywords|anahtar kelime|company name|product name|brand name|sirket adi|urun adi|marka adi|link|url|image|gorsel|resim|source|kaynak|citation|number|sayi|tarih|date|name|isim|yazar|konu|baslik|title|x)\]`)
	placeholderAngle   = regexp.MustCompile(`<(?:topic|keyword|keywords|title|konu|baslik|anahtar kelime|company|company name|product|product name|brand|name|placeholder|insert[^>\n]{0,40}|your [^>\n]{0,40})>`)
	placeholderParen   = regexp.MustCompile(`\((?:buraya|insert|add) [^)\n]{0,60}\)`)
	placeholderBrace   = regexp.MustCompile(`\{\{|\}\}|\{(?:topic|keyword|title|konu|baslik|name|product)\}`)
	placeholderRaw     = regexp.MustCompile(`\b(?:TODO|FIXME|XXX+|PLACEHOLDER)\b`)
)

// placeholder finds template leftovers in s.
func placeholder(s string) (string, bool) {
	if strings.Contains(s, "TODO") || strings.Contains(s, "FIXME") || strings.Contains(s, "XXX") || strings.Contains(s, "PLACEHOLDER") {
		if loc := placeholderRaw.FindStringIndex(s); loc != nil {
			return s[loc[0]:loc[1]], true
		}
	}
	f := fold(s)
	if strings.Contains(f, "lorem ipsum") {
		return "lorem ipsum", true
	}
	for _, p := range []struct {
		trigger string
		re      *regexp.Regexp
	}{{"[", placeholderBracket}, {"<", placeholderAngle}, {"(", placeholderParen}, {"{", placeholderBrace}, {"}}", placeholderBrace}} {
		if !strings.Contains(f, p.trigger) {
			continue
		}
		if loc := p.re.FindStringIndex(f); loc != nil {
			return clip(f[loc[0]:loc[1]], 30), true
		}
	}
	return "", false
}

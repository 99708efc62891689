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
	MinSections     int      // sections required, fewer reject outright; 0 means 5
	MinSectionWords int      // words per section; 0 means 200
	ExtraPhrases    []string // more banned phrases (banned_phrases_file), rejected outright like meta phrases
}

// Spec is what one job asked for.
type Spec struct {
	Language    string // "en", "pt-BR", …; "" or a language LanguageSupported refuses: not checked
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
	Name    CheckName // which check
	Penalty float64   // points taken off (100 for an outright rejection)
	Detail  string    // what was found, for humans
}

// String formats the check as `words -20 (640 of 1200 target)`.
func (c Check) String() string {
	s := string(c.Name) + " -" + strconv.FormatFloat(c.Penalty, 'f', -1, 64)
	if c.Detail != "" {
		s += " (" + c.Detail + ")"
	}
	return s
}

// Result is the gate's verdict on one candidate.
type Result struct {
	Score    float64  // 0..100
	Pass     bool     // !Outright && Score >= Threshold
	Outright bool     // rejected regardless of score: unparseable, schema failure, meta or banned phrase, fewer sections than MinSections
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
	lang   langID
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
	g := &Gate{schema: sc, s: s, fast: isArticleSchema(schemaJSON), lang: newLangID()}
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
		return g.finish(res, Check{CheckParse, outrightPenalty, x.err.Error()}, true)
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
		return g.finish(res, Check{CheckSchema, outrightPenalty, clip(schemaE, 200)}, true)
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
	placeholderBrace   = regexp.MustCompile(`\{\{ ?[a-z_][a-z0-9_.]{0,40} ?\}\}|\{(?:topic|keyword|title|konu|baslik|name|product)\}`)
	placeholderRaw     = regexp.MustCompile(`\b(?:TODO|FIXME|XXX+|PLACEHOLDER)\b`)
)

// quotedAt reports whether s[i:j] stands between quotation marks or
// backticks: a writer mentioning the word ('TODO'), not a leftover.
func quotedAt(s string, i, j int) bool {
	if i == 0 || j >= len(s) {
		return false
	}
	before, _ := utf8.DecodeLastRuneInString(s[:i])
	after, _ := utf8.DecodeRuneInString(s[j:])
	return strings.ContainsRune("'\"`‘’“”«»„", before) && strings.ContainsRune("'\"`‘’“”«»„", after)
}

// placeholder finds template leftovers in s: bracketed instructions,
// template variables ({{url}}, not LaTeX braces), lorem ipsum, and TODO-style
// markers that are not quoted.
func placeholder(s string) (string, bool) {
	if strings.Contains(s, "TODO") || strings.Contains(s, "FIXME") || strings.Contains(s, "XXX") || strings.Contains(s, "PLACEHOLDER") {
		for _, loc := range placeholderRaw.FindAllStringIndex(s, 8) {
			if !quotedAt(s, loc[0], loc[1]) {
				return s[loc[0]:loc[1]], true
			}
		}
	}
	f := fold(s)
	if strings.Contains(f, "lorem ipsum") {
		return "lorem ipsum", true
	}
	for _, p := range []struct {
		trigger string
		re      *regexp.Regexp
	}{{"[", placeholderBracket}, {"<", placeholderAngle}, {"(", placeholderParen}, {"{", placeholderBrace}} {
		if !strings.Contains(f, p.trigger) {
			continue
		}
		if loc := p.re.FindStringIndex(f); loc != nil {
			return clip(f[loc[0]:loc[1]], 30), true
		}
	}
	return "", false
}

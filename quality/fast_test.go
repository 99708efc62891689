package quality

import (
	"encoding/json"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/xeipuuv/gojsonschema"
)

// The fast paths of Evaluate must agree with the straightforward forms they
// replace; TestGolden pins whole results, these tests pin the pieces.

// tokenizeRef is the straightforward tokenize: a strings.Builder, then
// collapsing the double spaces.
func tokenizeRef(s string) string {
	var b strings.Builder
	b.WriteByte(' ')
	inWord := false
	lastMark := rune(0)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		f := foldRune(r)
		if f < 0 {
			continue
		}
		switch {
		case unicode.IsLetter(f) || unicode.IsDigit(f):
			if !inWord {
				if b.Len() > 1 || lastMark != 0 {
					b.WriteByte(' ')
				}
				inWord = true
			}
			lastMark = 0
			b.WriteRune(f)
		case (f == '\'' || f == '-') && inWord && i < len(s) && isWordRuneAt(s, i):
			b.WriteRune(f)
		default:
			inWord = false
			m := f
			if m == '…' {
				m = '.'
			}
			switch m {
			case '.', ',', '!', '?', ':', ';':
				if lastMark == m {
					continue
				}
				b.WriteByte(' ')
				b.WriteRune(m)
				lastMark = m
			}
		}
	}
	b.WriteByte(' ')
	out := b.String()
	for strings.Contains(out, "  ") {
		out = strings.ReplaceAll(out, "  ", " ")
	}
	return out
}

// countWordsRef is countWords without its ASCII fast path.
func countWordsRef(s string) int {
	n := 0
	in := false
	for i := 0; i < len(s); {
		r, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if !in {
				n++
			}
			in = true
			continue
		}
		if (r == '\'' || r == '’' || r == '-') && in && i < len(s) && wordRuneRef(s, i) {
			continue
		}
		if (r == ',' || r == '.') && in && i < len(s) && i-sz > 0 && isDigitAt(s, i) && s[i-sz-1] >= '0' && s[i-sz-1] <= '9' {
			continue
		}
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		in = false
	}
	return n
}

func wordRuneRef(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	f := foldRune(r)
	return f >= 0 && (unicode.IsLetter(f) || unicode.IsDigit(f))
}

// checkTokenizer compares the tokenizer's outputs on s with the reference
// forms: tokens, word offsets, letter counts, charset flags, word count.
func checkTokenizer(t *testing.T, s string) {
	t.Helper()
	var starts []int32
	var b body
	out, seen := appendTokens(nil, s, &starts, &b)
	if got, want := string(out), tokenizeRef(s); got != want {
		t.Fatalf("tokenize(%q) = %q, want %q", s, got, want)
	}
	if crlf := strings.ReplaceAll(s, "\r\n", "\n"); crlf != s {
		// Bodies are tokenized with CRLF normalised, for paragraph offsets.
		if got, want := tokenize(crlf), string(out); got != want {
			t.Fatalf("tokenize(%q) = %q, but %q without CR", s, want, got)
		}
	}
	ws := words(s)
	if len(starts) != len(ws) {
		t.Fatalf("%q: %d word starts, %d words", s, len(starts), len(ws))
	}
	for i, st := range starts {
		end := len(s)
		if i+1 < len(starts) {
			end = int(starts[i+1])
		}
		if w := words(s[st:end]); len(w) == 0 || w[0] != ws[i] {
			t.Fatalf("%q: word %d starts at %d, not at %q", s, i, st, ws[i])
		}
	}
	letters, special := 0, 0
	for _, r := range s {
		if unicode.IsLetter(r) {
			letters++
			if strings.ContainsRune("çÇğĞıİöÖşŞüÜ", r) {
				special++
			}
		}
	}
	if b.letters != letters || b.special != special {
		t.Fatalf("%q: letters %d/%d, want %d/%d", s, b.letters, b.special, letters, special)
	}
	if got := seen&seenPlaceholder != 0; got != strings.ContainsAny(s, "[<({}") {
		t.Fatalf("%q: placeholder charset %v", s, got)
	}
	if got := seen&seenQuote != 0; got != strings.ContainsAny(s, "\"“«„") {
		t.Fatalf("%q: quote charset %v", s, got)
	}
	if got, want := countWords(s), countWordsRef(s); got != want {
		t.Fatalf("countWords(%q) = %d, want %d", s, got, want)
	}
}

var tokenizerSamples = []string{
	"", " ", "  .", "Certainly!  Here’s the\narticle:", "Elbette!!! İşte…", "e-posta ve ChatGPT'nin",
	"**Bold** — dash", "a,-,b", "x ,: , ; y", "don'\n\nt", "end-", "'start", "I\u0307STER", "a\u0301b",
	"3,5 ve 1.500, 2.x", "ﬁ ß Σ ǅ K Å", "tab\tand\u00a0nbsp\u200bzw", "`quoted`", "…...!!??", "(x) [y] {z} <w>",
	"«guillemets» „low“ “curly”", "\uFEFFbom", "Ünlü ÇİÇEK ışık",
}

func TestTokenizerMatchesReference(t *testing.T) {
	for _, s := range tokenizerSamples {
		checkTokenizer(t, s)
	}
	for _, it := range loadCorpus(t) {
		checkTokenizer(t, it.text)
	}
	// Random strings over an alphabet of the interesting runes.
	alphabet := []rune("aZ09 \r\n\r\n\t.,!?:;…'’`-—\"“”«»„[](){}<>İIıiŞşĞğÇçÖöÜüÂâ\u0307\u0301\u00a0\u200b\uFEFFKÅß*_#|")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		r := make([]rune, rng.IntN(40))
		for i := range r {
			r[i] = alphabet[rng.IntN(len(alphabet))]
		}
		checkTokenizer(t, string(r))
	}
}

func FuzzTokenizer(f *testing.F) {
	for _, s := range tokenizerSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkTokenizer(t, s)
	})
}

// TestFoldKeepsTriggers: fold and tokenize never make one of the characters
// the placeholder and quote prefilters look for out of another rune, so
// looking for them in the raw text is enough.
func TestFoldKeepsTriggers(t *testing.T) {
	for r := rune(0x80); r <= unicode.MaxRune; r++ {
		if f := foldRune(r); f >= 0 && f < 0x80 && strings.ContainsRune("[<({}\"", f) {
			t.Errorf("foldRune(%U) = %q", r, f)
		}
	}
}

func TestRequiredLiterals(t *testing.T) {
	cases := []struct {
		pattern string
		want    [][]string
	}{
		{`abc(?:de|fg)h`, [][]string{{"abcdeh", "abcfgh"}}},
		{`foo\S+bar`, [][]string{{"foo"}, {"bar"}}},
		{`(?:foo|ba)\S+`, nil}, // "ba" is too short to help
		{`^ (?:xyz|uvw) `, [][]string{{" xyz ", " uvw "}}},
		{`abc(?:\S+ )?def`, [][]string{{"abc"}, {"def"}}},
		{`a*`, nil},
		{`(?:abc)+x`, [][]string{{"abc"}}},
	}
	for _, c := range cases {
		got := requiredLiterals(c.pattern)
		for _, s := range got {
			slices.Sort(s)
		}
		for _, s := range c.want {
			slices.Sort(s)
		}
		if len(got) != len(c.want) || !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("requiredLiterals(%q) = %q, want %q", c.pattern, got, c.want)
		}
	}
}

func TestLitMatcher(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = "ab c"[rng.IntN(4)]
		}
		return string(b)
	}
	for range 200 {
		var lits []string
		for range 1 + rng.IntN(20) {
			l := gen(1 + rng.IntN(5))
			if !slices.Contains(lits, l) {
				lits = append(lits, l)
			}
		}
		m := newLitMatcher(lits)
		text := gen(rng.IntN(60))
		found := make([]uint64, (len(lits)+63)/64)
		m.scan(text, found)
		for i, l := range lits {
			if got := hasAny(found, []int32{int32(i)}); got != strings.Contains(text, l) {
				t.Fatalf("literal %q in %q: found=%v", l, text, got)
			}
		}
	}
}

// checkPrefilter fails when a meta rule's regexp matches the token text
// although its literals say it cannot.
func checkPrefilter(t *testing.T, tokens string) {
	t.Helper()
	idx := metaIndex()
	found := make([]uint64, idx.words)
	idx.m.scan(tokens, found)
	for i, r := range idx.rules {
		if r.re.MatchString(tokens) && len(r.preIDs) > 0 {
			for _, set := range r.preIDs {
				if !hasAny(found, set) {
					t.Fatalf("rule %d (%s) matches %q, but its prefilter says no", i, r.name, tokens)
				}
			}
		}
	}
}

func TestMetaPrefilterSound(t *testing.T) {
	for _, m := range goldenMetaTexts {
		checkPrefilter(t, tokenize(m))
		checkPrefilter(t, tokenize(strings.ToUpper(m)))
	}
	for _, it := range loadCorpus(t) {
		var a Article
		if json.Unmarshal([]byte(it.text), &a) != nil {
			continue
		}
		for _, s := range a.Sections {
			checkPrefilter(t, tokenize(s.Body))
		}
	}
}

func FuzzMetaPrefilter(f *testing.F) {
	for _, m := range goldenMetaTexts {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkPrefilter(t, tokenize(s))
	})
}

// checkFastSchema fails when articleDocValid accepts a document the schema
// rejects.
func checkFastSchema(t *testing.T, sc *gojsonschema.Schema, doc string) bool {
	t.Helper()
	if !json.Valid([]byte(doc)) || !articleDocValid([]byte(doc)) {
		return false
	}
	r, err := sc.Validate(gojsonschema.NewStringLoader(doc))
	if err != nil || !r.Valid() {
		t.Fatalf("fast path accepts %q, schema says %v %v", clip(doc, 200), err, r.Errors())
	}
	return true
}

func TestArticleSchemaFastPath(t *testing.T) {
	if !isArticleSchema(readSchema(t)) {
		t.Fatal("data/article.schema.json differs from articleSchema: update the copy in schemafast.go")
	}
	if !corpusGate(t).fast {
		t.Fatal("the corpus gate does not use the fast path")
	}
	other := strings.Replace(string(readSchema(t)), `"minItems": 1`, `"minItems": 2`, 1)
	if g := newTestGate(t, Settings{}); !g.fast {
		t.Fatal("fast path off")
	}
	if g, err := NewGate([]byte(other), Settings{}); err != nil || g.fast {
		t.Fatalf("fast path on for another schema (%v)", err)
	}
	sc, err := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(readSchema(t)))
	if err != nil {
		t.Fatal(err)
	}
	ok := `{"title":"T","sections":[{"h2":"A","body":"B"}]}`
	cases := map[string]bool{
		ok: true,
		` { "sections" : [ { "body" : "B\"\\" , "h2" : "\u0041" } , {"h2":"x","body":"y"} ] , "title" : "T" } `: true,
		`{"title":"T","title":"U","sections":[{"h2":"A","body":"B"}]}`:                                          true,
		`{"title":"","sections":[{"h2":"A","body":"B"}]}`:                                                       false,
		`{"title":"T","title":"","sections":[{"h2":"A","body":"B"}]}`:                                           false,
		`{"\u0074itle":"T","sections":[{"h2":"A","body":"B"}]}`:                                                 false,
		`{"Title":"T","sections":[{"h2":"A","body":"B"}]}`:                                                      false,
		`{"title":"T","sections":[]}`:                                                                           false,
		`{"title":"T","sections":[{"h2":"A"}]}`:                                                                 false,
		`{"title":"T","sections":[{"h2":"A","body":"B","x":1}]}`:                                                false,
		`{"title":"T","sections":[{"h2":"A","body":""}]}`:                                                       false,
		`{"title":"T","sections":[{"h2":"A","body":5}]}`:                                                        false,
		`{"title":"T","sections":{}}`:                                                                           false,
		`{"title":"T"}`:                                                                                         false,
		`{"title":"T","sections":[{"h2":"A","body":"B"}],"extra":null}`:                                         false,
		`{"title":["T"],"sections":[{"h2":"A","body":"B"}]}`:                                                    false,
		`[]`: false,
	}
	for doc, want := range cases {
		if got := checkFastSchema(t, sc, doc); got != want {
			t.Errorf("articleDocValid(%s) = %v, want %v", doc, got, want)
		}
	}
	for _, it := range loadCorpus(t) {
		x := extract(it.text)
		for _, d := range append([][]byte{x.raw}, x.repaired...) {
			if d != nil {
				checkFastSchema(t, sc, string(d))
			}
		}
	}
}

func FuzzArticleDocValid(f *testing.F) {
	f.Add(`{"title":"T","sections":[{"h2":"A","body":"B"}]}`)
	f.Add(`{"title":"T","title":"","sections":[{"h2":"A","body":"B","h2":"\u0000"}]}`)
	sc, err := gojsonschema.NewSchema(gojsonschema.NewStringLoader(articleSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		checkFastSchema(t, sc, doc)
	})
}

// TestLitMatcherConcurrent: goroutines scanning at once through one
// matcher, each filling the transitions its texts take first, all find
// exactly the literals strings.Contains finds (run with -race).
func TestLitMatcherConcurrent(t *testing.T) {
	lits := make([]string, 0, 64)
	for _, r := range metaRules {
		lits = append(lits, r.need...)
	}
	m := newLitMatcher(lits)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 200 {
				var b strings.Builder
				for range 1 + rng.IntN(12) {
					b.WriteString(lits[rng.IntN(len(lits))][:1+rng.IntN(3)])
					b.WriteString(lits[rng.IntN(len(lits))])
					b.WriteByte(" .,x"[rng.IntN(4)])
				}
				text := b.String()
				found := make([]uint64, (len(lits)+63)/64)
				m.scan(text, found)
				for i, l := range lits {
					if got := hasAny(found, []int32{int32(i)}); got != strings.Contains(text, l) {
						t.Errorf("literal %q in %q: found=%v", l, text, got)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

package quality

import (
	"hash/maphash"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The checks of a schema-valid article share one analysis: every text field
// is tokenized once (into one buffer), the words of the section bodies are
// interned once, and the duplicate, language and repetition checks work on
// word ids instead of strings.

// Field kinds.
const (
	kindTitle = iota
	kindHeading
	kindBody
)

// field is one text field of the article (title, a heading or a body).
type field struct {
	kind   int
	sec    int // 1-based section of a heading or body
	text   string
	tokens string // tokenize(text)
	meta   string // tokenize(text) without quotations, for the meta rules
	seen   uint8  // charsets seen in text (seen* bits)
}

// where names the field in a check's detail: "title", "section 2 heading",
// "section 2".
func (f field) where() string {
	switch f.kind {
	case kindTitle:
		return "title"
	case kindHeading:
		return "section " + strconv.Itoa(f.sec) + " heading"
	}
	return "section " + strconv.Itoa(f.sec)
}

// Bits of field.seen.
const (
	seenPlaceholder = 1 << iota // one of [ < ( { }
	seenQuote                   // one of " “ « „
)

// body is what the checks need of one section body.
type body struct {
	count            int // countWords(body)
	from, to         int // its words: analysis.words[from:to]
	letters, special int // letters, and those only Turkish uses
}

// word is one word of a section body.
type word struct {
	off, end int32 // in analysis.text
	raw      int32 // byte offset of the word in its (CRLF-normalised) body
	id       int32 // interned: equal words have equal ids, 0, 1, 2, …
}

// analysis is the shared, tokenized form of an article. Its slices and
// tables are reused across evaluations through analysisPool.
type analysis struct {
	text   string // every field's tokens (and meta tokens), concatenated
	buf    []byte
	fields []field
	bodies []body
	words  []word
	firsts []int32 // per word id: the index of its first word
	stream []int32 // body tokens for the repetition check: word ids, marks < 0
	tab    htab
	tab2   htab
	ints   []int32
	ints2  []int32
	paras  []para
	found  []uint64
}

var analysisPool = sync.Pool{New: func() any { return new(analysis) }}

// analyze tokenizes the article's fields and interns the body words.
func (an *analysis) analyze(a *Article) {
	type span struct{ tok, tokEnd, meta, metaEnd int }
	n := 2*len(a.Sections) + 1
	an.buf = an.buf[:0]
	an.fields = an.fields[:0]
	an.bodies = an.bodies[:0]
	an.ints = an.ints[:0] // raw word offsets, in body order
	spans := make([]span, 0, n)
	add := func(kind, sec int, text string, b *body) {
		f := field{kind: kind, sec: sec, text: text}
		var sp span
		sp.tok = len(an.buf)
		src := text
		if b != nil && strings.Contains(text, "\r\n") {
			src = strings.ReplaceAll(text, "\r\n", "\n")
		}
		var starts *[]int32
		if b != nil {
			starts = &an.ints
		}
		an.buf, f.seen = appendTokens(an.buf, src, starts, b)
		sp.tokEnd = len(an.buf)
		sp.meta, sp.metaEnd = sp.tok, sp.tokEnd
		if f.seen&seenQuote != 0 {
			if q, changed := stripQuotesChanged(text); changed {
				sp.meta = len(an.buf)
				an.buf, _ = appendTokens(an.buf, q, nil, nil)
				sp.metaEnd = len(an.buf)
			}
		}
		an.fields = append(an.fields, f)
		spans = append(spans, sp)
	}
	add(kindTitle, 0, a.Title, nil)
	for i, s := range a.Sections {
		add(kindHeading, i+1, s.H2, nil)
		an.bodies = append(an.bodies, body{count: countWords(s.Body)})
		add(kindBody, i+1, s.Body, &an.bodies[len(an.bodies)-1])
	}
	an.text = string(an.buf)
	for i := range an.fields {
		sp := spans[i]
		an.fields[i].tokens = an.text[sp.tok:sp.tokEnd]
		an.fields[i].meta = an.text[sp.meta:sp.metaEnd]
	}

	// Body words, interned, and the repetition stream.
	an.words = an.words[:0]
	an.stream = an.stream[:0]
	an.firsts = an.firsts[:0]
	an.tab.reset(len(an.ints))
	k := 0
	for i := range an.bodies {
		b := &an.bodies[i]
		f := an.fields[2+2*i]
		base := int32(spans[2+2*i].tok)
		b.from = len(an.words)
		t := f.tokens
		skip := verbatimRanges(f.text)
		for p := 0; p < len(t); {
			if t[p] == ' ' {
				p++
				continue
			}
			e := p + 1
			for e < len(t) && t[e] != ' ' {
				e++
			}
			if m := markCode(t[p:e]); m < 0 {
				an.stream = append(an.stream, m)
				p = e
				continue
			}
			w := word{off: base + int32(p), end: base + int32(e), raw: an.ints[k]}
			k++
			w.id = an.intern(w)
			an.words = append(an.words, w)
			for len(skip) > 0 && skip[0][1] <= w.raw {
				skip = skip[1:]
			}
			if len(skip) > 0 && skip[0][0] <= w.raw {
				// Table rows and code are not prose: their repeats are
				// not loops.
				if n := len(an.stream); n == 0 || an.stream[n-1] != markDot {
					an.stream = append(an.stream, markDot)
				}
			} else {
				an.stream = append(an.stream, w.id)
			}
			p = e
		}
		b.to = len(an.words)
		an.stream = append(an.stream, markDot)
	}
}

// verbatimRanges returns the byte ranges of a body (with CRLF normalised)
// that hold markdown table rows or fenced code, in order; nil when there are
// none.
func verbatimRanges(text string) [][2]int32 {
	if !strings.Contains(text, "|") && !strings.Contains(text, "```") {
		return nil
	}
	if strings.Contains(text, "\r\n") {
		text = strings.ReplaceAll(text, "\r\n", "\n")
	}
	var out [][2]int32
	fenced := false
	for off := 0; off < len(text); {
		end := strings.IndexByte(text[off:], '\n')
		if end < 0 {
			end = len(text)
		} else {
			end += off
		}
		line := strings.TrimSpace(text[off:end])
		fence := strings.HasPrefix(line, "```")
		if fenced || fence || strings.HasPrefix(line, "|") {
			out = append(out, [2]int32{int32(off), int32(end)})
		}
		if fence {
			fenced = !fenced
		}
		off = end + 1
	}
	return out
}

// intern returns the id of w's text, registering w when it is new; w is
// about to be appended to an.words.
func (an *analysis) intern(w word) int32 {
	s := an.text[w.off:w.end]
	h := maphash.String(hashSeed, s)
	slot, ok := an.tab.lookup(h, func(v int32) bool {
		return an.word(v) == s
	})
	if ok {
		return an.tab.vals[slot]
	}
	id := int32(len(an.firsts))
	an.tab.set(slot, h, id)
	an.firsts = append(an.firsts, int32(len(an.words)))
	return id
}

var hashSeed = maphash.MakeSeed()

func (an *analysis) word(id int32) string {
	w := an.words[an.firsts[id]]
	return an.text[w.off:w.end]
}

// Mark tokens in the repetition stream.
const (
	markDot   int32 = -1
	markBang  int32 = -2
	markQuest int32 = -3
	markComma int32 = -4
	markColon int32 = -5
	markSemi  int32 = -6
)

// markCode returns the code of a sentence mark token, 0 for a word.
func markCode(t string) int32 {
	if len(t) != 1 {
		return 0
	}
	switch t[0] {
	case '.':
		return markDot
	case '!':
		return markBang
	case '?':
		return markQuest
	case ',':
		return markComma
	case ':':
		return markColon
	case ';':
		return markSemi
	}
	return 0
}

var markChars = [...]byte{0, '.', '!', '?', ',', ':', ';'}

// appendTokens appends tokenize(s) to b. When starts is not nil it records
// the byte offset in s of every word; when lang is not nil it counts the
// letters of s and those only Turkish uses. It also reports which charsets
// of interest s contains.
func appendTokens(b []byte, s string, starts *[]int32, lang *body) ([]byte, uint8) {
	b = append(b, ' ')
	inWord := false
	lastMark := rune(0)
	var seen uint8
	for i := 0; i < len(s); {
		start := i
		c := s[i]
		var r, f rune
		if c < utf8.RuneSelf {
			i++
			r = rune(c)
			f = foldASCII(c)
			switch c {
			case '[', '<', '(', '{', '}':
				seen |= seenPlaceholder
			case '"':
				seen |= seenQuote
			}
			if lang != nil && ('a' <= f && f <= 'z') {
				lang.letters++
			}
			if 'a' <= f && f <= 'z' || '0' <= f && f <= '9' {
				if !inWord {
					b = beginWord(b, starts, start)
					inWord = true
				}
				lastMark = 0
				b = append(b, byte(f))
				continue
			}
		} else {
			var n int
			r, n = utf8.DecodeRuneInString(s[i:])
			i += n
			switch r {
			case '“', '«', '„':
				seen |= seenQuote
			}
			if lang != nil && unicode.IsLetter(r) {
				lang.letters++
				switch r {
				case 'ç', 'Ç', 'ğ', 'Ğ', 'ı', 'İ', 'ö', 'Ö', 'ş', 'Ş', 'ü', 'Ü':
					lang.special++
				}
			}
			f = foldRune(r)
			if f < 0 {
				continue
			}
			if unicode.IsLetter(f) || unicode.IsDigit(f) {
				if !inWord {
					b = beginWord(b, starts, start)
					inWord = true
				}
				lastMark = 0
				b = utf8.AppendRune(b, f)
				continue
			}
		}
		if (f == '\'' || f == '-') && inWord && i < len(s) && isWordRuneAt(s, i) {
			b = utf8.AppendRune(b, f)
			continue
		}
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
			if b[len(b)-1] != ' ' {
				b = append(b, ' ')
			}
			b = append(b, byte(m))
			lastMark = m
		}
	}
	if b[len(b)-1] != ' ' {
		b = append(b, ' ')
	}
	return b, seen
}

// foldASCII folds an ASCII byte as tokenize does: upper case to lower, a
// backtick to an apostrophe.
func foldASCII(c byte) rune {
	switch {
	case 'A' <= c && c <= 'Z':
		return rune(c) + 'a' - 'A'
	case c == '`':
		return '\''
	}
	return rune(c)
}

// beginWord separates a new word from what b holds and records, when starts
// is not nil, that the word begins at byte start of the text.
func beginWord(b []byte, starts *[]int32, start int) []byte {
	if b[len(b)-1] != ' ' {
		b = append(b, ' ')
	}
	if starts != nil {
		*starts = append(*starts, int32(start))
	}
	return b
}

// htab is an open-addressing hash table from 64-bit hashes to int32 values;
// callers resolve hash collisions with an equality callback.
type htab struct {
	keys []uint64
	vals []int32 // -1: empty
	mask int
}

// reset empties the table and sizes it for n entries.
func (t *htab) reset(n int) {
	size := 16
	for size < 2*n+1 {
		size <<= 1
	}
	if cap(t.vals) >= size {
		t.keys, t.vals = t.keys[:size], t.vals[:size]
	} else {
		t.keys, t.vals = make([]uint64, size), make([]int32, size)
	}
	for i := range t.vals {
		t.vals[i] = -1
	}
	t.mask = size - 1
}

// lookup returns the slot holding a value v with hash h and eq(v), or the
// empty slot where such a value belongs.
func (t *htab) lookup(h uint64, eq func(int32) bool) (int, bool) {
	for i := int(mix(h)) & t.mask; ; i = (i + 1) & t.mask {
		v := t.vals[i]
		if v < 0 {
			return i, false
		}
		if t.keys[i] == h && eq(v) {
			return i, true
		}
	}
}

func (t *htab) set(slot int, h uint64, v int32) {
	t.keys[slot], t.vals[slot] = h, v
}

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	return h
}

const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
)

// hashInts hashes a sequence of int32.
func hashInts(xs []int32) uint64 {
	h := uint64(fnvOffset)
	for _, x := range xs {
		h ^= uint64(uint32(x))
		h *= fnvPrime
	}
	return h
}

func equalInts(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package quality

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Limits that bound the work Extract and Evaluate do on any input.
const (
	// MaxInput is the largest answer (bytes) that is examined at all.
	MaxInput = 4 << 20
	// maxStarts is how many '{' positions are tried as an object start.
	maxStarts = 32
	// maxDepth is the deepest nesting the scanner follows.
	maxDepth = 256
	// safeRing is how many recent cut points the truncation repair keeps.
	safeRing = 8
)

// Errors returned (wrapped) by Extract.
var (
	ErrNoJSON     = errors.New("no json object found")
	ErrTruncated  = errors.New("json object not terminated")
	ErrInputLarge = errors.New("answer too large")
)

// Extract returns the article JSON object inside an LLM answer. It tolerates
// what models wrap around the JSON: a byte order mark, markdown code fences
// (```json … ```), leading and trailing prose, a JSON string holding the
// object (double encoding) and trailing commas. It returns the outermost
// complete object: the first '{' (that looks like an object start: followed
// by '"' or '}') whose matching '}' makes valid JSON. An object cut off at
// the end of the text is not repaired here: Extract returns an error wrapping
// ErrTruncated (Evaluate repairs it and penalises the truncation). Work is
// linear in the input for ordinary answers and bounded for any input
// (MaxInput bytes, maxStarts attempts).
func Extract(text string) ([]byte, error) {
	x := extract(text)
	if x.err != nil {
		return nil, fmt.Errorf("extract json: %w", x.err)
	}
	if x.raw == nil {
		return nil, fmt.Errorf("extract json: %w", ErrTruncated)
	}
	return x.raw, nil
}

// extraction is the result of extract: a complete object (raw), or, when
// the first object runs to the end of the text, repaired versions of it in
// order of preference.
type extraction struct {
	raw      []byte
	repaired [][]byte
	err      error
}

func extract(text string) extraction {
	if len(text) > MaxInput {
		return extraction{err: ErrInputLarge}
	}
	b := []byte(text)
	b = bytes.TrimLeft(b, " \t\r\n\uFEFF")
	for bytes.HasPrefix(b, []byte("\uFEFF")) {
		b = bytes.TrimLeft(b[3:], " \t\r\n")
	}
	// A JSON string holding the object: unquote once and look inside.
	if t := bytes.TrimSpace(b); len(t) > 1 && t[0] == '"' {
		var inner string
		if json.Unmarshal(t, &inner) == nil && strings.Contains(inner, "{") && len(inner) < len(text) {
			if x := extract(inner); x.err == nil {
				return x
			}
		}
	}
	var unterminated *scanState
	tries := 0
	for i := 0; i < len(b) && tries < maxStarts; i++ {
		if b[i] != '{' || !looksLikeObject(b, i) {
			continue
		}
		tries++
		st := scanObject(b, i)
		if st.end < 0 {
			if st.eof && unterminated == nil {
				unterminated = &st
				// Every later '{' lies inside this unterminated object.
				break
			}
			continue
		}
		cand := b[i:st.end]
		if json.Valid(cand) {
			return extraction{raw: bytes.Clone(cand)}
		}
		if fixed := dropTrailingCommas(cand); json.Valid(fixed) {
			return extraction{raw: fixed}
		}
	}
	if unterminated != nil {
		if rep := unterminated.repairs(b); len(rep) > 0 {
			return extraction{repaired: rep}
		}
	}
	return extraction{err: ErrNoJSON}
}

// looksLikeObject reports whether the '{' at i is followed (after white
// space) by '"' or '}', as a JSON object is and prose braces mostly are not.
func looksLikeObject(b []byte, i int) bool {
	for j := i + 1; j < len(b) && j < i+256; j++ {
		switch b[j] {
		case ' ', '\t', '\r', '\n':
			continue
		case '"', '}':
			return true
		default:
			return false
		}
	}
	return false
}

// cut is a position where the text so far, closed with the brackets of
// stack, is a complete JSON document.
type cut struct {
	pos   int
	stack string
}

// scanState is the outcome of scanning one object candidate.
type scanState struct {
	start    int
	end      int  // index after the matching '}', -1 when none
	eof      bool // the text ended inside the object
	inString bool // ... inside a string
	isKey    bool // ... and that string is an object key
	stack    []byte
	cuts     [safeRing]cut
	ncuts    int
}

func (s *scanState) addCut(pos int) {
	c := cut{pos: pos, stack: string(s.stack)}
	if s.ncuts > 0 && s.cuts[(s.ncuts-1)%safeRing].pos == pos {
		return
	}
	s.cuts[s.ncuts%safeRing] = c
	s.ncuts++
}

// scanObject follows the object starting at b[start] (a '{'), aware of
// strings and escapes, to its matching '}'.
func scanObject(b []byte, start int) scanState {
	s := scanState{start: start, end: -1}
	last := byte(0) // last structural byte outside strings
	for i := start; i < len(b); i++ {
		c := b[i]
		if s.inString {
			switch c {
			case '\\':
				i++
			case '"':
				s.inString = false
				last = '"'
				if !s.isKey {
					s.addCut(i + 1)
				}
			}
			continue
		}
		switch c {
		case '"':
			s.inString = true
			s.isKey = len(s.stack) > 0 && s.stack[len(s.stack)-1] == '{' && (last == '{' || last == ',')
		case '{', '[':
			if len(s.stack) >= maxDepth {
				return s
			}
			s.stack = append(s.stack, c)
			last = c
		case '}', ']':
			if len(s.stack) == 0 {
				return s
			}
			open := s.stack[len(s.stack)-1]
			if (c == '}') != (open == '{') {
				return s // mismatched bracket: not this candidate
			}
			s.stack = s.stack[:len(s.stack)-1]
			last = c
			if len(s.stack) == 0 {
				s.end = i + 1
				return s
			}
			s.addCut(i + 1)
		case ',':
			if last != ',' && last != '{' && last != '[' && last != ':' {
				s.addCut(i)
			}
			last = c
		case ':':
			last = c
		case ' ', '\t', '\r', '\n':
		default:
			last = 'v' // number or literal
		}
	}
	s.eof = true
	return s
}

// repairs returns valid JSON documents made from the unterminated object:
// first the open value string closed where the text ends, then the object
// cut back to each recent complete value, newest first.
func (s *scanState) repairs(b []byte) [][]byte {
	var out [][]byte
	closers := func(stack string) []byte {
		c := make([]byte, 0, len(stack))
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i] == '{' {
				c = append(c, '}')
			} else {
				c = append(c, ']')
			}
		}
		return c
	}
	if s.inString && !s.isKey {
		body := trimPartialEscape(b[s.start:])
		doc := append(append(bytes.Clone(body), '"'), closers(string(s.stack))...)
		if json.Valid(doc) {
			out = append(out, doc)
		}
	}
	n := s.ncuts
	for k := 0; k < safeRing && k < n; k++ {
		c := s.cuts[(n-1-k)%safeRing]
		doc := append(bytes.Clone(b[s.start:c.pos]), closers(c.stack)...)
		if json.Valid(doc) {
			out = append(out, doc)
		}
	}
	return out
}

// trimPartialEscape drops an escape sequence cut off at the end of b
// (a lone backslash or an incomplete \uXXXX) and a cut-off UTF-8 sequence.
func trimPartialEscape(b []byte) []byte {
	for k := 2; k <= 5 && k <= len(b); k++ {
		j := len(b) - k
		if b[j] == '\\' && b[j+1] == 'u' && allHex(b[j+2:]) && oddRun(b, j) {
			b = b[:j]
			break
		}
	}
	if len(b) > 0 && oddRun(b, len(b)-1) {
		b = b[:len(b)-1]
	}
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c < 0x80 {
			break
		}
		if c >= 0xC0 { // lead byte of a multi-byte rune
			need := 2
			if c >= 0xF0 {
				need = 4
			} else if c >= 0xE0 {
				need = 3
			}
			if k < need {
				b = b[:len(b)-k]
			}
			break
		}
	}
	return b
}

// oddRun reports whether b[j] is a backslash ending an odd run of
// backslashes, that is an unescaped one.
func oddRun(b []byte, j int) bool {
	run := 0
	for ; j >= 0 && b[j] == '\\'; j-- {
		run++
	}
	return run%2 == 1
}

func allHex(b []byte) bool {
	for _, c := range b {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return true
}

// dropTrailingCommas removes commas that directly precede '}' or ']'
// (outside strings), a common slip in model-written JSON.
func dropTrailingCommas(b []byte) []byte {
	out := make([]byte, 0, len(b))
	inString := false
	for i := 0; i < len(b); i++ {
		c := b[i]
		if inString {
			out = append(out, c)
			if c == '\\' && i+1 < len(b) {
				i++
				out = append(out, b[i])
			} else if c == '"' {
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
		}
		if c == ',' {
			j := i + 1
			for j < len(b) && (b[j] == ' ' || b[j] == '\t' || b[j] == '\r' || b[j] == '\n') {
				j++
			}
			if j < len(b) && (b[j] == '}' || b[j] == ']') {
				continue
			}
		}
		out = append(out, c)
	}
	return out
}

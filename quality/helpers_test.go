package quality

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Helpers the tests share: plain forms of steps the gate runs inside one
// analysis.

// findDuplicates compares every pair of paragraphs of the sections (across
// and within sections); see analysis.duplicates.
func findDuplicates(secs []Section) []dupFinding {
	an := new(analysis)
	an.analyze(&Article{Sections: secs})
	return an.duplicates(secs)
}

// repetition finds degenerate output in a token string (see tokenize): the
// same sentence many times, a word repeated in a run, a short phrase
// looping, or one long n-gram recurring all over the text. It returns a
// description of the first finding.
func repetition(tokens string) (string, bool) {
	an := new(analysis)
	an.text = tokens
	an.tab.reset(strings.Count(tokens, " "))
	for p := 0; p < len(tokens); {
		if tokens[p] == ' ' {
			p++
			continue
		}
		e := p + 1
		for e < len(tokens) && tokens[e] != ' ' {
			e++
		}
		if m := markCode(tokens[p:e]); m < 0 {
			an.stream = append(an.stream, m)
		} else {
			w := word{off: int32(p), end: int32(e)}
			w.id = an.intern(w)
			an.words = append(an.words, w)
			an.stream = append(an.stream, w.id)
		}
		p = e
	}
	return an.repetition()
}

// words returns the folded words of s (tokenize without the punctuation).
func words(s string) []string {
	var out []string
	start := -1
	var b strings.Builder
	flush := func() {
		if start >= 0 {
			out = append(out, b.String())
			b.Reset()
			start = -1
		}
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		f := foldRune(r)
		if f < 0 {
			continue
		}
		if unicode.IsLetter(f) || unicode.IsDigit(f) {
			start = i
			b.WriteRune(f)
			continue
		}
		if (f == '\'' || f == '-') && start >= 0 && i < len(s) && isWordRuneAt(s, i) {
			b.WriteRune(f)
			continue
		}
		flush()
	}
	flush()
	return out
}

// paragraphs splits a section body into paragraphs: on blank lines, or on
// single line breaks when the body has no blank line.
func paragraphs(body string) []string {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	var parts []string
	if strings.Contains(body, "\n\n") {
		parts = strings.Split(body, "\n\n")
	} else {
		parts = strings.Split(body, "\n")
	}
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

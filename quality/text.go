package quality

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// foldRune maps r to its matching skeleton: lower case, with the dotted and
// dotless i merged (İ, I, ı, i → i) and the Turkish diacritics removed
// (ş→s, ğ→g, ç→c, ö→o, ü→u, â→a, î→i, û→u). It returns -1 for combining
// marks, which the skeleton drops (so a decomposed "I\u0307" folds to "i").
// The skeleton makes "İSTER MİSİNİZ", "ister misiniz", "ISTER MISINIZ" and a
// model's diacritic-less "istermisiniz"-style Turkish compare equal where it
// matters, and keeps English "I" an "i".
func foldRune(r rune) rune {
	switch r {
	case 'İ', 'I', 'ı', 'i', 'Î', 'î', 'Ì', 'ì', 'Í', 'í':
		return 'i'
	case 'Ş', 'ş':
		return 's'
	case 'Ğ', 'ğ':
		return 'g'
	case 'Ç', 'ç':
		return 'c'
	case 'Ö', 'ö':
		return 'o'
	case 'Ü', 'ü', 'Û', 'û':
		return 'u'
	case 'Â', 'â':
		return 'a'
	case '\u2019', '\u2018', '\u02BC', '\u00B4', '`':
		return '\''
	case '\u00A0', '\u2007', '\u202F':
		return ' '
	}
	if unicode.Is(unicode.Mn, r) || r == '\uFEFF' || r == '\u200B' || r == '\u200C' || r == '\u200D' {
		return -1
	}
	return unicode.ToLower(r)
}

// fold returns the skeleton of s (see foldRune) with every run of white
// space collapsed to one space. Punctuation is kept.
func fold(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		f := foldRune(r)
		if f < 0 {
			continue
		}
		if unicode.IsSpace(f) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(f)
	}
	return b.String()
}

// tokenize turns s into its matching form: folded words (letters and digits,
// with inner apostrophes and hyphens kept) and the sentence punctuation marks
// ". , ! ? : ;" as their own tokens ("…", "..." and "!!" count as one mark);
// everything else (quotes, dashes, brackets, markdown) separates tokens.
// The result is the tokens joined by single spaces, with a leading and a
// trailing space, so that " here is the article " finds whole words only.
func tokenize(s string) string {
	b, _ := appendTokens(make([]byte, 0, len(s)+2), s, nil, nil)
	return string(b)
}

// isWordRuneAt reports whether the rune starting at s[i] is a letter or digit.
func isWordRuneAt(s string, i int) bool {
	if c := s[i]; c < utf8.RuneSelf {
		return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	f := foldRune(r)
	return f >= 0 && (unicode.IsLetter(f) || unicode.IsDigit(f))
}

func isDigitAt(s string, i int) bool { return s[i] >= '0' && s[i] <= '9' }

// countWords counts the words of s the way the gate does: maximal runs of
// letters and digits, inner apostrophes and hyphens included ("don't",
// "e-posta" and "ChatGPT'nin" are one word each), markdown symbols ignored.
func countWords(s string) int {
	n := 0
	in := false
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			// ASCII: a letter or digit, or else never a combining mark.
			i++
			if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' {
				if !in {
					n++
				}
				in = true
				continue
			}
			if (c == '\'' || c == '-') && in && i < len(s) && isWordRuneAt(s, i) {
				continue
			}
			if (c == ',' || c == '.') && in && i < len(s) && i-1 > 0 && isDigitAt(s, i) && s[i-2] >= '0' && s[i-2] <= '9' {
				continue // 3,5 and 1.500 are one word
			}
			in = false
			continue
		}
		r, sz := utf8.DecodeRuneInString(s[i:])
		i += sz
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if !in {
				n++
			}
			in = true
			continue
		}
		if (r == '\'' || r == '’' || r == '-') && in && i < len(s) && isWordRuneAt(s, i) {
			continue
		}
		if (r == ',' || r == '.') && in && i < len(s) && i-sz > 0 && isDigitAt(s, i) && s[i-sz-1] >= '0' && s[i-sz-1] <= '9' {
			continue // 3,5 and 1.500 are one word
		}
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		in = false
	}
	return n
}

// clip shortens s to at most n runes for a check's detail, adding "…".
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n]) + "…"
}

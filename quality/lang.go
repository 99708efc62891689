package quality

import (
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/abadojack/whatlanggo"
)

// Language is a language the gate can check, by its ISO 639-1 code.
type Language string

// The languages the language check identifies. Each was measured on the
// development corpus (real articles in these nine languages); a topic may
// only ask for one of them.
const (
	English    Language = "en"
	Turkish    Language = "tr"
	German     Language = "de"
	Spanish    Language = "es"
	French     Language = "fr"
	Portuguese Language = "pt"
	Dutch      Language = "nl"
	Russian    Language = "ru"
	Italian    Language = "it"
)

// supportedLanguages lists the Language constants, sorted by code.
func supportedLanguages() []Language {
	return []Language{German, English, Spanish, French, Italian, Dutch, Portuguese, Russian, Turkish}
}

// SupportedLanguages returns the codes of the languages the gate checks,
// sorted ("de", "en", …). A topic asking for another language cannot be
// checked and is a configuration error.
func SupportedLanguages() []string {
	out := make([]string, 0, 9)
	for _, l := range supportedLanguages() {
		out = append(out, string(l))
	}
	return out
}

// LanguageSupported reports whether the gate checks articles in the language
// of code. Region and script suffixes are ignored and case does not matter:
// "pt-BR", "PT_br" and "pt" are all Portuguese.
func LanguageSupported(code string) bool {
	return slices.Contains(supportedLanguages(), Language(normLang(code)))
}

// normLang reduces a language tag ("en-US", "TR", "tr_TR") to its base code.
func normLang(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexAny(s, "-_"); i > 0 {
		s = s[:i]
	}
	return s
}

// Parameters of the language check. Each identifier call has a fixed cost
// (whatlanggo compares the text's trigrams with the 300 of every candidate
// language: about 50 µs for 9 languages) plus about a third of a microsecond
// per byte, so each section is judged on a window of its text, not all of
// it. On the development corpus the first window names the right language
// in 410 of 414 sections of the good articles at 80 bytes (412 at 120, 401
// at 60) and flags all 64 sections of the wrong-language articles at 60
// bytes and more; the few misses (a window on an English quotation inside
// Russian prose, Spanish taken for Portuguese) disappear when two more
// windows of 240 bytes must agree before a section counts as another
// language. 80 bytes costs 68 µs per call against 95 µs at 120.
const (
	langWindow      = 80  // bytes of a section given to the identifier first
	langConfirm     = 240 // bytes of each of the two windows that must confirm a wrong language
	langMinWords    = 40  // shorter sections are not judged
	langMaxSections = 16  // sections judged at most (bounded cost)
)

// langID identifies the language of a text among the supported languages
// (github.com/abadojack/whatlanggo, a trigram-profile identifier, restricted
// to them). It is immutable and safe for concurrent use.
type langID struct {
	opts  whatlanggo.Options
	langs map[Language]whatlanggo.Lang // the whitelist by code
}

func newLangID() langID {
	wl := map[whatlanggo.Lang]bool{}
	langs := map[Language]whatlanggo.Lang{}
	for l := range whatlanggo.Langs {
		if code := Language(l.Iso6391()); slices.Contains(supportedLanguages(), code) {
			wl[l], langs[code] = true, l
		}
	}
	return langID{opts: whatlanggo.Options{Whitelist: wl}, langs: langs}
}

// identify returns the language of text, "" when it has no letters in a
// script the identifier knows.
func (id langID) identify(text string) Language {
	l := whatlanggo.DetectLangWithOptions(text, id.opts)
	if l < 0 {
		return ""
	}
	return Language(l.Iso6391())
}

// in reports whether text counts as written in want: it has no letters to
// judge, the identifier names want, or the language it names does not beat
// want head to head. whatlanggo breaks a tie between equally close
// languages by Go's map order, so an identification alone may name either
// of them from one call to the next; a tie (or a win with no confidence)
// therefore counts for want, which makes the verdict the same on every
// call for the same text.
func (id langID) in(text string, want Language) bool {
	got := id.identify(text)
	if got == want || got == "" {
		return true
	}
	g := id.langs[got]
	w, ok := id.langs[want]
	if !ok {
		return false
	}
	h := whatlanggo.DetectWithOptions(text, whatlanggo.Options{Whitelist: map[whatlanggo.Lang]bool{g: true, w: true}})
	return h.Lang != g || h.Confidence <= 0
}

// sectionIn reports whether a section body is written in want. The middle
// window decides when it names want; otherwise the windows at a quarter and
// at three quarters of the body must both name another language too, so a
// quotation or a run of English terms in the middle does not condemn the
// section. A window without letters cannot be judged and passes.
func (id langID) sectionIn(body string, want Language) bool {
	if id.in(window(body, 0.5, langWindow), want) {
		return true
	}
	for _, at := range []float64{0.25, 0.75} {
		if id.in(window(body, at, langConfirm), want) {
			return true
		}
	}
	return false
}

// window returns about n bytes of s centred at the fraction at of its
// length, widened to whole words and valid UTF-8.
func window(s string, at float64, n int) string {
	if len(s) <= n {
		return s
	}
	start := int(at*float64(len(s))) - n/2
	start = max(0, min(start, len(s)-n))
	end := start + n
	for start > 0 && s[start-1] != ' ' && s[start-1] != '\n' {
		start--
	}
	for end < len(s) && s[end] != ' ' && s[end] != '\n' {
		end++
	}
	out := s[start:end]
	for len(out) > 0 && !utf8.ValidString(out) {
		out = out[1:]
	}
	return out
}

// langFindings is the outcome of the language check: the sections judged
// and, of those, the ones not in the requested language (1-based).
type langFindings struct {
	judged int
	wrong  []int
}

// checkLanguage judges every section body of 40+ words (up to 16) against
// want.
func (id langID) checkLanguage(a *Article, counts []body, want Language) langFindings {
	var f langFindings
	for i, s := range a.Sections {
		if f.judged == langMaxSections {
			break
		}
		if counts[i].count < langMinWords {
			continue
		}
		f.judged++
		if !id.sectionIn(s.Body, want) {
			f.wrong = append(f.wrong, i+1)
		}
	}
	return f
}

package publish

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// maxSlugLen is the longest slug Slug returns, in bytes (all ASCII).
const maxSlugLen = 80

// translit maps letters that do not decompose into ASCII + accents under
// Unicode NFD. The Turkish letters are listed explicitly, both cases, so
// that 'İ' and 'ı' do not depend on case-mapping rules.
var translit = map[rune]string{
	'ç': "c", 'Ç': "c", 'ğ': "g", 'Ğ': "g", 'ı': "i", 'İ': "i",
	'ö': "o", 'Ö': "o", 'ş': "s", 'Ş': "s", 'ü': "u", 'Ü': "u",
	'ß': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe", 'Œ': "oe",
	'ø': "o", 'Ø': "o", 'đ': "d", 'Đ': "d", 'ð': "d", 'Ð': "d",
	'ł': "l", 'Ł': "l", 'þ': "th", 'Þ': "th",
}

// Slug turns a title into a URL- and file-name-safe slug: lower-case ASCII
// letters and digits separated by single '-', at most 80 characters, cut at
// a word boundary where possible. Turkish letters are transliterated
// (ç→c ğ→g ı→i İ→i ö→o ş→s ü→u) and other accents are stripped. Slug never
// returns an empty string: a title without any Latin letter or digit gives
// "untitled" (the Markdown publisher falls back to the topic id instead).
func Slug(title string) string {
	if s := slugify(title); s != "" {
		return s
	}
	return "untitled"
}

// slugify is Slug without the fallback: it returns "" when title has no
// letter or digit that maps to ASCII.
func slugify(title string) string {
	var pre strings.Builder
	for _, r := range title {
		if t, ok := translit[r]; ok {
			pre.WriteString(t)
			continue
		}
		pre.WriteRune(r)
	}
	var b strings.Builder
	dash := false
	for _, r := range norm.NFD.String(pre.String()) {
		if unicode.Is(unicode.Mn, r) {
			continue // accent stripped from its base letter
		}
		r = unicode.ToLower(r)
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = false
			b.WriteRune(r)
			continue
		}
		dash = true
	}
	return truncateSlug(b.String(), maxSlugLen)
}

// truncateSlug cuts s to at most max bytes. When the cut falls inside a
// word it goes back to the previous '-' if that keeps at least half of the
// allowed length. The result never ends with '-'.
func truncateSlug(s string, max int) string {
	if len(s) <= max {
		return s
	}
	atBoundary := s[max] == '-'
	s = s[:max]
	if !atBoundary {
		if i := strings.LastIndexByte(s, '-'); i >= max/2 {
			s = s[:i]
		}
	}
	return strings.Trim(s, "-")
}

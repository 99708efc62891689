package publish

import (
	"strings"
	"unicode"

	"golang.org/x/text/unicode/norm"
)

// maxSlugLen is the longest slug Slug returns, in bytes (all ASCII).
const maxSlugLen = 80

// translit maps letters that do not decompose into ASCII + accents under
// Unicode NFD: Turkish (both cases, so that 'İ' and 'ı' do not depend on
// case-mapping rules), Nordic and Polish letters, Cyrillic (Russian,
// Ukrainian, Belarusian, Serbian, Macedonian, Bulgarian) and Greek. Greek
// letters with accents decompose first, so only the bases are listed.
var translit = map[rune]string{
	'ç': "c", 'Ç': "c", 'ğ': "g", 'Ğ': "g", 'ı': "i", 'İ': "i",
	'ö': "o", 'Ö': "o", 'ş': "s", 'Ş': "s", 'ü': "u", 'Ü': "u",
	'ß': "ss", 'ẞ': "ss", 'æ': "ae", 'Æ': "ae", 'œ': "oe", 'Œ': "oe",
	'ø': "o", 'Ø': "o", 'đ': "d", 'Đ': "d", 'ð': "d", 'Ð': "d",
	'ł': "l", 'Ł': "l", 'þ': "th", 'Þ': "th",

	'а': "a", 'б': "b", 'в': "v", 'г': "g", 'д': "d", 'е': "e", 'ё': "yo",
	'ж': "zh", 'з': "z", 'и': "i", 'й': "y", 'к': "k", 'л': "l", 'м': "m",
	'н': "n", 'о': "o", 'п': "p", 'р': "r", 'с': "s", 'т': "t", 'у': "u",
	'ф': "f", 'х': "kh", 'ц': "ts", 'ч': "ch", 'ш': "sh", 'щ': "shch",
	'ъ': "", 'ы': "y", 'ь': "", 'э': "e", 'ю': "yu", 'я': "ya",
	'є': "ye", 'і': "i", 'ї': "yi", 'ґ': "g", 'ў': "u",
	'ђ': "dj", 'ј': "j", 'љ': "lj", 'њ': "nj", 'ћ': "c", 'џ': "dz",
	'ѓ': "gj", 'ќ': "kj", 'ѕ': "dz",

	'α': "a", 'β': "v", 'γ': "g", 'δ': "d", 'ε': "e", 'ζ': "z", 'η': "i",
	'θ': "th", 'ι': "i", 'κ': "k", 'λ': "l", 'μ': "m", 'ν': "n", 'ξ': "x",
	'ο': "o", 'π': "p", 'ρ': "r", 'σ': "s", 'ς': "s", 'τ': "t", 'υ': "y",
	'φ': "f", 'χ': "ch", 'ψ': "ps", 'ω': "o",
}

// german maps the umlauts the way German writes them without the dots
// (Küche → kueche, not kuche); it applies to titles in German only, since
// Turkish and other languages drop the dots (Türkiye → turkiye).
var german = strings.NewReplacer("ä", "ae", "Ä", "ae", "ö", "oe", "Ö", "oe", "ü", "ue", "Ü", "ue")

// slugify is SlugIn without the fallback: it returns "" when title has a
// letter that maps to no ASCII, or no letter or digit at all.
func slugify(title, language string) string {
	if lang := strings.ToLower(language); lang == "de" || strings.HasPrefix(lang, "de-") {
		title = german.Replace(title)
	}
	var b strings.Builder
	dash := false
	put := func(s string) {
		if s == "" {
			return
		}
		if dash && b.Len() > 0 {
			b.WriteByte('-')
		}
		dash = false
		b.WriteString(s)
	}
	for _, orig := range title {
		// A letter of the table goes as the table says (й → y, not the
		// и its decomposition starts with); any other is decomposed and
		// its accents dropped.
		if t, ok := lookupTranslit(orig); ok {
			put(t)
			continue
		}
		for _, r := range norm.NFD.String(string(orig)) {
			if unicode.Is(unicode.Mn, r) {
				continue // accent stripped from its base letter
			}
			if t, ok := lookupTranslit(r); ok {
				put(t)
				continue
			}
			if lr := unicode.ToLower(r); (lr >= 'a' && lr <= 'z') || (lr >= '0' && lr <= '9') {
				put(string(lr))
				continue
			}
			if unicode.IsLetter(r) {
				return "" // a script without transliteration: a slug of the rest would mislead
			}
			dash = true
		}
	}
	return truncateSlug(b.String(), maxSlugLen)
}

// lookupTranslit finds r (or its lower case) in translit.
func lookupTranslit(r rune) (string, bool) {
	if t, ok := translit[r]; ok {
		return t, true
	}
	t, ok := translit[unicode.ToLower(r)]
	return t, ok
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

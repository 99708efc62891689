package quality

import (
	"strings"
	"unicode"
)

// Stopwords in skeleton form (see foldRune). They are the most frequent
// function words of each language; their share of all words is the signal.
var stopwords = map[string]map[string]bool{
	"en": set(`the of and to a in is that for it as with on are be this by or an
		not from at you your can more have has was which their they when but will
		than its into if also what how all one these there about so do does we our
		would should could been were it's most many other such only some any each
		who them then because while those just may might over after before very
		his her he she i my me no yes out up down where why between through`),
	"tr": set(`ve bir bu da de ile icin gibi daha cok olan olarak ama en her ki ne o
		mi mu ya veya kadar sonra once degil var yok bile ise hem icinde uzerinde
		gore diye sadece tum butun nasil neden sey zaman olur oldugu ancak fakat
		yani cunku eger hic kendi ayni baska nedenle bunu buna bunun sizin
		onun onlar biz siz ben iki ilk sekilde halde ayrica ozellikle genellikle
		oldukca artik hala zaten belki sanki yine simdi boyle soyle oyle iste
		olmak etmek olabilir gerekir az fazla kez arasinda ederek`),
}

func set(s string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(s) {
		m[w] = true
	}
	return m
}

// langSignal is what the language check measures on a text.
type langSignal struct {
	words   int
	en, tr  float64 // stopword shares
	trChars float64 // share of letters that only Turkish uses (ç ğ ı İ ö ş ü)
}

func measureLang(text string) langSignal {
	var sig langSignal
	ws := words(text)
	sig.words = len(ws)
	if len(ws) == 0 {
		return sig
	}
	var en, tr int
	for _, w := range ws {
		if stopwords["en"][w] {
			en++
		}
		if stopwords["tr"][w] {
			tr++
		}
	}
	sig.en = float64(en) / float64(len(ws))
	sig.tr = float64(tr) / float64(len(ws))
	letters, special := 0, 0
	for _, r := range text {
		if !unicode.IsLetter(r) {
			continue
		}
		letters++
		switch r {
		case 'ç', 'Ç', 'ğ', 'Ğ', 'ı', 'İ', 'ö', 'Ö', 'ş', 'Ş', 'ü', 'Ü':
			special++
		}
	}
	if letters > 0 {
		sig.trChars = float64(special) / float64(letters)
	}
	return sig
}

// Thresholds of the language check. On the corpus, English sections have an
// English stopword share of 0.39–0.47 and a Turkish one of at most 0.01;
// Turkish sections have a Turkish share of 0.21–0.29, an English one of at
// most 0.03, and 9–12 % of their letters are Turkish-only letters. The
// thresholds sit far from both (ASCII-only Turkish still has its stopwords).
const (
	minLangWords  = 40   // shorter texts are not judged
	enMinShare    = 0.18 // English must reach this English stopword share
	trMinShare    = 0.07 // Turkish must reach this Turkish stopword share...
	trMinChars    = 0.02 // ...or this share of Turkish-only letters
	foreignTRChar = 0.01 // English with this many Turkish letters is suspect
)

// langMatches reports whether text is written in lang ("en" or "tr"), and
// ok=false when it cannot tell (unknown language code or too little text).
func langMatches(text, lang string) (match, ok bool) {
	return judgeLang(measureLang(text), lang)
}

// signal makes the language signal of counts: words, English and Turkish
// stopwords among them, letters, and Turkish-only letters among those.
func signal(words, en, tr, letters, special int) langSignal {
	sig := langSignal{words: words}
	if words == 0 {
		return sig
	}
	sig.en = float64(en) / float64(words)
	sig.tr = float64(tr) / float64(words)
	if letters > 0 {
		sig.trChars = float64(special) / float64(letters)
	}
	return sig
}

// judgeLang decides langMatches from a text's signal.
func judgeLang(sig langSignal, lang string) (match, ok bool) {
	if sig.words < minLangWords {
		return true, false
	}
	switch lang {
	case "en":
		if sig.en < enMinShare {
			return false, true
		}
		if sig.trChars >= foreignTRChar && sig.tr >= sig.en/2 {
			return false, true
		}
		return true, true
	case "tr":
		if sig.tr < trMinShare && sig.trChars < trMinChars {
			return false, true
		}
		if sig.en > 2*sig.tr && sig.en >= enMinShare {
			return false, true
		}
		return true, true
	}
	return true, false
}

// normLang reduces a language tag ("en-US", "TR", "tr_TR") to its base code.
func normLang(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.IndexAny(s, "-_"); i > 0 {
		s = s[:i]
	}
	return s
}

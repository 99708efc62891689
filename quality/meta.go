package quality

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"sync"
	"unicode"
)

// metaRule is one pattern of assistant talk that must never reach a reader.
// Patterns are written against the token form of a text field (see tokenize:
// folded words and punctuation marks separated by single spaces, with a
// leading and trailing space), so Turkish letters appear without diacritics
// and with i for both İ/I/ı/i.
type metaRule struct {
	name string
	re   *regexp.Regexp
	// where limits the rule: anywhere in a field, at the start of a field,
	// or in the last two sentences of the article.
	where int
	need  []string
	// except, when set, vetoes a match it matches at the match's start
	// (Go's regexp has no negative lookahead).
	except *regexp.Regexp
	// needIDs and preIDs index the literal matcher (see metaIndex): the
	// rule's need literals, and the literal sets its regexp requires.
	needIDs []int32
	preIDs  [][]int32
}

const (
	anywhere = iota
	fieldStart
	articleEnd
)

// Sentence start in token form: the start of the field or after . ! ? : ;
const sStart = `(?:^ |[.!?:;] )`

// aiNoun is what an assistant calls itself.
const aiNoun = `(?:an? )?(?:ai|artificial intelligence|large language model|language model|ai language model|ai model|ai assistant|ai chatbot|chatbot|virtual assistant|digital assistant)`

// firstPerson follows "as an AI" in a self-description.
const firstPerson = `(?:i|i'm|i've|i'd|i'll|me|my|myself)`

// assistVerb follows "I cannot" in a refusal or capability disclaimer.
const assistVerb = `(?:help|assist|provide|write|create|generate|produce|fulfill|fulfil|comply|complete|access|browse|answer|give|offer|engage|support|share|discuss|predict|guarantee|verify|do that|do this|perform|retrieve)`

// rule compiles a meta rule. need lists literals ("|"-separated) of which
// the token text must contain one before the regexp runs at all; it only
// saves time and never changes a result.
func rule(name string, where int, need, pattern string) metaRule {
	r := metaRule{name: name, where: where, re: regexp.MustCompile(pattern)}
	if need != "" {
		r.need = strings.Split(need, "|")
	}
	return r
}

// unless adds an exception pattern to a rule.
func unless(except string, r metaRule) metaRule {
	r.except = regexp.MustCompile(except)
	return r
}

// find returns the first match of the rule in text that its exception does
// not veto.
func (r metaRule) find(text string) []int {
	if r.except == nil {
		return r.re.FindStringIndex(text)
	}
	for _, loc := range r.re.FindAllStringIndex(text, 32) {
		if !r.except.MatchString(text[loc[0]:]) {
			return loc
		}
	}
	return nil
}

// metaLiterals finds the literals of every meta rule in a field in one
// pass; a rule's regexp runs only when the field holds one of its need
// literals and, for each literal set its regexp requires, one of the set.
type metaLiterals struct {
	m     *litMatcher
	rules []metaRule // metaRules with needIDs and preIDs
	words int        // len of the found bitset
}

var (
	metaIndexOnce sync.Once
	metaIndexVal  *metaLiterals
)

// metaIndex builds the literal matcher of metaRules on first use.
func metaIndex() *metaLiterals {
	metaIndexOnce.Do(func() {
		var lits []string
		ids := map[string]int32{}
		id := func(l string) int32 {
			if i, ok := ids[l]; ok {
				return i
			}
			ids[l] = int32(len(lits))
			lits = append(lits, l)
			return ids[l]
		}
		rules := make([]metaRule, len(metaRules))
		for i, r := range metaRules {
			for _, n := range r.need {
				r.needIDs = append(r.needIDs, id(n))
			}
			for _, set := range requiredLiterals(r.re.String()) {
				var is []int32
				for _, l := range set {
					is = append(is, id(l))
				}
				r.preIDs = append(r.preIDs, is)
			}
			rules[i] = r
		}
		metaIndexVal = &metaLiterals{m: newLitMatcher(lits), rules: rules, words: (len(lits) + 63) / 64}
	})
	return metaIndexVal
}

// wanted reports whether the rule's regexp can match a text whose literals
// are found.
func (r metaRule) wanted(found []uint64) bool {
	if len(r.needIDs) > 0 && !hasAny(found, r.needIDs) {
		return false
	}
	for _, set := range r.preIDs {
		if !hasAny(found, set) {
			return false
		}
	}
	return true
}

// metaRules are the built-in meta phrase patterns: English and Turkish
// here, the other languages of the corpus in metaRulesIntl. See the package
// documentation for what is deliberately not matched.
var metaRules = slices.Concat(metaRulesENTR, metaRulesIntl)

// metaRulesENTR are the English and Turkish meta phrase patterns.
var metaRulesENTR = []metaRule{
	// English self-descriptions.
	rule("as an AI", anywhere, " as a", sStart+`as `+aiNoun+`(?: developed by \S+| trained by \S+| created by \S+)? , `),
	rule("as an AI", anywhere, " as a", ` as `+aiNoun+` (?:, )?`+firstPerson+` `),
	rule("I am an AI", anywhere, " i am | i'm ", ` (?:i am|i'm) (?:just |only |merely |not )?`+aiNoun+` `),
	// Refusals and capability disclaimers: "I cannot" only with an assistant's verb.
	unless(`^ i (?:cannot|can't|can not) (?:\S+ )?help (?:but|\S+ing) `, rule("I cannot", anywhere, " i ", ` i (?:cannot|can't|can not|am unable to|'m unable to|i'm unable to|am not able to|won't be able to|do not have the ability to|don't have the ability to) (?:\S+ )?`+assistVerb+` `)),
	rule("I cannot", anywhere, " i'm unable", ` i'm unable to (?:\S+ )?`+assistVerb+` `),
	rule("I'm sorry, but", anywhere, "sorry|apolog", ` (?:i'm sorry|i am sorry|i apologize|i apologise) , but `),
	rule("I don't have access", anywhere, " have ", ` i (?:don't|do not) have (?:access to|the ability to|real-time|real time|browsing|personal opinions|personal experiences|feelings) `),
	rule("my knowledge cutoff", anywhere, "cutoff|cut-off|training data|knowledge data", ` (?:my|the) (?:knowledge|training) (?:cutoff|cut-off|data) `),
	// Hand-over lines.
	rule("here is the article", anywhere, "here|below|written|created|prepared|drafted|attached", ` (?:here is|here's|below is|below you'll find|below you will find|here you go|i have written|i've written|i have created|i've created|i have prepared|i've prepared|i have drafted|i've drafted|attached is) (?:the|your|a|an|this) (?:\S+ ){0,4}?(?:article|blog post|blogpost|post|draft|essay|json|content|response|rewrite|rewritten version|revised version|requested) `),
	rule("here is the article", anywhere, " you requested| you asked", ` (?:the|this) (?:\S+ ){0,2}?(?:article|json|response) you (?:requested|asked for) `),
	rule("word count note", anywhere, "word count|total words|kelime sayisi", ` (?:word count|total words|kelime sayisi) :? (?:approximately |approx |about |yaklasik |~)?\d`),
	// Chat framing openers.
	rule("chat opener", fieldStart, "", `^ (?:certainly|sure|of course|absolutely|great question|good question|okay|ok|alright|all right|gladly|no problem|happy to help|with pleasure|definitely|great) (?:! |[,.:] (?:\S+ ){0,5}?(?:here|here's|below|i'll|i will|i've|i have|let me|let's) )`),
	rule("chat opener", anywhere, "certainly|sure|of course|absolutely|gladly", ` (?:certainly|sure|of course|absolutely|gladly) [!,.] (?:here is|here's|below is|below you'll find|below you will find|let me (?:write|draft|create|help|explain|break|walk|put))`),
	// Chat framing closers that offer more.
	rule("chat closer", anywhere, "would you like|do you want|should i |shall i ", ` (?:would you like me to|do you want me to|would you like a|would you like an|should i (?:write|expand|add|create|continue|elaborate|adjust|revise|rewrite|make|generate|provide|include|tailor)|shall i) `),
	rule("chat closer", anywhere, "want me to", ` want me to (?:write|expand|add|create|make|continue|elaborate|adjust|revise|rewrite|tailor|generate|provide|include) `),
	rule("chat closer", anywhere, "let me know", ` let me know if (?:you|there|i|this|that|anything|any) `),
	rule("chat closer", anywhere, "helps", ` (?:i )?hope (?:this|that) helps `),
	rule("chat closer", anywhere, "feel free", ` feel free to (?:ask|let me know|reach out to me|request) `),
	rule("chat closer", anywhere, "if you", ` if you(?:'d| would) like (?:, )?i can `),
	rule("chat closer", anywhere, "if you", ` if you want (?:, )?i can `),
	rule("chat closer", anywhere, "i can also", ` i can also (?:write|provide|expand|create|help|generate|draft|adjust|tailor|prepare|add|make) `),
	rule("chat closer", anywhere, " be happy| be glad", ` (?:i'd|i would|i'll|i will) be (?:happy|glad) to (?:help|assist|write|expand|provide|create|adjust|revise|tailor) `),
	rule("chat closer", anywhere, "anything else", ` is there anything else `),

	// Turkish self-descriptions (skeleton: yapay zeka, dil modeli, asistan).
	rule("yapay zeka/dil modeli olarak", anywhere, "olarak|oldugum", sStart+`(?:ben )?bir (?:yapay zeka|yapay zeka asistani|yapay zeka modeli|yapay zeka dil modeli|dil modeli|buyuk dil modeli|ai|yz|ai asistani|dijital asistan|sanal asistan|asistan) (?:olarak|oldugum icin) `),
	rule("yapay zeka/dil modeli olarak", anywhere, "olarak|oldugum", sStart+`(?:yapay zeka|yapay zeka asistani|yapay zeka modeli|dil modeli|buyuk dil modeli|ai|yz) (?:olarak|oldugum icin) , `),
	rule("yapay zeka/dil modeli olarak", anywhere, "olarak|oldugum", ` (?:yapay zeka|dil modeli|asistan|asistani) (?:olarak|oldugum icin) (?:, )?(?:\S+ ){0,6}?(?:ben|benim|bana|beni|\S+(?:amam|emem|amiyorum|emiyorum)) `),
	rule("bir yapay zeka", anywhere, "yim |bir ai'yim|oldugum", ` (?:yapay zekayim|yapay zeka asistaniyim|yapay zeka modeliyim|dil modeliyim|asistaniyim|bir ai'yim|bir yapay zeka oldugum) `),
	rule("bir yapay zeka", anywhere, " ben ", ` ben (?:sadece |yalnizca )?bir (?:yapay zeka|dil modeli|asistan|ai) `),
	rule("asistan olarak", anywhere, "asistani olarak", ` (?:yapay zeka|dil modeli|ai|yz) asistani olarak `),
	rule("asistan olarak", anywhere, "olarak", ` asistan(?:i)? olarak (?:size|sana|ben|benim) `),
	rule("yardımcı olamam", anywhere, "olamam|edemem|getiremem|yazamam|olusturamam|uretemem|erisim|erisemiyorum|gorus", ` (?:yardimci olamam|yardim edemem|yerine getiremem|bunu yazamam|olusturamam|uretemem|erisimim yok|erisemiyorum|kisisel gorusum yok|kisisel goruslerim yok) `),
	// Turkish hand-over lines and openers.
	// "İşte sizin için …" alone is ordinary Turkish ("here, for you, is a
	// recipe"); only with what the assistant made for the reader is it
	// the hand-over line.
	rule("işte makale", anywhere, "iste |asagida", ` (?:iste|asagida|asagidaki) (?:istediginiz|talep ettiginiz|istenen|hazirladigim|ricaniz uzerine|isteginiz uzerine) `),
	rule("işte makale", anywhere, "iste |asagida", ` (?:iste|asagida|asagidaki) (?:sizin|senin) icin (?:\S+ ){0,3}?(?:hazirladigim|yazdigim|olusturdugum|makale|makaleniz|yazi|yaziniz|blog yazisi|icerik) `),
	rule("işte makale", anywhere, "iste |asagida", ` (?:iste|asagida) (?:\S+ ){0,3}?(?:makaleniz|makaleniz|yaziniz|blog yaziniz|iceriginiz|makalesi :|makale :) `),
	rule("chat opener", fieldStart, "", `^ (?:elbette|tabii ki|tabii|tabi ki|tabi|memnuniyetle|harika bir soru|harika|kesinlikle|tamamdir|tamam|peki|olur) (?:! |[,.:] (?:\S+ ){0,4}?(?:iste|asagida|asagidaki|sizin icin|senin icin) )`),
	rule("chat opener", anywhere, "elbette|tabii|tabi ki|memnuniyetle", ` (?:elbette|tabii ki|tabii|tabi ki|memnuniyetle) [!,.] (?:iste|asagida) `),
	// Turkish closers: "yazmamı ister misiniz?", "ekleyeyim mi?", "başka bir şey…".
	rule("chat closer", anywhere, "ister", ` \S+m[ae]mi (?:de |da )?(?:ister misin|ister misiniz|istersen|isterseniz|ister misin ?\?) `),
	rule("chat closer", anywhere, " mi ", ` \S+(?:ayim|eyim|yayim|yeyim) mi (?:\?|,) `),
	rule("chat closer", anywhere, "baska bir", ` baska bir (?:sey|seyde|konuda|konu) (?:\S+ ){0,3}?(?:ister misin|ister misiniz|yardimci olabilir|yardim edebilir|var mi|sormak ister|eklememi|yapmami) `),
	rule("chat closer", anywhere, "cekinme", ` (?:sormaktan|sormakta|yazmaktan) (?:lutfen )?(?:cekinmeyin|cekinme) `),
	rule("chat closer", anywhere, "olabilecegim|edebilecegim", ` (?:yardimci olabilecegim|yardim edebilecegim) (?:baska|bir sey) `),
	rule("chat closer", anywhere, "yardimci olabilirim", ` size (?:baska )?(?:nasil |hangi konuda )?yardimci olabilirim `),
	rule("chat closer", anywhere, "umarim", ` umarim (?:bu |bunlar )?(?:yardimci olur|yardimci olmustur|yardimci olabilmisimdir) `),
	// Tail-only: an article may ask a rhetorical "… ister misiniz?" mid-text;
	// at the very end it is the assistant offering more.
	rule("chat closer", articleEnd, "", ` ister misin(?:iz)? \? `),
	rule("chat closer", articleEnd, "", ` baska bir sey `),
	rule("chat closer", articleEnd, "", ` (?:anything else|any questions|further questions) `),
}

// phrase is one ExtraPhrases entry compiled for matching: on tokens when the
// phrase is made of words and sentence marks, else on the folded text.
type phrase struct {
	raw    string
	tokens string // " a b c " when matched on tokens
	folded string // folded phrase when matched on folded text
}

func compilePhrase(p string) (phrase, bool) {
	p = strings.TrimSpace(p)
	if p == "" {
		return phrase{}, false
	}
	wordy := true
	for _, r := range p {
		f := foldRune(r)
		if f < 0 || f == ' ' || f == '\'' || f == '-' || strings.ContainsRune(".,!?:;", f) {
			continue
		}
		if !isLetterOrDigit(f) {
			wordy = false
			break
		}
	}
	if wordy {
		t := tokenize(p)
		if strings.TrimSpace(t) == "" {
			return phrase{}, false
		}
		return phrase{raw: p, tokens: t}, true
	}
	return phrase{raw: p, folded: fold(p)}, true
}

// LoadPhrases reads a banned-phrases list: one phrase a line, blank lines and
// lines starting with '#' skipped, surrounding white space trimmed.
func LoadPhrases(r io.Reader) ([]string, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	var out []string
	for sc.Scan() {
		line := strings.TrimSpace(strings.TrimPrefix(sc.Text(), "\uFEFF"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read phrases: %w", err)
	}
	return out, nil
}

// quotePairs are the quotation marks whose content the meta rules skip.
var quotePairs = [][2]rune{{'"', '"'}, {'“', '”'}, {'„', '“'}, {'«', '»'}}

// stripQuotesChanged blanks out short quotations (up to 300 bytes, on one
// line), so an article about chatbots may quote a bot saying "I cannot help
// with that" without being taken for assistant talk itself. It also reports
// whether it blanked anything.
func stripQuotesChanged(s string) (string, bool) {
	if !strings.ContainsAny(s, "\"“«„") {
		return s, false
	}
	var b []byte
	changed := false
	for _, q := range quotePairs {
		open, close := string(q[0]), string(q[1])
		if b == nil && !strings.Contains(s, open) {
			continue
		}
		if b == nil {
			b = []byte(s)
		}
		from := 0
		for from < len(b) {
			i := bytes.Index(b[from:], []byte(open))
			if i < 0 {
				break
			}
			i += from
			j := bytes.Index(b[i+len(open):], []byte(close))
			if j < 0 {
				break
			}
			j += i + len(open)
			inner := b[i+len(open) : j]
			if len(inner) <= 300 && bytes.IndexByte(inner, '\n') < 0 {
				for k := range inner {
					if inner[k] != ' ' {
						changed = true
					}
					inner[k] = ' '
				}
			}
			from = j + len(close)
		}
	}
	if !changed {
		return s, false
	}
	return string(b), true
}

// metaHit is the first meta phrase found.
type metaHit struct {
	name, where, excerpt string
}

// findMeta looks for assistant talk in the article's fields; lastMeta is
// tokenize(stripQuotesChanged(last body)).
func (g *Gate) findMeta(fields []field, lastMeta string, an *analysis) (metaHit, bool) {
	idx := metaIndex()
	if cap(an.found) < idx.words {
		an.found = make([]uint64, idx.words)
	}
	found := an.found[:idx.words]
	for _, f := range fields {
		clear(found)
		idx.m.scan(f.meta, found)
		for _, r := range idx.rules {
			if r.where == articleEnd || !r.wanted(found) {
				continue
			}
			text := f.meta
			if r.where == fieldStart && len(text) > 400 {
				text = text[:400]
			}
			loc := r.find(text)
			if loc == nil {
				continue
			}
			if r.where == fieldStart && loc[0] != 0 {
				continue
			}
			return metaHit{r.name, f.where(), clip(text[loc[0]:loc[1]], 60)}, true
		}
		folded := ""
		for _, p := range g.extra {
			if p.tokens != "" {
				if strings.Contains(f.meta, p.tokens) {
					return metaHit{p.raw, f.where(), p.raw}, true
				}
				continue
			}
			if folded == "" {
				folded = fold(f.text)
			}
			if strings.Contains(folded, p.folded) {
				return metaHit{p.raw, f.where(), p.raw}, true
			}
		}
	}
	// The end of the article: the last two sentences of the last body.
	tail := lastSentences(lastMeta, 2)
	for _, r := range metaRules {
		if r.where != articleEnd {
			continue
		}
		if loc := r.find(tail); loc != nil {
			return metaHit{r.name, "end of article", clip(tail[loc[0]:loc[1]], 60)}, true
		}
	}
	return metaHit{}, false
}

// lastSentences returns the suffix of a token string that holds its last n
// sentences (sentence marks . ! ? as tokens), with the leading space.
func lastSentences(tokens string, n int) string {
	end := strings.TrimRight(tokens, " .!?")
	seen := 0
	for i := len(end) - 1; i >= 1; i-- {
		c := end[i]
		if (c == '.' || c == '!' || c == '?') && end[i-1] == ' ' && (i+1 == len(end) || end[i+1] == ' ') {
			seen++
			if seen == n {
				return tokens[i+1:]
			}
		}
	}
	return tokens
}

func isLetterOrDigit(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }

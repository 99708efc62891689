package quality

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// CheckName names one check of the gate.
type CheckName string

// The checks, in the order they appear in Result.Checks.
const (
	CheckParse         CheckName = "parse"
	CheckSchema        CheckName = "schema"
	CheckMeta          CheckName = "meta"
	CheckWords         CheckName = "words"
	CheckSections      CheckName = "sections"
	CheckShortSections CheckName = "short_sections"
	CheckHeadings      CheckName = "headings"
	CheckDuplicates    CheckName = "duplicates"
	CheckLanguage      CheckName = "language"
	CheckTruncated     CheckName = "truncated"
	CheckPlaceholder   CheckName = "placeholder"
	CheckRepetition    CheckName = "repetition"
)

// scoring is one schema-valid article under evaluation: what every check
// reads.
type scoring struct {
	g         *Gate
	a         *Article
	an        *analysis
	spec      Spec
	recovered bool // the JSON had to be repaired
	words     int  // body words
}

// finding is what one check found: penalty 0 means nothing.
type finding struct {
	penalty  float64
	detail   string
	outright bool
}

// score runs every check on a schema-valid article and sets res.Words.
func (g *Gate) score(res Result, spec Spec, recovered bool) Result {
	an := analysisPool.Get().(*analysis)
	defer func() {
		an.text, an.fields = "", an.fields[:0] // drop references to this article
		analysisPool.Put(an)
	}()
	an.analyze(res.Article)
	res.Words = 0
	for _, b := range an.bodies {
		res.Words += b.count
	}
	s := &scoring{g: g, a: res.Article, an: an, spec: spec, recovered: recovered, words: res.Words}
	res = res.add(CheckMeta, checkMeta(s))
	res = res.add(CheckWords, checkWords(s))
	res = res.add(CheckSections, checkSections(s))
	res = res.add(CheckShortSections, checkShortSections(s))
	res = res.add(CheckHeadings, checkHeadings(s))
	res = res.add(CheckDuplicates, checkDuplicates(s))
	res = res.add(CheckLanguage, checkLanguage(s))
	res = res.add(CheckTruncated, checkTruncated(s))
	res = res.add(CheckPlaceholder, checkPlaceholder(s))
	res = res.add(CheckRepetition, checkRepetition(s))
	res = res.add(CheckMarkup, checkMarkup(s))
	return g.verdict(res)
}

// add records a check that found something.
func (r Result) add(name CheckName, f finding) Result {
	if f.penalty <= 0 {
		return r
	}
	r.Checks = append(r.Checks, Check{Name: name, Penalty: math.Round(f.penalty*10) / 10, Detail: f.detail})
	r.Outright = r.Outright || f.outright
	return r
}

// checkMeta rejects assistant talk and banned phrases outright.
func checkMeta(s *scoring) finding {
	fields := s.an.fields
	lastMeta := " "
	if len(s.a.Sections) > 0 {
		lastMeta = fields[len(fields)-1].meta
	}
	hit, ok := s.g.findMeta(fields, lastMeta, s.an)
	if !ok {
		return finding{}
	}
	return finding{outrightPenalty, fmt.Sprintf("%q in %s: %q", hit.name, hit.where, strings.TrimSpace(hit.excerpt)), true}
}

// checkWords costs points in proportion to the shortfall below 80 % of the
// target.
func checkWords(s *scoring) finding {
	if s.spec.TargetWords <= 0 {
		return finding{}
	}
	floor := 0.8 * float64(s.spec.TargetWords)
	w := float64(s.words)
	if w >= floor {
		return finding{}
	}
	return finding{penalty: math.Min(wordsMaxPenalty, 100*(1-w/floor)),
		detail: strconv.Itoa(s.words) + " of " + strconv.Itoa(s.spec.TargetWords) + " target"}
}

// checkSections rejects outright an article with fewer sections than
// MinSections: the prompt makes that number binding.
func checkSections(s *scoring) finding {
	n, want := len(s.a.Sections), s.g.s.MinSections
	if n >= want {
		return finding{}
	}
	return finding{outrightPenalty, strconv.Itoa(n) + " of " + strconv.Itoa(want) + " sections", true}
}

// checkShortSections costs points for each section under MinSectionWords.
func checkShortSections(s *scoring) finding {
	var short []string
	pen := 0.0
	minWords := s.g.s.MinSectionWords
	for i, b := range s.an.bodies {
		if w := b.count; w < minWords {
			pen += shortSectionBase + shortSectionScale*(1-float64(w)/float64(minWords))
			short = append(short, "#"+strconv.Itoa(i+1)+" "+strconv.Itoa(w))
		}
	}
	if len(short) == 0 {
		return finding{}
	}
	return finding{penalty: math.Min(shortSectionsMax, pen),
		detail: strconv.Itoa(len(short)) + " under " + strconv.Itoa(minWords) + " words: " + strings.Join(short, ", ")}
}

// checkHeadings costs points for each heading that repeats an earlier one.
func checkHeadings(s *scoring) finding {
	seen := map[string]int{}
	var dup []string
	for i := range s.a.Sections {
		k := headingKey(s.an.fields[1+2*i].tokens)
		if k == "" {
			continue
		}
		if j, ok := seen[k]; ok {
			dup = append(dup, "#"+strconv.Itoa(i+1)+" = #"+strconv.Itoa(j))
			continue
		}
		seen[k] = i + 1
	}
	if len(dup) == 0 {
		return finding{}
	}
	return finding{penalty: math.Min(dupHeadingMax, float64(dupHeadingPen*len(dup))), detail: "repeated heading " + strings.Join(dup, ", ")}
}

// checkDuplicates costs points for each paragraph that repeats or nearly
// repeats an earlier one.
func checkDuplicates(s *scoring) finding {
	d := s.an.duplicates(s.a.Sections)
	if len(d) == 0 {
		return finding{}
	}
	parts := make([]string, 0, 4)
	for i, f := range d {
		if i == 3 {
			parts = append(parts, "and "+strconv.Itoa(len(d)-3)+" more")
			break
		}
		parts = append(parts, f.String())
	}
	return finding{penalty: math.Min(dupParagraphMax, float64(dupParagraphPen*len(d))), detail: strings.Join(parts, "; ")}
}

// checkLanguage costs points when the article, or some of its sections, is
// not in the requested language. A language LanguageSupported refuses is
// not checked.
func checkLanguage(s *scoring) finding {
	want := Language(normLang(s.spec.Language))
	if !LanguageSupported(string(want)) {
		return finding{}
	}
	f := s.g.lang.checkLanguage(s.a, s.an.bodies, want)
	if len(f.wrong) == 0 {
		return finding{}
	}
	if 2*len(f.wrong) > f.judged {
		return finding{penalty: wrongLangPen, detail: "article is not in " + strconv.Quote(string(want)) +
			" (" + strconv.Itoa(len(f.wrong)) + " of " + strconv.Itoa(f.judged) + " sections)"}
	}
	secs := make([]string, len(f.wrong))
	for i, n := range f.wrong {
		secs[i] = "#" + strconv.Itoa(n)
	}
	return finding{penalty: math.Min(wrongLangPen, float64(wrongLangSecPen*len(f.wrong))),
		detail: "sections not in " + strconv.Quote(string(want)) + ": " + strings.Join(secs, ", ")}
}

// checkTruncated costs points when the provider reported truncation, the
// JSON had to be repaired, or the last body stops mid-sentence.
func checkTruncated(s *scoring) finding {
	var why []string
	pen := 0.0
	if s.spec.Truncated {
		why, pen = append(why, "provider reported truncation"), truncFlagPen
	}
	if s.recovered {
		why, pen = append(why, "unbalanced JSON recovered"), truncFlagPen
	}
	if n := len(s.a.Sections); n > 0 {
		if tail, cut := endsMidSentence(s.a.Sections[n-1].Body); cut {
			why = append(why, "ends mid-sentence: "+strconv.Quote(tail))
			pen = math.Max(pen, truncTextPen)
		}
	}
	return finding{penalty: pen, detail: strings.Join(why, "; ")}
}

// checkPlaceholder costs points for template leftovers in any field.
func checkPlaceholder(s *scoring) finding {
	var ph []string
	for _, f := range s.an.fields {
		if p, ok := fieldPlaceholder(f); ok {
			ph = append(ph, strconv.Quote(p)+" in "+f.where())
			if len(ph) == 3 {
				break
			}
		}
	}
	if len(ph) == 0 {
		return finding{}
	}
	return finding{penalty: placeholderPen, detail: strings.Join(ph, "; ")}
}

// checkRepetition costs points for degenerate loops over the body text.
func checkRepetition(s *scoring) finding {
	d, ok := s.an.repetition()
	if !ok {
		return finding{}
	}
	return finding{penalty: repetitionPen, detail: d}
}

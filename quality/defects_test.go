package quality

import (
	"strings"
	"testing"
)

func TestSeverity(t *testing.T) {
	cases := []struct {
		c    Check
		want Severity
	}{
		{Check{Name: CheckParse, Penalty: 100}, SeverityUnusable},
		{Check{Name: CheckSchema, Penalty: 100}, SeverityUnusable},
		{Check{Name: CheckMeta, Penalty: 100}, SeverityMinor},
		{Check{Name: CheckPlaceholder, Penalty: 60}, SeverityMinor},
		{Check{Name: CheckHeadings, Penalty: 10}, SeverityMinor},
		{Check{Name: CheckWords, Penalty: 29.9}, SeverityMinor},
		{Check{Name: CheckWords, Penalty: 30}, SeverityMajor},
		{Check{Name: CheckShortSections, Penalty: 12}, SeverityMinor},
		{Check{Name: CheckShortSections, Penalty: 48}, SeverityMajor},
		{Check{Name: CheckSections, Penalty: 100}, SeverityMajor},
		{Check{Name: CheckDuplicates, Penalty: 35}, SeverityMajor},
		{Check{Name: CheckLanguage, Penalty: 35}, SeverityMajor},
		{Check{Name: CheckTruncated, Penalty: 35}, SeverityMajor},
		{Check{Name: CheckRepetition, Penalty: 50}, SeverityMajor},
	}
	for _, c := range cases {
		if got := c.c.Severity(); got != c.want {
			t.Errorf("%s: severity %s, want %s", c.c, got, c.want)
		}
	}
	for _, name := range []CheckName{CheckParse, CheckSchema, CheckMeta, CheckWords, CheckSections, CheckShortSections,
		CheckHeadings, CheckDuplicates, CheckLanguage, CheckTruncated, CheckPlaceholder, CheckRepetition} {
		d := Describe(name)
		if d == "" || !strings.HasSuffix(d, ".") || strings.ToUpper(d[:1]) != d[:1] {
			t.Errorf("%s: description %q is not a sentence", name, d)
		}
	}
	if Describe("nope") != "" {
		t.Error("unknown check described")
	}
}

// TestBetter is the review queue's choice between two failed candidates.
func TestBetter(t *testing.T) {
	g := newTestGate(t, Settings{})
	full := baseArticle(t, "good_en_compost.json")
	withMeta := full.clone()
	withMeta.Sections[0].Body = "Certainly! Here is the article you asked for. " + withMeta.Sections[0].Body
	thin := full.clone()
	thin.Sections = thin.Sections[:2]
	for i := range thin.Sections {
		thin.Sections[i].Body = firstWords(thin.Sections[i].Body, 40)
	}
	spec := Spec{Language: "en", TargetWords: 1500}
	meta, short := g.Evaluate(withMeta.json(t), spec), g.Evaluate(thin.json(t), spec)
	broken := g.Evaluate(`{"title": "x", "sections": "none"}`, spec)
	dup := full.clone()
	dup.Sections[3].Body = dup.Sections[1].Body
	dupRes := g.Evaluate(dup.json(t), spec)
	if meta.Pass || short.Pass || broken.Pass || dupRes.Pass {
		t.Fatalf("a candidate passed: %s | %s | %s | %s", meta.Reasons(), short.Reasons(), broken.Reasons(), dupRes.Reasons())
	}
	cases := []struct {
		name string
		a, b Result
		want bool
	}{
		{"full article with one assistant sentence over an 80-word article", meta, short, true},
		{"80-word article not over the full one", short, meta, false},
		{"anything with an article over an unusable answer", short, broken, true},
		{"unusable answer never over an article", broken, short, false},
		{"minor defect over a major one", meta, dupRes, true},
		{"equal candidates: the first stays", meta, meta, false},
		{"fewer words lose a tie", Result{Words: 900, Checks: []Check{{Name: CheckMeta, Penalty: 100}}},
			Result{Words: 1500, Checks: []Check{{Name: CheckMeta, Penalty: 100}}}, false},
		{"smaller penalty wins within a severity", Result{Checks: []Check{{Name: CheckWords, Penalty: 10}}},
			Result{Checks: []Check{{Name: CheckWords, Penalty: 20}}}, true},
	}
	for _, c := range cases {
		if got := Better(c.a, c.b); got != c.want {
			t.Errorf("%s: Better = %v, want %v (a: %s; b: %s)", c.name, got, c.want, c.a.Reasons(), c.b.Reasons())
		}
	}
	d := short.Defects()
	for i := 1; i < len(d); i++ {
		if d[i].Severity() > d[i-1].Severity() || d[i].Severity() == d[i-1].Severity() && d[i].Penalty > d[i-1].Penalty {
			t.Errorf("Defects not ordered: %v", d)
		}
	}
	if len(d) != len(short.Checks) {
		t.Errorf("Defects dropped checks: %v vs %v", d, short.Checks)
	}
}

package quality

import (
	"strings"
	"testing"
)

func TestMarkupIn(t *testing.T) {
	active := []string{
		"<script>alert('xss')</script>", "<SCRIPT src=//x>", "<iframe src=x>", "<style>body{}</style>",
		`<img src=x onerror="alert(1)">`, `<div onclick='x'>`, `<a href="javascript:alert(1)">`, `<a href = ' JavaScript:x'>`,
		"[click](javascript:alert(1))", "[d](data:text/html;base64,xx)", "<svg onload=alert(1)>", "<object data=x>",
		"{{< notice warning >}}", "{{% include %}}", "{{ .Site.Params.secret }}", "{{.Title}}", "{{- range . -}}",
		"{{ page.title }}", "{{ site.github.token | jsonify }}", "{% for p in site.posts %}", "{%- if x -%}",
		"{% include footer.html %}", "{: onclick=\"alert(1)\"}", "{::nomarkdown}", "{: .note}",
	}
	harmless := []string{"<b>bold</b>", "line<br>break", "<div class=\"x\">", "<p>", "</span>", "<a href=\"https://example.org\">x</a>"}
	none := []string{
		"a < b and c > d", "< iframe src=x> is not a tag", "x<y", "Use {curly} braces.", "$\\{\\{kedi, köpek\\}, \\{0, 1\\}\\}$", "{{kedi, köpek}}",
		"{{0, 1, 2, ... 9, a, b}}", "In Clojure {:a 1} is a map.", "<pass> and <fail>", "Visit {{url}} today.",
		"[a link](https://example.org/(x))", "The 50% {rate} holds.", "-> and <- arrows", "100 {%} sure",
	}
	for _, s := range active {
		if what, out := markupIn(s); what == "" || !out {
			t.Errorf("%q: got %q outright=%v, want an outright find", s, what, out)
		}
	}
	for _, s := range harmless {
		if what, out := markupIn(s); what == "" || out {
			t.Errorf("%q: got %q outright=%v, want a harmless find", s, what, out)
		}
	}
	for _, s := range none {
		if what, _ := markupIn(s); what != "" {
			t.Errorf("%q: false markup %q", s, what)
		}
	}
}

// TestMarkupCheck runs the check through the gate on a good article: in a
// body it rejects outright, a harmless tag in a heading costs markupPen,
// the detail names where, and the defect is minor (an editor removes it).
func TestMarkupCheck(t *testing.T) {
	g := newTestGate(t, Settings{})
	base := baseArticle(t, "good_en_compost.json")
	clean := g.Evaluate(base.json(t), Spec{Language: "en"})
	if _, ok := checkNamed(clean, CheckMarkup); ok {
		t.Fatalf("markup found in a good article: %s", clean.Reasons())
	}

	a := base.clone()
	a.Sections[2].Body += "\n\n<script>alert('xss')</script>{{< notice >}}"
	r := g.Evaluate(a.json(t), Spec{Language: "en"})
	c, ok := checkNamed(r, CheckMarkup)
	if !ok || !r.Outright || r.Pass || c.Penalty != outrightPenalty || !strings.Contains(c.Detail, `"<script>" in section 3`) {
		t.Errorf("script in a body: %+v outright=%v pass=%v", c, r.Outright, r.Pass)
	}
	if c.Severity() != SeverityMinor || Describe(CheckMarkup) == "" || !strings.HasSuffix(Describe(CheckMarkup), ".") {
		t.Errorf("severity %s, description %q", c.Severity(), Describe(CheckMarkup))
	}

	b := base.clone()
	b.Sections[1].H2 = "Plans <b>that</b> work"
	r = g.Evaluate(b.json(t), Spec{Language: "en"})
	c, ok = checkNamed(r, CheckMarkup)
	if !ok || r.Outright || c.Penalty != markupPen || !strings.Contains(c.Detail, "section 2 heading") {
		t.Errorf("harmless tag in a heading: %+v outright=%v", c, r.Outright)
	}
	if r.Pass {
		t.Errorf("an article with markup passed the default threshold (score %v): the review queue must show it", r.Score)
	}
}

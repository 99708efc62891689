package publish

import (
	"strings"
	"testing"
)

func TestSafeMarkdown(t *testing.T) {
	tests := []struct {
		in   string
		rule codeRule
		want string
	}{
		{"plain text stays", codeTemplates, "plain text stays"},
		{"a < b > c and 3<4", codeTemplates, "a < b > c and 3<4"},
		{"<script>alert(1)</script>after", codeTemplates, "after"},
		{"<SCRIPT type=x>alert(1)</ScRiPt >after", codeTemplates, "after"},
		{"<iframe src=x></iframe><style>b{}</style><svg onload=x><g/></svg>ok", codeTemplates, "ok"},
		{"<script>never closed", codeTemplates, "&lt;script>never closed"},
		{`<img src=x onerror="alert(1)">`, codeTemplates, `&lt;img src=x onerror="alert(1)">`},
		{"<b>bold</b> <!-- c --> <!DOCTYPE x> <?php ?>", codeTemplates, "&lt;b>bold&lt;/b> &lt;!-- c --> &lt;!DOCTYPE x> &lt;?php ?>"},
		{"see <https://example.org/x> and <mailto:a@b.c>", codeTemplates, "see <https://example.org/x> and <mailto:a@b.c>"},
		{"[x](javascript:alert(1)) [y](https://ok.example/(a))", codeTemplates, "[x](#) [y](https://ok.example/(a))"},
		{"[x]( JaVaScRiPt:alert(1) \"t\")", codeTemplates, "[x](#)"},
		{"[x](jav&#x09;ascript:alert(1))", codeTemplates, "[x](#)"},
		{"![i](data:image/svg+xml;base64,PHN2Zz4=)", codeTemplates, "![i](#)"},
		{"[x](vbscript:msgbox) [f](file:///etc/passwd)", codeTemplates, "[x](#) [f](#)"},
		{"[ref]: javascript:alert(2)\n[ok]: https://example.org", codeTemplates, "[ref]: #\n[ok]: https://example.org"},
		{"{{< notice >}} {{% x %}} {{ .Title }} {% for %} {: .c} {::comment} {# j #}", codeTemplates,
			"{&#123;< notice >}} {&#123;% x %}} {&#123; .Title }} {&#37; for %} {&#58; .c} {&#58;:comment} {&#35; j #}"},
		{"{{{{", codeTemplates, "{&#123;{&#123;"},
		{`$\{\{a\}\}$ and {curly}`, codeTemplates, `$\{\{a\}\}$ and {curly}`},
		// Code: HTML is shown as text by every renderer; template openers per target.
		{"`<script>` and `{{< x >}}`", codeVerbatim, "`<script>` and `{{< x >}}`"},
		{"`{{< x >}} {{% y %}} {{ .T }} {% if %}`", codeShortcodes, "`{{ < x >}} {{ % y %}} {{ .T }} {% if %}`"},
		{"`{{< x >}} {{ .T }} {% if %}`", codeTemplates, "`{{ < x >}} { { .T }} { % if %}`"},
		{"```\n<script>x</script>\n{{< y >}}\n```\nafter {{< z >}}", codeShortcodes, "```\n<script>x</script>\n{{ < y >}}\n```\nafter {&#123;< z >}}"},
		{"~~~~go\n{% raw %}\n~~~~\n", codeVerbatim, "~~~~go\n{% raw %}\n~~~~\n"},
		{"``a ` {{< b >}}``", codeShortcodes, "``a ` {{ < b >}}``"},
		{"`unclosed {{< b >}}", codeShortcodes, "`unclosed {&#123;< b >}}"},
	}
	for _, tt := range tests {
		if got := safeMarkdown(tt.in, tt.rule); got != tt.want {
			t.Errorf("safeMarkdown(%q, %d)\n got %q\nwant %q", tt.in, tt.rule, got, tt.want)
		}
	}
}

func TestDescription(t *testing.T) {
	a := testArticle("job-1", "T")
	a.Sections[0].Body = "\n\n# A **bold** start with [a link](https://x.example) and `code` <b>tag</b>.\n\nSecond."
	if got := description(a.Sections); got != "A bold start with a link and code tag." {
		t.Errorf("description = %q", got)
	}
	a.Sections[0].Body = strings.Repeat("word ", 60)
	got := description(a.Sections)
	if r := []rune(got); len(r) > maxDescription || !strings.HasSuffix(got, "word…") {
		t.Errorf("long description = %q (%d runes)", got, len(r))
	}
}

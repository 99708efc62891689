package publish

import (
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// hostileBody is model text that tries every kind of markup a site
// generator or a browser would act on: Hugo shortcodes, Liquid (an
// unclosed for, which failed Jekyll's whole build), Go template actions,
// kramdown attribute lists, scripts and handlers, javascript: and data:
// URLs (some obfuscated), WordPress shortcodes, and the same inside code.
const hostileBody = `Intro paragraph with a shortcode {{< notice warning >}}Click here{{< /notice >}} and {{% include "secret" %}} in it.

Liquid: {% for post in site.posts %}{{ post.title }} and {{ site.github.token }} and {% include footer.html %}.

Go templates: {{ .Site.Params.secret }} {{- range . -}} and a kramdown list {: onclick="alert(1)"} and {::nomarkdown}<b>x</b>{:/}.

<script>alert('xss')</script><img src=x onerror="alert(1)"> <iframe src="https://evil.example/"></iframe> <style>body{display:none}</style>
<div onclick="alert(1)">click</div> <svg onload=alert(1)><circle r="1"/></svg> <a href="javascript:alert(1)">link</a> <!-- wp:html --><b>bold</b><!-- /wp:html -->

Links: [click](javascript:alert(1)), [data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==), [tab](jav&#x09;ascript:alert(1)), [ok](https://example.org/page), <https://example.org/auto>.

[ref]: javascript:alert(2)

WordPress: [embed]https://www.youtube.com/watch?v=dQw4w9WgXcQ[/embed] [gallery ids="1,2"] and a URL alone:

https://www.youtube.com/watch?v=dQw4w9WgXcQ

` + "```html\n<script>alert('in code')</script>\n{{< notice >}} {% if x %} {{ .Title }}\n```\n\nInline code: `{{< tip >}}` and `<b>`. The end."

// siteArticles are the articles the site builds publish: every language
// the slugs must read in, categories that break URLs when written as they
// are, and two hostile articles.
func siteArticles() []chain.Article {
	day := time.Date(2026, 11, 29, 15, 4, 0, 0, time.UTC)
	para := func(topic string) string {
		return strings.Repeat("A plain sentence about "+topic+" that a reader can follow. ", 12)
	}
	mk := func(i int, topic, title, lang, cat string, kw []string, body string) chain.Article {
		return chain.Article{JobID: fmt.Sprintf("%s/2026-11-29", topic), Topic: topic, Slot: "2026-11-29", Title: title,
			Category: cat, Language: lang, Keywords: kw, Provider: "gemini", Model: "gemini-flash-latest", QualityScore: 90,
			Date:     day.Add(time.Duration(i) * time.Minute),
			Sections: []chain.Section{{H2: "First part", Body: body}, {H2: "Second part", Body: para(topic) + "\n\n" + para(topic)}}}
	}
	return []chain.Article{
		mk(0, "compost", "Home Composting: A Starter's Guide", "en", "dev/tools", []string{"compost", "garden"}, para("compost")),
		mk(1, "kueche", "Küche & Haushalt: Große Ordnung für kleine Räume", "de", "Küche & Haushalt", []string{"Ordnung", "Küche"}, para("Küche")),
		mk(2, "ekmek", "Evde Ekmek Mayası: İlk Adımlar", "tr", "Mutfak", []string{"ekmek", "maya"}, para("ekmek")),
		mk(3, "privet", "Привет, мир: как начать", "ru", "Блог", []string{"начало"}, para("мир")),
		mk(4, "ellada", "Καλημέρα κόσμε", "el", "Ταξίδια", []string{"ταξίδι"}, para("κόσμος")),
		mk(5, "zh-tea", "如何泡一杯好茶", "zh", "茶", []string{"茶"}, para("tea")),
		mk(6, "hostile", "Hostile <script>alert(1)</script> {{< x >}} title", "en", "Security", []string{"xss", "{% raw %}"}, hostileBody),
		mk(7, "hostile-2", "Second hostile article", "en", "Security", []string{"liquid"}, "{% if true %}unclosed if and {{ unclosed\n\n"+hostileBody),
	}
}

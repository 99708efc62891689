package quality

import (
	"regexp"
	"strconv"
	"strings"
)

// CheckMarkup names the check for markup in model text: HTML, and the
// template syntax of site generators. The publishing targets escape it
// (publish/escape.go), so it never runs on a page, but an article that
// carries it was either written about markup or steered by someone else's
// text, and a person should look before it is published.
const CheckMarkup CheckName = "markup"

// markupPen is the cost of harmless HTML (<b>, <br>, <div>…): enough to
// fail the default threshold on its own, so the review queue shows it.
// Markup that runs or loads something, and template syntax that a site
// generator executes, reject outright.
const markupPen = 35

// activeTag is an element that runs or loads something.
var activeTag = regexp.MustCompile(`(?i)</?(script|style|iframe|frame|frameset|object|embed|applet|svg|math|form|input|button|textarea|select|link|meta|base|template|noscript|video|audio|source)\b`)

// eventAttr is an on…= attribute inside a tag.
var eventAttr = regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+\s*=`)

// activeURL is a javascript:, vbscript: or data: URL in an attribute or
// a Markdown link.
var activeURL = regexp.MustCompile(`(?i)(?:(?:href|src|action|formaction|xlink:href)\s*=\s*["']?|\]\(\s*<?)\s*(?:javascript|vbscript|data)\s*:`)

// templateSyntax is what a site generator would execute: a Hugo shortcode
// ({{< >}}, {{% %}}), a Go template action ({{ .Title }}, {{- x -}}),
// Liquid output with spaces ({{ page.title }}) or a Liquid tag
// ({% for %}, {% include %}), a kramdown attribute list or extension
// ({: …}, {::…}). Set notation such as {{a, b}} and a bare {{var}} (a
// placeholder, which its own check finds) are not it.
var templateSyntax = regexp.MustCompile(`\{\{[<%]|\{\{-?\s*\.[A-Za-z_$]|\{\{-?\s+[A-Za-z_.$][\w.$]*(?:\s*\|[^}\n]*)?\s+-?\}\}|\{\{-\s|\{%-?\s*(?:if|elsif|else|endif|unless|endunless|for|endfor|case|when|endcase|include|include_relative|render|raw|endraw|assign|capture|endcapture|comment|endcomment|highlight|endhighlight|cycle|tablerow|liquid|link|post_url|increment|decrement)\b|\{:(?:[\s.#]|:[a-z])`)

// htmlTag is a tag of a known HTML element.
var htmlTag = regexp.MustCompile(`(?i)</?(a|abbr|address|article|aside|b|bdi|bdo|blockquote|body|br|caption|center|cite|code|col|dd|del|details|dfn|div|dl|dt|em|figcaption|figure|font|footer|h[1-6]|head|header|hr|html|i|img|ins|kbd|label|li|main|mark|nav|ol|p|picture|pre|q|s|samp|section|small|span|strong|sub|summary|sup|table|tbody|td|tfoot|th|thead|time|tr|u|ul|var|wbr)(?:\s[^<>]*)?/?>`)

// checkMarkup rejects outright markup that runs or loads something and
// template syntax, and costs markupPen for other HTML tags, in the title,
// a heading or a body. The detail names the first few finds and where.
func checkMarkup(s *scoring) finding {
	var found []string
	outright := false
	for _, f := range s.an.fields {
		if !strings.ContainsAny(f.text, "<{]") {
			continue
		}
		what, active := markupIn(f.text)
		if what == "" {
			continue
		}
		outright = outright || active
		if len(found) < 3 {
			found = append(found, strconv.Quote(what)+" in "+f.where())
		}
	}
	if len(found) == 0 {
		return finding{}
	}
	if outright {
		return finding{penalty: outrightPenalty, detail: strings.Join(found, "; "), outright: true}
	}
	return finding{penalty: markupPen, detail: strings.Join(found, "; ")}
}

// markupIn returns the first markup in text (clipped) and whether it is
// the kind that rejects outright; "" when there is none.
func markupIn(text string) (string, bool) {
	for _, re := range []*regexp.Regexp{activeTag, eventAttr, activeURL, templateSyntax} {
		if loc := re.FindStringIndex(text); loc != nil {
			return clip(markupAt(text, loc), 40), true
		}
	}
	if loc := htmlTag.FindStringIndex(text); loc != nil {
		return clip(text[loc[0]:loc[1]], 40), false
	}
	return "", false
}

// markupAt is the match at loc, extended to the end of its tag or
// template delimiter when that is near, for a readable detail.
func markupAt(text string, loc []int) string {
	end := loc[1]
	if i := strings.IndexAny(text[end:], ">}"); i >= 0 && i < 40 {
		end += i + 1
		for end < len(text) && text[end] == '}' {
			end++
		}
	}
	return text[loc[0]:end]
}

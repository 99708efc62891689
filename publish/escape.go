package publish

import (
	"html"
	"regexp"
	"strings"
	"unicode"

	"github.com/contentpipe/contentpipe/chain"
)

// Model text is untrusted input to the site: a provider's answer may carry
// a Hugo shortcode, Liquid, a kramdown attribute list or HTML that runs
// something, by accident (an article about templates) or because a prompt
// was hijacked. Each markdown-writing target passes every heading and
// section body through safeMarkdown before it writes it, so that nothing
// of it reaches a page as markup and no article can break the build of
// the site:
//
//   - <script>, <style>, <iframe>, <object>, <embed>, <svg>, <math>,
//     <template>, <noscript>, <frame>/<frameset> and <applet> elements are
//     removed with their content;
//   - every other '<' that opens a tag, a comment or a declaration is
//     written as &lt;, so the tag shows as text (and its on…= attributes
//     with it);
//   - a link or image whose destination is a javascript:, vbscript:, data:
//     or file: URL (entities and spaces in it decoded first, as a browser
//     would) points to "#" instead;
//   - the second character of every "{{", "{%", "{:" and "{#" is written
//     as its numeric character reference, so that no Hugo shortcode
//     ({{< >}}, {{% %}}), Go template action, Liquid tag or output,
//     kramdown extension or attribute list ({: …}, {::…}) or Jinja comment
//     starts there; the page shows the characters as written.
//
// Code spans and fenced code blocks are shown as text by every Markdown
// renderer, so HTML in them is harmless and left alone; a generator that
// reads template delimiters inside code as well gets the target's own rule
// for code (codeRule): Hugo's shortcode lexer runs before Markdown, so
// "{{<" and "{{%" in code become "{{ <" and "{{ %"; a Jekyll page carries
// render_with_liquid: false and its code is left verbatim.

// codeRule says how a target changes template openers inside code.
type codeRule int

const (
	codeVerbatim   codeRule = iota // the generator never reads code (Jekyll with render_with_liquid: false, WordPress)
	codeShortcodes                 // break "{{<" and "{{%" (Hugo)
	codeTemplates                  // break "{{", "{%" (an unknown generator: markdown)
)

// activeElements are removed with everything up to their closing tag.
var activeElements = regexp.MustCompile(`(?is)<\s*(script|style|iframe|object|embed|svg|math|template|noscript|frameset|frame|applet)\b.*?<\s*/\s*(?:script|style|iframe|object|embed|svg|math|template|noscript|frameset|frame|applet)\s*>`)

// tagOpen is a '<' that a browser or a Markdown renderer would take as the
// start of a tag, a comment, a declaration or a processing instruction.
var tagOpen = regexp.MustCompile(`<[A-Za-z/!?]`)

// autolink is a Markdown autolink to a web or mail address, which stays.
var autolink = regexp.MustCompile(`^<(?:https?://|mailto:)[^\s<>]+>`)

// refDef is a link reference definition: "[label]: dest".
var refDef = regexp.MustCompile(`(?m)^( {0,3}\[[^\]\n]+\]:[ \t]*)(<[^>\n]*>|\S+)`)

// safeMarkdown returns body with the markup of model text neutralised as
// the comment above says; rule is the target's rule for code.
func safeMarkdown(body string, rule codeRule) string {
	var out strings.Builder
	for _, part := range splitCode(body) {
		if part.code {
			out.WriteString(safeCode(part.text, rule))
			continue
		}
		out.WriteString(safeProse(part.text))
	}
	return out.String()
}

// safeProse neutralises markup in text outside code.
func safeProse(s string) string {
	s = activeElements.ReplaceAllString(s, "")
	s = escapeTags(s)
	s = defangLinks(s)
	s = refDef.ReplaceAllStringFunc(s, func(m string) string {
		sub := refDef.FindStringSubmatch(m)
		if dangerousURL(sub[2]) {
			return sub[1] + "#"
		}
		return m
	})
	return breakOpeners(s)
}

// escapeTags writes as &lt; every '<' that opens a tag, a comment or a
// declaration, except an autolink to a web or mail address.
func escapeTags(s string) string {
	locs := tagOpen.FindAllStringIndex(s, -1)
	if len(locs) == 0 {
		return s
	}
	var b strings.Builder
	last := 0
	for _, l := range locs {
		if autolink.MatchString(s[l[0]:]) {
			continue
		}
		b.WriteString(s[last:l[0]])
		b.WriteString("&lt;")
		last = l[0] + 1
	}
	b.WriteString(s[last:])
	return b.String()
}

// defangLinks points every inline link or image whose destination is
// dangerousURL to "#": "[x](javascript:alert(1))" becomes "[x](#)".
func defangLinks(s string) string {
	var b strings.Builder
	for {
		i := strings.Index(s, "](")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i+2])
		s = s[i+2:]
		end := destinationEnd(s)
		if dest := strings.Fields(s[:end]); len(dest) > 0 && dangerousURL(dest[0]) {
			b.WriteString("#")
			s = s[end:]
		}
	}
}

// destinationEnd is the index of the ')' that closes an inline link's
// destination (parentheses inside it balanced), or of the line's end.
func destinationEnd(s string) int {
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			if depth == 0 {
				return i
			}
			depth--
		case '\n':
			return i
		}
	}
	return len(s)
}

// templateOpeners maps the second character of a template opener to its
// numeric character reference.
var templateOpeners = map[byte]string{'{': "&#123;", '%': "&#37;", ':': "&#58;", '#': "&#35;"}

// breakOpeners writes the second character of every "{{", "{%", "{:" and
// "{#" as a character reference.
func breakOpeners(s string) string {
	if !strings.Contains(s, "{") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		b.WriteByte(s[i])
		if s[i] != '{' || i+1 >= len(s) {
			continue
		}
		if ref, ok := templateOpeners[s[i+1]]; ok {
			b.WriteString(ref)
			i++
		}
	}
	return b.String()
}

// safeCode applies a target's code rule to a code span or block.
func safeCode(s string, rule codeRule) string {
	switch rule {
	case codeShortcodes:
		return strings.NewReplacer("{{<", "{{ <", "{{%", "{{ %").Replace(s)
	case codeTemplates:
		return strings.NewReplacer("{{<", "{{ <", "{{%", "{{ %", "{{", "{ {", "{%", "{ %").Replace(s)
	}
	return s
}

// dangerousURL reports whether a link destination runs or embeds
// something: a javascript:, vbscript:, data: or file: URL, judged after
// decoding character references and dropping whitespace and control
// characters, as browsers do.
func dangerousURL(dest string) bool {
	d := strings.Trim(dest, "<>")
	d = html.UnescapeString(d)
	d = strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return -1
		}
		return unicode.ToLower(r)
	}, d)
	d = strings.ReplaceAll(d, `\`, "") // a Markdown escape inside the scheme
	for _, scheme := range []string{"javascript:", "vbscript:", "data:", "file:"} {
		if strings.HasPrefix(d, scheme) {
			return true
		}
	}
	return false
}

// textPart is a run of body text, code (a code span or a fenced code
// block, delimiters included) or not.
type textPart struct {
	text string
	code bool
}

// splitCode cuts s into code and non-code parts: fenced code blocks (a line
// opening with ``` or ~~~ up to its closing fence, or the end) and code
// spans (a backtick run up to the next run of the same length on the same
// paragraph). An unclosed span is not code.
func splitCode(s string) []textPart {
	var parts []textPart
	var prose strings.Builder
	flush := func() {
		if prose.Len() > 0 {
			parts = append(parts, textPart{text: prose.String()})
			prose.Reset()
		}
	}
	lines := strings.SplitAfter(s, "\n")
	for i := 0; i < len(lines); i++ {
		fence := fenceOf(lines[i])
		if fence == "" {
			prose.WriteString(lines[i])
			continue
		}
		flush()
		var block strings.Builder
		block.WriteString(lines[i])
		for i++; i < len(lines); i++ {
			block.WriteString(lines[i])
			if closesFence(lines[i], fence) {
				break
			}
		}
		parts = append(parts, textPart{text: block.String(), code: true})
	}
	flush()
	var out []textPart
	for _, p := range parts {
		if p.code {
			out = append(out, p)
			continue
		}
		out = append(out, splitSpans(p.text)...)
	}
	return out
}

// fenceOf returns the fence a line opens (``` or ~~~, or longer), or "".
func fenceOf(line string) string {
	t := strings.TrimLeft(line, " ")
	if len(line)-len(t) > 3 {
		return ""
	}
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			if c == '`' && strings.ContainsRune(t[n:], '`') {
				return "" // a backtick fence's info string has no backtick
			}
			return t[:n]
		}
	}
	return ""
}

// closesFence reports whether line closes a block opened by fence.
func closesFence(line, fence string) bool {
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == "" && t[0] == fence[0]
}

// splitSpans cuts prose into text and code spans.
func splitSpans(s string) []textPart {
	var out []textPart
	start := 0
	for i := 0; i < len(s); {
		if s[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		end := closingRun(s, i+n, n)
		if end < 0 {
			i += n
			continue
		}
		if start < i {
			out = append(out, textPart{text: s[start:i]})
		}
		out = append(out, textPart{text: s[i : end+n], code: true})
		i = end + n
		start = i
	}
	if start < len(s) {
		out = append(out, textPart{text: s[start:]})
	}
	return out
}

// closingRun finds the next run of exactly n backticks at or after from,
// before a blank line; -1 when there is none.
func closingRun(s string, from, n int) int {
	for j := from; j < len(s); {
		if strings.HasPrefix(s[j:], "\n\n") {
			return -1
		}
		if s[j] != '`' {
			j++
			continue
		}
		m := 0
		for j+m < len(s) && s[j+m] == '`' {
			m++
		}
		if m == n {
			return j
		}
		j += m
	}
	return -1
}

// plainText turns a heading or a title into text for front matter: tags
// removed, whitespace collapsed to single spaces.
func plainText(s string) string {
	s = activeElements.ReplaceAllString(s, "")
	s = anyTag.ReplaceAllString(s, "")
	return oneLine(s)
}

// anyTag is an HTML tag, comment or declaration.
var anyTag = regexp.MustCompile(`<[A-Za-z/!?][^>]*>`)

// mdLink is an inline link or image: its text is kept.
var mdLink = regexp.MustCompile(`!?\[([^\]\n]*)\]\([^)\n]*\)`)

// maxDescription is the longest description in runes, ellipsis included.
const maxDescription = 160

// description is the first paragraph of the article as plain text (links
// reduced to their text, emphasis and code markers dropped), cut at a word
// boundary to at most 160 characters, for front matter `description` and
// WordPress's excerpt.
func description(sections []chain.Section) string {
	for _, s := range sections {
		for _, p := range paragraphs(s.Body) {
			p = mdLink.ReplaceAllString(p, "$1")
			p = plainText(p)
			p = strings.TrimSpace(strings.Trim(strings.NewReplacer("**", "", "__", "", "`", "", "*", "").Replace(p), "#>-+ "))
			if p == "" {
				continue
			}
			return cutWords(p, maxDescription)
		}
	}
	return ""
}

// cutWords cuts s to at most max runes at a space, adding "…" when cut.
func cutWords(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	cut := string(r[:max-1])
	if i := strings.LastIndexByte(cut, ' '); i > len(cut)/2 {
		cut = cut[:i]
	}
	return strings.TrimRight(cut, " ,;:.") + "…"
}

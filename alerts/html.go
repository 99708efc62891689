package alerts

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/contentpipe/contentpipe/telemetry"
)

// MaxMessageLen is Telegram's limit on a message text, in UTF-16 code units
// (the unit Telegram counts in). Parts are kept under it counting the HTML
// markup too, which is stricter than Telegram (it counts the text after
// parsing).
const MaxMessageLen = 4096

// MaxCaptionLen is Telegram's limit on a photo caption.
const MaxCaptionLen = 1024

// EscapeHTML returns s with the three characters Telegram's HTML parse
// mode needs escaped replaced by their entities: & by &amp;, < by &lt;
// and > by &gt;. Nothing else is touched (quotes only matter inside an
// attribute, and this package writes no attribute from data).
func EscapeHTML(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s {
		switch r {
		case '&':
			b.WriteString("&amp;")
		case '<':
			b.WriteString("&lt;")
		case '>':
			b.WriteString("&gt;")
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// TextLen is the length of s as Telegram counts it (UTF-16 code units).
func TextLen(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

// Pre returns text (plain) as a preformatted block: escaped, in <pre>.
func Pre(text string) string {
	return "<pre>" + EscapeHTML(strings.TrimRight(text, "\n")) + "</pre>"
}

// sectionSep separates two sections in one message.
const sectionSep = "\n\n"

// Pack puts well-formed HTML sections into as few messages as it can, in
// order, each at most limit UTF-16 units (limit ≤ 0 means MaxMessageLen):
// whole sections, separated by a blank line. A section longer than limit
// is split at line boundaries (at token boundaries for a single line
// longer than that), each piece closing the tags open at its end and the
// next reopening them, so a table in <pre> stays in <pre> in every part and
// every part is well-formed on its own.
func Pack(sections []string, limit int) []string {
	if limit <= 0 {
		limit = MaxMessageLen
	}
	var (
		parts []string
		cur   strings.Builder
	)
	flush := func() {
		if cur.Len() > 0 {
			parts = append(parts, cur.String())
			cur.Reset()
		}
	}
	for _, sec := range sections {
		sec = strings.Trim(sec, "\n")
		if strings.TrimSpace(sec) == "" {
			continue
		}
		for _, piece := range splitSection(sec, limit) {
			if cur.Len() > 0 && TextLen(cur.String())+TextLen(sectionSep)+TextLen(piece) > limit {
				flush()
			}
			if cur.Len() > 0 {
				cur.WriteString(sectionSep)
			}
			cur.WriteString(piece)
		}
	}
	flush()
	return parts
}

// token is one indivisible piece of HTML: a tag, an entity, or a character.
type token struct {
	s     string
	open  string // the tag's name when it opens one
	close string // the tag's name when it closes one
}

// tokenize cuts HTML into tokens. A < that does not start a tag (a letter
// or / after it, a > later) and an & that does not start an entity are
// characters, so that the plain text of a broken part loses nothing.
func tokenize(s string) []token {
	var out []token
	for i := 0; i < len(s); {
		if t, ok := tagAt(s[i:]); ok {
			out = append(out, t)
			i += len(t.s)
			continue
		}
		if s[i] == '&' {
			if j := strings.IndexByte(s[i:], ';'); j > 1 && j <= 8 && isEntityName(s[i+1:i+j]) {
				out = append(out, token{s: s[i : i+j+1]})
				i += j + 1
				continue
			}
		}
		_, n := utf8.DecodeRuneInString(s[i:])
		out = append(out, token{s: s[i : i+n]})
		i += n
	}
	return out
}

// tagAt reads the tag at the start of s, if one starts there.
func tagAt(s string) (token, bool) {
	if len(s) < 3 || s[0] != '<' {
		return token{}, false
	}
	c := s[1]
	if c == '/' && len(s) > 2 {
		c = s[2]
	}
	if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
		return token{}, false
	}
	j := strings.IndexAny(s[1:], "<>")
	if j < 0 || s[1+j] != '>' {
		return token{}, false
	}
	t := token{s: s[:j+2]}
	name := s[1 : j+1]
	if n, ok := strings.CutPrefix(name, "/"); ok {
		t.close = n
	} else {
		t.open, _, _ = strings.Cut(name, " ")
	}
	return t, true
}

func isEntityName(s string) bool {
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '#') {
			return false
		}
	}
	return true
}

// splitSection cuts one well-formed section into pieces of at most limit
// units, preferring cuts after a line break.
func splitSection(sec string, limit int) []string {
	if TextLen(sec) <= limit {
		return []string{sec}
	}
	toks := tokenize(sec)
	var (
		out   []string
		stack []token // open tags at the start of the piece
	)
	for i := 0; i < len(toks); {
		j, end := cutAt(toks, i, stack, limit)
		var b strings.Builder
		for _, t := range stack {
			b.WriteString(t.s)
		}
		for _, t := range toks[i:j] {
			b.WriteString(t.s)
		}
		for k := len(end) - 1; k >= 0; k-- {
			b.WriteString("</" + end[k].open + ">")
		}
		out = append(out, b.String())
		i, stack = j, end
	}
	return out
}

// cutAt finds where the piece starting at toks[i] with the tags stack open
// ends: the last line break that fits, else the last token that fits (at
// least one token). It returns the end index and the tags open there.
func cutAt(toks []token, i int, stack []token, limit int) (int, []token) {
	open := append([]token(nil), stack...)
	n := 0
	for _, t := range open {
		n += TextLen(t.s)
	}
	bestLine, bestAny := -1, -1
	var lineStack, anyStack []token
	for j := i; j < len(toks); j++ {
		t := toks[j]
		n += TextLen(t.s)
		switch {
		case t.open != "":
			open = append(open, t)
		case t.close != "" && len(open) > 0:
			open = open[:len(open)-1]
		}
		closing := 0
		for _, o := range open {
			closing += len("</" + o.open + ">")
		}
		if n+closing > limit {
			break
		}
		bestAny, anyStack = j+1, append([]token(nil), open...)
		if t.s == "\n" {
			bestLine, lineStack = j+1, anyStack
		}
	}
	switch {
	case bestAny == len(toks):
		return bestAny, anyStack
	case bestLine > i:
		return bestLine, lineStack
	case bestAny > i:
		return bestAny, anyStack
	}
	// Not even one token fits after the reopened tags: take it anyway.
	st := append([]token(nil), stack...)
	switch t := toks[i]; {
	case t.open != "":
		st = append(st, t)
	case t.close != "" && len(st) > 0:
		st = st[:len(st)-1]
	}
	return i + 1, st
}

// alertHeader is the first line of an alert's message.
func alertHeader(a telemetry.Alert) string {
	sev := Severity(strings.ToLower(a.Severity))
	if sev == "" {
		sev = SeverityWarning
	}
	mark, word := severityMark(sev), strings.ToUpper(string(sev))
	if strings.HasSuffix(a.Key, ":"+string(telemetry.IncidentResolved)) {
		mark, word = "🟢", "RESOLVED"
	}
	head := "contentpipe"
	if a.Rule != "" {
		head += " · " + a.Rule
	}
	return mark + " <b>" + EscapeHTML(word) + "</b> " + EscapeHTML(head)
}

// formatLine renders one plain line: a known label in bold, `spans` as
// code, everything else escaped. A backtick without its pair is text.
func formatLine(l string) string {
	var b strings.Builder
	for _, lab := range []string{labelSince, labelDone, labelRun} {
		if rest, ok := strings.CutPrefix(l, lab); ok {
			b.WriteString("<b>" + EscapeHTML(strings.TrimSpace(lab)) + "</b> ")
			l = rest
			break
		}
	}
	for {
		i := strings.IndexByte(l, '`')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(l[i+1:], '`')
		}
		if i < 0 || j <= 0 {
			b.WriteString(EscapeHTML(l))
			return b.String()
		}
		b.WriteString(EscapeHTML(l[:i]) + "<code>" + EscapeHTML(l[i+1:i+1+j]) + "</code>")
		l = l[i+2+j:]
	}
}

// alertPart is one message of an alert: its HTML and the plain text lines
// it carries.
type alertPart struct {
	html  string
	plain string
}

// splitAlert cuts an alert into messages of at most limit units: whole
// lines where they fit (the header on the first), a line too long for one
// message in pieces. Each part's plain text is what it carries, so that
// the parts not delivered can be stored back as plain text.
func splitAlert(a telemetry.Alert, limit int) []alertPart {
	if limit <= 0 {
		limit = MaxMessageLen
	}
	var (
		parts       []alertPart
		html, plain strings.Builder
	)
	// add appends a piece; joined says it continues the line before it.
	add := func(h, p string, joined bool) {
		sep := "\n"
		if joined {
			sep = ""
		}
		if html.Len() > 0 && TextLen(html.String())+len(sep)+TextLen(h) > limit {
			parts = append(parts, alertPart{html.String(), plain.String()})
			html.Reset()
			plain.Reset()
			sep = ""
		}
		if html.Len() > 0 {
			html.WriteString(sep)
			plain.WriteString(sep)
		}
		html.WriteString(h)
		plain.WriteString(p)
	}
	add(alertHeader(a), "", false)
	for _, l := range strings.Split(a.Text, "\n") {
		for i, piece := range cutPlain(l, limit) {
			add(formatLine(piece), piece, i > 0)
		}
	}
	return append(parts, alertPart{html.String(), plain.String()})
}

// cutPlain cuts a plain line whose HTML could exceed limit into pieces
// whose HTML cannot (an escaped character is at most 5 units).
func cutPlain(l string, limit int) []string {
	max := (limit - 64) / 5
	if TextLen(formatLine(l)) <= limit || max < 1 {
		return []string{l}
	}
	var out []string
	for TextLen(l) > max {
		cut, units := 0, 0
		for i, r := range l {
			if units+utf16.RuneLen(r) > max {
				cut = i
				break
			}
			units += utf16.RuneLen(r)
		}
		if cut == 0 {
			break
		}
		out = append(out, l[:cut])
		l = l[cut:]
	}
	return append(out, l)
}

package telegramtest

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// htmlEntity resolves the named entities Telegram's HTML parse mode knows.
func htmlEntity(e string) (string, bool) {
	switch e {
	case "&lt;":
		return "<", true
	case "&gt;":
		return ">", true
	case "&amp;":
		return "&", true
	case "&quot;":
		return `"`, true
	}
	return "", false
}

// ParseHTML parses text as Telegram's HTML parse mode, strictly, and
// returns the text as displayed or the error the real server would give:
// only the tags b, strong, i, em, u, ins, s, strike, del, span
// class="tg-spoiler", a href, code, pre (holding at most one code with an
// optional class "language-…"), and blockquote; only the entities &lt;
// &gt; &amp; &quot;; every <, > and & outside a tag or entity is an
// error; tags must be balanced and properly nested, and nothing may nest
// inside code or pre except pre's one code.
func ParseHTML(text string) (string, error) {
	var (
		out   strings.Builder
		stack []string
	)
	for i := 0; i < len(text); {
		switch c := text[i]; c {
		case '<':
			j := strings.IndexByte(text[i:], '>')
			if j < 0 {
				return "", fmt.Errorf("Unclosed start tag at byte offset %d", i)
			}
			tag := text[i+1 : i+j]
			var err error
			if stack, err = applyTag(stack, tag, i); err != nil {
				return "", err
			}
			i += j + 1
		case '>':
			return "", fmt.Errorf("Unexpected end tag character '>' at byte offset %d", i)
		case '&':
			j := strings.IndexByte(text[i:], ';')
			if j < 0 {
				return "", fmt.Errorf("Unsupported entity at byte offset %d", i)
			}
			v, ok := htmlEntity(text[i : i+j+1])
			if !ok {
				return "", fmt.Errorf("Unsupported HTML entity %q at byte offset %d", text[i:i+j+1], i)
			}
			out.WriteString(v)
			i += j + 1
		default:
			r, n := utf8.DecodeRuneInString(text[i:])
			if r == utf8.RuneError && n == 1 {
				return "", fmt.Errorf("Invalid UTF-8 at byte offset %d", i)
			}
			out.WriteRune(r)
			i += n
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("Can't find end tag corresponding to start tag \"%s\"", stack[len(stack)-1])
	}
	return out.String(), nil
}

// simpleTag reports whether name is a formatting tag that takes no
// attribute.
func simpleTag(name string) bool {
	switch name {
	case "b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "code", "pre", "blockquote":
		return true
	}
	return false
}

// applyTag checks one tag (the text between < and >) against the open
// tags and returns the new stack.
func applyTag(stack []string, tag string, at int) ([]string, error) {
	top := ""
	if len(stack) > 0 {
		top = stack[len(stack)-1]
	}
	if name, ok := strings.CutPrefix(tag, "/"); ok {
		if name != top {
			return nil, fmt.Errorf("Unmatched end tag at byte offset %d, expected \"</%s>\", found \"</%s>\"", at, top, name)
		}
		return stack[:len(stack)-1], nil
	}
	name, attrs, _ := strings.Cut(tag, " ")
	if err := checkAttrs(name, strings.TrimSpace(attrs), top, at); err != nil {
		return nil, err
	}
	switch {
	case top == "code":
		return nil, fmt.Errorf("Tag \"%s\" inside code at byte offset %d: code can't contain entities", name, at)
	case top == "pre" && name != "code":
		return nil, fmt.Errorf("Tag \"%s\" inside pre at byte offset %d: pre can contain only code", name, at)
	}
	return append(stack, name), nil
}

// checkAttrs checks a start tag's name and attributes.
func checkAttrs(name, attrs, parent string, at int) error {
	switch {
	case simpleTag(name) && attrs == "":
		return nil
	case name == "code" && parent == "pre" && strings.HasPrefix(attrs, `class="language-`) && strings.HasSuffix(attrs, `"`) &&
		!strings.ContainsAny(attrs[len(`class="language-`):len(attrs)-1], `"<>& `):
		return nil
	case name == "span" && attrs == `class="tg-spoiler"`:
		return nil
	case name == "a" && strings.HasPrefix(attrs, `href="`) && strings.HasSuffix(attrs, `"`) && len(attrs) > len(`href=""`) &&
		!strings.ContainsAny(attrs[len(`href="`):len(attrs)-1], `"<> `):
		return nil
	case simpleTag(name) || name == "span" || name == "a":
		return fmt.Errorf("Unsupported attributes %q of tag \"%s\" at byte offset %d", attrs, name, at)
	}
	return fmt.Errorf("Unsupported start tag \"%s\" at byte offset %d", name, at)
}

package alerts

import (
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// MaxMessageLen is Telegram's limit on a message text, in UTF-16 code units
// (the unit Telegram counts in).
const MaxMessageLen = 4096

// MaxCaptionLen is Telegram's limit on a photo caption.
const MaxCaptionLen = 1024

// markdownV2Reserved are the characters MarkdownV2 reserves outside
// entities. The backslash is one of them: tgbotapi.EscapeText misses it.
const markdownV2Reserved = "\\_*[]()~`>#+-=|{}.!"

// EscapeMarkdownV2 returns s with every character MarkdownV2 reserves
// (_ * [ ] ( ) ~ ` > # + - = | { } . ! and the backslash) preceded by a
// backslash, so that Telegram shows s literally.
func EscapeMarkdownV2(s string) string {
	var b strings.Builder
	b.Grow(len(s) + len(s)/8)
	for _, r := range s {
		if r < utf8.RuneSelf && strings.ContainsRune(markdownV2Reserved, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// UnescapeMarkdownV2 undoes EscapeMarkdownV2: each backslash escape becomes
// the character it escapes.
func UnescapeMarkdownV2(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	esc := false
	for _, r := range s {
		if r == '\\' && !esc {
			esc = true
			continue
		}
		esc = false
		b.WriteRune(r)
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

// Split cuts an escaped MarkdownV2 text into parts of at most limit UTF-16
// units each (limit ≤ 0 means MaxMessageLen). It cuts after a line break
// when one falls in the part, else between characters, but never between a
// backslash and the character it escapes, nor inside a character. Joining
// the parts gives back text. A text that fits is one part; "" is no part.
func Split(text string, limit int) []string {
	if limit <= 0 {
		limit = MaxMessageLen
	}
	if limit < 4 {
		limit = 4 // room for an escape and a surrogate pair
	}
	var parts []string
	for text != "" {
		if TextLen(text) <= limit {
			parts = append(parts, text)
			break
		}
		cut := cutPoint(text, limit)
		parts = append(parts, text[:cut])
		text = text[cut:]
	}
	return parts
}

// cutPoint returns the byte offset where the first part of text ends: after
// the last line break within limit units, else at the last safe character
// boundary within limit.
func cutPoint(text string, limit int) int {
	units, lastSafe, lastBreak := 0, 0, 0
	esc := false
	for i, r := range text {
		units += utf16.RuneLen(r)
		if units > limit {
			break
		}
		end := i + utf8.RuneLen(r)
		switch {
		case esc:
			esc = false
			lastSafe = end
		case r == '\\':
			esc = true // the escaped character must stay with it
		default:
			lastSafe = end
		}
		if r == '\n' && !esc {
			lastBreak = end
		}
	}
	if lastBreak > 0 {
		return lastBreak
	}
	if lastSafe == 0 {
		// Cannot happen with limit ≥ 4; never return an empty part.
		_, n := utf8.DecodeRuneInString(text)
		return n
	}
	return lastSafe
}

package prompts

import "strings"

// languages maps ISO 639-1 codes to English names (with the native name
// where it differs in script or spelling).
var languages = map[string]string{
	"ar": "Arabic (العربية)",
	"bg": "Bulgarian (Български)",
	"cs": "Czech (Čeština)",
	"da": "Danish (Dansk)",
	"de": "German (Deutsch)",
	"el": "Greek (Ελληνικά)",
	"en": "English",
	"es": "Spanish (Español)",
	"fa": "Persian (فارسی)",
	"fi": "Finnish (Suomi)",
	"fr": "French (Français)",
	"he": "Hebrew (עברית)",
	"hi": "Hindi (हिन्दी)",
	"hu": "Hungarian (Magyar)",
	"id": "Indonesian (Bahasa Indonesia)",
	"it": "Italian (Italiano)",
	"ja": "Japanese (日本語)",
	"ko": "Korean (한국어)",
	"nl": "Dutch (Nederlands)",
	"no": "Norwegian (Norsk)",
	"pl": "Polish (Polski)",
	"pt": "Portuguese (Português)",
	"ro": "Romanian (Română)",
	"ru": "Russian (Русский)",
	"sv": "Swedish (Svenska)",
	"th": "Thai (ไทย)",
	"tr": "Turkish (Türkçe)",
	"uk": "Ukrainian (Українська)",
	"vi": "Vietnamese (Tiếng Việt)",
	"zh": "Chinese (中文)",
}

// LanguageName returns the English name of a language code, with its native
// name in parentheses ("tr" → "Turkish (Türkçe)"). Region suffixes are
// ignored ("pt-BR" → Portuguese); an unknown code is returned as given.
func LanguageName(code string) string {
	base, _, _ := strings.Cut(strings.ToLower(strings.TrimSpace(code)), "-")
	base, _, _ = strings.Cut(base, "_")
	if name, ok := languages[base]; ok {
		return name
	}
	return code
}

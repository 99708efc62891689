package publish

import (
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Evde Ekmek Mayası: İlk Adımlar", "evde-ekmek-mayasi-ilk-adimlar"},
		{"ÇĞIİÖŞÜ çğıiöşü", "cgiiosu-cgiiosu"},
		{"Küçük Ofisler İçin Yedekleme Rehberi", "kucuk-ofisler-icin-yedekleme-rehberi"},
		{"Crème brûlée à la française", "creme-brulee-a-la-francaise"},
		{"Straße & Æsir — Øresund, Łódź", "strasse-aesir-oresund-lodz"},
		{"  --Hello,   World!!--  ", "hello-world"},
		{"Backups: the \"3-2-1\" rule", "backups-the-3-2-1-rule"},
		{"", "untitled"},
		{"!!! ???", "untitled"},
		{"日本語", "untitled"},
	}
	for _, tt := range tests {
		if got := Slug(tt.in); got != tt.want {
			t.Errorf("Slug(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSlugIn holds slugs readable in every language a topic may ask for:
// German writes the umlauts as ae/oe/ue (Turkish drops the dots), ß is ss,
// Cyrillic and Greek are transliterated, and a title in a script without a
// transliteration (Chinese, Japanese, Arabic…) has none, so the publishers
// fall back to the topic id.
func TestSlugIn(t *testing.T) {
	tests := []struct{ in, lang, want string }{
		{"Küche & Haushalt: Große Ordnung", "de", "kueche-haushalt-grosse-ordnung"},
		{"Äpfel, Öl und Über", "de-AT", "aepfel-oel-und-ueber"},
		{"Türkiye'de Küçük Ofisler", "tr", "turkiye-de-kucuk-ofisler"},
		{"Küche", "", "kuche"},
		{"Iğdır, Şırnak ve Ağrı", "tr", "igdir-sirnak-ve-agri"},
		{"Привет, мир: как начать", "ru", "privet-mir-kak-nachat"},
		{"Щука и ёж, Чайковский", "ru", "shchuka-i-yozh-chaykovskiy"},
		{"Київ і Львів", "uk", "kiyiv-i-lviv"},
		{"Καλημέρα κόσμε, Αθήνα", "el", "kalimera-kosme-athina"},
		{"如何泡一杯好茶", "zh", ""},
		{"Docker 入门", "zh", ""},
		{"日本語のタイトル", "ja", ""},
		{"مرحبا", "ar", ""},
		{"dev/tools", "en", "dev-tools"},
	}
	for _, tt := range tests {
		if got := slugify(tt.in, tt.lang); got != tt.want {
			t.Errorf("slugify(%q, %q) = %q, want %q", tt.in, tt.lang, got, tt.want)
		}
	}
	a := testArticle("job-1", "如何泡一杯好茶")
	a.Topic = "tea-101"
	if got := articleSlug(a); got != "tea-101" {
		t.Errorf("articleSlug of a Chinese title = %q, want the topic id", got)
	}
}

func TestSlugLength(t *testing.T) {
	long := strings.Repeat("composting ", 20)
	got := Slug(long)
	if len(got) > maxSlugLen || len(got) < maxSlugLen/2 {
		t.Fatalf("len(Slug) = %d: %q", len(got), got)
	}
	if strings.HasSuffix(got, "-") || strings.HasSuffix(got, "-compo") || !strings.HasSuffix(got, "composting") {
		t.Errorf("cut inside a word or left a dash: %q", got)
	}
	one := Slug(strings.Repeat("x", 200))
	if len(one) != maxSlugLen {
		t.Errorf("single long word: len %d", len(one))
	}
	for _, r := range got + one {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			t.Fatalf("non-slug rune %q", r)
		}
	}
}

// Slug turns a title into a URL- and file-name-safe slug: lower-case ASCII
// letters and digits separated by single '-', at most 80 characters, cut at
// a word boundary where possible. Turkish letters are transliterated
// (ç→c ğ→g ı→i İ→i ö→o ş→s ü→u), other accents are stripped, ß → ss,
// Cyrillic and Greek are transliterated. Slug never returns an empty
// string: a title with a letter of a script that has no transliteration
// here (Chinese, Japanese, Korean, Arabic, Hebrew, …) or with no letter at
// all gives "untitled" (the publishers fall back to the topic id instead).
func Slug(title string) string {
	return SlugIn(title, "")
}

// SlugIn is Slug for a title written in language (a code such as "de" or
// "de-AT"; "" = none): German titles write the umlauts as ae, oe, ue.
func SlugIn(title, language string) string {
	if s := slugify(title, language); s != "" {
		return s
	}
	return "untitled"
}

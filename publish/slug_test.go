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

package alerts

import (
	"math/rand/v2"
	"strings"
	"testing"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/contentpipe/contentpipe/alerts/telegramtest"
)

func TestEscapeMarkdownV2(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain words", "plain words"},
		{"v1.2", `v1\.2`},
		{`C:\tmp\x`, `C:\\tmp\\x`},
		{"_*[]()~`>#+-=|{}.!", "\\_\\*\\[\\]\\(\\)\\~\\`\\>\\#\\+\\-\\=\\|\\{\\}\\.\\!"},
		{"çalışma — 9m52.272s ✓", `çalışma — 9m52\.272s ✓`},
		{"", ""},
	} {
		if got := EscapeMarkdownV2(tc.in); got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if got := UnescapeMarkdownV2(EscapeMarkdownV2(tc.in)); got != tc.in {
			t.Errorf("Unescape(Escape(%q)) = %q", tc.in, got)
		}
	}
}

// The library's escaper misses the backslash: the strict parser refuses its
// output or shows other text; ours comes back unchanged.
func TestLibraryEscapeMissesBackslash(t *testing.T) {
	in := `regex a\.b failed`
	if _, err := telegramtest.ParseMarkdownV2(tgbotapi.EscapeText(tgbotapi.ModeMarkdownV2, in)); err == nil {
		t.Error("the strict parser accepted tgbotapi.EscapeText output for a backslash before a dot")
	}
	in2 := `path C:\Users\bot`
	if got, err := telegramtest.ParseMarkdownV2(tgbotapi.EscapeText(tgbotapi.ModeMarkdownV2, in2)); err == nil && got == in2 {
		t.Error("the library escaper kept the backslashes; this test's premise is wrong")
	}
	for _, s := range []string{in, in2} {
		got, err := telegramtest.ParseMarkdownV2(EscapeMarkdownV2(s))
		if err != nil || got != s {
			t.Fatalf("parse(Escape(%q)) = %q, %v", s, got, err)
		}
	}
}

func TestStrictParserRejectsUnescaped(t *testing.T) {
	for _, in := range []string{"v1.2", "a-b", "f(x)", "a_b", "trailing \\", "*bold", "x|y", "a > b"} {
		if _, err := telegramtest.ParseMarkdownV2(in); err == nil {
			t.Errorf("strict parser accepted %q", in)
		}
	}
	_, err := telegramtest.ParseMarkdownV2("done.")
	if err == nil || err.Error() != `Character '.' is reserved and must be escaped with the preceding '\'` {
		t.Errorf("error %v, want the real server's wording", err)
	}
}

// mdRandomText draws text from every ASCII character (control characters
// included), some Turkish letters, an emoji and line breaks.
func mdRandomText(rng *rand.Rand, n int) string {
	alphabet := []rune("çğıöşüÇĞİÖŞÜ—…✓🚀\n\n\t ")
	for r := rune(1); r < 127; r++ {
		alphabet = append(alphabet, r)
	}
	var b strings.Builder
	for i := 0; i < n; i++ {
		b.WriteRune(alphabet[rng.IntN(len(alphabet))])
	}
	return b.String()
}

func TestEscapedRandomTextParsesBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 500; i++ {
		in := mdRandomText(rng, 1+rng.IntN(300))
		got, err := telegramtest.ParseMarkdownV2(EscapeMarkdownV2(in))
		if err != nil || got != in {
			t.Fatalf("parse(Escape(%q)) = %q, %v", in, got, err)
		}
	}
}

func TestSplit(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < 200; i++ {
		plain := mdRandomText(rng, rng.IntN(3000))
		if i%3 == 0 {
			plain = strings.Repeat(`\.`, 700) // a long line of escapes only
		}
		esc := EscapeMarkdownV2(plain)
		limit := 50 + rng.IntN(500)
		parts := Split(esc, limit)
		if strings.Join(parts, "") != esc {
			t.Fatalf("parts do not join back to the text (limit %d)", limit)
		}
		for _, p := range parts {
			if TextLen(p) > limit {
				t.Fatalf("part of %d units over limit %d", TextLen(p), limit)
			}
			if p == "" {
				t.Fatal("empty part")
			}
			// Every part parses alone: no escape was cut.
			if _, err := telegramtest.ParseMarkdownV2(p); err != nil {
				t.Fatalf("part %q does not parse: %v", p, err)
			}
		}
	}
	if Split("", 10) != nil {
		t.Error("empty text gives a part")
	}
	// Cuts fall after line breaks when there is one.
	text := strings.Repeat("line of text\n", 10)
	for _, p := range Split(text, 40) {
		if !strings.HasSuffix(p, "\n") {
			t.Errorf("part %q not cut at a line break", p)
		}
	}
	// UTF-16 counting: an emoji is two units.
	if got := Split(strings.Repeat("🚀", 5), 4); len(got) != 3 {
		t.Errorf("emoji split into %d parts, want 3", len(got))
	}
}

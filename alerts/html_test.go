package alerts

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/contentpipe/contentpipe/alerts/telegramtest"
	"github.com/contentpipe/contentpipe/telemetry"
)

func randomText(rng *rand.Rand, n int) string {
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

func TestEscapeHTML(t *testing.T) {
	for in, want := range map[string]string{
		"plain":                       "plain",
		"a < b > c & d":               "a &lt; b &gt; c &amp; d",
		"&amp; stays text":            "&amp;amp; stays text",
		`"quotes" 'and' *markdown*_.`: `"quotes" 'and' *markdown*_.`,
		"<b>not bold</b>":             "&lt;b&gt;not bold&lt;/b&gt;",
		"çğü — 🚀":                     "çğü — 🚀",
	} {
		if got := EscapeHTML(in); got != want {
			t.Errorf("EscapeHTML(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEscapedRandomTextParsesBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 500; i++ {
		in := randomText(rng, 1+rng.IntN(300))
		got, err := telegramtest.ParseHTML(EscapeHTML(in))
		if err != nil || got != in {
			t.Fatalf("parse(Escape(%q)) = %q, %v", in, got, err)
		}
		if got, err := telegramtest.ParseHTML(Pre(in)); err != nil || got != strings.TrimRight(in, "\n") {
			t.Fatalf("parse(Pre(%q)) = %q, %v", in, got, err)
		}
	}
}

// TestFormatAlertGolden pins the HTML of an alert: the header, the labels
// in bold, the command as code, data escaped.
func TestFormatAlertGolden(t *testing.T) {
	a := telemetry.Alert{Key: "chain_down#3:opened", Rule: "chain_down", Severity: "critical",
		Text: "Down: every provider failed (gemini server_error (HTTP 503): <html> & co).\nSince: 2026-12-01 06:00 UTC (4h0m ago)\nAutomation: jobs stay due.\nRun: `contentpipe health`"}
	want := "🔴 <b>CRITICAL</b> contentpipe · chain_down\n" +
		"Down: every provider failed (gemini server_error (HTTP 503): &lt;html&gt; &amp; co).\n" +
		"<b>Since:</b> 2026-12-01 06:00 UTC (4h0m ago)\n" +
		"<b>Automation:</b> jobs stay due.\n" +
		"<b>Run:</b> <code>contentpipe health</code>"
	got := FormatAlert(a)
	if got != want {
		t.Fatalf("FormatAlert:\n%s\nwant:\n%s", got, want)
	}
	if _, err := telegramtest.ParseHTML(got); err != nil {
		t.Fatal(err)
	}
	a.Key, a.Severity = "chain_down#3:resolved", "info"
	if got := FormatAlert(a); !strings.HasPrefix(got, "🟢 <b>RESOLVED</b> contentpipe · chain_down\n") {
		t.Fatalf("resolved header: %q", got)
	}
	// A lone backtick is text, not code.
	if got := formatLine("a ` b"); got != "a ` b" {
		t.Errorf("lone backtick: %q", got)
	}
}

// TestPackGolden pins how sections go into messages: whole sections
// joined by a blank line while they fit, a new message at a section
// boundary when not, and a long <pre> section split at line boundaries,
// each piece in its own <pre>.
func TestPackGolden(t *testing.T) {
	secs := []string{"<b>One</b>\nfirst", "<b>Two</b>\n<pre>a  1\nb  2</pre>", "<b>Three</b> " + strings.Repeat("x", 20)}
	got := Pack(secs, 40)
	want := []string{"<b>One</b>\nfirst", "<b>Two</b>\n<pre>a  1\nb  2</pre>", "<b>Three</b> xxxxxxxxxxxxxxxxxxxx"}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("Pack(40):\n%q\nwant\n%q", got, want)
	}
	got = Pack(secs, 80)
	want = []string{"<b>One</b>\nfirst\n\n<b>Two</b>\n<pre>a  1\nb  2</pre>", "<b>Three</b> xxxxxxxxxxxxxxxxxxxx"}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("Pack(80):\n%q\nwant\n%q", got, want)
	}
	got = Pack([]string{"<pre>row 1\nrow 2\nrow 3\nrow 4</pre>"}, 24)
	want = []string{"<pre>row 1\nrow 2\n</pre>", "<pre>row 3\nrow 4</pre>"}
	if fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
		t.Fatalf("Pack(pre, 24):\n%q\nwant\n%q", got, want)
	}
}

// TestPackSplitsUnder4096 packs a report-like message far over the limit
// (a 300-row table in <pre> with escaped data, between two short
// sections): every part is at most 4096 units, valid Telegram HTML on its
// own, the table rows are in <pre> in every part, and the parts together
// show the whole text.
func TestPackSplitsUnder4096(t *testing.T) {
	var rows []string
	for i := 0; i < 300; i++ {
		rows = append(rows, fmt.Sprintf("2026-%02d-%02d gemini<&> %6.4f ✓", 1+i%12, 1+i%28, float64(i)/7))
	}
	table := strings.Join(rows, "\n")
	head := "<b>Report</b> " + EscapeHTML("calls & cost <7 days>")
	tail := "<b>Review</b>\n" + EscapeHTML("3 jobs wait > 1 day")
	parts := Pack([]string{head, Pre(table), tail}, MaxMessageLen)
	if len(parts) < 4 {
		t.Fatalf("%d parts", len(parts))
	}
	var shown strings.Builder
	for i, p := range parts {
		if n := TextLen(p); n > MaxMessageLen {
			t.Errorf("part %d: %d units", i, n)
		}
		text, err := telegramtest.ParseHTML(p)
		if err != nil {
			t.Fatalf("part %d invalid: %v\n%s", i, err, p)
		}
		if strings.Contains(p, "gemini&lt;&amp;&gt;") && !strings.Contains(p, "<pre>") {
			t.Errorf("part %d has table rows outside <pre>", i)
		}
		shown.WriteString(text)
	}
	all := shown.String()
	for _, r := range rows {
		if !strings.Contains(all, r) {
			t.Fatalf("row %q lost", r)
		}
	}
	if !strings.HasPrefix(parts[0], head) || !strings.HasSuffix(parts[len(parts)-1], tail) {
		t.Errorf("sections out of place: %q … %q", parts[0][:40], parts[len(parts)-1])
	}
}

// TestSplitAlertKeepsPlainRest: a long alert is cut at line boundaries;
// each part is valid and under the limit, and the plain text of the parts
// gives back the alert's lines.
func TestSplitAlertKeepsPlainRest(t *testing.T) {
	var lines []string
	for i := 0; i < 400; i++ {
		lines = append(lines, fmt.Sprintf("line %d: gemini <503> & `cmd %d`", i, i))
	}
	a := telemetry.Alert{Rule: "chain_down", Severity: "critical", Text: strings.Join(lines, "\n")}
	parts := splitAlert(a, MaxMessageLen)
	if len(parts) < 3 {
		t.Fatalf("%d parts", len(parts))
	}
	var plain []string
	for i, p := range parts {
		if TextLen(p.html) > MaxMessageLen {
			t.Errorf("part %d too long", i)
		}
		if _, err := telegramtest.ParseHTML(p.html); err != nil {
			t.Fatalf("part %d: %v", i, err)
		}
		plain = append(plain, strings.TrimPrefix(p.plain, "\n"))
	}
	if got := strings.Join(plain, "\n"); got != a.Text {
		t.Fatalf("plain parts do not give back the text")
	}
}

// FormatAlert renders an outbox alert as Telegram HTML: a bold line with
// the severity mark, the severity and the rule, then the text with the
// labels of its parts (Since, Automation, Run) in bold and each `command`
// as code. A resolved incident shows a green mark.
func FormatAlert(a telemetry.Alert) string {
	lines := alertLines(a)
	return strings.Join(lines, "\n")
}

// alertLines is the header and the formatted lines of a's text.
func alertLines(a telemetry.Alert) []string {
	out := []string{alertHeader(a)}
	for _, l := range strings.Split(a.Text, "\n") {
		out = append(out, formatLine(l))
	}
	return out
}

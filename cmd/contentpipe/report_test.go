package main

import (
	"bytes"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/alerts/telegramtest"
)

func fileHash(t *testing.T, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

func TestReportAfterDemo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := run(t, dir, nil, "run", "--demo"); r.code != 0 {
		t.Fatalf("run --demo exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	dbPath := filepath.Join(dir, "data", "pipeline.db")
	before := fileHash(t, dbPath)
	chart := filepath.Join(t.TempDir(), "chart.png")
	r := run(t, dir, nil, "report", "--chart", chart)
	if r.code != 0 {
		t.Fatalf("report exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if f, err := os.Open(chart); err != nil {
		t.Fatalf("--chart: %v", err)
	} else {
		img, err := png.Decode(f)
		f.Close()
		if err != nil || img.Bounds().Dx() < 400 {
			t.Fatalf("--chart wrote no usable PNG: %v", err)
		}
	}
	out := r.stdout
	for _, section := range []string{"contentpipe report:", "\nCalls", "\nJobs", "\nFallback share", "\nCost per provider", "\nQuality trend",
		"\nShadow readiness", "\nReview queue", "\nSkips by reason", "\nHealth checks"} {
		if !strings.Contains(out, section) {
			t.Errorf("report lacks section %q", section)
		}
	}
	db := openDB(t, dbPath)

	// Calls per provider, against the README query's own window: date('now', '-7 days').
	rows, err := db.Query(`SELECT provider, COUNT(*), SUM(outcome = 'ok'), SUM(cost_estimate_usd) FROM calls
WHERE ts >= date('now', '-7 days') GROUP BY provider`)
	if err != nil {
		t.Fatal(err)
	}
	var total, totalOK int
	var totalUSD float64
	providers := 0
	for rows.Next() {
		var (
			p     string
			n, ok int
			usd   float64
		)
		if err := rows.Scan(&p, &n, &ok, &usd); err != nil {
			t.Fatal(err)
		}
		providers++
		total, totalOK, totalUSD = total+n, totalOK+ok, totalUSD+usd
		re := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(p) + `\s+(\d+)\s+(\d+)\s+([\d.]+)%.*\$([\d.]+)$`)
		m := re.FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no calls row for %s", p)
			continue
		}
		want := []string{fmt.Sprint(n), fmt.Sprint(ok), fmt.Sprintf("%.1f", 100*float64(ok)/float64(n)), fmt.Sprintf("%.4f", usd)}
		if got := m[1:]; strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("%s: calls/ok/success/cost %v, SQL says %v", p, got, want)
		}
	}
	rows.Close()
	if providers < 2 || total == 0 {
		t.Fatalf("demo made calls to %d providers", providers)
	}
	allRow := fmt.Sprintf("  %-12s %6d %6d %8s", "all", total, totalOK, fmt.Sprintf("%.1f%%", 100*float64(totalOK)/float64(total)))
	if !strings.Contains(out, allRow) || !strings.Contains(out, fmt.Sprintf("$%.4f\n", totalUSD)) {
		t.Errorf("report lacks the totals %q / $%.4f:\n%s", allRow, totalUSD, out)
	}

	// Fallback share: published jobs not served by gemini, the demo's first link.
	var pub, fb int
	if err := db.QueryRow(`SELECT COUNT(*), COALESCE(SUM(provider <> 'gemini'), 0) FROM jobs
WHERE status = 'published' AND published_at >= date('now', '-7 days')`).Scan(&pub, &fb); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("overall %d of %d (%.1f%%)", fb, pub, 100*float64(fb)/float64(pub)); pub == 0 || !strings.Contains(out, want) {
		t.Errorf("report lacks %q", want)
	}
	var day string
	if err := db.QueryRow(`SELECT substr(MAX(published_at), 1, 10) FROM jobs`).Scan(&day); err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("  %s  %d of %d", day, fb, pub); !strings.Contains(out, want) {
		t.Errorf("report lacks the day line %q", want)
	}
	// Skips by reason and the review queue.
	srows, err := db.Query(`SELECT reason, COUNT(*) FROM skips WHERE ts >= date('now', '-7 days') GROUP BY reason`)
	if err != nil {
		t.Fatal(err)
	}
	for srows.Next() {
		var (
			reason string
			n      int
		)
		if err := srows.Scan(&reason, &n); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("%s %d", reason, n); !strings.Contains(out, want) {
			t.Errorf("skips: report lacks %q", want)
		}
	}
	srows.Close()
	review := count(t, db, `SELECT COUNT(*) FROM jobs WHERE status = 'review'`)
	if want := fmt.Sprintf("all, not only this window): %d\n", review); !strings.Contains(out, want) {
		t.Errorf("report lacks %q", want)
	}
	if after := fileHash(t, dbPath); after != before {
		t.Error("report changed the database although there was no alert to queue")
	}
	if r := run(t, dir, nil, "report", "--days", "0"); r.code != 2 {
		t.Errorf("--days 0: exit %d", r.code)
	}
}

func TestReportEmptyDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	r := run(t, dir, nil, "report", "--days", "3")
	if r.code != 0 || !strings.Contains(r.stdout, "No data in this window") || !strings.Contains(r.stdout, "the last 3 days") {
		t.Fatalf("report on nothing: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "data")); err == nil {
		t.Error("report created the database directory")
	}
}

// seedDrop adds gemini job calls to db: 30 scores around 90 from 12 to 7
// days ago, then 12 around 80 over the last two days.
func seedDrop(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	noise := []float64{-3, 2, 0, 4, -1, -4, 3, 1, -2, 0}
	now := time.Now().UTC()
	add := func(i int, ts time.Time, score float64) {
		_, err := db.Exec(`INSERT INTO calls (provider, model, request_id, attempt, ts, quality_score, outcome, purpose)
VALUES ('gemini', 'gemini-flash-latest', ?, 1, ?, ?, 'ok', 'job')`, fmt.Sprint("seed-", i), ts.Format("2006-01-02T15:04:05.000Z"), score)
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := range 30 {
		add(i, now.Add(-12*24*time.Hour+time.Duration(i)*4*time.Hour), 90+noise[i%10])
	}
	for i := range 12 {
		add(30+i, now.Add(-48*time.Hour+time.Duration(i)*3*time.Hour), 80+noise[(i+5)%10])
	}
}

func TestReportQueuesTrendAlertOnce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if r := run(t, dir, nil, "run", "--demo"); r.code != 0 {
		t.Fatalf("run --demo exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	dbPath := filepath.Join(dir, "data", "pipeline.db")
	seedDrop(t, dbPath)
	r := run(t, dir, nil, "report")
	if r.code != 0 || !strings.Contains(r.stdout, "DROP FLAGGED") {
		t.Fatalf("report exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	db := openDB(t, dbPath)
	q := `SELECT COUNT(*) FROM alerts WHERE rule = 'trend' AND key = 'trend:quality:gemini'`
	if n := count(t, db, q); n != 1 {
		t.Fatalf("%d trend alerts for gemini, want 1\nstderr:\n%s", n, r.stderr)
	}
	var text string
	if err := db.QueryRow(`SELECT text FROM alerts WHERE key = 'trend:quality:gemini'`).Scan(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gemini", "baseline score", "recent", "contentpipe report"} {
		if !strings.Contains(text, want) {
			t.Errorf("alert text lacks %q: %s", want, text)
		}
	}
	if !strings.Contains(r.stderr, "ALERT [WARNING] Silent decay") {
		t.Errorf("the new alert was not echoed on stderr:\n%s", r.stderr)
	}
	// A second report in the same week queues nothing new.
	if r2 := run(t, dir, nil, "report"); r2.code != 0 || !strings.Contains(r2.stdout, "DROP FLAGGED") {
		t.Fatalf("second report exit %d\n%s", r2.code, r2.stderr)
	}
	if n := count(t, db, `SELECT COUNT(*) FROM alerts WHERE rule = 'trend'`); n != 1 {
		t.Errorf("%d trend alerts after a second report, want 1", n)
	}
}

func TestReportToTelegram(t *testing.T) {
	t.Parallel()
	const token, chat = "123456789:AAF-report_test-token", "-100987654321"
	srv := telegramtest.NewServer(token, chat)
	defer srv.Close()
	w := newSimWorld(t, 2, nil, fmt.Sprintf("alerts:\n  telegram: {api_endpoint: %q}\n", srv.Endpoint))
	env := append(w.env, "TELEGRAM_BOT_TOKEN="+token, "TELEGRAM_CHAT_ID="+chat)
	if r := run(t, w.dir, env, "run"); r.code > 1 {
		t.Fatalf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	sentBefore := len(srv.Messages())
	r := run(t, w.dir, env, "report")
	if r.code != 0 || !strings.Contains(r.stdout, "report sent to Telegram") {
		t.Fatalf("report exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	msgs := srv.Messages()[sentBefore:]
	var photo, text bool
	for _, m := range msgs {
		switch m.Method {
		case "sendPhoto":
			img, err := png.Decode(bytes.NewReader(m.Photo))
			if err != nil {
				t.Fatalf("the chart is not a PNG: %v", err)
			}
			if b := img.Bounds(); b.Dx() < 400 || b.Dy() < 400 {
				t.Errorf("chart %v", b)
			}
			photo = strings.Contains(m.Text, "calls")
		case "sendMessage":
			// The chat gets the short HTML version; the full text stays on stdout.
			if m.ParseMode == "HTML" && strings.Contains(m.Text, "contentpipe report · ") && strings.Contains(m.Text, "\nCalls\n") {
				text = true
			}
		}
	}
	if !photo || !text {
		t.Fatalf("telegram got %d messages, photo with caption %v, report text %v: %+v\nrejected: %v", len(msgs), photo, text, msgs, srv.Rejected())
	}
	for _, k := range worldKeys {
		if strings.Contains(r.stdout+r.stderr, k) {
			t.Fatal("a key leaked into the report output")
		}
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Fatal("the bot token leaked into the report output")
	}
}

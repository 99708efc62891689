package alerts

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/alerts/telegramtest"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// vtime is a settable clock for Sender.Now and a Sleep that advances it.
type vtime struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func (v *vtime) Now() time.Time {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.now
}

func (v *vtime) Sleep(_ context.Context, d time.Duration) error {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.slept = append(v.slept, d)
	v.now = v.now.Add(d)
	return nil
}

func (v *vtime) advance(d time.Duration) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.now = v.now.Add(d)
}

func queue(t *testing.T, store *telemetry.Store, now time.Time, n int) []string {
	t.Helper()
	o := &Outbox{Store: store, Clock: &vtime{now: now}}
	var texts []string
	for i := 0; i < n; i++ {
		text := fmt.Sprintf("Alert number %d: gemini-2.5 failed (http 503).", i)
		tgMust(t, o.Notify(context.Background(), chain.Alert{Key: fmt.Sprintf("all_failed:job-%d", i), Rule: "all_failed", Severity: "critical", Text: text}))
		texts = append(texts, text)
	}
	return texts
}

// deliveredOnce checks that each text was shown exactly once.
func deliveredOnce(t *testing.T, srv *telegramtest.Server, texts []string) {
	t.Helper()
	shown := tgShown(srv.Messages())
	for _, text := range texts {
		if n := strings.Count(shown, text); n != 1 {
			t.Errorf("%q delivered %d times", text, n)
		}
	}
}

func pending(t *testing.T, store *telemetry.Store) int {
	t.Helper()
	n, err := store.PendingAlerts(context.Background())
	tgMust(t, err)
	return n
}

func TestOutboxTelegramDownThenUp(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	store, _ := tgStore(t)
	clock := &vtime{now: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
	texts := queue(t, store, clock.Now(), 3)

	// The run's flush: Telegram does not answer. Nothing fails, nothing is lost.
	srv.SetDown(true)
	first := &Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "run-1", Clock: clock}
	res, err := first.Flush(context.Background())
	if err != nil || res.Sent != 0 || !res.Stopped {
		t.Fatalf("flush while down: %+v %v", res, err)
	}
	if n := pending(t, store); n != 3 {
		t.Fatalf("%d pending after a failed flush, want 3", n)
	}
	_, rows, _ := store.Query(context.Background(), "SELECT attempts, last_error FROM alerts WHERE attempts > 0")
	if len(rows) != 1 || strings.Contains(fmt.Sprint(rows), "AAF-test") {
		t.Fatalf("after an unreachable Telegram, one alert is marked tried (without the token): %v", rows)
	}

	// The next command (of any kind, a new process: a new Telegram) a minute later.
	srv.SetDown(false)
	clock.advance(time.Minute)
	next := &Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "report-2", Clock: clock}
	res, err = next.Flush(context.Background())
	if err != nil || res.Sent != 3 {
		t.Fatalf("flush after recovery: %+v %v", res, err)
	}
	if again, _ := next.Flush(context.Background()); again.Sent != 0 {
		t.Fatalf("a second flush sent %d more", again.Sent)
	}
	deliveredOnce(t, srv, texts)
	if n := pending(t, store); n != 0 {
		t.Fatalf("%d still pending", n)
	}
}

func TestOutboxFloodControlShortWaitInSameCommand(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	store, _ := tgStore(t)
	clock := &vtime{now: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
	texts := queue(t, store, clock.Now(), 2)
	srv.Flood(1, 5)
	s := &Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "run", Clock: clock}
	res, err := s.Flush(context.Background())
	if err != nil || res.Sent != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if len(clock.slept) != 1 || clock.slept[0] != 5*time.Second {
		t.Fatalf("waits %v, want Telegram's retry_after of 5s", clock.slept)
	}
	deliveredOnce(t, srv, texts)
}

func TestOutboxFloodControlLongWaitLeftToLaterCommand(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	store, _ := tgStore(t)
	clock := &vtime{now: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
	texts := queue(t, store, clock.Now(), 2)
	srv.Flood(1, 60)
	mk := func() *Sender {
		return &Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "cmd", Clock: clock}
	}
	res, err := mk().Flush(context.Background())
	if err != nil || res.Sent != 0 || !res.Stopped || len(clock.slept) != 0 {
		t.Fatalf("flush under a 60s flood wait: %+v %v, slept %v", res, err, clock.slept)
	}
	// A command 30 s later: the flooded alert is not due yet; the other one is.
	clock.advance(30 * time.Second)
	res, _ = mk().Flush(context.Background())
	if res.Sent != 1 || pending(t, store) != 1 {
		t.Fatalf("30s later: %+v, %d pending", res, pending(t, store))
	}
	clock.advance(31 * time.Second)
	res, _ = mk().Flush(context.Background())
	if res.Sent != 1 || pending(t, store) != 0 {
		t.Fatalf("after retry_after: %+v, %d pending", res, pending(t, store))
	}
	deliveredOnce(t, srv, texts)
}

func TestOutboxTwoProcessesNeverSendTwice(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	srv.SetDelay(15 * time.Millisecond)
	store, path := tgStore(t)
	texts := queue(t, store, time.Now(), 24)
	var wg sync.WaitGroup
	results := make([]FlushResult, 3)
	for i := range results {
		// Each "process" has its own database handle and its own bot.
		s, err := telemetry.Open(path)
		tgMust(t, err)
		defer s.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := (&Sender{Store: s, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: fmt.Sprintf("proc-%d", i)}).Flush(context.Background())
			if err != nil {
				t.Error(err)
			}
			results[i] = r
		}()
	}
	wg.Wait()
	total := 0
	for _, r := range results {
		total += r.Sent
	}
	if total != len(texts) || len(srv.Messages()) != len(texts) {
		t.Fatalf("sent %d (messages %d) for %d alerts: %+v", total, len(srv.Messages()), len(texts), results)
	}
	deliveredOnce(t, srv, texts)
}

func TestOutboxLongAlertPartsAreNeverResent(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	store, _ := tgStore(t)
	clock := &vtime{now: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
	var lines []string
	for i := 0; i < 300; i++ {
		lines = append(lines, fmt.Sprintf("line %03d: groq attempt %d: server_error (http 503) — next provider.", i, i))
	}
	o := &Outbox{Store: store, Clock: clock}
	tgMust(t, o.Notify(context.Background(), chain.Alert{Key: "all_failed:long", Rule: "all_failed", Severity: "critical", Text: strings.Join(lines, "\n")}))
	srv.FloodAfter(1, 1, 120) // the first part goes through, then flood control
	mk := func() *Sender {
		return &Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "cmd", Clock: clock}
	}
	res, _ := mk().Flush(context.Background())
	if res.Sent != 0 || len(srv.Messages()) != 1 {
		t.Fatalf("first flush: %+v, %d messages", res, len(srv.Messages()))
	}
	clock.advance(121 * time.Second)
	res, _ = mk().Flush(context.Background())
	if res.Sent != 1 {
		t.Fatalf("second flush: %+v", res)
	}
	shown := tgShown(srv.Messages())
	for _, l := range lines {
		if n := strings.Count(shown, l); n != 1 {
			t.Fatalf("%q shown %d times", l, n)
		}
	}
	if !strings.Contains(shown, continued) {
		t.Error("the rest of the alert is not marked as continued")
	}
}

func TestConsoleDoesNotPrintTwice(t *testing.T) {
	store, _ := tgStore(t)
	var echo, out bytes.Buffer
	start := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	old := &Outbox{Store: store, Console: &echo, Clock: &vtime{now: start.Add(-time.Hour)}}
	tgMust(t, old.Notify(context.Background(), chain.Alert{Key: "a", Rule: "health", Severity: "warning", Text: "queued by an earlier command"}))
	cur := &Outbox{Store: store, Console: &echo, Clock: &vtime{now: start.Add(time.Second)}}
	tgMust(t, cur.Notify(context.Background(), chain.Alert{Key: "b", Rule: "health", Severity: "warning", Text: "queued by this command"}))
	if strings.Count(echo.String(), "ALERT") != 2 {
		t.Fatalf("enqueue echo %q", echo.String())
	}
	s := &Sender{Store: store, To: &Console{W: &out, Since: start}, Owner: "c", Clock: &vtime{now: start.Add(2 * time.Second)}}
	res, err := s.Flush(context.Background())
	if err != nil || res.Sent != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	if !strings.Contains(out.String(), "queued by an earlier command") || strings.Contains(out.String(), "queued by this command") {
		t.Fatalf("console flush printed %q", out.String())
	}
}

func TestBackoff(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want time.Duration
	}{{1, time.Minute}, {2, 2 * time.Minute}, {4, 8 * time.Minute}, {20, 6 * time.Hour}, {1000, 6 * time.Hour}} {
		if got := Backoff(tc.n); got != tc.want {
			t.Errorf("Backoff(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}

// TestRetryAfterTenYearsIsClamped: Telegram (or whatever answers in its
// place) asks for a retry_after of ten years. The alert waits the bound
// (MaxRetryAfter, a day), not ten years; one delay_clamped warning naming
// the value is queued, however often the value comes back that day; after
// the bound both are delivered.
func TestRetryAfterTenYearsIsClamped(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	store, _ := tgStore(t)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	clock := &vtime{now: t0}
	texts := queue(t, store, t0, 1)
	srv.Flood(2, 315360000)
	mk := func() *Sender {
		return &Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "cmd", Clock: clock,
			Warn: &Outbox{Store: store, Clock: clock}}
	}
	res, err := mk().Flush(ctx)
	if err != nil || res.Sent != 0 || !res.Stopped || len(clock.slept) != 0 {
		t.Fatalf("flush under a ten-year flood wait: %+v %v, slept %v", res, err, clock.slept)
	}
	_, rows, err := store.Query(ctx, "SELECT next_try_at FROM alerts WHERE rule = 'all_failed'")
	tgMust(t, err)
	if got := fmt.Sprint(rows[0][0]); got != telemetry.FormatTime(t0.Add(MaxRetryAfter)) {
		t.Fatalf("next try %s, want the bound %s", got, telemetry.FormatTime(t0.Add(MaxRetryAfter)))
	}
	for i := 0; i < 2; i++ { // the warning itself meets the same flood
		clock.advance(time.Minute)
		if _, err := mk().Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	_, rows, err = store.Query(ctx, "SELECT key, text FROM alerts WHERE rule = 'delay_clamped'")
	tgMust(t, err)
	if len(rows) != 1 || rows[0][0] != "delay_clamped:telegram:2026-11-29" || !strings.Contains(fmt.Sprint(rows[0][1]), "retry_after 315360000 s") {
		t.Fatalf("delay_clamped alerts %v", rows)
	}
	clock.advance(MaxRetryAfter)
	res, err = mk().Flush(ctx)
	if err != nil || res.Sent != 2 || pending(t, store) != 0 {
		t.Fatalf("after the bound: %+v %v, %d pending", res, err, pending(t, store))
	}
	deliveredOnce(t, srv, texts)
	if !strings.Contains(tgShown(srv.Messages()), "clamped to 24h") {
		t.Errorf("warning not delivered: %s", tgShown(srv.Messages()))
	}
}

// An alert kept in the outbox says its age as of the send, not as of its
// queueing: Since "(2m0s ago)" queued at 06:00 and sent at 09:00 is
// "(3h2m ago)"; the stored text keeps the queueing's age.
func TestSinceAgeAtSendTime(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	store, _ := tgStore(t)
	clock := &vtime{now: time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)}
	o := &Outbox{Store: store, Clock: clock}
	text := "Down: provider groq keeps failing.\nSince: 2026-11-29 05:58 UTC (2m0s ago)\nAutomation: The chain falls back.\nRun: `contentpipe health`"
	tgMust(t, o.Notify(context.Background(), chain.Alert{Key: "provider_down:groq#1:opened", Rule: "provider_down", Severity: "warning", Text: text}))
	review, ok := ReviewQueueAlert(2, clock.Now().Add(-5*time.Minute), clock.Now())
	if !ok {
		t.Fatal("no review alert")
	}
	tgMust(t, o.Notify(context.Background(), review))
	clock.advance(3 * time.Hour)
	res, err := (&Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "later", Clock: clock}).Flush(context.Background())
	if err != nil || res.Sent != 2 {
		t.Fatalf("flush: %+v %v", res, err)
	}
	shown := tgShown(srv.Messages())
	for _, want := range []string{"2026-11-29 05:58 UTC (3h2m ago)", "(the oldest, 3h5m ago)"} {
		if !strings.Contains(shown, want) {
			t.Errorf("sent text lacks %q (its age as of the send):\n%s", want, shown)
		}
	}
	if strings.Contains(shown, "(2m0s ago)") || strings.Contains(shown, "5m0s ago") {
		t.Errorf("sent text still says the age at queueing:\n%s", shown)
	}
}

func TestSinceAsOf(t *testing.T) {
	q := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in    string
		after time.Duration
		want  string
	}{
		{"Since: x (30m40s ago)", 90 * 24 * time.Hour, "Since: x (90.0 days ago)"},
		{"Since: x (2.5 days ago)", 12 * time.Hour, "Since: x (3.0 days ago)"},
		{"Since: x (1h0m ago)", time.Minute, "Since: x (1h1m ago)"},
		{"What (2m0s ago)\nSince: this run", time.Hour, "What (2m0s ago)\nSince: this run"},
		{"(continued) Since: x (10s ago)", 50 * time.Second, "(continued) Since: x (1m0s ago)"},
	} {
		if got := SinceAsOf(c.in, q, q.Add(c.after)); got != c.want {
			t.Errorf("SinceAsOf(%q, +%s) = %q, want %q", c.in, c.after, got, c.want)
		}
	}
}

package alerts

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/alerts/telegramtest"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/telemetry"
)

const (
	testToken = "123456789:AAF-test_token.with-reserved_chars"
	testChat  = "-1001234567890"
)

func tgStore(t *testing.T) (*telemetry.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipeline.db")
	s, err := telemetry.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// displayed joins what the fake showed for every accepted message.
func tgShown(msgs []telegramtest.Message) string {
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.Text)
	}
	return b.String()
}

func TestTelegramIsLazy(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	tg := NewTelegram(testToken, testChat, srv.Endpoint, nil)
	store, _ := tgStore(t)
	res, err := (&Sender{Store: store, To: tg, Owner: "t"}).Flush(context.Background())
	if err != nil || res.Sent != 0 {
		t.Fatalf("flush of an empty outbox: %+v %v", res, err)
	}
	if n := srv.GetMeCalls(); n != 0 {
		t.Fatalf("getMe called %d times with nothing to send", n)
	}
	if err := tg.SendText(context.Background(), "one. two"); err != nil {
		t.Fatal(err)
	}
	if err := tg.SendText(context.Background(), "three (3)"); err != nil {
		t.Fatal(err)
	}
	if n := srv.GetMeCalls(); n != 1 {
		t.Fatalf("getMe called %d times for two sends, want 1", n)
	}
	if got := tgShown(srv.Messages()); got != "one. twothree (3)" {
		t.Fatalf("displayed %q", got)
	}
}

// tgProvider answers every request with the same error or text.
type tgProvider struct {
	err  *chain.ProviderError
	text string
}

func (p tgProvider) Generate(context.Context, chain.Request) (chain.Response, error) {
	if p.err != nil {
		e := *p.err
		return chain.Response{}, &e
	}
	return chain.Response{Text: p.text, HTTPStatus: 200}, nil
}

// productAlerts queues every kind of alert the product raises, with the
// real text builders (chain.Runner for all_failed, auth_error and review;
// the rules for the rest) and nasty inputs: provider error bodies with
// JSON, dots, dashes, parentheses, underscores and backslashes.
func productAlerts(t *testing.T, store *telemetry.Store) {
	t.Helper()
	ctx := context.Background()
	out := NewOutbox(store, nil)
	gate, err := quality.NewGate(data.ArticleSchema, quality.Settings{Threshold: 70, MinSections: 3, MinSectionWords: 50})
	if err != nil {
		t.Fatal(err)
	}
	reset, _ := chain.ParseCapReset("")
	pol := chain.DefaultRetryPolicy()
	pol.OtherWait, pol.RateLimitedMaxRetries = 0, 0
	mk := func(provs ...chain.Provider) *chain.Chain {
		c := &chain.Chain{Policy: pol,
			Deadline: time.Minute, Store: store, Gate: gate, Clock: chain.RealClock{}, Schema: data.ArticleSchema,
			Prompt: func(family string, j chain.Job) (chain.Prompt, error) {
				return chain.Prompt{User: "Title: " + j.Title, Version: "article@test/" + family}, nil
			}}
		for i, p := range provs {
			name := []string{"gemini-2.5_flash", "groq", "open.router-x"}[i]
			c.Links = append(c.Links, &chain.Link{Name: name, Model: "m-" + name, Family: "openai", Provider: p, CapReset: reset})
		}
		return c
	}
	nasty := `{"error":{"code":503,"message":"The model is overloaded. Please try again later (see https://ai.google.dev/_docs#x-y).","status":"UNAVAILABLE","path":"C:\\srv\\gw"}}`
	run := func(c *chain.Chain, topic, title string) {
		r := &chain.Runner{Chain: c, Jobs: store, Publisher: tgNopPublisher{}, Notifier: out, Owner: chain.Owner{Host: "h", PID: 1}}
		r.Run(ctx, []chain.Job{{ID: "2026-11-29/" + topic, Topic: topic, Slot: "2026-11-29", Title: title, Language: "en", TargetWords: 300}}, 1)
	}
	run(mk(tgProvider{err: &chain.ProviderError{Status: 503, Outcome: chain.OutcomeServerError, Message: nasty}},
		tgProvider{err: &chain.ProviderError{Status: 0, Outcome: chain.OutcomeTimeoutFirstToken, Message: "no first token after 60s (stream_idle) -- giving up!"}}),
		"heat-pumps_101", `Heat pumps: 5 myths (and *facts*) — v2.0 [draft] \o/`)
	run(mk(tgProvider{err: &chain.ProviderError{Status: 401, Outcome: chain.OutcomeAuthError, Message: "Incorrect API key provided: gsk_***. You can find your API key at https://console.groq.com/keys."}}),
		"auth-topic", "Auth | test #1 + {x} = y!")
	run(mk(tgProvider{text: `{"title":"T (draft)","sections":[{"h2":"a_b","body":"short. text\\ here"}]}`}),
		"review-topic", "Review ~ test > 100% `code`")
	for _, a := range BudgetAlerts([]CapUse{{Provider: "cerebras-wse_1", DayStart: time.Date(2026, 11, 29, 8, 0, 0, 0, time.UTC), Used: 900, Cap: 1000}}, 0.8) {
		tgMust(t, out.Notify(ctx, a))
	}
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	tgMust(t, Rules{Store: store, Notifier: out}.Evaluate(ctx, now)) // the deferred job: chain_down
	msg := incidentMessage(now)
	for i, ch := range []telemetry.IncidentChange{telemetry.IncidentOpened, telemetry.IncidentReminder, telemetry.IncidentResolved} {
		in := telemetry.Incident{ID: 7, Key: "provider_down:open.router-x", Rule: string(RuleProviderDown), Provider: "open.router-x",
			OpenedAt: now.Add(-3 * time.Hour), LastSeenAt: now, ResolvedAt: now, Reminders: i, Detail: "7 failed calls; latest stream_broken: " + nasty}
		_, err := store.EnqueueAlert(ctx, msg(telemetry.IncidentEvent{Change: ch, Incident: in}), time.Hour, now)
		tgMust(t, err)
	}
	a, _ := ReviewQueueAlert(3, now.Add(-26*time.Hour), now)
	tgMust(t, out.Notify(ctx, a))
	tgMust(t, out.Notify(ctx, HealthAlert("gemini-2.5_flash", "timeout_total", 0, `context deadline exceeded (Client.Timeout exceeded while awaiting headers) at C:\x\y.`)))
	tgMust(t, out.Notify(ctx, chain.Alert{Key: "trend:weekly", Rule: "trend", Severity: "info",
		Text: "Quality of groq fell from 84.5 to 71.2 (-13.3) over 7 days; fallback share rose 12% -> 31%. See: contentpipe report --days 7"}))
}

type tgNopPublisher struct{}

func (tgNopPublisher) Prepare(_ context.Context, a chain.Article) (chain.Delivery, error) {
	return chain.Delivery{JobID: a.JobID, Location: "nop://" + a.JobID}, nil
}
func (tgNopPublisher) Deliver(_ context.Context, d chain.Delivery) (string, error) {
	return d.Location, nil
}

func tgMust(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestEveryProductAlertIsAccepted(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	store, _ := tgStore(t)
	productAlerts(t, store)
	_, rows, err := store.Query(context.Background(), "SELECT rule, text FROM alerts ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	rules := map[string]bool{}
	var texts []string
	for _, r := range rows {
		rules[fmt.Sprint(r[0])] = true
		texts = append(texts, fmt.Sprint(r[1]))
	}
	for _, want := range []string{"chain_down", "auth_error", "review_queue", "budget", "provider_down", "health", "trend"} {
		if !rules[want] {
			t.Errorf("no %s alert was produced (rules %v)", want, rules)
		}
	}
	res, err := (&Sender{Store: store, To: NewTelegram(testToken, testChat, srv.Endpoint, nil), Owner: "t"}).Flush(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rej := srv.Rejected(); len(rej) > 0 {
		t.Fatalf("the Bot API refused %d message(s): %v", len(rej), rej)
	}
	if res.Sent != len(texts) || res.Failed != 0 {
		t.Fatalf("flush %+v for %d alerts", res, len(texts))
	}
	// The ages of Since lines are as of the send (SinceAsOf): compared without them.
	shown := sinceAgo.ReplaceAllString(tgShown(srv.Messages()), "(… ago)")
	for _, text := range texts {
		if !strings.Contains(shown, strings.ReplaceAll(sinceAgo.ReplaceAllString(text, "(… ago)"), "`", "")) {
			t.Errorf("alert text not shown as written (commands as code): %q", text)
		}
	}
	for _, m := range srv.Messages() {
		if m.ParseMode != "HTML" {
			t.Errorf("message sent with parse mode %q", m.ParseMode)
		}
	}
}

func TestRandomTextsAndLongTextsAreAccepted(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	tg := NewTelegram(testToken, testChat, srv.Endpoint, nil)
	rng := rand.New(rand.NewPCG(1, 9))
	ctx := context.Background()
	var want strings.Builder
	for i := 0; i < 30; i++ {
		text := randomText(rng, 1+rng.IntN(600))
		if strings.TrimSpace(text) == "" {
			continue
		}
		tgMust(t, tg.Deliver(ctx, telemetry.Alert{Rule: "all_failed", Severity: "critical", Text: text}))
		want.WriteString(text)
	}
	// A text of about 12,000 characters, mostly reserved ones, in long lines.
	long := strings.Repeat("gemini-2.5 (server_error): overloaded. \\ retry! ", 250)
	tgMust(t, tg.Deliver(ctx, telemetry.Alert{Rule: "all_failed", Severity: "critical", Text: long}))
	if rej := srv.Rejected(); len(rej) > 0 {
		t.Fatalf("refused: %v", rej)
	}
	msgs := srv.Messages()
	if len(msgs) < 30+3 {
		t.Fatalf("%d messages: the long text was not split", len(msgs))
	}
	if !strings.Contains(tgShown(msgs), long) {
		t.Fatal("the long text did not arrive whole across its parts")
	}
}

func TestSendPhoto(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	tg := NewTelegram(testToken, testChat, srv.Endpoint, nil)
	png := []byte("\x89PNG\r\n\x1a\nfake")
	tgMust(t, tg.SendPhoto(context.Background(), "report.png", png, "Weekly report (7 days): 98.5% ok."))
	long := strings.Repeat("caption line with a dot. ", 60)
	tgMust(t, tg.SendPhoto(context.Background(), "report.png", png, long))
	msgs := srv.Messages()
	if len(msgs) != 3 || msgs[0].Method != "sendPhoto" || !bytes.Equal(msgs[0].Photo, png) || msgs[0].Text != "Weekly report (7 days): 98.5% ok." {
		t.Fatalf("messages %+v", msgs)
	}
	if msgs[1].Method != "sendPhoto" || msgs[1].Raw != "" || msgs[2].Method != "sendMessage" || msgs[2].Text != long {
		t.Fatalf("a long caption was not moved to a text message: %+v", msgs[1:])
	}
}

func TestTelegramErrorsNeverShowTheToken(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	srv.SetDown(true)
	tg := NewTelegram(testToken, testChat, srv.Endpoint, nil)
	err := tg.SendText(context.Background(), "hello")
	var de *DeliveryError
	if !errors.As(err, &de) || !de.Unreachable {
		t.Fatalf("down: %v", err)
	}
	if strings.Contains(err.Error(), testToken) || strings.Contains(err.Error(), "AAF-test") {
		t.Fatalf("token in error: %v", err)
	}
	srv.Close()
	err = NewTelegram(testToken, testChat, srv.Endpoint, nil).SendText(context.Background(), "hello")
	if err == nil || strings.Contains(err.Error(), "AAF-test") {
		t.Fatalf("closed server: %v", err)
	}
	// A wrong token: getMe answers 401.
	srv2 := telegramtest.NewServer(testToken, testChat)
	defer srv2.Close()
	err = NewTelegram("999:wrong-token", testChat, srv2.Endpoint, nil).SendText(context.Background(), "hello")
	if !errors.As(err, &de) || !de.Unreachable || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("wrong token: %v", err)
	}
}

func TestSendTextSitsOutShortFloodControl(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	srv.Flood(1, 1)
	tg := NewTelegram(testToken, testChat, srv.Endpoint, nil)
	clock := &vtime{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	tg.Clock = clock
	tgMust(t, tg.SendText(context.Background(), "after the wait."))
	if fmt.Sprint(clock.slept) != "[1s]" {
		t.Errorf("slept %v through the clock, want [1s]", clock.slept)
	}
	if m := srv.Messages(); len(m) != 1 || m[0].Text != "after the wait." {
		t.Fatalf("messages %+v", m)
	}
	srv.Flood(1, 3600)
	err := tg.SendText(context.Background(), "too long a wait")
	var de *DeliveryError
	if !errors.As(err, &de) || de.RetryAfter != time.Hour {
		t.Fatalf("long flood wait: %v", err)
	}
}

func TestParseFailureFallsBackToPlainText(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	tg := NewTelegram(testToken, testChat, srv.Endpoint, nil)
	// A part that is not valid HTML (as a bug in escaping would make).
	tgMust(t, tg.sendParts(context.Background(), []string{"<b>WARNING</b> 1 < 2 & <i>end"}, 0, nil))
	m := srv.Messages()
	if len(srv.Rejected()) != 1 || len(m) != 1 || m[0].ParseMode != "" || m[0].Text != "WARNING 1 < 2 & end" {
		t.Fatalf("rejected %v, messages %+v", srv.Rejected(), m)
	}
}

// TestSendSectionsClampsRetryAfter: a ten-year retry_after is not sat out
// and comes back clamped to MaxRetryAfter, with the value sent, so that the
// caller can raise the delay_clamped warning (ClampedAlert).
func TestSendSectionsClampsRetryAfter(t *testing.T) {
	srv := telegramtest.NewServer(testToken, testChat)
	defer srv.Close()
	srv.Flood(1, 315360000)
	tg := NewTelegram(testToken, testChat, srv.Endpoint, nil)
	clock := &vtime{now: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)}
	tg.Clock = clock
	err := tg.SendSections(context.Background(), []string{"<b>Report</b>", Pre("a  1")})
	var de *DeliveryError
	if !errors.As(err, &de) || de.RetryAfter != MaxRetryAfter || de.ClampedFrom != 315360000*time.Second || len(clock.slept) != 0 {
		t.Fatalf("err %v (%+v), slept %v", err, de, clock.slept)
	}
	a := ClampedAlert(de.ClampedFrom, clock.Now())
	if a.Key != "delay_clamped:telegram:2026-12-01" || !strings.Contains(a.Text, "retry_after 315360000 s") || !strings.Contains(a.Text, "clamped to 24h") {
		t.Fatalf("%+v", a)
	}
	// The next send, with the flood over, goes through.
	tgMust(t, tg.SendSections(context.Background(), []string{"<b>Report</b>", Pre("a  1")}))
	if m := srv.Messages(); len(m) != 1 || m[0].Text != "Report\n\na  1" {
		t.Fatalf("%+v", m)
	}
}

package alerts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// DefaultTelegramTimeout bounds one Bot API request when NewTelegram gets
// no client.
const DefaultTelegramTimeout = 10 * time.Second

// textWaitBudget is the longest flood-control wait SendText, SendSections
// and SendPhoto sit out in-process before giving up.
const textWaitBudget = 10 * time.Second

// MaxRetryAfter is the longest flood-control wait (Telegram's retry_after)
// that is believed. Telegram asks for seconds to minutes; a larger value
// (a broken proxy, a hostile endpoint: 315360000 s is ten years) would park
// every alert for as long, so it is clamped to this bound and the
// DeliveryError says what was sent (ClampedFrom), for the sender's
// delay_clamped warning. A day keeps a real long flood ban honoured while
// bounding the damage of a wrong one to one day.
const MaxRetryAfter = 24 * time.Hour

// Telegram sends messages to one chat through the Bot API
// (github.com/go-telegram-bot-api/telegram-bot-api/v5). The bot is built
// lazily, on the first send: the library calls getMe when it is
// constructed, and an unreachable Telegram must not fail a command that has
// nothing to send. Messages use the HTML parse mode and are split under
// MaxMessageLen. Every error it returns has the bot token redacted. Clock
// is where it sits out flood control (nil = the wall clock); set it before
// the first send. A Telegram is safe for concurrent use; sends are
// serialised.
type Telegram struct {
	Clock chain.Clock

	token    string
	chatID   string
	endpoint string
	client   *http.Client

	mu  sync.Mutex
	bot *tgbotapi.BotAPI
}

// NewTelegram returns a sender to chatID (a numeric chat id or
// "@channelname") with the bot token. endpoint is the Bot API URL format
// with two %s (token, method); "" means Telegram's own. A nil client means
// one with DefaultTelegramTimeout.
func NewTelegram(token, chatID, endpoint string, client *http.Client) *Telegram {
	if endpoint == "" {
		endpoint = tgbotapi.APIEndpoint
	}
	if client == nil {
		client = &http.Client{Timeout: DefaultTelegramTimeout}
	}
	return &Telegram{token: token, chatID: chatID, endpoint: endpoint, client: client}
}

// DeliveryError is a failed delivery to Telegram. Sent parts of a split
// message were delivered before the failure; Remaining is then the plain
// text not yet delivered, so a later attempt sends only that.
type DeliveryError struct {
	Sent       int
	Remaining  string
	RetryAfter time.Duration // flood control (429): Telegram's retry_after, at most MaxRetryAfter
	// ClampedFrom is the retry_after Telegram sent when it was larger than
	// MaxRetryAfter (RetryAfter is then MaxRetryAfter); 0 otherwise.
	ClampedFrom time.Duration
	// Unreachable means Telegram did not answer (network, timeout, 5xx,
	// getMe failed): the other pending alerts should not be tried now.
	Unreachable bool
	Err         error // token redacted
}

func (e *DeliveryError) Error() string {
	s := "telegram: " + e.Err.Error()
	if e.RetryAfter > 0 {
		s += fmt.Sprintf(" (retry after %s)", e.RetryAfter)
	}
	if e.Sent > 0 {
		s += fmt.Sprintf(" after %d part(s) were sent", e.Sent)
	}
	return s
}

func (e *DeliveryError) Unwrap() error { return e.Err }

// Deliver sends an outbox alert as one message (or several, when long):
// a bold severity line, then the alert text (see FormatAlert). It does not
// wait on flood control; the outbox sender decides (see Sender).
func (t *Telegram) Deliver(ctx context.Context, a telemetry.Alert) error {
	parts := splitAlert(a, MaxMessageLen)
	html := make([]string, len(parts))
	for i, p := range parts {
		html[i] = p.html
	}
	return t.sendParts(ctx, html, 0, func(sent int) string {
		var rest []string
		for _, p := range parts[sent:] {
			if p.plain != "" {
				rest = append(rest, p.plain)
			}
		}
		return strings.Join(rest, "\n")
	})
}

// SendText sends text (plain: it is escaped here) to the chat, split under
// MaxMessageLen at line boundaries. A flood-control wait of up to 10 s is
// sat out.
func (t *Telegram) SendText(ctx context.Context, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	return t.sendParts(ctx, Pack([]string{EscapeHTML(text)}, MaxMessageLen), textWaitBudget, nil)
}

// SendSections sends HTML sections (each well-formed, e.g. from
// Report.Telegram), packed into as few messages as fit (see Pack). A
// flood-control wait of up to 10 s is sat out.
func (t *Telegram) SendSections(ctx context.Context, sections []string) error {
	return t.sendParts(ctx, Pack(sections, MaxMessageLen), textWaitBudget, nil)
}

// SendPhoto sends a PNG named name with a caption (plain text, escaped
// here). A caption longer than MaxCaptionLen is sent as a text message
// after the photo. A flood-control wait of up to 10 s is sat out.
func (t *Telegram) SendPhoto(ctx context.Context, name string, png []byte, caption string) error {
	esc := EscapeHTML(caption)
	short := TextLen(esc) <= MaxCaptionLen
	budget := textWaitBudget
	for {
		err := t.photo(ctx, name, png, esc, short)
		var de *DeliveryError
		if errors.As(err, &de) && de.RetryAfter > 0 && de.RetryAfter <= budget {
			budget -= de.RetryAfter
			if err := clockOf(t.Clock).Sleep(ctx, de.RetryAfter); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		break
	}
	if !short {
		return t.SendText(ctx, caption)
	}
	return nil
}

func (t *Telegram) photo(ctx context.Context, name string, png []byte, escCaption string, withCaption bool) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	bot, err := t.botLocked(ctx)
	if err != nil {
		return err
	}
	cfg := tgbotapi.PhotoConfig{BaseFile: tgbotapi.BaseFile{BaseChat: t.baseChat(), File: tgbotapi.FileBytes{Name: name, Bytes: png}}}
	if withCaption && escCaption != "" {
		cfg.Caption, cfg.ParseMode = escCaption, tgbotapi.ModeHTML
	}
	err = t.withCtx(ctx, bot, func() error { _, err := bot.Send(cfg); return err })
	if err != nil {
		return t.classify(err, 0, "")
	}
	return nil
}

// sendParts sends HTML parts in order, sitting out flood-control waits of
// up to budget in total. A part the server cannot parse is sent again as
// plain text, so that a formatting bug never loses an alert. rest, when
// set, gives the plain text of the parts from the sent-th on, for
// DeliveryError.Remaining.
func (t *Telegram) sendParts(ctx context.Context, parts []string, budget time.Duration, rest func(sent int) string) error {
	remaining := func(sent int) string {
		if rest == nil || sent == 0 {
			return ""
		}
		return rest(sent)
	}
	for i := 0; i < len(parts); {
		err := t.sendOne(ctx, parts[i])
		if err == nil {
			i++
			continue
		}
		de := t.classify(err, i, remaining(i))
		if de.RetryAfter > 0 && de.RetryAfter <= budget {
			budget -= de.RetryAfter
			if err := clockOf(t.Clock).Sleep(ctx, de.RetryAfter); err != nil {
				return t.classify(err, i, remaining(i))
			}
			continue
		}
		return de
	}
	return nil
}

// sendOne sends one HTML part, falling back to plain text when Telegram
// says it cannot parse the entities.
func (t *Telegram) sendOne(ctx context.Context, part string) error {
	if strings.TrimSpace(PlainText(part)) == "" {
		return nil // Telegram refuses empty messages; nothing to say
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	bot, err := t.botLocked(ctx)
	if err != nil {
		return err
	}
	msg := tgbotapi.MessageConfig{BaseChat: t.baseChat(), Text: part, ParseMode: tgbotapi.ModeHTML, DisableWebPagePreview: true}
	err = t.withCtx(ctx, bot, func() error { _, err := bot.Send(msg); return err })
	var te *tgbotapi.Error
	if errors.As(err, &te) && te.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(te.Message), "can't parse entities") {
		msg.Text, msg.ParseMode = PlainText(part), ""
		err = t.withCtx(ctx, bot, func() error { _, err := bot.Send(msg); return err })
	}
	return err
}

// PlainText returns what an HTML part shows: the tags dropped and the
// entities resolved.
func PlainText(html string) string {
	var b strings.Builder
	for _, tk := range tokenize(html) {
		switch {
		case tk.open != "" || tk.close != "":
		case tk.s == "&lt;":
			b.WriteByte('<')
		case tk.s == "&gt;":
			b.WriteByte('>')
		case tk.s == "&amp;":
			b.WriteByte('&')
		case tk.s == "&quot;":
			b.WriteByte('"')
		default:
			b.WriteString(tk.s)
		}
	}
	return b.String()
}

// botLocked returns the bot, building it (getMe) on first use. t.mu is held.
func (t *Telegram) botLocked(ctx context.Context) (*tgbotapi.BotAPI, error) {
	if t.bot != nil {
		return t.bot, nil
	}
	var bot *tgbotapi.BotAPI
	err := t.withCtx(ctx, nil, func() error {
		var err error
		bot, err = tgbotapi.NewBotAPIWithClient(t.token, t.endpoint, ctxClient{ctx: ctx, c: t.client})
		return err
	})
	if err != nil {
		return nil, &DeliveryError{Unreachable: true, Err: fmt.Errorf("connect bot (getMe): %w", t.redact(err))}
	}
	bot.Client = t.client
	t.bot = bot
	return bot, nil
}

// withCtx runs fn with the bot's HTTP requests bound to ctx (the library
// builds requests without a context). t.mu is held.
func (t *Telegram) withCtx(ctx context.Context, bot *tgbotapi.BotAPI, fn func() error) error {
	if bot != nil {
		bot.Client = ctxClient{ctx: ctx, c: t.client}
		defer func() { bot.Client = t.client }()
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return fn()
}

func (t *Telegram) baseChat() tgbotapi.BaseChat {
	if id, err := strconv.ParseInt(t.chatID, 10, 64); err == nil {
		return tgbotapi.BaseChat{ChatID: id}
	}
	return tgbotapi.BaseChat{ChannelUsername: t.chatID}
}

// classify turns a send error into a *DeliveryError with the token
// redacted; sent parts were delivered and rest is the plain text not yet.
func (t *Telegram) classify(err error, sent int, rest string) *DeliveryError {
	var de *DeliveryError
	if errors.As(err, &de) {
		out := *de
		out.Sent, out.Remaining = sent, rest
		return &out
	}
	out := &DeliveryError{Sent: sent, Remaining: rest, Err: t.redact(err)}
	var te *tgbotapi.Error
	switch {
	case errors.As(err, &te):
		out.RetryAfter, out.ClampedFrom = clampRetryAfter(te.RetryAfter)
		if te.Code >= 500 {
			out.Unreachable = true
		}
	default:
		// No Bot API answer: network error, timeout, or a body that is not
		// the Bot API's JSON (a proxy's error page).
		out.Unreachable = true
	}
	return out
}

// clampRetryAfter turns Telegram's retry_after (seconds) into the wait
// believed, at most MaxRetryAfter, and the value sent when it was clamped.
func clampRetryAfter(seconds int) (wait, clampedFrom time.Duration) {
	if seconds <= 0 {
		return 0, 0
	}
	if int64(seconds) > int64(MaxRetryAfter/time.Second) {
		if int64(seconds) > math.MaxInt64/int64(time.Second) {
			return MaxRetryAfter, time.Duration(math.MaxInt64)
		}
		return MaxRetryAfter, time.Duration(seconds) * time.Second
	}
	return time.Duration(seconds) * time.Second, 0
}

// redact removes the bot token (which the library puts in every URL) from
// err's message.
func (t *Telegram) redact(err error) error {
	if err == nil {
		return nil
	}
	msg := err.Error()
	if t.token != "" {
		for _, v := range []string{t.token, url.PathEscape(t.token), url.QueryEscape(t.token)} {
			msg = strings.ReplaceAll(msg, v, "<token>")
		}
	}
	var te *tgbotapi.Error
	if errors.As(err, &te) {
		return &tgbotapi.Error{Code: te.Code, Message: msg, ResponseParameters: te.ResponseParameters}
	}
	return errors.New(msg)
}

// ctxClient binds the library's context-free requests to ctx.
type ctxClient struct {
	ctx context.Context
	c   *http.Client
}

func (c ctxClient) Do(req *http.Request) (*http.Response, error) {
	return c.c.Do(req.WithContext(c.ctx))
}

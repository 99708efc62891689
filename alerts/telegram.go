package alerts

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	tgbotapi "github.com/go-telegram-bot-api/telegram-bot-api/v5"

	"github.com/contentpipe/contentpipe/telemetry"
)

// DefaultTelegramTimeout bounds one Bot API request when NewTelegram gets
// no client.
const DefaultTelegramTimeout = 10 * time.Second

// textWaitBudget is the longest flood-control wait SendText and SendPhoto
// sit out in-process before giving up.
const textWaitBudget = 10 * time.Second

// Telegram sends messages to one chat through the Bot API
// (github.com/go-telegram-bot-api/telegram-bot-api/v5). The bot is built
// lazily, on the first send: the library calls getMe when it is
// constructed, and an unreachable Telegram must not fail a command that has
// nothing to send. Texts are escaped for MarkdownV2 and split under
// MaxMessageLen. Every error it returns has the bot token redacted. A
// Telegram is safe for concurrent use; sends are serialised.
type Telegram struct {
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
// (unescaped) text not yet delivered, so a later attempt sends only that.
type DeliveryError struct {
	Sent       int
	Remaining  string
	RetryAfter time.Duration // flood control (429): Telegram's retry_after
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
// a bold severity line, then the alert text. It does not wait on flood
// control; the outbox sender decides (see Sender).
func (t *Telegram) Deliver(ctx context.Context, a telemetry.Alert) error {
	return t.sendParts(ctx, Split(FormatAlert(a), MaxMessageLen), 0)
}

// SendText sends text (plain: it is escaped here) to the chat, split under
// MaxMessageLen. A flood-control wait of up to 10 s is sat out.
func (t *Telegram) SendText(ctx context.Context, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	return t.sendParts(ctx, Split(EscapeMarkdownV2(text), MaxMessageLen), textWaitBudget)
}

// SendPhoto sends a PNG named name with a caption (plain text, escaped
// here). A caption longer than MaxCaptionLen is sent as a text message
// after the photo. A flood-control wait of up to 10 s is sat out.
func (t *Telegram) SendPhoto(ctx context.Context, name string, png []byte, caption string) error {
	esc := EscapeMarkdownV2(caption)
	short := TextLen(esc) <= MaxCaptionLen
	budget := textWaitBudget
	for {
		err := t.photo(ctx, name, png, esc, short)
		var de *DeliveryError
		if errors.As(err, &de) && de.RetryAfter > 0 && de.RetryAfter <= budget {
			budget -= de.RetryAfter
			if err := sleepCtx(ctx, de.RetryAfter); err != nil {
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
		cfg.Caption, cfg.ParseMode = escCaption, tgbotapi.ModeMarkdownV2
	}
	err = t.withCtx(ctx, bot, func() error { _, err := bot.Send(cfg); return err })
	if err != nil {
		return t.classify(err, 0, nil)
	}
	return nil
}

// sendParts sends escaped parts in order, sitting out flood-control waits
// of up to budget in total. A part the server cannot parse is sent again
// as plain text, so that an escaping bug never loses an alert.
func (t *Telegram) sendParts(ctx context.Context, parts []string, budget time.Duration) error {
	for i := 0; i < len(parts); {
		err := t.sendOne(ctx, parts[i])
		if err == nil {
			i++
			continue
		}
		de := t.classify(err, i, parts[i:])
		if de.RetryAfter > 0 && de.RetryAfter <= budget {
			budget -= de.RetryAfter
			if err := sleepCtx(ctx, de.RetryAfter); err != nil {
				return t.classify(err, i, parts[i:])
			}
			continue
		}
		return de
	}
	return nil
}

// sendOne sends one escaped part with MarkdownV2, falling back to plain
// text when Telegram says it cannot parse the entities.
func (t *Telegram) sendOne(ctx context.Context, part string) error {
	if strings.TrimSpace(UnescapeMarkdownV2(part)) == "" {
		return nil // Telegram refuses empty messages; nothing to say
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	bot, err := t.botLocked(ctx)
	if err != nil {
		return err
	}
	msg := tgbotapi.MessageConfig{BaseChat: t.baseChat(), Text: part, ParseMode: tgbotapi.ModeMarkdownV2, DisableWebPagePreview: true}
	err = t.withCtx(ctx, bot, func() error { _, err := bot.Send(msg); return err })
	var te *tgbotapi.Error
	if errors.As(err, &te) && te.Code == http.StatusBadRequest && strings.Contains(strings.ToLower(te.Message), "can't parse entities") {
		msg.Text, msg.ParseMode = plainPart(part), ""
		err = t.withCtx(ctx, bot, func() error { _, err := bot.Send(msg); return err })
	}
	return err
}

// plainPart turns an escaped part (possibly with the bold header) into
// plain text: escapes resolved, unescaped entity markers dropped.
func plainPart(part string) string {
	var b strings.Builder
	esc := false
	for _, r := range part {
		switch {
		case esc:
			esc = false
			b.WriteRune(r)
		case r == '\\':
			esc = true
		case r == '*':
		default:
			b.WriteRune(r)
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
// redacted; sent parts were delivered and rest are the escaped parts not yet.
func (t *Telegram) classify(err error, sent int, rest []string) *DeliveryError {
	var de *DeliveryError
	if errors.As(err, &de) {
		out := *de
		out.Sent = sent
		if sent > 0 {
			out.Remaining = UnescapeMarkdownV2(strings.Join(rest, ""))
		}
		return &out
	}
	out := &DeliveryError{Sent: sent, Err: t.redact(err)}
	if sent > 0 {
		out.Remaining = UnescapeMarkdownV2(strings.Join(rest, ""))
	}
	var te *tgbotapi.Error
	switch {
	case errors.As(err, &te):
		if te.RetryAfter > 0 {
			out.RetryAfter = time.Duration(te.RetryAfter) * time.Second
		}
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

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// severityMark is the leading symbol of each severity.
var severityMark = map[string]string{"critical": "🔴", "warning": "🟠", "info": "🔵"}

// FormatAlert renders an outbox alert as MarkdownV2: a bold severity line
// naming the rule, then the escaped text.
func FormatAlert(a telemetry.Alert) string {
	sev := strings.ToLower(a.Severity)
	if sev == "" {
		sev = "warning"
	}
	mark := severityMark[sev]
	if mark == "" {
		mark = "⚪"
	}
	head := mark + " *" + EscapeMarkdownV2(strings.ToUpper(sev)) + "*"
	if a.Rule != "" {
		head += " " + EscapeMarkdownV2("contentpipe · "+a.Rule)
	} else {
		head += " " + EscapeMarkdownV2("contentpipe")
	}
	return head + "\n" + EscapeMarkdownV2(a.Text)
}

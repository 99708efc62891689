package publish

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Webhook publishes each article by POSTing it as JSON to URL:
//
//	{"job_id", "topic", "slot", "slug", "title", "category", "language",
//	 "keywords", "provider", "model", "quality_score", "date",
//	 "sections": [{"h2", "body"}], "markdown"}
//
// where date is RFC 3339 UTC and markdown is Body (the article without
// front matter). Headers: Content-Type: application/json, Idempotency-Key:
// <job id>, User-Agent: contentpipe and, when Secret is set,
// X-Signature: sha256=<hex HMAC-SHA256(Secret, body)> (see Verify). The body
// is deterministic for one Article, so a resend after a crash carries the
// same bytes and signature under the same key.
//
// A 2xx answer is success, and so is 409 Conflict (the receiver already has
// this Idempotency-Key). Any other answer is a *StatusError; network errors
// and context cancellation are returned wrapped. A redirect is never
// followed, whatever Client says: Go would re-send a 301/302/303 POST as a
// bodyless GET (whose 200 would look like a delivery) and a 307/308 with
// the article and its signature to whatever host the Location names. A 3xx
// is a failed delivery instead, to be retried later with the same key and
// body. A nil Client means a client with a 30 s timeout. The Secret never
// appears in an error. A Webhook is safe for concurrent use.
type Webhook struct {
	URL    string
	Secret []byte
	Client *http.Client
	// Step, when set, is called at each step of a delivery that the
	// receiver may see (about to send, answered): the crash tests kill the
	// process there.
	Step func(step string)
}

func (w *Webhook) step(name string) {
	if w.Step != nil {
		w.Step(name)
	}
}

var (
	_ chain.Publisher = (*Webhook)(nil)
	_ Stepper         = (*Webhook)(nil)
)

// webhookTarget is the webhook kind's entry in the table of targets.
var webhookTarget = Target{
	Kind: KindWebhook,
	Keys: []string{"url", "secret_env"},
	Check: func(o Options) []Problem {
		return checkHTTPURL(o.URL, "add url: https://… (the endpoint that receives the article JSON)")
	},
	New: func(o Options) chain.Publisher { return &Webhook{URL: o.URL, Secret: o.Secret, Client: o.Client} },
	Place: func(o Options) string {
		if u, err := url.Parse(o.URL); err == nil {
			u.RawQuery, u.Fragment, u.User = "", "", nil
			return "webhook " + u.String()
		}
		return "webhook " + o.URL
	},
}

// SetStep sets Step.
func (w *Webhook) SetStep(step func(string)) { w.Step = step }

// checkHTTPURL is the Problem of a missing or non-http(s) url.
func checkHTTPURL(raw, fixMissing string) []Problem {
	if raw == "" {
		return []Problem{{Key: "url", Problem: "missing", Fix: fixMissing}}
	}
	if u, err := url.Parse(raw); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return []Problem{{Key: "url", Problem: "not an http(s) URL", Fix: "give an absolute http:// or https:// URL"}}
	}
	return nil
}

// defaultTimeout bounds one delivery when Webhook.Client is nil.
const defaultTimeout = 30 * time.Second

// Limits on how much of a receiver's answer is read and quoted in errors.
const (
	responseReadLimit  = 64 << 10
	responseQuoteLimit = 512
)

// StatusError is a webhook answer other than 2xx or 409. Body is the start
// of the response body (at most 512 bytes, secret redacted). Location is
// where a 3xx answer pointed (without user info, query and fragment), which
// was not followed; empty for other answers.
type StatusError struct {
	StatusCode int
	Body       string
	Location   string
}

func (e *StatusError) Error() string {
	s := fmt.Sprintf("webhook answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode/100 == 3 {
		s += " (redirect not followed"
		if e.Location != "" {
			s += ": " + e.Location
		}
		s += ")"
	}
	if e.Body != "" {
		s += ": " + e.Body
	}
	return s
}

// Retryable reports whether a later resend may succeed: 5xx, 408, 429 and
// 3xx (a redirect is not followed, but the receiver may answer directly
// later). Other 4xx answers need a change on one side or the other.
func (e *StatusError) Retryable() bool {
	return e.StatusCode >= 500 || e.StatusCode/100 == 3 ||
		e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests
}

// payload is the JSON body; field order is the wire order.
type payload struct {
	JobID        string          `json:"job_id"`
	Topic        string          `json:"topic"`
	Slot         string          `json:"slot"`
	Slug         string          `json:"slug"`
	Title        string          `json:"title"`
	Category     string          `json:"category"`
	Language     string          `json:"language"`
	Keywords     []string        `json:"keywords"`
	Provider     string          `json:"provider"`
	Model        string          `json:"model"`
	QualityScore float64         `json:"quality_score"`
	Date         string          `json:"date"`
	Sections     []chain.Section `json:"sections"`
	Markdown     string          `json:"markdown"`
}

// Location is URL#<job id>.
func (w *Webhook) Location(a chain.Article) string {
	return w.URL + "#" + a.JobID
}

// Exists always reports false: a webhook cannot be asked. Idempotency rests
// on the Idempotency-Key header instead.
func (w *Webhook) Exists(ctx context.Context, a chain.Article) (bool, error) {
	return false, nil
}

// Publish POSTs the article and returns Location on a 2xx or 409 answer:
// Prepare, then Deliver.
func (w *Webhook) Publish(ctx context.Context, a chain.Article) (string, error) {
	d, err := w.Prepare(ctx, a)
	if err != nil {
		return "", err
	}
	return w.Deliver(ctx, d)
}

// Prepare encodes a as the request body (the same Article always gives the
// same bytes); the location is Location(a).
func (w *Webhook) Prepare(_ context.Context, a chain.Article) (chain.Delivery, error) {
	if a.JobID == "" {
		return chain.Delivery{}, errors.New("publish webhook: article has no job id")
	}
	body, err := payloadBytes(a)
	if err != nil {
		return chain.Delivery{}, fmt.Errorf("publish webhook %s: encode body: %w", a.JobID, err)
	}
	return chain.Delivery{JobID: a.JobID, Location: w.Location(a), Body: body}, nil
}

// Deliver POSTs d.Body with Idempotency-Key d.JobID (and its signature) and
// returns d.Location on a 2xx or 409 answer.
func (w *Webhook) Deliver(ctx context.Context, d chain.Delivery) (string, error) {
	if d.JobID == "" {
		return "", errors.New("publish webhook: delivery has no job id")
	}
	u, err := url.Parse(w.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("publish webhook %s: url must be an absolute http(s) url", d.JobID)
	}
	body := d.Body
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("publish webhook %s: build request: %w", d.JobID, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", d.JobID)
	req.Header.Set("User-Agent", "contentpipe")
	if len(w.Secret) > 0 {
		req.Header.Set("X-Signature", Sign(w.Secret, body))
	}
	w.step("webhook: sending")
	resp, err := w.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // drop the full URL (it may carry a token in its query)
		}
		return "", fmt.Errorf("publish webhook %s: post to %s: %w", d.JobID, safeURL(u), err)
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, responseQuoteLimit))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, responseReadLimit))
	w.step("webhook: answered")
	if resp.StatusCode/100 == 2 || resp.StatusCode == http.StatusConflict {
		return d.Location, nil
	}
	se := &StatusError{StatusCode: resp.StatusCode, Body: w.quote(head)}
	if l := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && l != "" {
		if loc, err := u.Parse(l); err == nil {
			se.Location = w.quote([]byte(safeURL(loc)))
		}
	}
	return "", fmt.Errorf("publish webhook %s: %w", d.JobID, se)
}

// client is Client (or a 30 s client) made to refuse every redirect: the
// 3xx answer itself comes back. A copy is changed, never the caller's.
func (w *Webhook) client() *http.Client {
	c := http.Client{Timeout: defaultTimeout}
	if w.Client != nil {
		c = *w.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// payloadBytes encodes a as the webhook body. The same Article always gives
// the same bytes.
func payloadBytes(a chain.Article) ([]byte, error) {
	p := payload{
		JobID:        a.JobID,
		Topic:        a.Topic,
		Slot:         a.Slot,
		Slug:         articleSlug(a),
		Title:        oneLine(a.Title),
		Category:     a.Category,
		Language:     a.Language,
		Keywords:     a.Keywords,
		Provider:     a.Provider,
		Model:        a.Model,
		QualityScore: a.QualityScore,
		Date:         a.Date.UTC().Format(time.RFC3339),
		Sections:     a.Sections,
		Markdown:     Body(a),
	}
	if p.Keywords == nil {
		p.Keywords = []string{}
	}
	if p.Sections == nil {
		p.Sections = []chain.Section{}
	}
	if math.IsNaN(p.QualityScore) || math.IsInf(p.QualityScore, 0) {
		p.QualityScore = 0
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// quote makes a response body fit for an error message: valid UTF-8, one
// line, the secret redacted.
func (w *Webhook) quote(b []byte) string {
	s := oneLine(strings.ToValidUTF8(string(b), "\uFFFD"))
	return chain.Scrub(s, string(w.Secret))
}

// safeURL is u without user info, query and fragment.
func safeURL(u *url.URL) string {
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// Sign returns the X-Signature header value for body:
// "sha256=" + hex(HMAC-SHA256(secret, body)).
func Sign(secret, body []byte) string {
	return "sha256=" + hex.EncodeToString(mac(secret, body))
}

func mac(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

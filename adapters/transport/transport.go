// Package transport is the one http.RoundTripper used under both provider
// SDKs (google.golang.org/genai and github.com/sashabaranov/go-openai). It
// enforces the four limits of chain.Timeouts with distinguishable errors,
// bounds the answer size, and records each exchange (status, headers,
// timings, a copy of the body) in an Exchange that the adapter puts in the
// request context, so adapters can read what the SDKs drop: OpenRouter's
// usage.cost, error bodies the SDK does not parse, rate-limit headers. It
// also holds the parsers of waits and resets both adapters share (what a
// provider's answers mean is its profile, in adapters/profile). It decides
// no retries.
package transport

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strings"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// DefaultMaxBody is the answer size limit when Transport.MaxBody is zero.
const DefaultMaxBody = 8 << 20

// Transport is an http.RoundTripper for one provider link. It owns its own
// *http.Transport (connection pool), whose dialer and TLS handshake use
// Timeouts.Connect. Per request it enforces:
//
//   - connect: dial + TLS handshake (ErrConnectTimeout; other dial failures
//     are ErrConnect);
//   - first token: from the request being written to the first answer byte
//     of the body (ErrFirstTokenTimeout). For a non-streaming call this is
//     the time to headers plus first byte. SSE comment lines (such as
//     ": OPENROUTER PROCESSING") and whitespace are not answer bytes;
//   - idle: the longest gap between answer bytes after the first
//     (ErrIdleTimeout); keep-alive comments do not reset it;
//   - total: the whole exchange, body included (ErrTotalTimeout).
//
// A zero limit means none. The caller's context still applies; its expiry
// surfaces as its own error (context.DeadlineExceeded or its cause). A body
// over MaxBody fails with ErrBodyTooLarge.
//
// Any answer whose status is outside 2xx (1xx, 3xx, 4xx, 5xx, anything
// else) is returned as an error of kind ErrStatus, not as a response,
// after its body has been read into the Exchange: whatever that body says,
// no SDK on top can take it for an answer (go-openai decodes a 3xx body as
// a completion). This departs from the usual RoundTripper contract on
// purpose; the adapter classifies the failure from the Exchange. Use it from many goroutines; set
// MaxBody before the first request.
type Transport struct {
	// MaxBody bounds the bytes read from one answer body; zero means
	// DefaultMaxBody.
	MaxBody int64

	name     string
	timeouts chain.Timeouts
	dialer   *net.Dialer
	base     *http.Transport
}

// New returns a Transport for the provider link name with the given limits.
func New(name string, t chain.Timeouts) *Transport {
	tr := &Transport{
		name:     name,
		timeouts: t,
		dialer:   &net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second},
	}
	tr.base = &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           tr.dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConnsPerHost:   4,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   t.Connect,
		ExpectContinueTimeout: time.Second,
	}
	return tr
}

// Name is the provider link name the Transport was made for.
func (t *Transport) Name() string { return t.name }

// Client returns an *http.Client that sends through t. It has no Timeout of
// its own: t enforces the limits. It follows no redirect: the redirect
// answer itself is returned, because Go would forward key headers such as
// x-goog-api-key to whatever host a redirect names.
func (t *Transport) Client() *http.Client {
	return &http.Client{Transport: t, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// CloseIdleConnections closes the idle connections of the pool.
func (t *Transport) CloseIdleConnections() { t.base.CloseIdleConnections() }

func (t *Transport) maxBody() int64 {
	if t.MaxBody > 0 {
		return t.MaxBody
	}
	return DefaultMaxBody
}

// RoundTrip sends req under the limits and records the exchange in the
// Exchange of req's context, if any.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	ex := ExchangeFrom(parent)
	if ex == nil {
		ex = new(Exchange)
	}
	ex.begin()
	ctx, cancel := context.WithCancelCause(parent)
	w := &watch{start: time.Now(), limits: t.timeouts, parent: parent, cancel: cancel, ex: ex}
	ctx = httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GotConn:      func(httptrace.GotConnInfo) { w.gotConn() },
		WroteRequest: func(httptrace.WroteRequestInfo) { w.wroteRequest() },
	})
	w.startTotal()

	resp, err := t.base.RoundTrip(req.WithContext(ctx))
	if err != nil {
		err = w.wrap(err, true)
		w.stop()
		cancel(err)
		ex.fail(err)
		return nil, err
	}
	ex.gotHeaders(resp.StatusCode, resp.Header, w.since(), min(resp.ContentLength, t.maxBody()))
	b := &body{
		rc:        resp.Body,
		w:         w,
		ex:        ex,
		max:       t.maxBody(),
		sse:       strings.HasPrefix(strings.ToLower(resp.Header.Get("Content-Type")), "text/event-stream"),
		lineStart: true,
	}
	if resp.StatusCode/100 != 2 {
		return nil, refuse(resp.StatusCode, b)
	}
	resp.Body = b
	return resp, nil
}

// refuse consumes the body of an answer outside 2xx into the Exchange and
// returns the error for it: the read failure if reading failed (a limit
// fired, the connection broke), else an *Error of kind ErrStatus. No SDK
// ever sees such an answer, so none can take its body for an answer. The
// body of a 1xx (a 101 has taken over the connection) is not read.
func refuse(status int, b *body) error {
	var err error
	if status >= 200 {
		_, err = io.Copy(io.Discard, b)
	}
	b.Close()
	if err != nil {
		return err
	}
	return &Error{Kind: ErrStatus, Detail: statusLine(status)}
}

func statusLine(status int) string {
	s := fmt.Sprintf("http %d", status)
	if t := http.StatusText(status); t != "" {
		s += " " + t
	}
	return s
}

// StatusMessage describes an answer outside 2xx whose body names no error
// an adapter can read: the status and the start of the body (at most 200
// bytes, valid UTF-8, on one line).
func StatusMessage(status int, body []byte) string {
	s := statusLine(status)
	if len(body) > 200 {
		body = body[:200]
	}
	b := strings.Join(strings.Fields(strings.ToValidUTF8(string(body), "\uFFFD")), " ")
	if b != "" {
		s += ": " + b
	}
	return s
}

// watch runs the timers of one exchange. Its timers only cancel the
// request; they change no other state.
type watch struct {
	start  time.Time
	limits chain.Timeouts
	parent context.Context
	cancel context.CancelCauseFunc
	ex     *Exchange

	mu        sync.Mutex
	fired     error
	stopped   bool
	conn      bool
	first     bool
	last      time.Duration // since start, of the latest answer byte
	firstTick *time.Timer
	idleTick  *time.Timer
	totalTick *time.Timer
}

func (w *watch) since() time.Duration { return time.Since(w.start) }

func (w *watch) startTotal() {
	if w.limits.Total <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	d := w.limits.Total
	w.totalTick = time.AfterFunc(d, func() {
		w.expire(&Error{Kind: ErrTotalTimeout, Detail: "call took over " + d.String()})
	})
}

func (w *watch) gotConn() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.conn = true
}

func (w *watch) wroteRequest() {
	if w.limits.FirstToken <= 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.firstTick != nil || w.first {
		return
	}
	d := w.limits.FirstToken
	w.firstTick = time.AfterFunc(d, func() {
		w.mu.Lock()
		first := w.first
		w.mu.Unlock()
		if !first {
			w.expire(&Error{Kind: ErrFirstTokenTimeout, Detail: "no answer within " + d.String()})
		}
	})
}

// progress notes an answer byte.
func (w *watch) progress() {
	at := w.since()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = at
	if w.first {
		return
	}
	w.first = true
	w.ex.gotFirstByte(at)
	if w.firstTick != nil {
		w.firstTick.Stop()
	}
	if w.limits.Idle > 0 && !w.stopped {
		w.idleTick = time.AfterFunc(w.limits.Idle, w.idleCheck)
	}
}

// idleCheck fires Idle after the latest re-arm; it re-arms for the rest of
// the window when an answer byte came since, else it expires.
func (w *watch) idleCheck() {
	w.mu.Lock()
	if w.stopped {
		w.mu.Unlock()
		return
	}
	gap := w.since() - w.last
	if gap < w.limits.Idle {
		w.idleTick.Reset(w.limits.Idle - gap)
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	w.expire(&Error{Kind: ErrIdleTimeout, Detail: "no data for " + w.limits.Idle.String()})
}

func (w *watch) expire(err error) {
	w.mu.Lock()
	if w.stopped || w.fired != nil {
		w.mu.Unlock()
		return
	}
	w.fired = err
	w.mu.Unlock()
	w.cancel(err)
}

func (w *watch) cause() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.fired
}

func (w *watch) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	for _, t := range []*time.Timer{w.firstTick, w.idleTick, w.totalTick} {
		if t != nil {
			t.Stop()
		}
	}
}

// wrap turns a raw transport error into the error the caller sees: a fired
// limit, the caller's context error, or a connect/connection-lost *Error.
func (w *watch) wrap(err error, beforeHeaders bool) error {
	if c := w.cause(); c != nil {
		return c
	}
	if w.parent.Err() != nil {
		return context.Cause(w.parent)
	}
	w.mu.Lock()
	conn := w.conn
	w.mu.Unlock()
	if beforeHeaders && !conn {
		kind := ErrConnect
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			kind = ErrConnectTimeout
		}
		return &Error{Kind: kind, Err: err}
	}
	return &Error{Kind: ErrConnectionLost, Err: err}
}

// body wraps a response body: it bounds its size, feeds the timers, tees
// the bytes into the Exchange and turns read failures into the errors of
// this package.
type body struct {
	rc  io.ReadCloser
	w   *watch
	ex  *Exchange
	max int64
	n   int64
	err error // sticky

	sse       bool
	lineStart bool
	comment   bool
}

func (b *body) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.rc.Read(p)
	if n > 0 && b.n+int64(n) > b.max {
		n = int(b.max - b.n)
		b.w.expire(&Error{Kind: ErrBodyTooLarge, Detail: fmt.Sprintf("over %d bytes", b.max)})
		err = errors.New("body limit reached")
	}
	if n > 0 {
		b.n += int64(n)
		b.ex.tee(p[:n])
		if b.answerBytes(p[:n]) {
			b.w.progress()
		}
	}
	if err != nil {
		if err == io.EOF && b.w.cause() == nil {
			b.ex.finish()
		} else {
			err = b.w.wrap(err, false)
			b.ex.fail(err)
		}
		b.w.stop()
		b.err = err
	}
	return n, err
}

// answerBytes reports whether p holds an answer byte: not whitespace and,
// in an event stream, not inside a comment line.
func (b *body) answerBytes(p []byte) bool {
	if !b.sse {
		// No comment lines: the first byte that is not whitespace decides.
		for _, c := range p {
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
				return true
			}
		}
		return false
	}
	found := false
	for _, c := range p {
		switch {
		case c == '\n':
			b.lineStart, b.comment = true, false
		case c == ' ' || c == '\t' || c == '\r':
		case b.lineStart && b.sse && c == ':':
			b.comment, b.lineStart = true, false
		default:
			b.lineStart = false
			if !b.comment {
				found = true
			}
		}
	}
	return found
}

func (b *body) Close() error {
	err := b.rc.Close()
	b.w.stop()
	b.w.cancel(nil)
	return err
}

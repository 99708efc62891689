package transport

import (
	"context"
	"net/http"
	"sync"
	"time"
)

// Exchange records what one HTTP exchange looked like, as seen under the
// SDK: the status, the headers, the time to the headers and to the first
// answer byte, a copy of the body the SDK read, and the transport failure if
// there was one. An adapter creates one per call, puts it in the request
// context with WithExchange, and reads it after the SDK returns. The zero
// value is ready to use; it is safe for concurrent use. When the SDK sends
// more than one request with the same context, the Exchange describes the
// last one.
type Exchange struct {
	mu        sync.Mutex
	status    int
	header    http.Header
	headersAt time.Duration
	firstByte time.Duration
	body      []byte
	err       error
	complete  bool
}

type exchangeKey struct{}

// WithExchange returns a copy of ctx that makes the Transport fill ex.
func WithExchange(ctx context.Context, ex *Exchange) context.Context {
	return context.WithValue(ctx, exchangeKey{}, ex)
}

// ExchangeFrom returns the Exchange put in ctx by WithExchange, or nil.
func ExchangeFrom(ctx context.Context) *Exchange {
	ex, _ := ctx.Value(exchangeKey{}).(*Exchange)
	return ex
}

// Status is the HTTP status code; 0 when no status line came.
func (e *Exchange) Status() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

// Header is a copy of the response headers; nil when no status line came.
func (e *Exchange) Header() http.Header {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.header.Clone()
}

// HeaderTime is the time from the start of the request to the response
// headers; 0 when none came.
func (e *Exchange) HeaderTime() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.headersAt
}

// FirstByte is the time from the start of the request to the first answer
// byte of the body (SSE comments and leading whitespace excluded); 0 when
// none came.
func (e *Exchange) FirstByte() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.firstByte
}

// Body is a copy of the body bytes the SDK has read so far (at most the
// Transport's MaxBody).
func (e *Exchange) Body() []byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]byte(nil), e.body...)
}

// ReadBody calls f with the body bytes the SDK has read so far, without
// copying them (Body copies): f must neither keep nor change them, nor call
// the Exchange's methods.
func (e *Exchange) ReadBody(f func(body []byte)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f(e.body)
}

// Err is the transport failure of the exchange (a *Error or the caller's
// context error), or nil. A clean end of the body is not a failure.
func (e *Exchange) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Complete reports whether the body was read to its end.
func (e *Exchange) Complete() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.complete
}

func (e *Exchange) begin() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status, e.header, e.headersAt, e.firstByte = 0, nil, 0, 0
	e.body, e.err, e.complete = nil, nil, false
}

// gotHeaders records the status line and headers; size, when above 0, is
// the announced body length, room for the copy of the body.
func (e *Exchange) gotHeaders(status int, h http.Header, at time.Duration, size int64) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status, e.header, e.headersAt = status, h.Clone(), at
	if size > 0 {
		e.body = make([]byte, 0, size)
	}
}

func (e *Exchange) gotFirstByte(at time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.firstByte == 0 {
		e.firstByte = at
	}
}

func (e *Exchange) tee(p []byte) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.body = append(e.body, p...)
}

func (e *Exchange) fail(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *Exchange) finish() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.complete = true
}

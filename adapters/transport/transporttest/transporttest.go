// Package transporttest replays canned provider answers over real loopback
// HTTP for adapter tests. A fixture is a raw HTTP/1.1 response as a provider
// sends it (status line, headers, blank line, body) stored under
// adapters/testdata/<provider>/; an event-stream body is written one event
// at a time with a flush after each, as a streaming server does.
package transporttest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
)

// Fixture is a parsed canned answer.
type Fixture struct {
	Status int
	Header http.Header
	Body   []byte
}

// Load reads and parses the fixture at path, failing the test on error.
func Load(t testing.TB, path string) Fixture {
	t.Helper()
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
	if err != nil {
		t.Fatalf("parse fixture %s: %v", path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read fixture body %s: %v", path, err)
	}
	return Fixture{Status: resp.StatusCode, Header: resp.Header, Body: b}
}

// Write sends f on w: headers (without framing headers), status, then the
// body; an event-stream body event by event, flushed after each event.
func (f Fixture) Write(w http.ResponseWriter) {
	for k, vs := range f.Header {
		if k == "Content-Length" || k == "Transfer-Encoding" {
			continue
		}
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	w.WriteHeader(f.Status)
	if !strings.HasPrefix(f.Header.Get("Content-Type"), "text/event-stream") {
		_, _ = w.Write(f.Body)
		return
	}
	fl, _ := w.(http.Flusher)
	for _, ev := range bytes.SplitAfter(f.Body, []byte("\n\n")) {
		if len(ev) == 0 {
			continue
		}
		if _, err := w.Write(ev); err != nil {
			return
		}
		if fl != nil {
			fl.Flush()
		}
	}
}

// Request is what a Server received.
type Request struct {
	Method   string
	Path     string
	RawQuery string
	Header   http.Header
	Body     []byte
}

// Server is an httptest.Server that records the requests it receives.
type Server struct {
	*httptest.Server

	mu   sync.Mutex
	reqs []Request
}

// NewServer starts a loopback server that answers every request with h
// after recording it; it is closed when the test ends.
func NewServer(t testing.TB, h http.HandlerFunc) *Server {
	t.Helper()
	s := &Server{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.reqs = append(s.reqs, Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: b})
		s.mu.Unlock()
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// Replay starts a Server that answers every request with the fixture at
// path.
func Replay(t testing.TB, path string) *Server {
	t.Helper()
	f := Load(t, path)
	return NewServer(t, func(w http.ResponseWriter, _ *http.Request) { f.Write(w) })
}

// Requests returns the requests received so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.reqs...)
}

// Last returns the latest request, failing the test when there is none.
func (s *Server) Last(t testing.TB) Request {
	t.Helper()
	r := s.Requests()
	if len(r) == 0 {
		t.Fatalf("server received no request")
	}
	return r[len(r)-1]
}

// Stall returns a handler step that blocks until the client gives up on
// the request (its context ends) or the test ends: a server that never
// answers, for timeout tests.
func Stall(t testing.TB) func(r *http.Request) {
	done := make(chan struct{})
	t.Cleanup(func() { close(done) })
	return func(r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

// WriteRaw answers with any status from 100 to 999, past the checks of
// net/http's server (which refuses some codes and sends a 1xx only as an
// informational answer before a final one). It reads the rest of the
// request body, hijacks the connection and writes the status line, h,
// Content-Length and Connection: close, then the body, and closes. For a
// 1xx other than 101 it writes only the informational head and closes: an
// answer that never gets a final status. h must hold valid header names.
func WriteRaw(w http.ResponseWriter, r *http.Request, status int, h http.Header, body []byte) {
	_, _ = io.Copy(io.Discard, r.Body) // an unread request would make the close a reset
	hj, ok := w.(http.Hijacker)
	if !ok {
		panic("transporttest: response writer cannot be hijacked")
	}
	conn, buf, err := hj.Hijack()
	if err != nil {
		panic("transporttest: hijack: " + err.Error())
	}
	defer conn.Close()
	reason := http.StatusText(status)
	if reason == "" {
		reason = "Status"
	}
	fmt.Fprintf(buf, "HTTP/1.1 %03d %s\r\n", status, reason)
	_ = h.Write(buf)
	if status >= 200 || status == http.StatusSwitchingProtocols {
		fmt.Fprintf(buf, "Content-Length: %d\r\nConnection: close\r\n\r\n", len(body))
		_, _ = buf.Write(body)
	} else {
		_, _ = buf.WriteString("\r\n")
	}
	_ = buf.Flush()
}

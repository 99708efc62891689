// Package telegramtest is a fake Telegram Bot API on a loopback httptest
// server, for tests: it answers getMe, sendMessage and sendPhoto in the real
// wire format, parses MarkdownV2 as strictly as the real server (an
// unescaped reserved character is a 400 "can't parse entities"), enforces
// the 4096-character message and 1024-character caption limits, and can
// play an outage or flood control (429 with retry_after).
package telegramtest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Message is one message the fake accepted.
type Message struct {
	Method    string // sendMessage or sendPhoto
	ChatID    string
	Raw       string // text or caption as sent
	ParseMode string
	Text      string // as displayed: entities parsed, escapes resolved
	Photo     []byte // sendPhoto only
	PhotoName string
}

// Server is the fake Bot API. Token and ChatID are the values it accepts;
// Endpoint is the telegram-bot-api endpoint format to configure.
type Server struct {
	*httptest.Server
	Token    string
	ChatID   string
	Endpoint string

	mu         sync.Mutex
	messages   []Message
	rejected   []string // descriptions of refused sends
	down       bool
	floodAfter int // sends accepted before the flood starts
	flood      int // then this many send requests answer 429
	retryAfter int
	delay      time.Duration
	getMe      int
	nextID     int
}

// NewServer starts a fake Bot API for token and chat id.
func NewServer(token, chatID string) *Server {
	s := &Server{Token: token, ChatID: chatID}
	s.Server = httptest.NewServer(http.HandlerFunc(s.handle))
	s.Endpoint = s.URL + "/bot%s/%s"
	return s
}

// SetDown makes every request fail without an answer (the connection is
// closed) while down is true.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// Flood makes the next n send requests answer 429 with retry_after seconds.
func (s *Server) Flood(n, retryAfter int) { s.FloodAfter(0, n, retryAfter) }

// FloodAfter accepts the next ok sends, then answers n send requests with
// 429 and retry_after seconds.
func (s *Server) FloodAfter(ok, n, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.floodAfter, s.flood, s.retryAfter = ok, n, retryAfter
}

// SetDelay makes every send take d before it answers.
func (s *Server) SetDelay(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.delay = d
}

// Messages returns the accepted messages in arrival order.
func (s *Server) Messages() []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Message(nil), s.messages...)
}

// Rejected returns the descriptions of the sends the fake refused with 400.
func (s *Server) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

// GetMeCalls counts getMe requests.
func (s *Server) GetMeCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.getMe
}

type apiResponse struct {
	OK          bool            `json:"ok"`
	Result      any             `json:"result,omitempty"`
	ErrorCode   int             `json:"error_code,omitempty"`
	Description string          `json:"description,omitempty"`
	Parameters  *map[string]int `json:"parameters,omitempty"`
}

func write(w http.ResponseWriter, status int, r apiResponse) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(r)
}

func (s *Server) fail(w http.ResponseWriter, status int, desc string) {
	if status == http.StatusBadRequest {
		s.mu.Lock()
		s.rejected = append(s.rejected, desc)
		s.mu.Unlock()
	}
	write(w, status, apiResponse{OK: false, ErrorCode: status, Description: desc})
}

func (s *Server) handle(w http.ResponseWriter, r *http.Request) {
	method, ok := s.route(w, r)
	if !ok {
		return
	}
	if method == "getMe" {
		s.mu.Lock()
		s.getMe++
		s.mu.Unlock()
		write(w, 200, apiResponse{OK: true, Result: map[string]any{"id": 424242, "is_bot": true, "first_name": "contentpipe", "username": "contentpipe_test_bot"}})
		return
	}
	s.mu.Lock()
	delay := s.delay
	s.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	if method == "sendPhoto" {
		if err := r.ParseMultipartForm(32 << 20); err != nil {
			s.fail(w, http.StatusBadRequest, "Bad Request: there is no photo in the request")
			return
		}
	} else if err := r.ParseForm(); err != nil {
		s.fail(w, http.StatusBadRequest, "Bad Request: malformed form")
		return
	}
	if s.flooded(w) {
		return
	}
	m, problem := s.message(r, method)
	if problem != "" {
		s.fail(w, http.StatusBadRequest, "Bad Request: "+problem)
		return
	}
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.messages = append(s.messages, m)
	s.mu.Unlock()
	chatID, _ := strconv.ParseInt(m.ChatID, 10, 64)
	write(w, 200, apiResponse{OK: true, Result: map[string]any{
		"message_id": id, "date": time.Now().Unix(),
		"chat": map[string]any{"id": chatID, "type": "private"}, "text": m.Text,
	}})
}

// route answers a request the API would refuse before reading it (the
// server down, a wrong path, token or HTTP method, an unknown API method)
// and returns the API method otherwise.
func (s *Server) route(w http.ResponseWriter, r *http.Request) (method string, ok bool) {
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return "", false
			}
		}
		w.WriteHeader(http.StatusBadGateway)
		return "", false
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		s.fail(w, http.StatusNotFound, "Not Found")
		return "", false
	}
	token, method, ok := strings.Cut(rest, "/")
	if !ok || token != s.Token {
		s.fail(w, http.StatusUnauthorized, "Unauthorized")
		return "", false
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		s.fail(w, http.StatusMethodNotAllowed, "Method Not Allowed")
		return "", false
	}
	switch method {
	case "getMe", "sendMessage", "sendPhoto":
		return method, true
	}
	s.fail(w, http.StatusNotFound, "Not Found: method not found")
	return "", false
}

// flooded answers 429 with retry_after while a Flood is in force (after the
// FloodAfter requests that still pass) and reports whether it did.
func (s *Server) flooded(w http.ResponseWriter) bool {
	s.mu.Lock()
	if s.floodAfter > 0 {
		s.floodAfter--
	} else if s.flood > 0 {
		s.flood--
		ra := s.retryAfter
		s.mu.Unlock()
		params := map[string]int{"retry_after": ra}
		write(w, http.StatusTooManyRequests, apiResponse{OK: false, ErrorCode: 429,
			Description: fmt.Sprintf("Too Many Requests: retry after %d", ra), Parameters: &params})
		return true
	}
	s.mu.Unlock()
	return false
}

// message reads the parsed form of a sendMessage or sendPhoto request into
// a Message, or returns the API's complaint (after "Bad Request: ").
func (s *Server) message(r *http.Request, method string) (Message, string) {
	chat := r.FormValue("chat_id")
	if chat != s.ChatID {
		return Message{}, "chat not found"
	}
	m := Message{Method: method, ChatID: chat, ParseMode: r.FormValue("parse_mode")}
	limit := 4096
	if method == "sendPhoto" {
		m.Raw, limit = r.FormValue("caption"), 1024
		f, hdr, err := r.FormFile("photo")
		if err != nil {
			return Message{}, "there is no photo in the request"
		}
		buf, err := io.ReadAll(f)
		f.Close()
		if err != nil {
			return Message{}, "photo unreadable"
		}
		m.Photo, m.PhotoName = buf, hdr.Filename
	} else {
		m.Raw = r.FormValue("text")
	}
	var err error
	switch m.ParseMode {
	case "HTML":
		m.Text, err = ParseHTML(m.Raw)
	case "MarkdownV2":
		m.Text, err = ParseMarkdownV2(m.Raw)
	case "":
		m.Text = m.Raw
	default:
		return Message{}, "unsupported parse_mode " + m.ParseMode
	}
	if err != nil {
		return Message{}, "can't parse entities: " + err.Error()
	}
	if method == "sendMessage" && strings.TrimSpace(m.Text) == "" {
		return Message{}, "message text is empty"
	}
	if n := len(utf16.Encode([]rune(m.Text))); n > limit {
		if method == "sendPhoto" {
			return Message{}, "message caption is too long"
		}
		return Message{}, "message is too long"
	}
	return m, ""
}

// reservedError is the real server's complaint about an unescaped
// reserved character.
func reservedError(c rune) error {
	return fmt.Errorf("Character '%c' is reserved and must be escaped with the preceding '\\'", c)
}

var entityNames = map[string]string{"*": "Bold", "_": "Italic", "__": "Underline", "~": "Strikethrough", "||": "Spoiler", "`": "Code", "```": "Pre", "[": "TextUrl"}

// ParseMarkdownV2 parses text as Telegram's MarkdownV2 and returns the text
// as displayed, or the server's error: an unescaped reserved character
// outside an entity marker, an entity without its end, a backslash at the
// end. Inside code and pre only ` and \ are special; inside a link URL only
// ) and \.
func ParseMarkdownV2(text string) (string, error) {
	p := &mdParser{text: text, lineStart: true}
	for i := 0; i < len(text); {
		next, err := p.step(i)
		if err != nil {
			return "", err
		}
		i = next
	}
	if len(p.stack) > 0 {
		return "", fmt.Errorf("Can't find end of %s entity at byte offset %d", entityNames[p.top()], p.start[len(p.start)-1])
	}
	return p.out.String(), nil
}

// mdParser is ParseMarkdownV2's state: the displayed text so far, the open
// entity markers with their byte offsets, and whether the next rune starts
// a line.
type mdParser struct {
	text      string
	out       strings.Builder
	stack     []string
	start     []int
	lineStart bool
}

func (p *mdParser) top() string {
	if len(p.stack) == 0 {
		return ""
	}
	return p.stack[len(p.stack)-1]
}

// toggle closes marker m when it is the innermost open one, else opens it
// at byte offset at.
func (p *mdParser) toggle(m string, at int) {
	if p.top() == m {
		p.stack, p.start = p.stack[:len(p.stack)-1], p.start[:len(p.start)-1]
		return
	}
	p.stack, p.start = append(p.stack, m), append(p.start, at)
}

// step reads the token at byte offset i and returns where the next one
// starts.
func (p *mdParser) step(i int) (int, error) {
	text := p.text
	r, size := utf8.DecodeRuneInString(text[i:])
	switch {
	case r == '\\':
		if i+1 >= len(text) {
			return 0, reservedError('\\')
		}
		n, nsize := utf8.DecodeRuneInString(text[i+1:])
		if n < 1 || n > 126 {
			return 0, reservedError('\\')
		}
		p.out.WriteRune(n)
		p.lineStart = false
		return i + 1 + nsize, nil
	case p.top() == "`" || p.top() == "```":
		return p.code(i, r, size)
	case r == '`':
		if strings.HasPrefix(text[i:], "```") {
			p.toggle("```", i)
			return i + 3, nil
		}
		p.toggle("`", i)
	case r == '*' || r == '~':
		p.toggle(string(r), i)
	case r == '_':
		if strings.HasPrefix(text[i:], "__") {
			p.toggle("__", i)
			return i + 2, nil
		}
		p.toggle("_", i)
	case r == '|':
		if !strings.HasPrefix(text[i:], "||") {
			return 0, reservedError('|')
		}
		p.toggle("||", i)
		return i + 2, nil
	case r == '[':
		p.stack, p.start = append(p.stack, "["), append(p.start, i)
	case r == ']':
		return p.closeLink(i)
	case r == '>' && p.lineStart:
		// a block quotation
	case r < utf8.RuneSelf && strings.ContainsRune("_*[]()~`>#+-=|{}.!", r):
		return 0, reservedError(r)
	default:
		p.out.WriteRune(r)
	}
	p.lineStart = r == '\n'
	return i + size, nil
}

// code reads rune r at i inside code or pre, where only the closing
// backticks are special.
func (p *mdParser) code(i int, r rune, size int) (int, error) {
	if r != '`' {
		p.out.WriteRune(r)
		p.lineStart = r == '\n'
		return i + size, nil
	}
	if p.top() == "```" {
		if !strings.HasPrefix(p.text[i:], "```") {
			return 0, reservedError('`')
		}
		p.toggle("```", i)
		return i + 3, nil
	}
	p.toggle("`", i)
	return i + 1, nil
}

// closeLink reads the "](url)" that ends a link's text at i; inside the URL
// only ) and \ are special.
func (p *mdParser) closeLink(i int) (int, error) {
	text := p.text
	if p.top() != "[" || !strings.HasPrefix(text[i:], "](") {
		return 0, reservedError(']')
	}
	j := i + 2
	for ; j < len(text) && text[j] != ')'; j++ {
		if text[j] == '\\' {
			j++
		}
	}
	if j >= len(text) {
		return 0, fmt.Errorf("Can't find end of a URL at byte offset %d", i)
	}
	p.stack, p.start = p.stack[:len(p.stack)-1], p.start[:len(p.start)-1]
	return j + 1, nil
}

package profile

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport"
)

// Envelope is the shape of a provider's error bodies.
type Envelope int

// The envelopes.
const (
	// EnvelopeOpenAI: {"error":{"message","type","code",…}} as OpenAI,
	// Groq and OpenRouter (numeric code, metadata) send it, or the same
	// object unwrapped as Cerebras sends it, or {"error":"text"}.
	EnvelopeOpenAI Envelope = iota + 1
	// EnvelopeGoogle: google.rpc.Status, {"error":{"code","message",
	// "status","details"}}, alone or as the only element of an array (the
	// streaming endpoint's error).
	EnvelopeGoogle
)

// Words is what a failed answer's body says, whatever its envelope. The
// zero value says nothing.
type Words struct {
	Message string
	Code    string // the error code as text (string or number)
	Type    string
	Status  string // Google's status ("RESOURCE_EXHAUSTED", "FAILED_PRECONDITION")
	Reason  string // Google's ErrorInfo reason ("API_KEY_INVALID")
	// Raw is OpenRouter's metadata.raw: the upstream provider's own words.
	Raw string
	// Reasons are OpenRouter's moderation metadata.reasons ("violence").
	Reasons []string
	// MetaHeaders are OpenRouter's metadata.headers (X-RateLimit-Reset).
	MetaHeaders map[string]string
	// QuotaIDs and QuotaValues are Google's QuotaFailure violations.
	QuotaIDs    []string
	QuotaValues []string
	// RetryDelay is Google's RetryInfo.retryDelay: RetryRaw as sent ("" when
	// absent), read as RetryDelay when RetryOK.
	RetryRaw   string
	RetryDelay time.Duration
	RetryOK    bool
	// Found reports whether the body named an error at all.
	Found bool
}

// Text is the message with the upstream words and the code appended, for
// the error's Message: "Provider returned error (upstream: …) (code 503)".
func (w Words) Text() string {
	msg := w.Message
	if w.Raw != "" && !strings.Contains(msg, w.Raw) {
		msg = joinMsg(msg, "upstream: "+w.Raw)
	}
	if w.Code != "" && w.Code != "null" && w.Status == "" {
		msg = joinMsg(msg, "code "+w.Code)
	}
	return msg
}

// lower is every word of w a rule may match, lower-cased.
func (w Words) lower() string {
	parts := []string{w.Message, w.Raw}
	for _, v := range w.QuotaValues {
		parts = append(parts, `quotavalue "`+v+`"`)
	}
	return strings.ToLower(strings.Join(parts, " \n "))
}

func joinMsg(a, b string) string {
	switch {
	case a == "":
		return b
	case b == "":
		return a
	}
	return a + " (" + b + ")"
}

// Read reads an error body in e's shape. A body that names no error gives
// Words with Found false.
func (e Envelope) Read(body []byte) Words {
	if e == EnvelopeGoogle {
		return readGoogle(body)
	}
	return readOpenAI(body)
}

// ErrorObject is an OpenAI-style error object as it decodes from JSON:
// OpenAI, Groq, Cerebras (unwrapped) and OpenRouter (with metadata), also
// inside a 200 answer or stream chunk ("error":{…}).
type ErrorObject struct {
	Message  json.RawMessage `json:"message"`
	Type     json.RawMessage `json:"type"`
	Code     json.RawMessage `json:"code"`
	Detail   json.RawMessage `json:"detail"` // Mistral's {"detail":"Invalid API Key"}
	Metadata *struct {
		Headers map[string]json.RawMessage `json:"headers"`
		Raw     json.RawMessage            `json:"raw"`
		Reasons []string                   `json:"reasons"`
	} `json:"metadata"`
}

// Words is what o says.
func (o ErrorObject) Words() Words {
	w := Words{Message: unquote(o.Message), Type: unquote(o.Type), Code: unquote(o.Code)}
	if w.Message == "" {
		w.Message = unquote(o.Detail)
	}
	if m := o.Metadata; m != nil {
		w.Raw = unquote(m.Raw)
		w.Reasons = m.Reasons
		if len(m.Headers) > 0 {
			w.MetaHeaders = map[string]string{}
			for k, v := range m.Headers {
				w.MetaHeaders[k] = unquote(v)
			}
		}
	}
	w.Found = w.Message != "" || w.Code != ""
	return w
}

func readOpenAI(body []byte) Words {
	var env struct {
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &env) == nil && len(env.Error) > 0 && !bytes.Equal(env.Error, []byte("null")) {
		var o ErrorObject
		if json.Unmarshal(env.Error, &o) == nil {
			if w := o.Words(); w.Found {
				return w
			}
		}
		var s string
		if json.Unmarshal(env.Error, &s) == nil && s != "" {
			return Words{Message: s, Found: true}
		}
	}
	var o ErrorObject
	if json.Unmarshal(body, &o) == nil {
		if w := o.Words(); w.Message != "" {
			return w
		}
	}
	return Words{}
}

// googleStatus is google.rpc.Status as the Gemini API sends it.
type googleStatus struct {
	Code    int              `json:"code"`
	Message string           `json:"message"`
	Status  string           `json:"status"`
	Details []map[string]any `json:"details"`
}

func readGoogle(body []byte) Words {
	var env struct {
		Error *googleStatus `json:"error"`
	}
	b := bytes.TrimSpace(body)
	if len(b) > 0 && b[0] == '[' {
		var arr []json.RawMessage
		if json.Unmarshal(b, &arr) != nil || len(arr) == 0 {
			return Words{}
		}
		b = arr[0]
	}
	if json.Unmarshal(b, &env) != nil || env.Error == nil {
		return Words{}
	}
	g := env.Error
	w := Words{Message: strings.TrimSpace(g.Message), Status: g.Status, Found: strings.TrimSpace(g.Message) != ""}
	if g.Code != 0 {
		w.Code = strconv.Itoa(g.Code)
	}
	readDetails(&w, g.Details)
	return w
}

// readDetails reads the google.rpc details of an error: RetryInfo's
// retryDelay, the QuotaFailure violations' quotaIds and values, and
// ErrorInfo's reason.
func readDetails(w *Words, ds []map[string]any) {
	for _, m := range ds {
		typ, _ := m["@type"].(string)
		switch {
		case strings.HasSuffix(typ, "google.rpc.RetryInfo"):
			if v, ok := m["retryDelay"]; ok {
				w.RetryRaw, w.RetryDelay, w.RetryOK = protoDuration(v)
			}
		case strings.HasSuffix(typ, "google.rpc.QuotaFailure"):
			vs, _ := m["violations"].([]any)
			for _, v := range vs {
				vm, _ := v.(map[string]any)
				if id, ok := vm["quotaId"].(string); ok {
					w.QuotaIDs = append(w.QuotaIDs, id)
				}
				if qv, ok := vm["quotaValue"].(string); ok {
					w.QuotaValues = append(w.QuotaValues, qv)
				}
			}
		case strings.HasSuffix(typ, "google.rpc.ErrorInfo"):
			if r, ok := m["reason"].(string); ok && w.Reason == "" {
				w.Reason = r
			}
		}
	}
}

// GoogleDetails reads the google.rpc details an SDK decoded (genai's
// APIError.Details) into w, as Read does for a body.
func GoogleDetails(w *Words, ds []map[string]any) { readDetails(w, ds) }

// protoDuration reads a google.protobuf.Duration in its JSON form ("26s",
// "23.472316927s", "999999999s") or, defensively, as {"seconds":…,
// "nanos":…}, saturating at transport.MaxDelay. raw is the value as sent;
// ok is false when it cannot be read (a negative value included).
func protoDuration(v any) (raw string, d time.Duration, ok bool) {
	switch x := v.(type) {
	case string:
		d, ok := transport.ParseProtoDuration(x)
		return x, d, ok
	case map[string]any:
		b, _ := json.Marshal(x)
		raw = string(b)
		var secs float64
		switch s := x["seconds"].(type) {
		case float64:
			secs = s
		case string: // int64 fields are strings in proto JSON
			f, err := strconv.ParseFloat(s, 64)
			if err != nil {
				return raw, 0, false
			}
			secs = f
		default:
			return raw, 0, false
		}
		nanos, _ := x["nanos"].(float64)
		if secs < 0 || nanos < 0 || math.IsNaN(secs) || math.IsNaN(nanos) {
			return raw, 0, false
		}
		if secs+nanos/1e9 >= transport.MaxDelay.Seconds() {
			return raw, transport.MaxDelay, true
		}
		whole := math.Floor(secs)
		d := time.Duration(whole)*time.Second + time.Duration(math.Round((secs-whole)*1e9+nanos))
		return raw, min(d, transport.MaxDelay), true
	case nil:
		return "", 0, false
	}
	b, _ := json.Marshal(v)
	return string(b), 0, false
}

func unquote(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	t := strings.TrimSpace(string(raw))
	if t == "null" {
		return ""
	}
	return t
}

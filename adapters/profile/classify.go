package profile

import (
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/chain"
)

// Answer is a failed answer as it came over the wire: status, headers and
// body. Header may be nil.
type Answer struct {
	Status int
	Header http.Header
	Body   []byte
}

// Failure classifies a, an answer outside 2xx, into the error the adapter
// of link name returns: its outcome, the window of a rate limit, every wait
// it names (as Delays reads them, relative to now), the daily quota its
// headers report, the sizes of a request too large, the fix of a
// misconfigured link, and the provider's words as Message, scrubbed of key.
// A status that is neither 4xx nor 5xx is an error whatever the body says.
func (p *Profile) Failure(name string, a Answer, key string, now time.Time) *chain.ProviderError {
	pe := &chain.ProviderError{Provider: name, Status: a.Status, Quota: p.Quota(a.Header)}
	w := p.Envelope.Read(a.Body)
	msg := w.Text()
	if !w.Found || msg == "" {
		msg = transport.StatusMessage(a.Status, a.Body)
	}
	pe.Message = chain.Scrub(msg, key)
	if a.Status < 400 || a.Status > 599 {
		pe.Outcome = chain.OutcomeError
		return pe
	}
	p.classify(pe, w, a.Header, key, now)
	return pe
}

// Classify fills pe's outcome (and window, waits, sizes and fix) from the
// words of a failed answer with status pe.Status (4xx or 5xx), for an
// adapter whose SDK decoded the error itself. pe.Message is left as it is.
func (p *Profile) Classify(pe *chain.ProviderError, w Words, h http.Header, key string, now time.Time) {
	p.classify(pe, w, h, key, now)
}

func (p *Profile) classify(pe *chain.ProviderError, w Words, h http.Header, key string, now time.Time) {
	if r := p.match(pe.Status, w); r != nil {
		pe.Outcome, pe.Fix = r.Outcome, r.Fix
		if r.Outcome == chain.OutcomeTooLarge {
			pe.TooLarge = sizes(w.Message + " " + w.Raw)
		}
		return
	}
	if pe.Status == http.StatusTooManyRequests || p.rateLimitCode(w) {
		pe.Scope = p.scope(h, w)
		if tl := sizes(w.Message); pe.Scope != chain.ScopeDay && tl.Limit > 0 && tl.Requested > tl.Limit {
			// A window smaller than the request itself: waiting cannot help.
			pe.Outcome, pe.TooLarge, pe.Fix = chain.OutcomeTooLarge, tl, fixTooLarge
			return
		}
		p.delays(h, w, now).Fill(pe, key)
		pe.Outcome = chain.OutcomeRateLimited
		if pe.Scope == chain.ScopeDay {
			pe.Outcome = chain.OutcomeQuotaExhausted
		}
		return
	}
	pe.Outcome = chain.StatusOutcome(pe.Status)
	switch pe.Outcome {
	case chain.OutcomeMisconfigured:
		pe.Fix = fixNotFound
		if pe.Status == http.StatusPaymentRequired {
			pe.Fix = fixPayment
		}
	}
}

// rateLimitCode reports whether the body's code names a rate limit.
func (p *Profile) rateLimitCode(w Words) bool {
	for _, c := range p.RateLimitCodes {
		if strings.EqualFold(w.Code, c) {
			return true
		}
	}
	return false
}

// Quota reads the daily allowance from h (Daily); Remaining is -1 when no
// pair is present.
func (p *Profile) Quota(h http.Header) chain.QuotaHint {
	q := chain.QuotaHint{Remaining: -1}
	for _, pair := range p.Daily {
		v := strings.TrimSpace(h.Get(pair.Remaining))
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || !(f >= 0) { // NaN too
			continue
		}
		q.Remaining = int(min(f, 1<<31-1)) // a huge or infinite count must not wrap negative
		if d, ok := transport.ParseReset(h.Get(pair.Reset)); ok {
			q.Reset = d
		}
		return q
	}
	return q
}

// WriteQuota sets the provider's daily quota headers (the first Daily
// pair) on h to say q, exactly as Quota reads them back: what the loopback
// fakes and the in-process provider of adapters/sim send. An unknown q
// (chain.QuotaHint.Known false) or a profile without daily headers writes
// nothing.
func (p *Profile) WriteQuota(h http.Header, q chain.QuotaHint) {
	if len(p.Daily) == 0 || !q.Known() {
		return
	}
	pair := p.Daily[0]
	h.Set(pair.Remaining, strconv.Itoa(q.Remaining))
	if q.Reset <= 0 {
		return
	}
	if !pair.Seconds {
		h.Set(pair.Reset, q.Reset.String())
		return
	}
	secs := strconv.FormatInt(int64(q.Reset/time.Second), 10)
	if ns := int64(q.Reset % time.Second); ns != 0 {
		secs += strings.TrimRight("."+strconv.FormatInt(1e9+ns, 10)[1:], "0")
	}
	h.Set(pair.Reset, secs)
}

// scope decides the window of a rate limit: a day signal wins (a daily
// header at 0, a daily quotaId, "per day"/"(TPD)" in the words), then a
// minute signal (a per-minute header at 0, a per-minute quotaId, "per
// minute"/"(TPM)"); ScopeNone when nothing says.
func (p *Profile) scope(h http.Header, w Words) chain.Scope {
	day, minute := false, false
	for _, win := range p.Windows {
		if strings.TrimSpace(h.Get(win.Header)) != "0" {
			continue
		}
		switch win.Scope {
		case chain.ScopeDay:
			day = true
		case chain.ScopeMinute:
			minute = true
		}
	}
	texts := append([]string{w.Message, w.Raw}, w.QuotaIDs...)
	for _, t := range texts {
		switch ScopeFromText(t) {
		case chain.ScopeDay:
			day = true
		case chain.ScopeMinute:
			minute = true
		}
	}
	switch {
	case day:
		return chain.ScopeDay
	case minute:
		return chain.ScopeMinute
	}
	return chain.ScopeNone
}

// ScopeFromText finds the quota window named in a provider's text: a Gemini
// quotaId ("…PerDay…", "…PerMinute…"), a Groq message ("per day (TPD)",
// "(RPM)"), a Cerebras one ("Tokens per minute limit exceeded") or an
// OpenRouter one ("free-models-per-day"). A daily marker wins over a
// per-minute one. ScopeNone when neither appears.
func ScopeFromText(s string) chain.Scope {
	l := strings.ToLower(s)
	for _, k := range []string{"perday", "per day", "per-day", "(tpd)", "(rpd)", "daily"} {
		if strings.Contains(l, k) {
			return chain.ScopeDay
		}
	}
	for _, k := range []string{"perminute", "per minute", "per-minute", "(tpm)", "(rpm)"} {
		if strings.Contains(l, k) {
			return chain.ScopeMinute
		}
	}
	return chain.ScopeNone
}

// delays collects the waits a rate-limit answer names, from the sources
// the profile lists.
func (p *Profile) delays(h http.Header, w Words, now time.Time) *transport.Delays {
	ds := new(transport.Delays)
	for _, d := range p.Delays {
		switch d {
		case DelayRetryInfo:
			ds.Add("retryDelay", w.RetryRaw, w.RetryDelay, w.RetryOK)
		case DelayRetryAfter:
			ds.RetryAfter(h.Get("Retry-After"), now)
		case DelayMessage:
			ds.Message(w.Message)
		case DelayReset:
			if v := metaHeader(w, "X-RateLimit-Reset"); strings.TrimSpace(v) != "" {
				ds.Epoch("metadata X-RateLimit-Reset", v, now)
			} else {
				ds.Epoch("X-RateLimit-Reset", h.Get("X-RateLimit-Reset"), now)
			}
		}
	}
	return ds
}

func metaHeader(w Words, name string) string {
	for k, v := range w.MetaHeaders {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

var (
	// Groq: "on tokens per minute (TPM): Limit 6000, Requested 10338".
	limitRequested = regexp.MustCompile(`(?i)(?:on ([a-z ]+\([A-Z]+\)):?\s*)?limit:?\s*([\d,]+)\b.*?requested:?\s*~?([\d,]+)`)
	// OpenAI, OpenRouter, DeepSeek: "maximum context length is 200000 tokens. However, you requested about 2500021 tokens".
	contextLength = regexp.MustCompile(`(?i)maximum context length is ([\d,]+) tokens.*?requested (?:about |up to )?([\d,]+) tokens`)
	// Gemini: "The input token count (1250074) exceeds the maximum number of tokens allowed (1048576)".
	tokenCount = regexp.MustCompile(`(?i)input token count \(?([\d,]+)\)? exceeds the maximum number of tokens allowed \(?([\d,]+)\)?`)
)

// sizes reads the limit and the request's size a too-large answer names;
// the zero TooLarge when it names none.
func sizes(msg string) chain.TooLarge {
	if m := limitRequested.FindStringSubmatch(msg); m != nil {
		return chain.TooLarge{Unit: strings.TrimSpace(m[1]), Limit: number(m[2]), Requested: number(m[3])}
	}
	if m := contextLength.FindStringSubmatch(msg); m != nil {
		return chain.TooLarge{Unit: "tokens of context", Limit: number(m[1]), Requested: number(m[2])}
	}
	if m := tokenCount.FindStringSubmatch(msg); m != nil {
		return chain.TooLarge{Unit: "input tokens", Limit: number(m[2]), Requested: number(m[1])}
	}
	return chain.TooLarge{}
}

func number(s string) int {
	n, err := strconv.Atoi(strings.ReplaceAll(s, ",", ""))
	if err != nil {
		return 0
	}
	return n
}

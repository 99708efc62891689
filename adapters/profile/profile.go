// Package profile holds what each provider's answers mean, as data keyed by
// provider: how it names a limit's window, where it puts the waits it
// names, which headers carry its quotas, how its error bodies are shaped,
// and which bodies mean a misconfigured link, a request too large for it,
// or a refused content. The adapters classify every failed answer with the
// profile of their link (Profile.Failure); the loopback fakes and the
// in-process provider of adapters/sim write their answers in the shapes
// the profile reads and send them through the same Failure, so a fake
// cannot drift from the classifier and one vendor's quirk cannot change
// another's. It imports no SDK.
package profile

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/contentpipe/contentpipe/chain"
)

// ID names a profile; it is the value of a link's provider: key.
type ID string

// The profiles.
const (
	Gemini     ID = "gemini"     // Gemini API (generativelanguage), kind gemini
	Groq       ID = "groq"       // Groq, OpenAI-compatible
	Cerebras   ID = "cerebras"   // Cerebras Inference, OpenAI-compatible
	OpenRouter ID = "openrouter" // OpenRouter, OpenAI-compatible
	OpenAI     ID = "openai"     // any other OpenAI-compatible server
)

// Kind is the wire API a profile's provider speaks: a link's kind:.
type Kind string

// The link kinds.
const (
	KindGemini Kind = "gemini"
	KindOpenAI Kind = "openai" // any OpenAI-compatible API
)

// Kinds returns every link kind, in the README's order: the values the
// config accepts for kind:, each with its line in the command's link-kind
// table (cmd/contentpipe/linkkinds.go).
func Kinds() []Kind { return []Kind{KindGemini, KindOpenAI} }

// Window is a rate-limit header that counts what is left of one window:
// a value of 0 says that window is the one exhausted.
type Window struct {
	Header string
	Scope  chain.Scope
}

// QuotaHeaders are the header pair that counts a provider's daily
// allowance: requests left and the time until it resets, written as a Go
// duration ("2m59.56s", Groq) or, when Seconds, as bare seconds
// ("33011.38", Cerebras). Either form is read.
type QuotaHeaders struct {
	Remaining, Reset string
	Seconds          bool
}

// Delay is a place a provider names a wait or a reset time.
type Delay int

// The delay sources.
const (
	DelayRetryAfter Delay = iota + 1 // the Retry-After header (seconds or an HTTP date)
	DelayRetryInfo                   // Google's RetryInfo.retryDelay detail
	DelayMessage                     // "try again in 9m52.272s", "Please retry in 23.4s." in the message
	DelayReset                       // OpenRouter's X-RateLimit-Reset (epoch ms), in the error's metadata or else a header
)

// Profile is one provider's answers as data. The zero value is not
// useful; use Lookup. A Profile is read-only and safe for concurrent use.
type Profile struct {
	ID   ID
	Kind Kind
	// Hosts are base_url host suffixes that select this profile.
	Hosts []string
	// Envelope is how error bodies are shaped: Google's google.rpc.Status
	// or the OpenAI style, wrapped in "error" or not.
	Envelope Envelope
	// Delays are where a failed answer names a wait, read in this order
	// (the longest wins: each is a floor).
	Delays []Delay
	// Windows are the headers whose 0 names the exhausted window.
	Windows []Window
	// Daily are the header pairs counting the daily allowance, the first
	// present wins (Cerebras ...-requests-day; Groq's ...-requests, which
	// Groq counts per day).
	Daily []QuotaHeaders
	// RateLimitCodes are body codes that make any 4xx or 5xx a rate limit
	// (Groq's 413 with code rate_limit_exceeded).
	RateLimitCodes []string
	// Rules classify a failed answer by its status and words; the first
	// that matches wins. The rules every profile of its Kind shares follow
	// them.
	Rules []Rule
	// BlockedFinish are the finish reasons of a 200 answer that mean the
	// answer was withheld (blocked).
	BlockedFinish []string
}

// Lookup returns the profile id names.
func Lookup(id ID) (*Profile, error) {
	if p, ok := profiles[id]; ok {
		return p, nil
	}
	return nil, fmt.Errorf("unknown provider %q (want one of %s)", id, strings.Join(idNames(), ", "))
}

// Must returns the profile id names and panics when there is none; for
// the package's own constants.
func Must(id ID) *Profile {
	p, err := Lookup(id)
	if err != nil {
		panic(err)
	}
	return p
}

// IDs returns every profile id, sorted.
func IDs() []ID {
	ids := make([]ID, 0, len(profiles))
	for id := range profiles {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

func idNames() []string {
	var s []string
	for _, id := range IDs() {
		s = append(s, string(id))
	}
	return s
}

// Detect picks the profile of a link that sets no provider: key: Gemini
// for kind gemini; else the provider whose host base_url names
// (api.groq.com, api.cerebras.ai, openrouter.ai); else the one the link's
// name starts with ("groq", "cerebras-backup"); else OpenAI, the generic
// OpenAI-compatible profile.
func Detect(kind Kind, name, baseURL string) ID {
	if kind == KindGemini {
		return Gemini
	}
	if u, err := url.Parse(baseURL); err == nil && u.Hostname() != "" {
		host := strings.ToLower(u.Hostname())
		for _, id := range IDs() {
			for _, h := range profiles[id].Hosts {
				if host == h || strings.HasSuffix(host, "."+h) {
					return id
				}
			}
		}
	}
	n := strings.ToLower(name)
	for _, id := range []ID{Groq, Cerebras, OpenRouter} {
		if strings.HasPrefix(n, string(id)) {
			return id
		}
	}
	return OpenAI
}

// Resolve returns the profile of a link: the one its provider: key names
// (checked against its kind), else Detect's.
func Resolve(kind Kind, provider ID, name, baseURL string) (*Profile, error) {
	if provider == "" {
		provider = Detect(kind, name, baseURL)
	}
	p, err := Lookup(provider)
	if err != nil {
		return nil, err
	}
	if p.Kind != kind {
		return nil, fmt.Errorf("provider %q speaks kind %s, not %s", provider, p.Kind, kind)
	}
	return p, nil
}

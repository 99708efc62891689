package profile

import (
	"strings"

	"github.com/contentpipe/contentpipe/chain"
)

// Rule classifies a failed answer by its status and its words. A rule
// matches when the status is one of Status (any when empty; a one-digit
// value stands for its class: 4 is every 4xx) and none of NotStatus, and the body's
// code, type, status or reason is one of Codes or its message (or upstream
// words) contains one of Words, case-insensitively (either list may be
// empty; both empty matches on the status alone).
type Rule struct {
	Status    []int
	NotStatus []int
	Codes     []string
	Words     []string
	Outcome   chain.Outcome
	// Fix is what a person must change (misconfigured, too large).
	Fix string
}

func (r Rule) matches(status int, w Words, text string) bool {
	if len(r.Status) > 0 && !containsInt(r.Status, status) && !containsInt(r.Status, status/100) || containsInt(r.NotStatus, status) {
		return false
	}
	if len(r.Codes) == 0 && len(r.Words) == 0 {
		return true
	}
	for _, c := range r.Codes {
		for _, have := range []string{w.Code, w.Type, w.Status, w.Reason} {
			if have != "" && strings.EqualFold(have, c) {
				return true
			}
		}
	}
	for _, word := range r.Words {
		if strings.Contains(text, word) {
			return true
		}
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// match returns the first rule of the profile, then of its kind, that
// matches status and w; nil when none does.
func (p *Profile) match(status int, w Words) *Rule {
	text := w.lower()
	for _, rules := range [][]Rule{p.Rules, kindRules[p.Kind]} {
		for i := range rules {
			if rules[i].matches(status, w, text) {
				return &rules[i]
			}
		}
	}
	return nil
}

// The fixes a person is told.
const (
	fixModel     = "change the link's model: to one the provider serves today (its model list or deprecations page), or remove the link"
	fixNotFound  = "check the link's model: and base_url: — the provider found no such model or endpoint"
	fixPayment   = "add credits (or a payment method) to the provider account, or lower the link's max_tokens so the request costs less than the balance"
	fixTooLarge  = "lower the link's max_tokens or shorten the prompt (prompts/, job.target_words), or move the link to a model or tier with a larger limit"
	fixRegion    = "call Gemini from a region it serves (https://ai.google.dev/gemini-api/docs/available-regions) — run the job there or through a proxy there — or remove the link"
	fixNoQuota   = "this API key has no quota for this model (limit 0): enable billing on the key's Google Cloud project, or choose a model the key's tier includes"
	fixProviders = "allow a provider that serves this model in OpenRouter's settings (Privacy → Provider Restrictions), or choose another model"
)

// kindRules are the rules every profile of a kind shares, after its own.
var kindRules = map[Kind][]Rule{
	KindOpenAI: {
		{Status: []int{400, 413, 422}, Codes: []string{"context_length_exceeded"},
			Words:   []string{"maximum context length", "context window", "context length", "prompt too long", "request too large", "please reduce the length"},
			Outcome: chain.OutcomeTooLarge, Fix: fixTooLarge},
		{Status: []int{400, 404}, Codes: []string{"model_not_found", "model_decommissioned", "model_not_available", "invalid_model"},
			Words:   []string{"does not exist", "has been decommissioned", "is not a valid model id", "model not found", "invalid model", "unable to access model", "no endpoints found"},
			Outcome: chain.OutcomeMisconfigured, Fix: fixModel},
		{Status: []int{402}, Outcome: chain.OutcomeMisconfigured, Fix: fixPayment},
	},
	KindGemini: {
		{Status: []int{400}, Words: []string{"input token count"}, Outcome: chain.OutcomeTooLarge, Fix: fixTooLarge},
		{Status: []int{404}, Words: []string{"is not found for api version", "not supported for generatecontent"}, Outcome: chain.OutcomeMisconfigured, Fix: fixModel},
		// The status decides first: a 429 is a rate limit whatever reason
		// its body gives (the fuzzer sent API_KEY_INVALID under a 429).
		{Status: []int{4}, NotStatus: []int{429}, Codes: []string{"API_KEY_INVALID"}, Outcome: chain.OutcomeAuthError},
	},
}

// profiles are the providers, by ID.
var profiles = map[ID]*Profile{
	Gemini: {
		ID: Gemini, Kind: KindGemini, Hosts: []string{"generativelanguage.googleapis.com"},
		Envelope: EnvelopeGoogle,
		Delays:   []Delay{DelayRetryInfo, DelayRetryAfter, DelayMessage},
		Rules: []Rule{
			// A quota whose limit is 0: the key's tier has none for the model.
			{Status: []int{429}, Words: []string{"limit: 0,", "limit: 0\n", `quotavalue "0"`}, Outcome: chain.OutcomeMisconfigured, Fix: fixNoQuota},
			{Status: []int{400}, Codes: []string{"FAILED_PRECONDITION"}, Words: []string{"location is not supported"}, Outcome: chain.OutcomeMisconfigured, Fix: fixRegion},
		},
		BlockedFinish: []string{"SAFETY", "RECITATION", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII",
			"IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"},
	},
	Groq: {
		ID: Groq, Kind: KindOpenAI, Hosts: []string{"groq.com"},
		Envelope: EnvelopeOpenAI,
		Delays:   []Delay{DelayRetryAfter, DelayMessage, DelayReset},
		// Groq counts x-ratelimit-*-requests per day and *-tokens per minute.
		Windows:        []Window{{"x-ratelimit-remaining-requests", chain.ScopeDay}, {"x-ratelimit-remaining-tokens", chain.ScopeMinute}},
		Daily:          []QuotaHeaders{{"x-ratelimit-remaining-requests", "x-ratelimit-reset-requests", false}},
		RateLimitCodes: []string{"rate_limit_exceeded"},
		Rules: []Rule{
			// "Request too large for model … on tokens per minute (TPM):
			// Limit 6000, Requested 10338": a 413 with code
			// rate_limit_exceeded that no wait can cure.
			{Status: []int{413}, Outcome: chain.OutcomeTooLarge,
				Fix: "lower the link's max_tokens (Groq counts it against the per-minute token limit) or shorten the prompt, or move the link to a higher Groq tier"},
		},
		BlockedFinish: []string{"content_filter"},
	},
	Cerebras: {
		ID: Cerebras, Kind: KindOpenAI, Hosts: []string{"cerebras.ai"},
		Envelope: EnvelopeOpenAI,
		Delays:   []Delay{DelayRetryAfter, DelayMessage, DelayReset},
		// Cerebras names every window in its headers. Its code
		// token_quota_exceeded is sent for the per-minute and the per-day
		// token limits alike: the window comes from these and the message.
		Windows: []Window{{"x-ratelimit-remaining-requests-day", chain.ScopeDay}, {"x-ratelimit-remaining-tokens-day", chain.ScopeDay},
			{"x-ratelimit-remaining-tokens-minute", chain.ScopeMinute}, {"x-ratelimit-remaining-requests-minute", chain.ScopeMinute}},
		Daily:          []QuotaHeaders{{"x-ratelimit-remaining-requests-day", "x-ratelimit-reset-requests-day", true}},
		RateLimitCodes: []string{"rate_limit_exceeded"},
		BlockedFinish:  []string{"content_filter"},
	},
	OpenRouter: {
		ID: OpenRouter, Kind: KindOpenAI, Hosts: []string{"openrouter.ai"},
		Envelope:       EnvelopeOpenAI,
		Delays:         []Delay{DelayRetryAfter, DelayMessage, DelayReset},
		RateLimitCodes: []string{"rate_limit_exceeded"},
		Rules: []Rule{
			// "… requires moderation on Amazon Bedrock. Your input was flagged
			// for …": the content was refused, the key is fine.
			{Status: []int{403}, Words: []string{"requires moderation", "input was flagged"}, Outcome: chain.OutcomeBlocked},
			{Status: []int{404}, Words: []string{"no allowed providers"}, Outcome: chain.OutcomeMisconfigured, Fix: fixProviders},
			{Status: []int{402}, Outcome: chain.OutcomeMisconfigured,
				Fix: "add OpenRouter credits (https://openrouter.ai/settings/credits), raise the key's limit, or lower the link's max_tokens"},
		},
		BlockedFinish: []string{"content_filter"},
	},
	OpenAI: {
		ID: OpenAI, Kind: KindOpenAI, Hosts: []string{"api.openai.com"},
		Envelope:       EnvelopeOpenAI,
		Delays:         []Delay{DelayRetryAfter, DelayMessage, DelayReset},
		RateLimitCodes: []string{"rate_limit_exceeded"},
		Rules: []Rule{
			// Azure and OpenAI refuse a prompt their filter flagged with a
			// 400 and code content_filter.
			{Status: []int{400}, Codes: []string{"content_filter", "content_policy_violation"}, Outcome: chain.OutcomeBlocked},
		},
		BlockedFinish: []string{"content_filter"},
	},
}

// Blocked reports whether a 200 answer's finish reason means the provider
// withheld the answer.
func (p *Profile) Blocked(finish string) bool {
	for _, f := range p.BlockedFinish {
		if strings.EqualFold(f, finish) {
			return true
		}
	}
	return false
}

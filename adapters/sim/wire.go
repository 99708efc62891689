package sim

import (
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// reply is a complete non-200 (or refused) answer.
type reply struct {
	status int
	header map[string]string // exact (lower-case) header names as the provider sends them
	body   []byte
}

// writeReply writes rp with the flavor's error content type.
func (s *Server) writeReply(w http.ResponseWriter, rp reply) {
	h := w.Header()
	for k, v := range rp.header {
		h[k] = []string{v}
	}
	ct := "application/json"
	if s.flavor == FlavorGemini {
		ct = "application/json; charset=UTF-8"
		h.Set("Vary", "Origin, X-Origin, Referer")
		h.Set("Server", "scaffolding on HTTPServer2")
		h.Set("X-Content-Type-Options", "nosniff")
	}
	h.Set("Content-Type", ct)
	h.Set("Content-Length", strconv.Itoa(len(rp.body)))
	w.WriteHeader(rp.status)
	_, _ = w.Write(rp.body)
}

// seconds formats d the way Google's Duration JSON does ("26s", "0.5s").
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + "s"
}

// ceilSeconds is a Retry-After header value: whole seconds, at least 1.
func ceilSeconds(d time.Duration) string {
	return strconv.Itoa(max(1, int(math.Ceil(d.Seconds()))))
}

// nextUTCMidnight is the start of the next UTC day after now.
func nextUTCMidnight(now time.Time) time.Time {
	y, m, d := now.UTC().Date()
	return time.Date(y, m, d+1, 0, 0, 0, 0, time.UTC)
}

// --- Gemini error shapes (google.rpc.Status, pretty-printed) ---

type gErrorEnvelope struct {
	Error gError `json:"error"`
}

type gError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []any  `json:"details,omitempty"`
}

type gQuotaFailure struct {
	Type       string       `json:"@type"`
	Violations []gViolation `json:"violations"`
}

type gViolation struct {
	QuotaMetric     string            `json:"quotaMetric"`
	QuotaID         string            `json:"quotaId"`
	QuotaDimensions map[string]string `json:"quotaDimensions"`
	QuotaValue      string            `json:"quotaValue"`
}

type gHelp struct {
	Type  string  `json:"@type"`
	Links []gLink `json:"links"`
}

type gLink struct {
	Description string `json:"description"`
	URL         string `json:"url"`
}

type gRetryInfo struct {
	Type       string `json:"@type"`
	RetryDelay string `json:"retryDelay"`
}

type gErrorInfo struct {
	Type     string            `json:"@type"`
	Reason   string            `json:"reason"`
	Domain   string            `json:"domain"`
	Metadata map[string]string `json:"metadata"`
}

type gLocalizedMessage struct {
	Type    string `json:"@type"`
	Locale  string `json:"locale"`
	Message string `json:"message"`
}

func gReply(code int, status, message string, details ...any) reply {
	return reply{status: code, body: marshal(gErrorEnvelope{Error: gError{Code: code, Message: message, Status: status, Details: details}}, true)}
}

// --- Groq (OpenAI-style, wrapped in "error") ---

type groqEnvelope struct {
	Error groqError `json:"error"`
}

type groqError struct {
	Message          string `json:"message"`
	Type             string `json:"type"`
	Code             string `json:"code,omitempty"`
	FailedGeneration string `json:"failed_generation,omitempty"`
}

func groqReply(code int, e groqError) reply {
	return reply{status: code, body: marshal(groqEnvelope{Error: e}, false)}
}

// --- Cerebras (NOT wrapped in "error") ---

type cerebrasError struct {
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   string `json:"param"`
	Code    string `json:"code"`
}

func cerebrasReply(code int, e cerebrasError) reply {
	return reply{status: code, body: marshal(e, false)}
}

// --- OpenRouter (wrapped, numeric code, metadata) ---

type orEnvelope struct {
	Error  orError `json:"error"`
	UserID string  `json:"user_id,omitempty"`
}

type orError struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

func orReply(code int, message string, metadata map[string]any) reply {
	return reply{status: code, body: marshal(orEnvelope{
		Error:  orError{Code: code, Message: message, Metadata: metadata},
		UserID: "user_2simF4k3Pr0v1d3rUs3r",
	}, false)}
}

func orLimitHeaders(limit int, reset time.Time) map[string]any {
	return map[string]any{"headers": map[string]string{
		"X-RateLimit-Limit":     strconv.Itoa(limit),
		"X-RateLimit-Remaining": "0",
		"X-RateLimit-Reset":     strconv.FormatInt(reset.UnixMilli(), 10),
	}}
}

// faultReply renders an error fault in the flavor's wire format. missing
// marks a request without any auth header.
func (s *Server) faultReply(t turn, c call, now time.Time, missing bool) reply {
	ra := t.wait()
	model := c.model
	if model == "" {
		model = s.flavor.DefaultModel()
	}
	switch s.flavor {
	case FlavorGemini:
		return geminiFault(t.fault, modelVersion(model), ra, missing)
	case FlavorGroq:
		return groqFault(t.fault, model, ra, c, t.resetAt, now)
	case FlavorCerebras:
		return cerebrasFault(t.fault, ra, t.resetAt, now)
	}
	reset := nextUTCMidnight(now)
	if !t.resetAt.IsZero() {
		reset = t.resetAt
	}
	return openRouterFault(t.fault, model, ra, now, reset, missing)
}

func geminiFault(f Fault, mv string, ra time.Duration, missing bool) reply {
	help := gHelp{Type: "type.googleapis.com/google.rpc.Help", Links: []gLink{{
		Description: "Learn more about Gemini API quotas",
		URL:         "https://ai.google.dev/gemini-api/docs/rate-limits",
	}}}
	quotaMsg := "You exceeded your current quota, please check your plan and billing details. " +
		"For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits. " +
		"To monitor your current usage, head to: https://ai.dev/usage?tab=rate-limit. \n"
	switch f {
	case FaultRateMinute:
		return gReply(429, "RESOURCE_EXHAUSTED",
			quotaMsg+"* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 250000, model: "+mv+"\nPlease retry in "+seconds(ra)+".",
			gQuotaFailure{Type: "type.googleapis.com/google.rpc.QuotaFailure", Violations: []gViolation{{
				QuotaMetric:     "generativelanguage.googleapis.com/generate_content_free_tier_input_token_count",
				QuotaID:         "GenerateContentInputTokensPerModelPerMinute-FreeTier",
				QuotaDimensions: map[string]string{"location": "global", "model": mv},
				QuotaValue:      "250000",
			}}},
			help,
			gRetryInfo{Type: "type.googleapis.com/google.rpc.RetryInfo", RetryDelay: seconds(ra)},
		)
	case FaultRateDay:
		return gReply(429, "RESOURCE_EXHAUSTED",
			quotaMsg+"* Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_requests, limit: 20, model: "+mv+"\nPlease retry in 23.472316927s.",
			gQuotaFailure{Type: "type.googleapis.com/google.rpc.QuotaFailure", Violations: []gViolation{{
				QuotaMetric:     "generativelanguage.googleapis.com/generate_content_free_tier_requests",
				QuotaID:         "GenerateRequestsPerDayPerProjectPerModel-FreeTier",
				QuotaDimensions: map[string]string{"location": "global", "model": mv},
				QuotaValue:      "20",
			}}},
			help,
			gRetryInfo{Type: "type.googleapis.com/google.rpc.RetryInfo", RetryDelay: "23s"},
		)
	case FaultUnavailable:
		return gReply(503, "UNAVAILABLE", "The model is overloaded. Please try again later.")
	case FaultServerError:
		return gReply(500, "INTERNAL", "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting")
	case FaultInvalidKey:
		return gReply(400, "INVALID_ARGUMENT", "API key not valid. Please pass a valid API key.",
			gErrorInfo{Type: "type.googleapis.com/google.rpc.ErrorInfo", Reason: "API_KEY_INVALID", Domain: "googleapis.com",
				Metadata: map[string]string{"service": "generativelanguage.googleapis.com"}},
			gLocalizedMessage{Type: "type.googleapis.com/google.rpc.LocalizedMessage", Locale: "en-US", Message: "API key not valid. Please pass a valid API key."},
		)
	case FaultForbidden:
		return gReply(403, "PERMISSION_DENIED", "Your API key was reported as leaked. Please use another API key.")
	case FaultBlocked:
		return gReply(400, "INVALID_ARGUMENT", "Request contains an invalid argument.")
	}
	if missing {
		return gReply(401, "UNAUTHENTICATED", "Method doesn't allow unregistered callers (callers without established identity). Please use API Key or other form of API consumer identity to call this API.")
	}
	return gReply(401, "UNAUTHENTICATED", "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential. See https://developers.google.com/identity/sign-in/web/devconsole-project.")
}

// groqDuration formats a wait the way Groq writes it ("2s", "9m52.272s").
func groqDuration(d time.Duration) string {
	return d.Round(time.Millisecond).String()
}

// groqFault renders a Groq fault; reset, when set, is when a daily quota
// resets (a daily 429 then names the time until it, rounded to the
// millisecond, as its only wait).
func groqFault(f Fault, model string, ra time.Duration, c call, reset, now time.Time) reply {
	const upgrade = " Need more tokens? Upgrade to Dev Tier today at https://console.groq.com/settings/billing"
	org := "org_01jsimf4k3gr0q0rgan1zat10n"
	requested := c.inputTokens() + 1024
	switch f {
	case FaultRateMinute:
		rp := groqReply(429, groqError{
			Message: fmt.Sprintf("Rate limit reached for model `%s` in organization `%s` service tier `on_demand` on tokens per minute (TPM): Limit 12000, Used %d, Requested %d. Please try again in %s.%s",
				model, org, 12000-requested/2, requested, groqDuration(ra), upgrade),
			Type: "tokens", Code: "rate_limit_exceeded",
		})
		rp.header = map[string]string{"retry-after": ceilSeconds(ra)}
		return rp
	case FaultRateDay:
		wait, header := "9m52.272s", map[string]string{"retry-after": "593"}
		if !reset.IsZero() {
			wait, header = groqDuration(reset.Sub(now)), nil
		}
		rp := groqReply(429, groqError{
			Message: fmt.Sprintf("Rate limit reached for model `%s` in organization `%s` service tier `on_demand` on tokens per day (TPD): Limit 100000, Used 97117, Requested %d. Please try again in %s.%s",
				model, org, requested, wait, upgrade),
			Type: "tokens", Code: "rate_limit_exceeded",
		})
		rp.header = header
		return rp
	case FaultUnavailable:
		return groqReply(503, groqError{
			Message: model + " is currently over capacity. Please try again and back off exponentially. Visit https://groqstatus.com to see if there is an active incident.",
			Type:    "internal_server_error", Code: "service_unavailable",
		})
	case FaultServerError:
		return groqReply(500, groqError{Message: "Internal Server Error", Type: "internal_server_error"})
	case FaultForbidden:
		return groqReply(403, groqError{Message: "Organization has been restricted. Please reach out to support if you believe this was in error.", Type: "invalid_request_error", Code: "organization_restricted"})
	case FaultBlocked:
		return groqReply(400, groqError{
			Message: "Failed to generate JSON. Please adjust your prompt. See 'failed_generation' for more details.",
			Type:    "invalid_request_error", Code: "json_validate_failed",
			FailedGeneration: "I can't help with that request.",
		})
	}
	return groqReply(401, groqError{Message: "Invalid API Key", Type: "invalid_request_error", Code: "invalid_api_key"})
}

// cerebrasFault renders a Cerebras fault; reset, when set, is when a daily
// quota resets (Retry-After then names the time until it in whole seconds).
func cerebrasFault(f Fault, ra time.Duration, reset, now time.Time) reply {
	switch f {
	case FaultRateMinute:
		rp := cerebrasReply(429, cerebrasError{Message: "Requests per minute limit exceeded - too many requests sent.", Type: "too_many_requests_error", Param: "quota", Code: "request_quota_exceeded"})
		rp.header = map[string]string{"retry-after": ceilSeconds(ra)}
		return rp
	case FaultRateDay:
		rp := cerebrasReply(429, cerebrasError{Message: "Tokens per day limit exceeded - too many tokens processed.", Type: "too_many_tokens_error", Param: "quota", Code: "token_quota_exceeded"})
		rp.header = map[string]string{"retry-after": "86399"}
		if !reset.IsZero() {
			rp.header["retry-after"] = ceilSeconds(reset.Sub(now))
		}
		return rp
	case FaultUnavailable:
		return cerebrasReply(503, cerebrasError{Message: "The server is temporarily unable to handle the request. Please try again later.", Type: "service_unavailable_error", Param: "", Code: "service_unavailable"})
	case FaultServerError:
		return cerebrasReply(500, cerebrasError{Message: "Internal server error.", Type: "internal_server_error", Param: "", Code: "internal_server_error"})
	case FaultForbidden:
		return cerebrasReply(403, cerebrasError{Message: "Your API key does not have permission to use this model.", Type: "permission_denied_error", Param: "", Code: "permission_denied"})
	case FaultBlocked:
		return cerebrasReply(400, cerebrasError{Message: "The request was rejected by the content filter.", Type: "invalid_request_error", Param: "messages", Code: "content_filter"})
	}
	return cerebrasReply(401, cerebrasError{Message: "Wrong API Key", Type: "invalid_request_error", Param: "api_key", Code: "wrong_api_key"})
}

// openRouterFault renders an OpenRouter fault; a daily 429 names reset, the
// next UTC midnight unless the caller knows better, in its metadata.
func openRouterFault(f Fault, model string, ra time.Duration, now, reset time.Time, missing bool) reply {
	switch f {
	case FaultRateMinute:
		return orReply(429, "Rate limit exceeded: free-models-per-min. ", orLimitHeaders(20, now.Add(ra)))
	case FaultRateDay:
		return orReply(429, "Rate limit exceeded: free-models-per-day. Add 10 credits to unlock 1000 free model requests per day", orLimitHeaders(50, reset))
	case FaultUnavailable:
		return orReply(503, "Provider returned error", map[string]any{"raw": "Service Unavailable: " + model + " is overloaded", "provider_name": "DeepInfra"})
	case FaultServerError:
		return orReply(500, "Internal Server Error", nil)
	case FaultForbidden:
		return orReply(403, "Key limit exceeded (total limit). Manage it using https://openrouter.ai/settings/keys", nil)
	case FaultBlocked:
		return orReply(400, "Provider returned error", map[string]any{"raw": `{"error":{"message":"Request blocked by the provider's content policy"}}`, "provider_name": "DeepInfra"})
	}
	if missing {
		return orReply(401, "No auth credentials found", nil)
	}
	return orReply(401, "User not found.", nil)
}

// notFound answers an unknown path in the flavor's format (not counted).
func (s *Server) notFound(r *http.Request) reply {
	switch s.flavor {
	case FlavorGemini:
		return gReply(404, "NOT_FOUND", "Requested entity was not found.")
	case FlavorGroq:
		return groqReply(404, groqError{Message: fmt.Sprintf("Unknown request URL: %s %s. Please check the URL for typos, or see the docs at https://console.groq.com/docs/", r.Method, r.URL.Path), Type: "invalid_request_error", Code: "unknown_url"})
	case FlavorCerebras:
		return cerebrasReply(404, cerebrasError{Message: "Not Found", Type: "not_found_error", Param: "", Code: "not_found"})
	}
	return orReply(404, "Not Found", nil)
}

// badMethod answers a non-POST to an API path.
func (s *Server) badMethod(r *http.Request) reply {
	msg := "Method " + r.Method + " not allowed"
	switch s.flavor {
	case FlavorGemini:
		return gReply(405, "UNIMPLEMENTED", msg)
	case FlavorGroq:
		return groqReply(405, groqError{Message: msg, Type: "invalid_request_error", Code: "method_not_allowed"})
	case FlavorCerebras:
		return cerebrasReply(405, cerebrasError{Message: msg, Type: "invalid_request_error", Param: "", Code: "method_not_allowed"})
	}
	return orReply(405, msg, nil)
}

// badRequest answers a request body the API would refuse.
func (s *Server) badRequest(detail string) reply {
	switch s.flavor {
	case FlavorGemini:
		return gReply(400, "INVALID_ARGUMENT", upperFirst(detail, "en"))
	case FlavorGroq:
		return groqReply(400, groqError{Message: detail, Type: "invalid_request_error"})
	case FlavorCerebras:
		return cerebrasReply(400, cerebrasError{Message: detail, Type: "invalid_request_error", Param: "body", Code: "wrong_api_format"})
	}
	return orReply(400, detail, nil)
}

// Groq and Cerebras advertise these limits in their x-ratelimit-* headers.
const (
	groqRequestsPerDay     = 1000
	groqTokensPerMinute    = 12000
	cerebrasRequestsPerDay = 14400
	cerebrasTokensPerMin   = 60000
)

// rateHeaders sets the x-ratelimit-* headers Groq and Cerebras send on every
// answer: the daily request allowance falls by one per request, the
// per-minute token allowance by what the last minute's requests asked for.
func (s *Server) rateHeaders(h http.Header, t turn, c call, now time.Time) {
	if s.flavor != FlavorGroq && s.flavor != FlavorCerebras {
		return
	}
	want := c.inputTokens() + 1024
	if c.maxTokens > 0 {
		want = c.inputTokens() + c.maxTokens
	}
	s.mu.Lock()
	kept := s.tokens[:0]
	for _, u := range s.tokens {
		if now.Sub(u.at) < time.Minute {
			kept = append(kept, u)
		}
	}
	s.tokens = append(kept, tokenUse{at: now, n: want})
	used := 0
	for _, u := range s.tokens {
		used += u.n
	}
	s.mu.Unlock()

	set := func(k, v string) { h[k] = []string{v} }
	ra := t.wait()
	if s.flavor == FlavorGroq {
		remReq := max(0, groqRequestsPerDay-t.n)
		remTok := max(0, groqTokensPerMinute-used)
		resetReq := time.Duration(float64(24*time.Hour) * float64(groqRequestsPerDay-remReq) / groqRequestsPerDay)
		resetTok := min(time.Minute, time.Duration(float64(time.Minute)*float64(min(used, groqTokensPerMinute))/groqTokensPerMinute))
		if t.fault == FaultRateMinute {
			remTok, resetTok = 0, ra
		}
		set("x-ratelimit-limit-requests", strconv.Itoa(groqRequestsPerDay))
		set("x-ratelimit-limit-tokens", strconv.Itoa(groqTokensPerMinute))
		s.flavor.Profile().WriteQuota(h, chain.QuotaHint{Remaining: remReq, Reset: resetReq.Round(10 * time.Millisecond)})
		set("x-ratelimit-remaining-tokens", strconv.Itoa(remTok))
		set("x-ratelimit-reset-tokens", resetTok.Round(10*time.Millisecond).String())
		return
	}
	remReq := max(0, cerebrasRequestsPerDay-t.n)
	if t.fault == FaultRateDay {
		remReq = 0
	}
	remTok := max(0, cerebrasTokensPerMin-used)
	resetTok := math.Min(60, 60*float64(min(used, cerebrasTokensPerMin))/cerebrasTokensPerMin)
	if t.fault == FaultRateMinute {
		remTok, resetTok = 0, ra.Seconds()
	}
	set("x-ratelimit-limit-requests-day", strconv.Itoa(cerebrasRequestsPerDay))
	set("x-ratelimit-limit-tokens-minute", strconv.Itoa(cerebrasTokensPerMin))
	s.flavor.Profile().WriteQuota(h, chain.QuotaHint{Remaining: remReq, Reset: nextUTCMidnight(now).Sub(now).Round(10 * time.Millisecond)})
	set("x-ratelimit-remaining-tokens-minute", strconv.Itoa(remTok))
	set("x-ratelimit-reset-tokens-minute", strconv.FormatFloat(resetTok, 'f', 2, 64))
}

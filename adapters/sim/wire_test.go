package sim

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// gStatus asserts Google's error envelope and returns its "error" object.
func gStatus(t *testing.T, body map[string]any, code int, status string) map[string]any {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object: %v", body)
	}
	if int(e["code"].(float64)) != code || e["status"] != status {
		t.Errorf("error code/status = %v/%v, want %d/%s", e["code"], e["status"], code, status)
	}
	if m, _ := e["message"].(string); m == "" {
		t.Errorf("empty error message")
	}
	return e
}

// gDetail returns the details entry whose @type ends with suffix.
func gDetail(t *testing.T, e map[string]any, suffix string) map[string]any {
	t.Helper()
	details, _ := e["details"].([]any)
	for _, d := range details {
		dm := d.(map[string]any)
		if strings.HasSuffix(dm["@type"].(string), suffix) {
			return dm
		}
	}
	t.Fatalf("no %s detail in %v", suffix, details)
	return nil
}

func quotaID(t *testing.T, e map[string]any) string {
	t.Helper()
	qf := gDetail(t, e, "google.rpc.QuotaFailure")
	return qf["violations"].([]any)[0].(map[string]any)["quotaId"].(string)
}

// oaErr asserts the wrapped OpenAI-style envelope (Groq, OpenRouter).
func oaErr(t *testing.T, body map[string]any) map[string]any {
	t.Helper()
	e, ok := body["error"].(map[string]any)
	if !ok {
		t.Fatalf("no error object: %v", body)
	}
	if m, _ := e["message"].(string); m == "" {
		t.Errorf("empty error message: %v", e)
	}
	return e
}

// cbErr asserts Cerebras's unwrapped error body.
func cbErr(t *testing.T, body map[string]any, code string) {
	t.Helper()
	if _, wrapped := body["error"]; wrapped {
		t.Errorf("cerebras error body must not be wrapped in error: %v", body)
	}
	for _, k := range []string{"message", "type", "param", "code"} {
		if _, ok := body[k]; !ok {
			t.Errorf("cerebras error lacks %q: %v", k, body)
		}
	}
	if body["code"] != code {
		t.Errorf("code = %v, want %s", body["code"], code)
	}
}

func orErr(t *testing.T, body map[string]any, code int) map[string]any {
	t.Helper()
	e := oaErr(t, body)
	if int(e["code"].(float64)) != code {
		t.Errorf("openrouter error.code = %v, want %d", e["code"], code)
	}
	return e
}

func orReset(t *testing.T, e map[string]any) int64 {
	t.Helper()
	h := e["metadata"].(map[string]any)["headers"].(map[string]any)
	if h["X-RateLimit-Remaining"] != "0" || h["X-RateLimit-Limit"] == "" {
		t.Errorf("metadata headers = %v", h)
	}
	n, err := strconv.ParseInt(h["X-RateLimit-Reset"].(string), 10, 64)
	if err != nil {
		t.Fatalf("X-RateLimit-Reset: %v", err)
	}
	return n
}

func TestErrorFaultsWireShapes(t *testing.T) {
	const ra = 3 * time.Second
	midnight := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	type check func(t *testing.T, ex exchange, body map[string]any)
	cases := []struct {
		f      Flavor
		fault  Fault
		status int
		check  check
	}{
		{FlavorGemini, FaultRateMinute, 429, func(t *testing.T, ex exchange, body map[string]any) {
			e := gStatus(t, body, 429, "RESOURCE_EXHAUSTED")
			if id := quotaID(t, e); !strings.Contains(id, "PerMinute") {
				t.Errorf("quotaId %q is not per-minute", id)
			}
			if d := gDetail(t, e, "google.rpc.RetryInfo")["retryDelay"]; d != "3s" {
				t.Errorf("retryDelay = %v, want 3s", d)
			}
			gDetail(t, e, "google.rpc.Help")
		}},
		{FlavorGemini, FaultRateDay, 429, func(t *testing.T, ex exchange, body map[string]any) {
			e := gStatus(t, body, 429, "RESOURCE_EXHAUSTED")
			if id := quotaID(t, e); id != "GenerateRequestsPerDayPerProjectPerModel-FreeTier" {
				t.Errorf("quotaId = %q", id)
			}
			if !strings.Contains(e["message"].(string), "Please retry in 23.472316927s.") {
				t.Errorf("message lacks the retry hint: %v", e["message"])
			}
		}},
		{FlavorGemini, FaultUnavailable, 503, func(t *testing.T, ex exchange, body map[string]any) {
			e := gStatus(t, body, 503, "UNAVAILABLE")
			if e["message"] != "The model is overloaded. Please try again later." {
				t.Errorf("message = %v", e["message"])
			}
		}},
		{FlavorGemini, FaultServerError, 500, func(t *testing.T, ex exchange, body map[string]any) { gStatus(t, body, 500, "INTERNAL") }},
		{FlavorGemini, FaultUnauthorized, 401, func(t *testing.T, ex exchange, body map[string]any) { gStatus(t, body, 401, "UNAUTHENTICATED") }},
		{FlavorGemini, FaultInvalidKey, 400, func(t *testing.T, ex exchange, body map[string]any) {
			e := gStatus(t, body, 400, "INVALID_ARGUMENT")
			if r := gDetail(t, e, "google.rpc.ErrorInfo")["reason"]; r != "API_KEY_INVALID" {
				t.Errorf("reason = %v", r)
			}
		}},
		{FlavorGemini, FaultForbidden, 403, func(t *testing.T, ex exchange, body map[string]any) { gStatus(t, body, 403, "PERMISSION_DENIED") }},

		{FlavorGroq, FaultRateMinute, 429, func(t *testing.T, ex exchange, body map[string]any) {
			e := oaErr(t, body)
			if e["code"] != "rate_limit_exceeded" || e["type"] != "tokens" {
				t.Errorf("code/type = %v/%v", e["code"], e["type"])
			}
			msg := e["message"].(string)
			if !strings.Contains(msg, "tokens per minute (TPM)") || !strings.Contains(msg, "Please try again in 3s.") {
				t.Errorf("message = %q", msg)
			}
			if ex.header.Get("retry-after") != "3" {
				t.Errorf("retry-after = %q, want 3", ex.header.Get("retry-after"))
			}
			if ex.header.Get("x-ratelimit-remaining-tokens") != "0" || ex.header.Get("x-ratelimit-reset-tokens") != "3s" {
				t.Errorf("token headers = %q %q", ex.header.Get("x-ratelimit-remaining-tokens"), ex.header.Get("x-ratelimit-reset-tokens"))
			}
		}},
		{FlavorGroq, FaultRateDay, 429, func(t *testing.T, ex exchange, body map[string]any) {
			msg := oaErr(t, body)["message"].(string)
			if !strings.Contains(msg, "tokens per day (TPD)") || !strings.Contains(msg, "Please try again in 9m52.272s.") {
				t.Errorf("message = %q", msg)
			}
			if ex.header.Get("retry-after") != "593" {
				t.Errorf("retry-after = %q", ex.header.Get("retry-after"))
			}
		}},
		{FlavorGroq, FaultUnavailable, 503, func(t *testing.T, ex exchange, body map[string]any) {
			if e := oaErr(t, body); e["type"] != "internal_server_error" {
				t.Errorf("type = %v", e["type"])
			}
		}},
		{FlavorGroq, FaultServerError, 500, func(t *testing.T, ex exchange, body map[string]any) { oaErr(t, body) }},
		{FlavorGroq, FaultUnauthorized, 401, func(t *testing.T, ex exchange, body map[string]any) {
			if e := oaErr(t, body); e["code"] != "invalid_api_key" {
				t.Errorf("code = %v", e["code"])
			}
		}},
		{FlavorGroq, FaultInvalidKey, 401, func(t *testing.T, ex exchange, body map[string]any) { oaErr(t, body) }},
		{FlavorGroq, FaultForbidden, 403, func(t *testing.T, ex exchange, body map[string]any) { oaErr(t, body) }},
		{FlavorGroq, FaultBlocked, 400, func(t *testing.T, ex exchange, body map[string]any) {
			if e := oaErr(t, body); e["type"] != "invalid_request_error" {
				t.Errorf("type = %v", e["type"])
			}
		}},

		{FlavorCerebras, FaultRateMinute, 429, func(t *testing.T, ex exchange, body map[string]any) {
			cbErr(t, body, "request_quota_exceeded")
			if body["type"] != "too_many_requests_error" || body["param"] != "quota" {
				t.Errorf("type/param = %v/%v", body["type"], body["param"])
			}
			if ex.header.Get("Retry-After") != "3" {
				t.Errorf("Retry-After = %q", ex.header.Get("Retry-After"))
			}
		}},
		{FlavorCerebras, FaultRateDay, 429, func(t *testing.T, ex exchange, body map[string]any) {
			cbErr(t, body, "token_quota_exceeded")
			if ex.header.Get("Retry-After") != "86399" {
				t.Errorf("Retry-After = %q", ex.header.Get("Retry-After"))
			}
			if ex.header.Get("x-ratelimit-remaining-requests-day") != "0" {
				t.Errorf("remaining-requests-day = %q", ex.header.Get("x-ratelimit-remaining-requests-day"))
			}
		}},
		{FlavorCerebras, FaultUnavailable, 503, func(t *testing.T, ex exchange, body map[string]any) { cbErr(t, body, "service_unavailable") }},
		{FlavorCerebras, FaultServerError, 500, func(t *testing.T, ex exchange, body map[string]any) { cbErr(t, body, "internal_server_error") }},
		{FlavorCerebras, FaultUnauthorized, 401, func(t *testing.T, ex exchange, body map[string]any) { cbErr(t, body, "wrong_api_key") }},
		{FlavorCerebras, FaultInvalidKey, 401, func(t *testing.T, ex exchange, body map[string]any) { cbErr(t, body, "wrong_api_key") }},
		{FlavorCerebras, FaultForbidden, 403, func(t *testing.T, ex exchange, body map[string]any) { cbErr(t, body, "permission_denied") }},
		{FlavorCerebras, FaultBlocked, 400, func(t *testing.T, ex exchange, body map[string]any) { cbErr(t, body, "content_filter") }},

		{FlavorOpenRouter, FaultRateMinute, 429, func(t *testing.T, ex exchange, body map[string]any) {
			e := orErr(t, body, 429)
			if !strings.Contains(e["message"].(string), "free-models-per-min") {
				t.Errorf("message = %v", e["message"])
			}
			if got, want := orReset(t, e), fixedNow.Add(ra).UnixMilli(); got != want {
				t.Errorf("X-RateLimit-Reset = %d, want %d", got, want)
			}
		}},
		{FlavorOpenRouter, FaultRateDay, 429, func(t *testing.T, ex exchange, body map[string]any) {
			e := orErr(t, body, 429)
			if !strings.Contains(e["message"].(string), "free-models-per-day") {
				t.Errorf("message = %v", e["message"])
			}
			if got := orReset(t, e); got != midnight.UnixMilli() {
				t.Errorf("X-RateLimit-Reset = %d, want next UTC midnight %d", got, midnight.UnixMilli())
			}
		}},
		{FlavorOpenRouter, FaultUnavailable, 503, func(t *testing.T, ex exchange, body map[string]any) { orErr(t, body, 503) }},
		{FlavorOpenRouter, FaultServerError, 500, func(t *testing.T, ex exchange, body map[string]any) { orErr(t, body, 500) }},
		{FlavorOpenRouter, FaultUnauthorized, 401, func(t *testing.T, ex exchange, body map[string]any) { orErr(t, body, 401) }},
		{FlavorOpenRouter, FaultInvalidKey, 401, func(t *testing.T, ex exchange, body map[string]any) { orErr(t, body, 401) }},
		{FlavorOpenRouter, FaultForbidden, 403, func(t *testing.T, ex exchange, body map[string]any) { orErr(t, body, 403) }},
		{FlavorOpenRouter, FaultBlocked, 400, func(t *testing.T, ex exchange, body map[string]any) { orErr(t, body, 400) }},
	}
	for _, tc := range cases {
		for _, stream := range []bool{false, true} {
			name := string(tc.f) + "/" + string(tc.fault)
			if stream {
				name += "/stream"
			}
			t.Run(name, func(t *testing.T) {
				s := startT(t, tc.f, Profile{Script: []Fault{tc.fault}, RetryAfter: ra})
				ex := do(t, s, topicEN.prompt(), reqOpts{stream: stream})
				if ex.status != tc.status {
					t.Fatalf("status %d, want %d: %s", ex.status, tc.status, ex.body)
				}
				if ct := ex.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
					t.Errorf("Content-Type = %q", ct)
				}
				tc.check(t, ex, decodeMap(t, ex.body))
				assertRateHeaders(t, tc.f, ex)
			})
		}
	}
}

// assertRateHeaders checks that Groq and Cerebras sent their x-ratelimit-*
// headers (and OpenRouter/Gemini did not invent them).
func assertRateHeaders(t *testing.T, f Flavor, ex exchange) {
	t.Helper()
	var names []string
	switch f {
	case FlavorGroq:
		names = []string{"x-ratelimit-limit-requests", "x-ratelimit-remaining-requests", "x-ratelimit-reset-requests",
			"x-ratelimit-limit-tokens", "x-ratelimit-remaining-tokens", "x-ratelimit-reset-tokens"}
	case FlavorCerebras:
		names = []string{"x-ratelimit-limit-requests-day", "x-ratelimit-remaining-requests-day", "x-ratelimit-reset-requests-day",
			"x-ratelimit-limit-tokens-minute", "x-ratelimit-remaining-tokens-minute", "x-ratelimit-reset-tokens-minute"}
	default:
		if ex.header.Get("x-ratelimit-limit-requests") != "" {
			t.Errorf("%s sends Groq's rate headers", f)
		}
		return
	}
	for _, n := range names {
		if ex.header.Get(n) == "" {
			t.Errorf("%s: header %s missing", f, n)
		}
	}
}

func TestMissingAuthIs401AndKeepsScript(t *testing.T) {
	for _, f := range Flavors() {
		t.Run(string(f), func(t *testing.T) {
			s := startT(t, f, Profile{Script: []Fault{FaultUnavailable}})
			ex := do(t, s, healthPrompt, reqOpts{noAuth: true})
			if ex.status != 401 {
				t.Fatalf("status %d, want 401: %s", ex.status, ex.body)
			}
			body := decodeMap(t, ex.body)
			switch f {
			case FlavorGemini:
				gStatus(t, body, 401, "UNAUTHENTICATED")
			case FlavorCerebras:
				cbErr(t, body, "wrong_api_key")
			case FlavorOpenRouter:
				if e := orErr(t, body, 401); e["message"] != "No auth credentials found" {
					t.Errorf("message = %v", e["message"])
				}
			default:
				oaErr(t, body)
			}
			// The refused request did not use up the script.
			if ex := do(t, s, healthPrompt, reqOpts{}); ex.status != 503 {
				t.Errorf("scripted request after the refusal: status %d, want 503", ex.status)
			}
			if s.Requests() != 2 {
				t.Errorf("Requests() = %d, want 2", s.Requests())
			}
		})
	}
}

func TestUnknownPathAndBadBody(t *testing.T) {
	for _, f := range Flavors() {
		t.Run(string(f), func(t *testing.T) {
			s := startT(t, f, Profile{})
			resp, err := httpPost(s.BaseURL()+"/nope", "Bearer x", "{}")
			if err != nil {
				t.Fatal(err)
			}
			if resp.status != 404 {
				t.Errorf("unknown path: status %d, want 404", resp.status)
			}
			decodeMap(t, resp.body)
			url := s.BaseURL() + "/chat/completions"
			if f == FlavorGemini {
				url = s.BaseURL() + "/v1beta/models/gemini-flash-latest:generateContent"
			}
			resp, err = httpPost(url, "Bearer x", "{not json")
			if err != nil {
				t.Fatal(err)
			}
			if resp.status != 400 {
				t.Errorf("bad body: status %d, want 400: %s", resp.status, resp.body)
			}
			decodeMap(t, resp.body)
			if s.Requests() != 1 {
				t.Errorf("Requests() = %d, want 1 (unknown paths are not counted)", s.Requests())
			}
		})
	}
}

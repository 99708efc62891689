package chain

import "net/http"

// StatusOutcome is the one table from an HTTP status to an outcome, for an
// answer outside 2xx whose body names nothing more (adapters refine it from
// the body with their provider's profile): 429 rate_limited; 401 and 403
// auth_error; 402 (payment required) and 404 (no such model or endpoint)
// misconfigured; 413 and every other 4xx bad_request; every 5xx
// server_error; anything else (no status, 1xx, 2xx, 3xx, 600 and up) error.
func StatusOutcome(status int) Outcome {
	switch {
	case status == http.StatusTooManyRequests:
		return OutcomeRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return OutcomeAuthError
	case status == http.StatusPaymentRequired || status == http.StatusNotFound:
		return OutcomeMisconfigured
	case status >= 400 && status <= 499:
		return OutcomeBadRequest
	case status >= 500 && status <= 599:
		return OutcomeServerError
	}
	return OutcomeError
}

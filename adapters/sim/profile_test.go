package sim

import (
	"net/http"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/chain"
)

// TestFaultRepliesReadByProfile: every error fault a loopback Server
// writes, in every flavor, is read by the flavor's profile (the classifier
// of the real adapters) as the fault means it: the fakes cannot drift from
// the classifier.
func TestFaultRepliesReadByProfile(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	want := map[Fault]chain.Outcome{
		FaultRateMinute: chain.OutcomeRateLimited, FaultRateDay: chain.OutcomeQuotaExhausted,
		FaultUnavailable: chain.OutcomeServerError, FaultServerError: chain.OutcomeServerError,
		FaultUnauthorized: chain.OutcomeAuthError, FaultInvalidKey: chain.OutcomeAuthError, FaultForbidden: chain.OutcomeAuthError,
		FaultBlocked: chain.OutcomeBadRequest,
	}
	for _, fl := range Flavors() {
		for f, outcome := range want {
			if f == FaultBlocked && fl == FlavorGemini {
				continue // a 200 safety block, not an error reply
			}
			s := &Server{flavor: fl}
			tr := turn{n: 1, fault: f, prof: Profile{RetryAfter: 1500 * time.Millisecond}}
			c := call{model: fl.DefaultModel(), user: "Title: x"}
			rp := s.faultReply(tr, c, now, false)
			h := http.Header{}
			for k, v := range rp.header {
				h.Set(k, v)
			}
			s.rateHeaders(h, tr, c, now)
			pe := fl.Profile().Failure(string(fl), profile.Answer{Status: rp.status, Header: h, Body: rp.body}, "", now)
			if pe.Outcome != outcome || pe.Message == "" {
				t.Errorf("%s %s: read as %s (%q), want %s", fl, f, pe.Outcome, pe.Message, outcome)
			}
			switch {
			case f == FaultRateMinute && fl != FlavorOpenRouter && (pe.Scope != chain.ScopeMinute || pe.RetryAfter < 1500*time.Millisecond):
				t.Errorf("%s per-minute 429: scope %q wait %v", fl, pe.Scope, pe.RetryAfter)
			case f == FaultRateMinute && fl == FlavorOpenRouter && !pe.ResetAt.Equal(now.Add(1500*time.Millisecond)):
				t.Errorf("openrouter per-minute 429: reset %v", pe.ResetAt)
			case f == FaultRateDay && pe.Scope != chain.ScopeDay:
				t.Errorf("%s daily 429: scope %q", fl, pe.Scope)
			}
		}
	}
}

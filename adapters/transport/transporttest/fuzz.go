package transporttest

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/chain"
)

// WireCase is one fuzzed provider answer: status, header lines
// ("Name: value" per line) and body. "{{KEY}}" anywhere in them is replaced
// by the key the request carried, as a hostile or careless provider echoes it.
type WireCase struct {
	Status int
	Header string
	Body   []byte
}

// WireStatus maps a fuzzed int to the status a WireServer sends: values
// from 100 to 999 stay as they are (so recorded answers keep theirs), any
// other value is folded into that range.
func WireStatus(n int) int {
	if n >= 100 && n <= 999 {
		return n
	}
	return 100 + (n%900+900)%900
}

// WireServer answers every request with the case cur holds, written raw
// (see WriteRaw) so that any status from 100 to 999 reaches the client.
// keyOf reads the API key from a request (it is echoed for "{{KEY}}").
// Header lines that are not valid (a name that is no token, a value with a
// control character, which net/http refuses as a malformed answer: that
// case is tested on its own) and framing or redirect headers are dropped:
// a fuzzed answer must never send the client off the loopback server.
func WireServer(tb testing.TB, cur *atomic.Pointer[WireCase], keyOf func(*http.Request) string) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := cur.Load()
		key := keyOf(r)
		h := http.Header{}
		for _, l := range strings.Split(c.Header, "\n") {
			k, v, ok := strings.Cut(l, ":")
			k = strings.TrimSpace(k)
			if !ok || !headerToken(k) || !headerValue(v) {
				continue
			}
			switch strings.ToLower(k) {
			case "content-length", "transfer-encoding", "connection", "trailer", "location":
				continue
			}
			h.Add(k, strings.ReplaceAll(strings.TrimSpace(v), "{{KEY}}", key))
		}
		WriteRaw(w, r, c.Status, h, bytes.ReplaceAll(c.Body, []byte("{{KEY}}"), []byte(key)))
	}))
	tb.Cleanup(s.Close)
	return s
}

// headerValue reports whether v holds no control character but tab.
func headerValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < ' ' && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

func headerToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			return false
		}
	}
	return true
}

// AddFixtureSeeds adds every recorded answer under dirs (adapters/testdata/
// <provider>/*.http) to f as (status, header lines, body, stream) seeds, once
// as recorded and once with echo applied to the body (e.g. the key echoed
// into the error message).
func AddFixtureSeeds(f *testing.F, echo func(body []byte) []byte, dirs ...string) {
	n := 0
	for _, dir := range dirs {
		files, _ := filepath.Glob(filepath.Join(dir, "*.http"))
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), nil)
			if err != nil {
				f.Fatalf("%s: %v", file, err)
			}
			var hb strings.Builder
			for k, vs := range resp.Header {
				for _, v := range vs {
					hb.WriteString(k + ": " + v + "\n")
				}
			}
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			stream := strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream")
			f.Add(resp.StatusCode, hb.String(), body.Bytes(), stream)
			f.Add(resp.StatusCode, hb.String(), echo(body.Bytes()), stream)
			n++
		}
	}
	if n == 0 {
		f.Fatalf("no fixtures under %v", dirs)
	}
}

// failureOutcomes are the outcomes a failed call may carry.
var failureOutcomes = map[chain.Outcome]bool{
	chain.OutcomeRateLimited: true, chain.OutcomeQuotaExhausted: true, chain.OutcomeServerError: true,
	chain.OutcomeAuthError: true, chain.OutcomeTimeoutConnect: true, chain.OutcomeTimeoutFirstToken: true,
	chain.OutcomeTimeoutIdle: true, chain.OutcomeTimeoutTotal: true, chain.OutcomeStreamBroken: true,
	chain.OutcomeBlocked: true, chain.OutcomeBadRequest: true, chain.OutcomeError: true,
	chain.OutcomeTooLarge: true, chain.OutcomeMisconfigured: true, chain.OutcomeConnectFailed: true,
	chain.OutcomeRejected: true,
}

// OutcomeOf calls p once and checks the adapter contract for an answer with
// this status: a success only for a 2xx with that status; every failure one
// *chain.ProviderError with one known failure outcome, a status that is the
// one sent (or 0), a non-negative wait and quota, and no key in any text; a
// 429 is a rate limit (or, by its words, a request too large or a
// misconfigured link) and a 401/403 an auth error (or, by its words, a
// refused content or a misconfigured link) unless rateCode says the body
// names a rate limit; a final status that is neither 2xx, 4xx nor 5xx
// (101, 3xx, 600 and up) is an error whatever the body says. It returns
// the outcome (OutcomeOK for an answer).
func OutcomeOf(t *testing.T, p chain.Provider, req chain.Request, status int, key string, rateCode bool) chain.Outcome {
	t.Helper()
	resp, err := p.Generate(context.Background(), req)
	if err == nil {
		if status/100 != 2 || resp.HTTPStatus != status {
			t.Fatalf("status %d accepted as an answer (HTTPStatus %d)", status, resp.HTTPStatus)
		}
		return chain.OutcomeOK
	}
	pe := chain.AsProviderError(err)
	if pe == nil {
		t.Fatalf("error %T is not a *chain.ProviderError: %v", err, err)
	}
	if !failureOutcomes[pe.Outcome] {
		t.Fatalf("outcome %q is not a failure outcome", pe.Outcome)
	}
	if pe.RetryAfter < 0 || pe.RetryAfter > transport.MaxDelay || pe.Quota.Remaining < -1 || pe.Quota.Reset < 0 {
		t.Fatalf("negative or overflowing wait or quota: %v %+v", pe.RetryAfter, pe.Quota)
	}
	if (pe.RetryAfter != 0 || !pe.ResetAt.IsZero()) && pe.RetryRaw == "" {
		t.Fatalf("wait %v / reset %v reported without the text the provider sent", pe.RetryAfter, pe.ResetAt)
	}
	for _, s := range []string{pe.Error(), pe.Message, fmt.Sprint(pe.Cause), fmt.Sprintf("%+v", pe)} {
		if strings.Contains(s, key) {
			t.Fatalf("key in error text: %q", s)
		}
	}
	switch {
	case pe.Status != status && pe.Status != 0:
		t.Fatalf("status %d recorded as %d", status, pe.Status)
	case status == 429 && !oneOf(pe.Outcome, chain.OutcomeRateLimited, chain.OutcomeQuotaExhausted, chain.OutcomeTooLarge, chain.OutcomeMisconfigured):
		t.Fatalf("429 → %q", pe.Outcome)
	case (status == 401 || status == 403) && !rateCode && !oneOf(pe.Outcome, chain.OutcomeAuthError, chain.OutcomeBlocked, chain.OutcomeMisconfigured):
		t.Fatalf("%d → %q", status, pe.Outcome)
	case (status == 101 || status/100 == 3 || status >= 600) && pe.Outcome != chain.OutcomeError:
		t.Fatalf("%d → %q; a final status outside 2xx, 4xx and 5xx is an error, whatever the body says", status, pe.Outcome)
	}
	return pe.Outcome
}

func oneOf(o chain.Outcome, set ...chain.Outcome) bool {
	for _, s := range set {
		if o == s {
			return true
		}
	}
	return false
}

package chain_test

// Real provider answers (adapters/testdata/real, README "Real provider
// answers") replayed byte for byte over loopback through the real adapters
// into the chain: what the chain does next, what it skips, what it tells a
// person. Each case was wrong or silent before the chain acted on the
// outcomes the adapters classify.

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
)

func realBody(parts ...string) string {
	return filepath.Join(append([]string{"..", "adapters", "testdata", "real"}, parts...)...)
}

func devBody(parts ...string) string {
	return filepath.Join(append([]string{"..", "adapters", "testdata"}, parts...)...)
}

// replayed is a link that answers every request with the body at path.
func replayed(t *testing.T, name string, flavor sim.Flavor, prov profile.ID, path string) (spec, *transporttest.Server) {
	srv := transporttest.Replay(t, path)
	base := srv.URL
	if flavor != sim.FlavorGemini {
		base += "/v1"
	}
	return spec{name: name, flavor: flavor, provider: prov, baseURL: base}, srv
}

// withOutbox queues the chain's alerts in the world's alerts table.
func (w *world) withOutbox() *world {
	w.chain.Notifier = alerts.NewOutbox(w.store, nil)
	return w
}

// alertsOf returns the texts of the queued alerts of rule.
func (w *world) alertsOf(rule string) []string {
	var out []string
	for _, r := range w.query("SELECT text FROM alerts WHERE rule = ? ORDER BY id", rule) {
		out = append(out, r[0].(string))
	}
	return out
}

func (w *world) eventsOf(provider string, kind chain.EventKind) []chain.Event {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []chain.Event
	for _, e := range w.events {
		if e.Provider == provider && e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

// TestRealTooLargeSkipsTheLinkForTheJob: Groq's 413 "Request too large …
// Limit 6000, Requested 12089" is never retried or waited for: the job goes
// to the next link at once, every job; one warning a day names the limit,
// the size and the fix.
func TestRealTooLargeSkipsTheLinkForTheJob(t *testing.T) {
	t.Parallel()
	first, srv := replayed(t, "groq", sim.FlavorGroq, profile.Groq, realBody("groq", "413_tpm_request_too_large.http"))
	w := newWorld(t, first, spec{name: "second", flavor: sim.FlavorCerebras}).withOutbox()
	for _, topic := range []string{"a", "b", "c"} {
		if res := w.run(topic); res.Status != chain.JobPublished || res.Winner.Provider != "second" {
			t.Fatalf("%s: %s %+v %v", topic, res.Status, res.Winner, res.Story)
		}
	}
	if n := len(srv.Requests()); n != 3 {
		t.Fatalf("groq got %d requests for 3 jobs, want one each (never retried)", n)
	}
	if ws := w.waits("groq"); len(ws) != 0 {
		t.Fatalf("waited %v after a request that can never fit", ws)
	}
	if got := outcomes(w.calls("groq")); strings.Join(got, ",") != "too_large,too_large,too_large" {
		t.Fatalf("outcomes %v", got)
	}
	al := w.alertsOf("too_large")
	if len(al) != 1 {
		t.Fatalf("%d too_large alerts for one link and day, want 1: %q", len(al), al)
	}
	for _, words := range []string{"groq", "6000", "12089", "max_tokens"} {
		if !strings.Contains(al[0], words) {
			t.Errorf("too_large alert lacks %q: %s", words, al[0])
		}
	}
	// The same job again (a later run): the link is skipped for it.
	later := newWorldAt(t, w.dbPath, first, spec{name: "second", flavor: sim.FlavorCerebras})
	later.run("a")
	if n := len(srv.Requests()); n != 3 || later.skips("groq", chain.SkipTooLarge) != 1 {
		t.Fatalf("the same job called groq again (%d requests, %d too_large skips)", n, later.skips("groq", chain.SkipTooLarge))
	}
}

// TestRealModerationIsBlocked: OpenRouter's 403 "requires moderation … Your
// input was flagged" refuses the content, not our credentials: the job goes
// on to the next link, the run is not halted, no auth alert, and later
// jobs still call OpenRouter. As the last link its line says no wait.
func TestRealModerationIsBlocked(t *testing.T) {
	t.Parallel()
	first, srv := replayed(t, "openrouter", sim.FlavorOpenRouter, profile.OpenRouter, devBody("openrouter", "403_moderation.http"))
	w := newWorld(t, first, spec{name: "second", flavor: sim.FlavorCerebras}).withOutbox()
	for _, topic := range []string{"a", "b"} {
		if res := w.run(topic); res.Status != chain.JobPublished || res.Winner.Provider != "second" {
			t.Fatalf("%s: %s %+v %v", topic, res.Status, res.Winner, res.Story)
		}
	}
	if w.chain.Halted() != nil {
		t.Fatalf("halted on a moderation refusal: %v", w.chain.Halted())
	}
	if n := len(srv.Requests()); n != 2 {
		t.Fatalf("openrouter got %d requests, want one per job", n)
	}
	if got := outcomes(w.calls("openrouter")); strings.Join(got, ",") != "blocked,blocked" {
		t.Fatalf("outcomes %v", got)
	}
	if n := w.count("SELECT COUNT(*) FROM alerts"); n != 0 {
		t.Fatalf("%d alerts for a refused content", n)
	}

	only, _ := replayed(t, "openrouter", sim.FlavorOpenRouter, profile.OpenRouter, devBody("openrouter", "403_moderation.http"))
	w = newWorld(t, only)
	if res := w.run("a"); res.Status != chain.JobDeferred || w.chain.Halted() != nil {
		t.Fatalf("alone: %s halted %v", res.Status, w.chain.Halted())
	}
	for _, e := range w.eventsOf("openrouter", chain.EventOutcome) {
		if strings.Contains(e.Reason, "waiting") {
			t.Fatalf("the last link's line says it waits: %q", e.Reason)
		}
	}
	if ws := w.waits("openrouter"); len(ws) != 0 {
		t.Fatalf("waited %v after the last link", ws)
	}
}

// misconfiguredBodies are the answers only a person can fix, by link.
var misconfiguredBodies = []struct {
	name   string
	flavor sim.Flavor
	prov   profile.ID
	path   string
	words  string
}{
	{"gemini", sim.FlavorGemini, "", realBody("gemini", "404_model_not_found.http"), "not found"},
	{"gemini", sim.FlavorGemini, "", realBody("gemini", "400_user_location_not_supported.http"), "User location is not supported"},
	{"gemini", sim.FlavorGemini, "", realBody("gemini", "429_limit_0_flash.http"), "limit: 0"},
	{"cerebras", sim.FlavorCerebras, profile.Cerebras, realBody("cerebras", "404_model_not_found.http"), "does not exist"},
	{"openrouter", sim.FlavorOpenRouter, profile.OpenRouter, realBody("openrouter", "404_no_allowed_providers_zai.http"), "No allowed providers"},
	{"openrouter", sim.FlavorOpenRouter, profile.OpenRouter, realBody("openrouter", "402_requires_more_credits.http"), "requires more credits"},
}

// TestRealMisconfiguredLinkIsToldOnceAndSkipped: a link only a person can
// fix is called once; one alert quotes the provider's words and the fix;
// later jobs and later runs skip it without a call (skip reason
// misconfigured, no other.wait) until its config changes; a probe a day
// that finds it still so tells nobody again.
func TestRealMisconfiguredLinkIsToldOnceAndSkipped(t *testing.T) {
	t.Parallel()
	for _, tc := range misconfiguredBodies {
		t.Run(filepath.Base(tc.path), func(t *testing.T) {
			t.Parallel()
			first, srv := replayed(t, tc.name, tc.flavor, tc.prov, tc.path)
			second := spec{name: "second", flavor: sim.FlavorCerebras}
			w := newWorld(t, first, second).withOutbox()
			for _, topic := range []string{"a", "b", "c"} {
				if res := w.run(topic); res.Status != chain.JobPublished || res.Winner.Provider != "second" {
					t.Fatalf("%s: %s %+v %v", topic, res.Status, res.Winner, res.Story)
				}
			}
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("%d requests for 3 jobs, want 1: the later jobs skip the link", n)
			}
			if got := outcomes(w.calls(tc.name)); len(got) != 1 || got[0] != "misconfigured" {
				t.Fatalf("outcomes %v", got)
			}
			if n := w.skips(tc.name, chain.SkipMisconfigured); n != 2 {
				t.Fatalf("%d misconfigured skips, want 2", n)
			}
			if ws := w.waits(tc.name); len(ws) != 0 {
				t.Fatalf("waited %v: nothing is learnt by waiting", ws)
			}
			al := w.alertsOf("misconfigured")
			if len(al) != 1 || !strings.Contains(al[0], tc.words) || !strings.Contains(al[0], "Fix: ") || strings.Contains(al[0], "test-key") {
				t.Fatalf("misconfigured alerts %q, want one quoting %q and the fix", al, tc.words)
			}

			// A later run on the same database: still skipped, still told once.
			later := newWorldAt(t, w.dbPath, first, second).withOutbox()
			later.run("d")
			if n := len(srv.Requests()); n != 1 {
				t.Fatalf("a later run called the link again (%d requests)", n)
			}
			// The day's probe: one call, still misconfigured, nobody told again.
			err := later.store.UpdateProviderState(context.Background(), tc.name, func(st *chain.ProviderState) []chain.Transition {
				m := *st.Misconfigured
				m.ProbeAfter = time.Now().Add(-time.Second)
				st.Misconfigured = &m
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			later.run("e")
			later.run("f")
			if n := len(srv.Requests()); n != 2 {
				t.Fatalf("%d requests after the probe, want 2 (one probe)", n)
			}
			if al := later.alertsOf("misconfigured"); len(al) != 1 {
				t.Fatalf("the probe told it again: %q", al)
			}
			// The config changed: called again at once.
			later.chain.Links[0].ConfigHash = "edited"
			later.run("g")
			if n := len(srv.Requests()); n != 3 {
				t.Fatalf("%d requests after the config changed, want 3", n)
			}
		})
	}
}

// refusedURL is a loopback address nothing listens on.
func refusedURL(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr + "/v1"
}

// TestRealConnectFailedMovesOnWithItsCause: a refused connection and a
// name that does not resolve are connect_failed: the next link at once (no
// other.wait), the cause in the line and the call's detail, a breaker
// sample.
func TestRealConnectFailedMovesOnWithItsCause(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, url, cause string
	}{
		{"refused", refusedURL(t), "refused"},
		{"dns", "http://no-such-host.invalid/v1", "no such host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, spec{name: "first", flavor: sim.FlavorGroq, baseURL: tc.url}, spec{name: "second", flavor: sim.FlavorCerebras})
			w.chain.Policy.OtherWait = 2 * time.Second
			start := time.Now()
			if res := w.run("a"); res.Status != chain.JobPublished || res.Winner.Provider != "second" {
				t.Fatalf("%s %+v %v", res.Status, res.Winner, res.Story)
			}
			cs := w.calls("first")
			if len(cs) != 1 || cs[0].outcome != "connect_failed" || !strings.Contains(cs[0].detail, tc.cause) {
				t.Fatalf("calls %+v", cs)
			}
			if ws := w.waits("first"); len(ws) != 0 || time.Since(start) > 1500*time.Millisecond {
				t.Fatalf("waits %v (took %s) after a connection that could not be made", ws, time.Since(start))
			}
			ev := w.eventsOf("first", chain.EventOutcome)
			if len(ev) != 1 || !strings.Contains(ev[0].Reason, tc.cause) {
				t.Fatalf("the line does not name the cause %q: %+v", tc.cause, ev)
			}
			if _, br := w.state("first"); len(br.Events) != 1 || !br.Events[0].Fail {
				t.Fatalf("breaker window %+v, want one failure", br.Events)
			}
		})
	}
}

// TestUndecodableAnswerIsNoBreakerSample: a 200 whose body is no
// completion is a rejected answer with the body kept, not a broken stream:
// a sloppy server does not open the circuit, however often it answers so.
func TestUndecodableAnswerIsNoBreakerSample(t *testing.T) {
	t.Parallel()
	body := `{"id":"x","object":"chat.completion","model":"m","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0,"total_tokens":5}}`
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, body)
	})
	w := newWorld(t, spec{name: "sloppy", flavor: sim.FlavorGroq, provider: profile.OpenAI, baseURL: srv.URL + "/v1"}, spec{name: "second", flavor: sim.FlavorCerebras})
	for i := range 6 {
		if res := w.run(fmt.Sprint("t", i)); res.Winner == nil || res.Winner.Provider != "second" {
			t.Fatalf("job %d: %+v %v", i, res.Winner, res.Story)
		}
	}
	if got := outcomes(w.calls("sloppy")); len(got) != 6 || got[0] != "rejected" || got[5] != "rejected" {
		t.Fatalf("outcomes %v, want 6 rejected (every job called it)", got)
	}
	if _, br := w.state("sloppy"); br.Current() != chain.BreakerClosed {
		t.Fatalf("breaker %+v: undecodable answers counted as failures", br)
	}
	for _, e := range func() []chain.BreakerEvent { _, br := w.state("sloppy"); return br.Events }() {
		if e.Fail {
			t.Fatalf("a failure sample for an undecodable answer")
		}
	}
	if n := w.count("SELECT COUNT(*) FROM outputs o JOIN calls c ON c.id = o.call_id WHERE c.provider = 'sloppy' AND o.text = ?", body); n != 6 {
		t.Fatalf("%d bodies kept, want 6", n)
	}
}

// TestSuspectUsageHoldsTheBudget: an answer reporting −1,000,000 prompt
// tokens once counted −$10 and let every later call through a
// budget.daily_usd of 0.05. The call counts at least its estimate, it is
// marked usage_suspect, and the calls of $0.10 stop at the budget.
func TestSuspectUsageHoldsTheBudget(t *testing.T) {
	t.Parallel()
	n := 0
	srv := transporttest.NewServer(t, func(w http.ResponseWriter, _ *http.Request) {
		n++
		prompt := 10000 // $0.10 at $10 per million
		if n == 1 {
			prompt = -1000000
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"not an article"},"finish_reason":"stop"}],"usage":{"prompt_tokens":%d,"completion_tokens":10,"total_tokens":%d}}`, prompt, prompt+10)
	})
	w := newWorld(t, spec{name: "liar", flavor: sim.FlavorGroq, provider: profile.OpenAI, baseURL: srv.URL + "/v1", maxTokens: 100,
		price: &chain.Price{InputPerMTok: 10}})
	w.chain.Budget = chain.Budget{DailyUSD: 0.05}
	for i := range 5 {
		w.run(fmt.Sprint("t", i))
	}
	rows := w.query("SELECT input_tokens, cost_estimate_usd, usage_suspect FROM calls WHERE provider = 'liar' ORDER BY id")
	if len(rows) == 0 || rows[0][0].(int64) != -1000000 || rows[0][1].(float64) < 0 || rows[0][2].(string) == "" {
		t.Fatalf("the suspect call is recorded %v, want its tokens as reported, a cost of at least 0 and the mark", rows)
	}
	if len(rows) > 2 {
		t.Fatalf("%d calls went through a daily budget of $0.05 after a −1,000,000-token answer, want at most the one whose cost nobody could know: %v", len(rows), rows)
	}
	if n := w.skips("liar", chain.SkipBudget); n < 3 {
		t.Fatalf("%d budget skips, want the later jobs refused", n)
	}
}

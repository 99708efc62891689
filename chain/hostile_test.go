package chain_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
)

// alertSink is a Notifier that keeps the alerts it is given.
type alertSink struct {
	mu     sync.Mutex
	alerts []chain.Alert
}

func (s *alertSink) Notify(_ context.Context, a chain.Alert) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.alerts = append(s.alerts, a)
	return nil
}

// answer429 serves a canned 429 (status, headers, body) to every request.
func answer429(t *testing.T, header map[string]string, body string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			rw.Header().Set(k, v)
		}
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusTooManyRequests)
		_, _ = rw.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestHTTPHostileDelaysAreClamped: a provider naming a delay of ten years
// (Retry-After seconds), an HTTP-date in 2035, or a Gemini retryDelay of
// 999999999s is believed only until its link's next cap_reset + 24 h, and
// each raises one warning naming the link.
func TestHTTPHostileDelaysAreClamped(t *testing.T) {
	t.Parallel()
	openaiBody := `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`
	geminiBody := `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[` +
		`{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"999999999s"}]}}`
	cases := []struct {
		name   string
		flavor sim.Flavor
		url    func(t *testing.T) string
	}{
		{"retry-after-10y", sim.FlavorGroq, func(t *testing.T) string {
			return answer429(t, map[string]string{"Retry-After": "315360000"}, openaiBody) + "/v1"
		}},
		{"http-date-2035", sim.FlavorGroq, func(t *testing.T) string {
			return answer429(t, map[string]string{"Retry-After": "Mon, 01 Jan 2035 00:00:00 GMT"}, openaiBody) + "/v1"
		}},
		{"retry-delay-999999999s", sim.FlavorGemini, func(t *testing.T) string { return answer429(t, nil, geminiBody) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t, spec{name: "first", flavor: tc.flavor, baseURL: tc.url(t)}, spec{name: "second", flavor: sim.FlavorCerebras})
			sink := &alertSink{}
			w.chain.Notifier = sink
			before := time.Now()
			if res := w.run("a"); res.Status != chain.JobPublished || res.Winner.Provider != "second" {
				t.Fatalf("status %s story %v", res.Status, res.Story)
			}
			until, _ := w.state("first")
			reset, _ := chain.ParseCapReset("")
			bound := reset.Next(before).Add(chain.MaxNamedDelay)
			if until.After(bound.Add(time.Second)) || until.Before(bound.Add(-time.Minute)) {
				t.Fatalf("exhausted until %s; want the bound %s (next cap reset + 24h)", until, bound)
			}
			if len(sink.alerts) != 1 {
				t.Fatalf("alerts %+v; want one warning", sink.alerts)
			}
			a := sink.alerts[0]
			if a.Key != "delay_clamped:first" || a.Severity != "warning" || !strings.Contains(a.Text, "first") {
				t.Fatalf("alert %+v", a)
			}
		})
	}
}

// echoing is a Provider that plays one answer or one failure.
type echoing struct {
	resp chain.Response
	err  *chain.ProviderError
}

func (e echoing) Generate(context.Context, chain.Request) (chain.Response, error) {
	if e.err != nil {
		return chain.Response{}, e.err
	}
	return e.resp, nil
}

// keptPublisher keeps the articles it is given.
type keptPublisher struct{ articles []chain.Article }

func (p *keptPublisher) Prepare(_ context.Context, a chain.Article) (chain.Delivery, error) {
	p.articles = append(p.articles, a)
	return chain.Delivery{JobID: a.JobID, Location: "mem://" + a.JobID, Body: []byte(a.Title)}, nil
}
func (p *keptPublisher) Deliver(_ context.Context, d chain.Delivery) (string, error) {
	return d.Location, nil
}

// TestSecretsEchoedAreScrubbed: a provider that echoes a configured key in
// a broken stream's partial text and error, and another inside the
// article: no stored output, call detail or published article holds the
// key, and both calls are marked secret_redacted.
func TestSecretsEchoedAreScrubbed(t *testing.T) {
	const key = "gsk_live_0123456789abcdef"
	w := newWorld(t)
	w.chain.Gate = decodeGate{}
	w.chain.Secrets = []string{key, "short"}
	article := `{"title":"Espresso","sections":[{"h2":"Key","body":"your key is ` + key + ` keep it"}]}`
	reset, _ := chain.ParseCapReset("")
	w.chain.Links = []*chain.Link{
		{Name: "broken", Model: "m", Family: "openai", CapReset: reset, Provider: echoing{err: &chain.ProviderError{
			Provider: "broken", Status: 200, Outcome: chain.OutcomeStreamBroken, Message: "stream cut after " + key, Partial: `{"title":"` + key}}},
		{Name: "echo", Model: "m", Family: "openai", CapReset: reset, Provider: echoing{resp: chain.Response{Text: article, HTTPStatus: 200}}},
	}
	w.chain.Policy.OtherWait = 0
	pub := &keptPublisher{}
	r := &chain.Runner{Chain: w.chain, Jobs: w.store, Publisher: pub, Owner: chain.Owner{Host: "h", PID: 1}}
	sum := r.Run(context.Background(), []chain.Job{job("a")}, 1)
	if sum.Published != 1 || len(pub.articles) != 1 {
		t.Fatalf("summary %+v", sum)
	}
	for _, s := range pub.articles[0].Sections {
		if strings.Contains(s.Body+s.H2, key) {
			t.Fatalf("published article holds the key: %+v", s)
		}
	}
	if n := w.count("SELECT COUNT(*) FROM outputs WHERE instr(text, ?) > 0", key); n != 0 {
		t.Fatalf("%d outputs hold the key", n)
	}
	if n := w.count("SELECT COUNT(*) FROM outputs WHERE instr(text, ?) > 0", chain.Redacted); n != 2 {
		t.Fatalf("%d outputs redacted, want 2 (the partial text and the article)", n)
	}
	if n := w.count("SELECT COUNT(*) FROM calls WHERE instr(detail, ?) > 0 OR instr(previous_error, ?) > 0", key, key); n != 0 {
		t.Fatalf("%d calls rows hold the key", n)
	}
	if n := w.count("SELECT COUNT(*) FROM calls WHERE secret_redacted = 1"); n != 2 {
		t.Fatalf("%d calls marked secret_redacted, want 2", n)
	}
}

// cancelling is a Provider whose call ends its caller's context (a
// SIGTERM arriving mid-call) and then fails.
type cancelling struct{ cancel context.CancelFunc }

func (p cancelling) Generate(context.Context, chain.Request) (chain.Response, error) {
	p.cancel()
	return chain.Response{}, &chain.ProviderError{Provider: "a", Status: 503, Outcome: chain.OutcomeServerError, Message: "unavailable"}
}

// TestHealthRecordsAfterCancel: a health call whose context ends during the
// call is still recorded, as every call is (the health walk used to record
// under the cancellable context and lose the row).
func TestHealthRecordsAfterCancel(t *testing.T) {
	w := newWorld(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	reset, _ := chain.ParseCapReset("")
	w.chain.Links = []*chain.Link{{Name: "a", Model: "m", Family: "openai", CapReset: reset, Provider: cancelling{cancel}}}
	hs, err := w.chain.Health(ctx, chain.HealthWalk{Prompt: func(string) chain.Prompt { return chain.Prompt{System: "s", User: "u", Version: "h"} }})
	if err != nil || len(hs) != 1 || hs[0].State != chain.HealthUnhealthy {
		t.Fatalf("health %+v err %v", hs, err)
	}
	if n := w.count("SELECT COUNT(*) FROM calls WHERE provider = 'a' AND purpose = 'health' AND outcome = 'server_error'"); n != 1 {
		t.Fatalf("%d health calls recorded, want 1", n)
	}
}

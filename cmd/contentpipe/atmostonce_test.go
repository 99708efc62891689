package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// TestOneDatabaseOneTarget: a database belongs to the publishing target of
// the config that first ran on it; a config with another target is refused
// (exit 2, both named) before any call, and publishes nothing.
func TestOneDatabaseOneTarget(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 2, nil, "")
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("first run exit %d\n%s", r.code, r.stderr)
	}
	cfg := filepath.Join(w.dir, "contentpipe.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	other := strings.Replace(string(b), "publish: {kind: markdown, dir: out}", "publish: {kind: markdown, dir: elsewhere}", 1)
	if other == string(b) {
		t.Fatal("test config has no markdown publish line to change")
	}
	if err := os.WriteFile(filepath.Join(w.dir, "other.yaml"), []byte(other), 0o644); err != nil {
		t.Fatal(err)
	}
	w.addTopics(t, 2)
	before := w.served()
	r := run(t, w.dir, w.env, "run", "--config", "other.yaml")
	if r.code != 2 || !strings.Contains(r.stderr, "belongs to the publishing target markdown "+filepath.Join(w.dir, "out")) ||
		!strings.Contains(r.stderr, "publishes to markdown "+filepath.Join(w.dir, "elsewhere")) {
		t.Fatalf("exit %d, want 2 naming both targets:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if n := w.served() - before; n != 0 {
		t.Errorf("%d provider calls for a refused config", n)
	}
	if _, err := os.Stat(filepath.Join(w.dir, "elsewhere")); err == nil {
		t.Error("the refused config published into its directory")
	}
	// The database's own config still runs.
	if r := run(t, w.dir, w.env, "run"); r.code != 0 {
		t.Fatalf("own config after a refusal: exit %d\n%s", r.code, r.stderr)
	}
}

// slowReceiver answers every webhook after a pause, counting deliveries.
type slowReceiver struct {
	pause time.Duration
	n     atomic.Int64
}

func (s *slowReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.n.Add(1)
	time.Sleep(s.pause)
	w.WriteHeader(http.StatusOK)
}

// TestConcurrentApprove: a second `review approve` started while the first
// is still delivering waits for it and reports "already published", exit 0;
// the receiver gets one delivery.
func TestConcurrentApprove(t *testing.T) {
	t.Parallel()
	recv := &slowReceiver{pause: 1500 * time.Millisecond}
	hook := httptest.NewServer(recv)
	t.Cleanup(hook.Close)
	bad := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultLowQuality: 1}}
	w := newWorld(t, worldOptions{topics: 1, publish: fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook"),
		profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: bad, sim.FlavorGroq: bad, sim.FlavorCerebras: bad, sim.FlavorOpenRouter: bad}})
	if r := run(t, w.dir, w.env, "run"); r.code != 1 || !strings.Contains(r.stdout, "1 review") {
		t.Fatalf("run exit %d, want 1 job in review\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	ids := reviewIDs(t, w.dir)
	if len(ids) != 1 {
		t.Fatalf("review queue %v", ids)
	}
	first := make(chan result, 1)
	go func() { first <- run(t, w.dir, w.env, "review", "approve", ids[0]) }()
	deadline := time.Now().Add(30 * time.Second)
	for recv.n.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	second := run(t, w.dir, w.env, "review", "approve", ids[0])
	a := <-first
	if a.code != 0 || !strings.Contains(a.stdout, "approved and published") {
		t.Fatalf("first approve exit %d\n%s\n%s", a.code, a.stdout, a.stderr)
	}
	if second.code != 0 || !strings.Contains(second.stdout, "already published") {
		t.Fatalf("concurrent approve exit %d, want 0 and \"already published\"\n%s\n%s", second.code, second.stdout, second.stderr)
	}
	if n := recv.n.Load(); n != 1 {
		t.Fatalf("%d deliveries, want 1", n)
	}
}

var bodyField = regexp.MustCompile(`"body"\s*:\s*"`)

// keyEchoProxy stands in front of an OpenAI-compatible simulator and puts
// the caller's API key into the article the simulator wrote, as a model
// that repeats its context might.
func keyEchoProxy(t *testing.T, target string) *httptest.Server {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ModifyResponse = func(resp *http.Response) error {
		key := strings.TrimPrefix(resp.Request.Header.Get("Authorization"), "Bearer ")
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		var doc map[string]any
		if resp.StatusCode == http.StatusOK && json.Unmarshal(b, &doc) == nil {
			if ch, ok := doc["choices"].([]any); ok && len(ch) > 0 {
				msg := ch[0].(map[string]any)["message"].(map[string]any)
				content := msg["content"].(string)
				loc := bodyField.FindStringIndex(content)
				if loc == nil {
					t.Errorf("no section body in the answer: %.200s", content)
					return nil
				}
				msg["content"] = content[:loc[1]] + "Your key is " + key + ". " + content[loc[1]:]
				b, _ = json.Marshal(doc)
			}
		}
		resp.Body = io.NopCloser(bytes.NewReader(b))
		resp.ContentLength = int64(len(b))
		resp.Header.Set("Content-Length", strconv.Itoa(len(b)))
		return nil
	}
	s := httptest.NewServer(rp)
	t.Cleanup(s.Close)
	return s
}

// TestSecretEchoedInAnArticle: a provider answers a passing article that
// contains the API key it was called with; the key is replaced before the
// answer is stored or published, and the call says so.
func TestSecretEchoedInAnArticle(t *testing.T) {
	t.Parallel()
	down := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultUnavailable: 1}}
	sims, err := sim.StartAll(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sims.Close)
	proxy := keyEchoProxy(t, sims.Server(sim.FlavorGroq).BaseURL())
	w := newWorld(t, worldOptions{topics: 1, profiles: map[sim.Flavor]sim.Profile{sim.FlavorGemini: down},
		baseURL: map[string]string{"groq": proxy.URL}, link: map[string]string{"groq": "stream: false"}})
	r := run(t, w.dir, w.env, "run")
	if r.code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	groqKey := worldKeys[1]
	for path, b := range walkFiles(t, w.dir) {
		if bytes.Contains(b, []byte(groqKey)) {
			t.Errorf("%s holds the key the provider echoed", path)
		}
	}
	files := publishedFiles(t, w.dir)
	if len(files) != 1 {
		t.Fatalf("published %v", files)
	}
	for _, fs := range files {
		b, _ := os.ReadFile(fs[0])
		if !bytes.Contains(b, []byte("Your key is [redacted]")) {
			t.Errorf("the published article does not show the redaction:\n%.400s", b)
		}
	}
	db := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, db, "SELECT COUNT(*) FROM calls WHERE provider = 'groq' AND secret_redacted = 1"); n != 1 {
		t.Errorf("%d groq calls marked secret_redacted, want 1", n)
	}
}

// redirectingReceiver answers every delivery with status (a redirect to
// target) until status is set to 200; it records each delivery's key and
// body.
type redirectingReceiver struct {
	status atomic.Int64
	target string
	got    chan [2]string
}

func (h *redirectingReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	h.got <- [2]string{r.Header.Get("Idempotency-Key"), string(b)}
	if st := int(h.status.Load()); st != http.StatusOK {
		http.Redirect(w, r, h.target, st)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// TestWebhookRedirectIsNotPublished: a receiver answering 301, 302, 303,
// 307 or 308 has not received the article: the run records nothing as
// published (exit 1), the redirect's target gets nothing, and the next run,
// once the receiver answers 200, delivers the same key with the same body.
func TestWebhookRedirectIsNotPublished(t *testing.T) {
	t.Parallel()
	for _, st := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(st), func(t *testing.T) {
			var elsewhere atomic.Int64
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { elsewhere.Add(1) }))
			t.Cleanup(other.Close)
			recv := &redirectingReceiver{target: other.URL + "/stolen", got: make(chan [2]string, 16)}
			recv.status.Store(int64(st))
			hook := httptest.NewServer(recv)
			t.Cleanup(hook.Close)
			w := newWorld(t, worldOptions{topics: 1, publish: fmt.Sprintf("{kind: webhook, url: %q}", hook.URL+"/hook")})
			r := run(t, w.dir, w.env, "run")
			if r.code != 1 || !strings.Contains(r.stdout, "0 published") {
				t.Fatalf("run against a %d: exit %d, want 1 with nothing published\n%s\n%s", st, r.code, r.stdout, r.stderr)
			}
			first := <-recv.got
			if n := elsewhere.Load(); n != 0 {
				t.Fatalf("the redirect's target received %d requests", n)
			}
			recv.status.Store(http.StatusOK)
			r = run(t, w.dir, w.env, "run")
			if r.code != 0 || !strings.Contains(r.stdout, "1 published") {
				t.Fatalf("rerun exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			second := <-recv.got
			if second != first {
				t.Fatalf("the resend differs from the first delivery: key %q vs %q, bodies equal %v", second[0], first[0], second[1] == first[1])
			}
		})
	}
}

package chain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/prompts"
	"github.com/contentpipe/contentpipe/quality"
)

// The benchmarks time whole jobs through the real chain: breaker check and
// attempt number (SQLite), the HTTP round trip on loopback through the real
// SDK and transport, the quality gate on a ~600-word article, and the
// durable rows (provider_state, calls, outputs; WAL, synchronous NORMAL).
// The per-op figures therefore include the loopback round trip(s) and the
// SQLite writes. The "sim" variants also include the simulator composing a
// fresh article per request on the server side (same process, so it shows
// in ns/op and allocs/op); the "replay" variants serve a captured sim answer
// byte for byte, which leaves only the client-side cost.

// benchWorld is a world without progress collection (it would grow with b.N).
func benchWorld(b *testing.B, specs ...spec) *world {
	b.Helper()
	w := newWorld(b, specs...)
	w.chain.Progress = nil
	// Failures must not open the circuit: every op should fail over.
	w.chain.Breaker = chain.BreakerSettings{Off: true}
	return w
}

func benchJobs(b *testing.B, w *world) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		res, err := w.chain.Generate(ctx, job(fmt.Sprintf("bench-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != chain.JobPublished {
			b.Fatalf("job %d: status %s story %v", i, res.Status, res.Story)
		}
	}
}

// captured is one sim answer: status, headers and body as sent.
type captured struct {
	status int
	header http.Header
	body   []byte
}

// capture sends one real article request to a sim server of flavor f with
// profile p (OpenAI wire format, as the openai adapter sends it) and keeps
// the answer.
func capture(b *testing.B, f sim.Flavor, p sim.Profile) captured {
	b.Helper()
	srv, err := sim.Start(f, p)
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	r, err := prompts.Default().ArticleFor("", "openai", prompts.Vars{Title: job("x").Title, Category: "food", Keywords: job("x").Keywords,
		Language: "en", TargetWords: targetWords, MinSections: minSections, MinSectionWords: minSectionWords})
	if err != nil {
		b.Fatal(err)
	}
	req, _ := json.Marshal(map[string]any{
		"model":           f.DefaultModel(),
		"messages":        []map[string]string{{"role": "system", "content": r.System}, {"role": "user", "content": r.User}},
		"response_format": map[string]string{"type": "json_object"},
	})
	hr, _ := http.NewRequest(http.MethodPost, srv.BaseURL()+"/chat/completions", bytes.NewReader(req))
	hr.Header.Set("Authorization", "Bearer test-key")
	hr.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(hr)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		b.Fatal(err)
	}
	return captured{status: resp.StatusCode, header: resp.Header.Clone(), body: body}
}

// replay serves c to every request on loopback and returns the base URL.
func replay(b *testing.B, c captured) string {
	b.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		for k, v := range c.header {
			if k != "Date" && k != "Content-Length" {
				rw.Header()[k] = v
			}
		}
		rw.WriteHeader(c.status)
		_, _ = rw.Write(c.body)
	}))
	b.Cleanup(srv.Close)
	return srv.URL + "/v1"
}

// BenchmarkAttempt is one job = one successful attempt through a one-link
// chain.
func BenchmarkAttempt(b *testing.B) {
	b.Run("sim-openai", func(b *testing.B) {
		benchJobs(b, benchWorld(b, spec{name: "cerebras", flavor: sim.FlavorCerebras}))
	})
	b.Run("sim-gemini", func(b *testing.B) {
		benchJobs(b, benchWorld(b, spec{name: "gemini", flavor: sim.FlavorGemini}))
	})
	b.Run("replay-openai", func(b *testing.B) {
		ok := capture(b, sim.FlavorCerebras, sim.Profile{Seed: 1})
		benchJobs(b, benchWorld(b, spec{name: "cerebras", flavor: sim.FlavorCerebras, baseURL: replay(b, ok)}))
	})
	// The chain, transport and store without the gate's scoring: the gate
	// only decodes the article JSON.
	b.Run("replay-openai-nogate", func(b *testing.B) {
		ok := capture(b, sim.FlavorCerebras, sim.Profile{Seed: 1})
		w := benchWorld(b, spec{name: "cerebras", flavor: sim.FlavorCerebras, baseURL: replay(b, ok)})
		w.chain.Gate = decodeGate{}
		benchJobs(b, w)
	})
}

// decodeGate passes every answer that decodes as an article, unscored.
type decodeGate struct{}

func (decodeGate) Evaluate(text string, _ quality.Spec) quality.Result {
	var a quality.Article
	if err := json.Unmarshal([]byte(text), &a); err != nil {
		return quality.Result{Outright: true}
	}
	return quality.Result{Score: 100, Pass: true, Article: &a}
}

// BenchmarkFailoverAfter5xx is one job whose first provider answers 503 and
// whose second answers: two round trips, two calls rows.
func BenchmarkFailoverAfter5xx(b *testing.B) {
	down := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultUnavailable: 1}}
	b.Run("sim", func(b *testing.B) {
		benchJobs(b, benchWorld(b,
			spec{name: "groq", flavor: sim.FlavorGroq, prof: down},
			spec{name: "cerebras", flavor: sim.FlavorCerebras}))
	})
	b.Run("replay", func(b *testing.B) {
		fail := capture(b, sim.FlavorGroq, down)
		if fail.status != http.StatusServiceUnavailable {
			b.Fatalf("captured status %d", fail.status)
		}
		ok := capture(b, sim.FlavorCerebras, sim.Profile{Seed: 1})
		benchJobs(b, benchWorld(b,
			spec{name: "groq", flavor: sim.FlavorGroq, baseURL: replay(b, fail)},
			spec{name: "cerebras", flavor: sim.FlavorCerebras, baseURL: replay(b, ok)}))
	})
	b.Run("replay-nogate", func(b *testing.B) {
		fail := capture(b, sim.FlavorGroq, down)
		ok := capture(b, sim.FlavorCerebras, sim.Profile{Seed: 1})
		w := benchWorld(b,
			spec{name: "groq", flavor: sim.FlavorGroq, baseURL: replay(b, fail)},
			spec{name: "cerebras", flavor: sim.FlavorCerebras, baseURL: replay(b, ok)})
		w.chain.Gate = decodeGate{}
		benchJobs(b, w)
	})
}

// BenchmarkGate is the quality gate alone on the captured ~600-word
// article, to size its share of an attempt.
func BenchmarkGate(b *testing.B) {
	ok := capture(b, sim.FlavorCerebras, sim.Profile{Seed: 1})
	var body struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(ok.body, &body); err != nil || len(body.Choices) == 0 {
		b.Fatalf("captured answer: %v", err)
	}
	w := newWorld(b)
	text := body.Choices[0].Message.Content
	qs := quality.Spec{Language: "en", TargetWords: targetWords}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if r := w.chain.Gate.Evaluate(text, qs); !r.Pass {
			b.Fatalf("captured article fails the gate: %v", r.Checks)
		}
	}
}

package sim

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func okFinish(f Flavor) string {
	if f == FlavorGemini {
		return "STOP"
	}
	return "stop"
}

func lengthFinish(f Flavor) string {
	if f == FlavorGemini {
		return "MAX_TOKENS"
	}
	return "length"
}

func num(v any) float64 {
	f, _ := v.(float64)
	return f
}

func TestNormalArticles(t *testing.T) {
	for _, f := range Flavors() {
		for _, stream := range []bool{false, true} {
			for _, tp := range []topic{topicEN, topicTR} {
				name := string(f) + "/" + tp.lang + "/stream=" + strconv.FormatBool(stream)
				t.Run(name, func(t *testing.T) {
					s := startT(t, f, Profile{Seed: 11})
					ex := do(t, s, tp.prompt(), reqOpts{stream: stream, jsonMode: tp.lang == "en"})
					if ex.status != 200 || ex.readErr != nil {
						t.Fatalf("status %d, read error %v: %.300s", ex.status, ex.readErr, ex.body)
					}
					r := extract(t, f, stream, ex)
					if !r.endEvent || r.finish != okFinish(f) {
						t.Errorf("end event %v, finish %q", r.endEvent, r.finish)
					}
					if stream && r.events < 3 {
						t.Errorf("only %d stream events", r.events)
					}
					checkArticle(t, name, r.text, tp, 0.9, 1.2)
					checkUsage(t, f, r, tp.prompt())
					if f == FlavorGemini {
						if mv := r.lastObject["modelVersion"]; mv != "gemini-2.5-flash" {
							t.Errorf("modelVersion = %v", mv)
						}
						if !stream && !strings.HasPrefix(string(ex.body), "{\n  \"candidates\": [") {
							t.Errorf("gemini body is not Google-style indented JSON: %.40q", ex.body)
						}
					} else {
						if m := r.lastObject["model"]; m != f.DefaultModel() {
							t.Errorf("model = %v, want the requested one", m)
						}
					}
					if stream {
						ct := ex.header.Get("Content-Type")
						if !strings.HasPrefix(ct, "text/event-stream") {
							t.Errorf("Content-Type = %q", ct)
						}
					}
					assertRateHeaders(t, f, ex)
				})
			}
		}
	}
}

// checkUsage asserts usage tokens ≈ words×1.3 out and prompt chars/4 in.
func checkUsage(t *testing.T, f Flavor, r result, prompt string) {
	t.Helper()
	if r.usage == nil {
		t.Fatalf("no usage reported")
	}
	var in, out float64
	if f == FlavorGemini {
		in, out = num(r.usage["promptTokenCount"]), num(r.usage["candidatesTokenCount"])
		if tot := num(r.usage["totalTokenCount"]); tot < in+out {
			t.Errorf("totalTokenCount %v < prompt+candidates", tot)
		}
	} else {
		in, out = num(r.usage["prompt_tokens"]), num(r.usage["completion_tokens"])
		if num(r.usage["total_tokens"]) != in+out {
			t.Errorf("total_tokens = %v, want %v", r.usage["total_tokens"], in+out)
		}
	}
	wantOut := math.Round(float64(len(strings.Fields(r.text))) * 1.3)
	if out != wantOut {
		t.Errorf("output tokens %v, want words×1.3 = %v", out, wantOut)
	}
	minIn := float64(utf8.RuneCountInString(prompt) / 4)
	if in < minIn || in > minIn+40 {
		t.Errorf("input tokens %v, want about %v", in, minIn)
	}
	if f == FlavorOpenRouter {
		if c, ok := r.usage["cost"].(float64); !ok || c <= 0 {
			t.Errorf("openrouter usage.cost = %v", r.usage["cost"])
		}
	}
}

func TestRateHeadersDecrease(t *testing.T) {
	for _, tc := range []struct {
		f         Flavor
		req, toks string
		first     int
	}{
		{FlavorGroq, "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens", groqRequestsPerDay - 1},
		{FlavorCerebras, "x-ratelimit-remaining-requests-day", "x-ratelimit-remaining-tokens-minute", cerebrasRequestsPerDay - 1},
	} {
		t.Run(string(tc.f), func(t *testing.T) {
			s := startT(t, tc.f, Profile{})
			a := do(t, s, healthPrompt, reqOpts{})
			b := do(t, s, healthPrompt, reqOpts{})
			ra, _ := strconv.Atoi(a.header.Get(tc.req))
			rb, _ := strconv.Atoi(b.header.Get(tc.req))
			if ra != tc.first || rb != tc.first-1 {
				t.Errorf("%s = %d then %d, want %d then %d", tc.req, ra, rb, tc.first, tc.first-1)
			}
			ta, _ := strconv.Atoi(a.header.Get(tc.toks))
			tb, _ := strconv.Atoi(b.header.Get(tc.toks))
			if !(tb < ta) {
				t.Errorf("%s did not decrease: %d then %d", tc.toks, ta, tb)
			}
		})
	}
}

func TestThinProviderShorterButPassing(t *testing.T) {
	for _, f := range []Flavor{FlavorGroq, FlavorGemini} {
		for _, tp := range []topic{topicEN, topicTR} {
			for seed := int64(1); seed <= 3; seed++ {
				name := string(f) + "/" + tp.lang + "/" + strconv.FormatInt(seed, 10)
				t.Run(name, func(t *testing.T) {
					s := startT(t, f, Profile{Thin: true, Seed: seed})
					ex := do(t, s, tp.prompt(), reqOpts{})
					r := extract(t, f, false, ex)
					checkArticle(t, name, r.text, tp, 0.82, 0.88)
				})
			}
		}
	}
}

func TestHealthCheck(t *testing.T) {
	for _, f := range Flavors() {
		for _, stream := range []bool{false, true} {
			s := startT(t, f, Profile{Seed: 3})
			ex := do(t, s, healthPrompt, reqOpts{stream: stream, jsonMode: true})
			r := extract(t, f, stream, ex)
			if r.text != `{"ok":true}` || r.finish != okFinish(f) {
				t.Errorf("%s stream=%v: text %q finish %q", f, stream, r.text, r.finish)
			}
		}
	}
}

func TestGeminiThoughtParts(t *testing.T) {
	s := startT(t, FlavorGemini, Profile{})
	ex := do(t, s, topicEN.prompt(), reqOpts{thoughts: true, jsonMode: true})
	o := decodeMap(t, ex.body)
	parts := o["candidates"].([]any)[0].(map[string]any)["content"].(map[string]any)["parts"].([]any)
	if len(parts) != 2 || parts[0].(map[string]any)["thought"] != true {
		t.Fatalf("want a thought part then the answer, got %v", parts)
	}
	r := extract(t, FlavorGemini, false, ex)
	checkArticle(t, "gemini+thoughts", r.text, topicEN, 0.9, 1.2)
	if num(r.usage["thoughtsTokenCount"]) <= 0 {
		t.Errorf("thoughtsTokenCount = %v", r.usage["thoughtsTokenCount"])
	}
}

func TestDeterministicForSeed(t *testing.T) {
	rates := map[Fault]float64{FaultUnavailable: 0.3, FaultMetaPhrase: 0.2}
	for _, f := range Flavors() {
		a := startT(t, f, Profile{Seed: 42, Rates: rates})
		b := startT(t, f, Profile{Seed: 42, Rates: rates})
		var prev string
		for i := range 4 {
			for _, stream := range []bool{false, true} {
				ea := do(t, a, topicEN.prompt(), reqOpts{stream: stream})
				eb := do(t, b, topicEN.prompt(), reqOpts{stream: stream})
				if ea.status != eb.status || !bytes.Equal(ea.body, eb.body) {
					t.Errorf("%s request %d: same seed, different answers", f, i)
				}
				if ea.status == 200 {
					if string(ea.body) == prev {
						t.Errorf("%s request %d repeats the previous answer", f, i)
					}
					prev = string(ea.body)
				}
			}
		}
		// A different seed writes different text for the same request number.
		x := startT(t, f, Profile{Seed: 42})
		y := startT(t, f, Profile{Seed: 43})
		tx := extract(t, f, false, do(t, x, topicEN.prompt(), reqOpts{})).text
		ty := extract(t, f, false, do(t, y, topicEN.prompt(), reqOpts{})).text
		if tx == ty {
			t.Errorf("%s: seeds 42 and 43 wrote the same article", f)
		}
	}
}

func TestRatesDrawFaults(t *testing.T) {
	p := Profile{Seed: 9, Rates: map[Fault]float64{FaultUnavailable: 0.3, FaultServerError: 0.2}}
	a := startT(t, FlavorCerebras, p)
	b := startT(t, FlavorCerebras, p)
	counts := map[int]int{}
	for i := range 100 {
		sa := do(t, a, healthPrompt, reqOpts{}).status
		sb := do(t, b, healthPrompt, reqOpts{}).status
		if sa != sb {
			t.Fatalf("request %d: %d vs %d under the same seed", i, sa, sb)
		}
		counts[sa]++
	}
	if counts[503] < 15 || counts[503] > 45 || counts[500] < 8 || counts[500] > 35 || counts[200] < 30 {
		t.Errorf("fault counts %v do not match rates 0.3/0.2 over 100 requests", counts)
	}
}

func TestScriptThenRatesAndSetProfile(t *testing.T) {
	s := startT(t, FlavorGroq, Profile{
		Script: []Fault{FaultUnavailable, FaultServerError},
		Rates:  map[Fault]float64{FaultRateMinute: 1},
	})
	var got []int
	for range 4 {
		got = append(got, do(t, s, healthPrompt, reqOpts{}).status)
	}
	s.SetProfile(Profile{Script: []Fault{FaultForbidden}})
	for range 2 {
		got = append(got, do(t, s, healthPrompt, reqOpts{}).status)
	}
	want := []int{503, 500, 429, 429, 403, 200}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("statuses %v, want %v", got, want)
		}
	}
	if s.Requests() != 6 {
		t.Errorf("Requests() = %d, want 6", s.Requests())
	}
}

func TestStartAllBaseURLs(t *testing.T) {
	set, err := StartAll(map[Flavor]Profile{})
	if err != nil {
		t.Fatal(err)
	}
	suffix := map[Flavor]string{FlavorGemini: "", FlavorGroq: "/openai/v1", FlavorCerebras: "/v1", FlavorOpenRouter: "/api/v1"}
	for _, f := range Flavors() {
		s := set.Server(f)
		if s == nil || set.BaseURL(f) != "http://"+s.Addr()+suffix[f] {
			t.Errorf("%s: base URL %q", f, set.BaseURL(f))
		}
		if ex := do(t, s, healthPrompt, reqOpts{}); ex.status != 200 {
			t.Errorf("%s: status %d", f, ex.status)
		}
	}
	// OpenRouter also answers under /v1, like a base_url without /api.
	or := set.Server(FlavorOpenRouter)
	ex, err := httpPost("http://"+or.Addr()+"/v1/chat/completions", "Bearer k",
		`{"model":"m","messages":[{"role":"user","content":"Health check: say {\"ok\":true}"}]}`)
	if err != nil || ex.status != 200 {
		t.Errorf("openrouter /v1: %v %d", err, ex.status)
	}
	set.Close()
	if _, err := httpPost(set.BaseURL(FlavorGroq)+"/chat/completions", "Bearer k", "{}"); err == nil {
		t.Errorf("server still answers after Set.Close")
	}
}

func TestStartRejectsUnknownFlavor(t *testing.T) {
	if _, err := Start("mistral", Profile{}); err == nil {
		t.Fatal("want an error for an unknown flavor")
	}
}

// TestDemoProfiles walks the first two demo jobs the way the chain would and
// checks that a newcomer sees each failover, with little waiting.
func TestDemoProfiles(t *testing.T) {
	profiles := DemoProfiles()
	for f, p := range profiles {
		p.Now = clock
		profiles[f] = p
	}
	set, err := StartAll(profiles)
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	tp := topicEN
	wait := time.Duration(0)

	// Job 1: Gemini per-minute 429 (short wait), retry → daily quota.
	g := set.Server(FlavorGemini)
	ex := do(t, g, tp.prompt(), reqOpts{stream: true})
	e := gStatus(t, decodeMap(t, ex.body), 429, "RESOURCE_EXHAUSTED")
	d, err := time.ParseDuration(gDetail(t, e, "google.rpc.RetryInfo")["retryDelay"].(string))
	if err != nil || !strings.Contains(quotaID(t, e), "PerMinute") {
		t.Fatalf("first gemini answer: %v %s", err, ex.body)
	}
	wait += d
	ex = do(t, g, tp.prompt(), reqOpts{stream: true})
	if id := quotaID(t, gStatus(t, decodeMap(t, ex.body), 429, "RESOURCE_EXHAUSTED")); !strings.Contains(id, "PerDay") {
		t.Fatalf("second gemini answer is not a daily quota: %s", id)
	}
	// Groq: low quality (rejected).
	r := extract(t, FlavorGroq, true, do(t, set.Server(FlavorGroq), tp.prompt(), reqOpts{stream: true}))
	if a, err := parseArticle(r.text); err != nil || len(a.Sections) >= tp.minSec {
		t.Errorf("first groq answer should be thin but valid JSON: %v, %d sections", err, len(a.Sections))
	}
	// Cerebras: 503.
	if ex := do(t, set.Server(FlavorCerebras), tp.prompt(), reqOpts{stream: true}); ex.status != 503 {
		t.Errorf("first cerebras answer: %d", ex.status)
	}
	// OpenRouter publishes.
	r = extract(t, FlavorOpenRouter, true, do(t, set.Server(FlavorOpenRouter), tp.prompt(), reqOpts{stream: true}))
	checkArticle(t, "demo/openrouter", r.text, tp, 0.9, 1.2)
	// Job 2: Groq publishes a thinner article.
	r = extract(t, FlavorGroq, true, do(t, set.Server(FlavorGroq), tp.prompt(), reqOpts{stream: true}))
	checkArticle(t, "demo/groq", r.text, tp, 0.82, 0.88)

	if wait > 5*time.Second {
		t.Errorf("demo advertises %v of waiting, want under 5s", wait)
	}
}

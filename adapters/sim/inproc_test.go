package sim

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/gemini"
	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/prompts"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/telemetry"
)

// testChain is the default four-link chain with the real gate and the real
// prompts; its links have no providers yet.
func testChain(t testing.TB, target int) *chain.Chain {
	t.Helper()
	gate, err := quality.NewGate(data.ArticleSchema, quality.Settings{Threshold: 70, MinSections: 5, MinSectionWords: 200})
	if err != nil {
		t.Fatal(err)
	}
	set := prompts.Default()
	la, _ := chain.ParseCapReset("00:00 America/Los_Angeles")
	utc, _ := chain.ParseCapReset("")
	return &chain.Chain{
		Policy:   chain.DefaultRetryPolicy(),
		Deadline: 15 * time.Minute,
		Gate:     gate,
		Schema:   data.ArticleSchema,
		Prompt: func(family string, j chain.Job) (chain.Prompt, error) {
			r, err := set.ArticleFor("", family, prompts.Vars{Title: j.Title, Category: j.Category, Keywords: j.Keywords, Language: j.Language,
				TargetWords: target, MinSections: 5, MinSectionWords: 200})
			return chain.Prompt{System: r.System, User: r.User, Version: r.Version}, err
		},
		Links: []*chain.Link{
			{Name: "gemini", Model: "gemini-flash-latest", Family: "gemini", Infra: "google", DailyCap: 200, CapReset: la,
				Price: chain.Price{InputPerMTok: 0.30, OutputPerMTok: 2.50}, MaxTokens: 8192, Stream: true},
			{Name: "groq", Model: "llama-3.3-70b-versatile", Family: "openai", Infra: "groq-lpu", DailyCap: 600, CapReset: utc,
				Price: chain.Price{InputPerMTok: 0.59, OutputPerMTok: 0.79}, MaxTokens: 8192, Stream: true},
			{Name: "cerebras", Model: "gpt-oss-120b", Family: "openai", Infra: "cerebras-wse", DailyCap: 1000, CapReset: utc,
				Price: chain.Price{InputPerMTok: 0.35, OutputPerMTok: 0.75}, MaxTokens: 16384, Stream: true},
			{Name: "openrouter", Model: "meta-llama/llama-3.3-70b-instruct", Family: "openai", Infra: "broker", CapReset: utc,
				Price: chain.Price{InputPerMTok: 0.12, OutputPerMTok: 0.30}, MaxTokens: 8192, Stream: true},
		},
	}
}

// testFlavors maps the test chain's link names to flavors.
var testFlavors = map[string]Flavor{"gemini": FlavorGemini, "groq": FlavorGroq, "cerebras": FlavorCerebras, "openrouter": FlavorOpenRouter}

// scripts is one scripted story through the four links over six jobs:
// a per-minute 429 then a daily quota (Gemini skipped afterwards), a thin
// answer, a hang, a cut stream, 5xx, bad JSON, truncation, a safety block,
// an error chunk, chat framing, and the breaker opening on Groq.
var scripts = map[string][]Fault{
	"gemini":     {FaultRateMinute, FaultRateDay},
	"groq":       {FaultLowQuality, FaultHang, FaultStreamCut, FaultNone, FaultServerError},
	"cerebras":   {FaultUnavailable, FaultBadJSON, FaultTruncate, FaultBlocked},
	"openrouter": {FaultErrorChunk, FaultNone, FaultMetaPhrase, FaultRateMinute, FaultNone},
}

type trace struct {
	calls, skips, jobs []string
}

// runScripted runs six jobs through the real chain.Runner whose providers
// come from mk, and returns the calls, skips and job statuses in order.
func runScripted(t *testing.T, mk func(name string, clock *VirtualClock, to chain.Timeouts) chain.Provider) trace {
	t.Helper()
	ctx := context.Background()
	tpl := testChain(t, 600)
	start := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	clock := NewVirtualClock(start)
	store, err := telemetry.Open(filepath.Join(t.TempDir(), "x.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	to := chain.Timeouts{Connect: 2 * time.Second, FirstToken: 300 * time.Millisecond, Idle: 5 * time.Second, Total: 30 * time.Second}
	ch := &chain.Chain{Policy: tpl.Policy, Deadline: tpl.Deadline, Gate: tpl.Gate, Prompt: tpl.Prompt, Schema: tpl.Schema,
		Store: store, Clock: clock, Jitter: func() float64 { return 0.5 }}
	for _, l := range tpl.Links {
		cl := *l
		cl.Provider = mk(l.Name, clock, to)
		ch.Links = append(ch.Links, &cl)
	}
	r := &chain.Runner{Chain: ch, Jobs: store, Publisher: NopPublisher{}, Owner: chain.Owner{Host: "t", PID: 1},
		Alive: func(chain.Owner) bool { return true }}
	var jobs []chain.Job
	for i := range 6 {
		jobs = append(jobs, chain.Job{ID: fmt.Sprintf("2026-03-02/t%d", i), Topic: fmt.Sprintf("t%d", i), Slot: "2026-03-02",
			Title: fmt.Sprintf("Heat pumps in old houses, part %d", i+1), Category: "home", Keywords: []string{"heat pump", "insulation"},
			Language: "en", TargetWords: 600})
	}
	var tr trace
	r.OnJob = func(rep chain.JobReport) { tr.jobs = append(tr.jobs, rep.Job.Topic+":"+string(rep.Status)) }
	r.Run(ctx, jobs, len(jobs))
	_, rows, err := store.Query(ctx, "SELECT provider, outcome FROM calls ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		tr.calls = append(tr.calls, fmt.Sprint(row[0], ":", row[1]))
	}
	_, rows, err = store.Query(ctx, "SELECT provider, reason FROM skips ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows {
		tr.skips = append(tr.skips, fmt.Sprint(row[0], ":", row[1]))
	}
	return tr
}

// TestSimulatorTakesTheRealBranches drives one script of outcomes through
// the in-process providers and through the real adapters (genai and
// go-openai SDKs) against the loopback servers with the same Script, and
// requires the same calls, skips and job outcomes: simulate and a real run
// share the decision code and the error classification.
func TestSimulatorTakesTheRealBranches(t *testing.T) {
	inproc := runScripted(t, func(name string, clock *VirtualClock, to chain.Timeouts) chain.Provider {
		return &InProc{Name: name, Flavor: testFlavors[name], Clock: clock, Timeouts: to, JSONMode: true,
			Profile: Profile{Script: scripts[name], RetryAfter: time.Second, Seed: 5}}
	})
	real := runScripted(t, func(name string, clock *VirtualClock, to chain.Timeouts) chain.Provider {
		srv, err := Start(testFlavors[name], Profile{Script: scripts[name], RetryAfter: time.Second, Seed: 5, Now: clock.Now})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(srv.Close)
		if name == "gemini" {
			c, err := gemini.New(context.Background(), gemini.Config{Name: name, Model: "gemini-flash-latest", APIKey: "k-test", BaseURL: srv.BaseURL(), Timeouts: to})
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		c, err := openai.New(openai.Config{Name: name, Model: testFlavors[name].DefaultModel(), APIKey: "k-test", BaseURL: srv.BaseURL(), JSONMode: "json_object", Timeouts: to})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
	for _, want := range []string{"gemini:rate_limited", "gemini:quota_exhausted", "groq:rejected", "groq:timeout_first_token",
		"groq:stream_broken", "cerebras:bad_request", "openrouter:stream_broken", "openrouter:ok"} {
		if !strings.Contains(strings.Join(real.calls, " "), want) {
			t.Errorf("the script did not produce %s over the real adapters: %v", want, real.calls)
		}
	}
	if !reflect.DeepEqual(inproc.calls, real.calls) {
		t.Errorf("calls differ\n simulated: %v\n real:      %v", inproc.calls, real.calls)
	}
	if !reflect.DeepEqual(inproc.skips, real.skips) {
		t.Errorf("skips differ\n simulated: %v\n real:      %v", inproc.skips, real.skips)
	}
	if !reflect.DeepEqual(inproc.jobs, real.jobs) {
		t.Errorf("job outcomes differ\n simulated: %v\n real:      %v", inproc.jobs, real.jobs)
	}
	if len(real.skips) == 0 {
		t.Error("the script produced no skips: the exhaustion/breaker branches were not compared")
	}
}

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
	"github.com/contentpipe/contentpipe/telemetry"
)

// smallModel is a compact, eventful fault model for tests.
func smallModel() *Model {
	return &Model{
		Seed: 7, BusyDays: 0.3,
		Groups: map[string]Outages{"google": {Every: 72 * time.Hour, Length: 6 * time.Hour}},
		Providers: map[string]ProviderModel{
			"gemini": {Group: "google", RateLimit: RateLimit{PerMinute: 0.1, Burst: 90 * time.Second, DailyQuota: 20, BusyDayQuota: 2,
				QuotaReset: "00:00 America/Los_Angeles"}, Quality: Quality{LowQuality: 0.05}},
			"groq":       {Quality: Quality{Thin: true, Length: 0.85}, Errors: Errors{Unavailable: 0.05}},
			"cerebras":   {Errors: Errors{Timeout: 0.05}},
			"openrouter": {Quality: Quality{BadJSON: 0.05}},
		},
	}
}

func TestSameSeedSameTable(t *testing.T) {
	a := runSim(t, smallModel(), 11, 5)
	b := runSim(t, smallModel(), 11, 5)
	strip := func(r *Report) []Row {
		rows := append([]Row(nil), r.Rows...)
		for i := range rows {
			rows[i].DB = ""
		}
		return rows
	}
	if !reflect.DeepEqual(strip(a), strip(b)) {
		t.Fatalf("same seed, different tables:\n%+v\n%+v", strip(a), strip(b))
	}
	if len(a.Rows) != 4 {
		t.Fatalf("want 4 rows (chain and three baselines), got %d", len(a.Rows))
	}
	for _, r := range a.Rows {
		if r.Jobs != 5*6 {
			t.Errorf("%s: %d jobs, want %d", r.Scenario, r.Jobs, 5*6)
		}
		if r.Calls == 0 || r.CostUSD <= 0 {
			t.Errorf("%s: no calls or no cost: %+v", r.Scenario, r)
		}
	}
	c := runSim(t, smallModel(), 12, 5)
	if reflect.DeepEqual(strip(a), strip(c)) {
		t.Fatal("a different seed gave the very same table: the seed is not used")
	}
	// The chain must beat its first link alone in this eventful world.
	ch, single := a.Row(ScenarioChain), a.Row(ScenarioSingle)
	if ch.SuccessRate <= single.SuccessRate || single.FallbackShare != 0 || ch.FallbackShare == 0 {
		t.Fatalf("chain %+v\nsingle %+v", ch, single)
	}
	if got := a.Row(ScenarioCostOrder).Order[0]; got != "openrouter" {
		t.Fatalf("cost order starts with %s, want the cheapest, openrouter", got)
	}
}

func TestBlackouts(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }
	walks := []walk{
		{start: at(0), end: at(0.1), published: true},
		{start: at(0.1), end: at(0.2), noAnswer: true}, // one unlucky job: not a blackout
		{start: at(4), end: at(4.1), published: true},
		{start: at(8), end: at(8.1), noAnswer: true}, // a blackout of two passes, 8 h
		{start: at(12), end: at(12.1), noAnswer: true},
		{start: at(16), end: at(16), published: false}, // review: answers came
		{start: at(20), end: at(20.1), noAnswer: true},
		{start: at(24), end: at(24.1), published: true},
		{start: at(30), end: at(30.1), noAnswer: true}, // open at the end
		{start: at(31), end: at(31.1), noAnswer: true},
	}
	h, n, days := blackouts(walks, at(33))
	if n != 2 || days != 2 || fmt.Sprintf("%.1f", h) != "19.1" {
		t.Fatalf("blackouts = %.2f h, %d, %d days; want 19.1 h (16.1 + 3), 2, 2 days", h, n, days)
	}
}

// flavorOf maps the test chain's link names to flavors.
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
	tpl, _ := testChain(t, 600)
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
	r := &chain.Runner{Chain: ch, Jobs: store, Publisher: nopPublisher{}, Owner: chain.Owner{Host: "t", PID: 1},
		Alive: func(chain.Owner) bool { return true }}
	var jobs []chain.Job
	for i := range 6 {
		jobs = append(jobs, chain.Job{ID: fmt.Sprintf("2026-03-02/t%d", i), Topic: fmt.Sprintf("t%d", i), Slot: "2026-03-02",
			Title: fmt.Sprintf("Heat pumps in old houses, part %d", i+1), Category: "home", Keywords: []string{"heat pump", "insulation"},
			Language: "en", TargetWords: 600})
	}
	var tr trace
	r.OnJob = func(rep chain.JobReport) { tr.jobs = append(tr.jobs, rep.Job.Topic+":"+rep.Status) }
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

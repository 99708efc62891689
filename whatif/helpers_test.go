package whatif

import (
	"context"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/prompts"
	"github.com/contentpipe/contentpipe/quality"
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

// testChain is the default four-link chain as a simulation template, with
// the real gate and the real prompts.
func testChain(t testing.TB, target int) (*chain.Chain, map[string]LinkSpec) {
	t.Helper()
	gate, err := quality.NewGate(data.ArticleSchema, quality.Settings{Threshold: 70, MinSections: 5, MinSectionWords: 200})
	if err != nil {
		t.Fatal(err)
	}
	set := prompts.Default()
	la, _ := chain.ParseCapReset("00:00 America/Los_Angeles")
	utc, _ := chain.ParseCapReset("")
	to := chain.Timeouts{Connect: 10 * time.Second, FirstToken: 60 * time.Second, Idle: 30 * time.Second, Total: 5 * time.Minute}
	ch := &chain.Chain{
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
	specs := map[string]LinkSpec{}
	for _, l := range ch.Links {
		specs[l.Name] = LinkSpec{Kind: familyKind(l.Family), Timeouts: to, JSONMode: true}
	}
	return ch, specs
}

func openScratch(path string) (Store, error) { return telemetry.OpenScratch(path) }

// runSim runs a simulation of m for days into a temp dir.
func runSim(t testing.TB, m *Model, seed uint64, days int, scenarios ...string) *Report {
	t.Helper()
	ch, specs := testChain(t, 1500)
	w, err := NewWorld(m, seed, days)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Run(context.Background(), Config{
		Chain: ch, Specs: specs, World: w, PostsPerDay: 6, PostsPerRun: 4,
		RunTimes: []time.Duration{6 * time.Hour, 10 * time.Hour, 14 * time.Hour, 18 * time.Hour},
		Dir:      t.TempDir(), Open: openScratch, Scenarios: scenarios,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

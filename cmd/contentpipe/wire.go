package main

import (
	"time"

	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/prompts"
	"github.com/contentpipe/contentpipe/publish"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/telemetry"
)

// loaded is a config with what came with it: topics, and for --demo the
// simulator servers that must be closed at the end.
type loaded struct {
	cfg    *config.Config
	topics []config.Topic
	sims   *sim.Set
}

func (l *loaded) close() {
	if l.sims != nil {
		l.sims.Close()
	}
}

// load reads the config (or the embedded demo config with fresh simulator
// servers) and the topics file. Every error here is exit status 2.
func (a *app) load(demo bool) (*loaded, error) {
	if !demo {
		ld := a.configLoader(false)
		cfg, err := ld.Load(a.configPath)
		if err != nil {
			return nil, err
		}
		topics, err := ld.LoadTopics(cfg.Topics)
		if err != nil {
			return nil, err
		}
		return &loaded{cfg: cfg, topics: topics}, nil
	}
	return a.loadDemo(sim.DemoProfiles())
}

// loadDemo is the embedded demo config and topics on fresh simulator
// servers with the given profiles.
func (a *app) loadDemo(profiles map[sim.Flavor]sim.Profile) (*loaded, error) {
	sims, err := sim.StartAll(profiles)
	if err != nil {
		return nil, fmt.Errorf("start demo providers: %w", err)
	}
	cfg, err := a.demoConfig(func(name string) string { return sims.BaseURL(demoFlavors[name]) })
	if err != nil {
		sims.Close()
		return nil, err
	}
	topics, err := config.ParseTopics("data/demo-topics.yaml", data.DemoTopics)
	if err != nil {
		sims.Close()
		return nil, fmt.Errorf("demo topics: %w", err)
	}
	return &loaded{cfg: cfg, topics: topics, sims: sims}, nil
}

// demoFlavors maps the demo config's link names to the simulators.
var demoFlavors = map[string]sim.Flavor{"gemini": sim.FlavorGemini, "groq": sim.FlavorGroq, "cerebras": sim.FlavorCerebras, "openrouter": sim.FlavorOpenRouter}

// demoConfig parses the embedded demo config with each link's base URL from
// baseURL and fake DEMO_* keys; paths are relative to the working directory.
func (a *app) demoConfig(baseURL func(name string) string) (*config.Config, error) {
	y := string(data.DemoConfig)
	for name := range demoFlavors {
		y = strings.ReplaceAll(y, "{{"+name+"}}", baseURL(name))
	}
	wd, err := os.Getwd()
	if err != nil {
		return nil, err
	}
	demoEnv := func(k string) string {
		if strings.HasPrefix(k, "DEMO_") {
			return "demo-key-not-secret"
		}
		return a.getenv(k)
	}
	cfg, err := config.Parse(filepath.Join(wd, "contentpipe-demo.yaml"), []byte(y), demoEnv)
	if err != nil {
		return nil, fmt.Errorf("demo config: %w", err)
	}
	return cfg, nil
}

// readConfig loads the config for the commands that call no provider
// (`sql`, `report`, `review`, `alerts`): unset key variables are fine there.
// Without a config file (and no --config given) it is the demo config, so
// these commands work right after `run --demo`.
func (a *app) readConfig(cmd *cobra.Command) (*config.Config, error) {
	cfg, err := a.configLoader(true).Load(a.configPath)
	if err == nil {
		return cfg, nil
	}
	if cmd.Flags().Changed("config") || cmd.Root().PersistentFlags().Changed("config") || !config.IsNotExist(err) {
		return nil, err
	}
	cfg, err = a.demoConfig(func(string) string { return "http://127.0.0.1:9" }) // never called
	if err != nil {
		return nil, err
	}
	a.log.Info("no config file: using the demo database and chain", "config", a.configPath, "database", cfg.DatabaseName())
	return cfg, nil
}

// configLoader is the config loader with the checks that need the other
// packages: prompt template names (every template a link's prompt: may
// name), the languages the gate checks, the schema compiled as the gate
// will.
// keysOptional is for the commands that call no provider.
func (a *app) configLoader(keysOptional bool) config.Loader {
	return config.Loader{
		Getenv:       a.getenv,
		KeysOptional: keysOptional,
		PromptNames: func(dir string) ([]string, error) {
			set, err := prompts.Load(dir)
			if err != nil {
				return nil, err
			}
			return set.Names(), nil
		},
		CheckSchema: func(schema []byte) error {
			_, err := quality.NewGate(schema, quality.Settings{})
			return err
		},
		LanguageSupported: quality.LanguageSupported,
		Languages:         quality.SupportedLanguages(),
	}
}

// schemaBytes reads the configured schema, or the embedded one when the
// configured file is the default and absent.
func schemaBytes(cfg *config.Config) ([]byte, error) {
	if cfg.Quality.SchemaJSON != nil {
		return cfg.Quality.SchemaJSON, nil
	}
	if cfg.Quality.Schema == "" {
		return data.ArticleSchema, nil
	}
	b, err := os.ReadFile(cfg.Quality.Schema)
	if errors.Is(err, os.ErrNotExist) && strings.HasSuffix(cfg.Quality.Schema, "data/article.schema.json") {
		return data.ArticleSchema, nil
	}
	return b, err
}

// buildGate compiles the quality gate from the config.
func buildGate(cfg *config.Config) (*quality.Gate, []byte, error) {
	schema, err := schemaBytes(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("quality.schema: %w", err)
	}
	s := quality.Settings{Threshold: cfg.Quality.Threshold, MinSections: cfg.Quality.MinSections, MinSectionWords: cfg.Quality.MinSectionWords}
	if cfg.Quality.BannedPhrasesFile != "" {
		b, err := os.ReadFile(cfg.Quality.BannedPhrasesFile)
		if err != nil {
			return nil, nil, fmt.Errorf("quality.banned_phrases_file: %w", err)
		}
		if s.ExtraPhrases, err = quality.LoadPhrases(bytes.NewReader(b)); err != nil {
			return nil, nil, fmt.Errorf("quality.banned_phrases_file %s: %w", cfg.Quality.BannedPhrasesFile, err)
		}
	}
	g, err := quality.NewGate(schema, s)
	if err != nil {
		return nil, nil, fmt.Errorf("quality.schema %s: %w", cfg.Quality.Schema, err)
	}
	return g, schema, nil
}

// buildLink turns a config link into a chain link with its wire client.
func buildLink(ctx context.Context, l config.Link) (*chain.Link, error) {
	reset, err := chain.ParseCapReset(l.CapReset)
	if err != nil {
		return nil, fmt.Errorf("link %s: cap_reset: %w", l.Name, err)
	}
	to := chain.Timeouts(l.Timeouts)
	cl := &chain.Link{
		Name: l.Name, Model: l.Model, Infra: l.Infra, DailyCap: l.DailyCap, CapReset: reset,
		DailyTokens: l.DailyTokens, DailyBudgetUSD: l.DailyBudgetUSD,
		Price:     chain.Price{InputPerMTok: l.Price.InputPerMTok, OutputPerMTok: l.Price.OutputPerMTok},
		MaxTokens: l.MaxTokens, Stream: l.Stream, Prompt: l.Prompt, ConfigHash: linkConfigHash(l),
	}
	if l.RPM > 0 || l.TPM > 0 {
		cl.Pacer = chain.NewPacer(l.RPM, l.TPM)
	}
	kind, ok := linkKinds[l.Kind]
	if !ok { // the config loader accepts profile.Kinds only
		return nil, fmt.Errorf("link %s: unknown kind %q", l.Name, l.Kind)
	}
	cl.Family = kind.family
	if cl.Provider, err = kind.client(ctx, l, to); err != nil {
		return nil, fmt.Errorf("link %s: %w", l.Name, err)
	}
	return cl, nil
}

// buildChain wires the chain of a config onto a store.
func buildChain(ctx context.Context, cfg *config.Config, store *telemetry.Store) (*chain.Chain, error) {
	gate, schema, err := buildGate(cfg)
	if err != nil {
		return nil, err
	}
	set := prompts.Default()
	if cfg.PromptsDir != "" {
		if set, err = prompts.Load(cfg.PromptsDir); err != nil {
			return nil, fmt.Errorf("prompts_dir: %w", err)
		}
	}
	c := &chain.Chain{
		Policy:   retryPolicy(cfg.Retry),
		Breaker:  breakerSettings(cfg.Retry.Circuit),
		Deadline: cfg.Job.Deadline,
		Store:    store,
		Secrets:  secrets(cfg),
		Budget:   chain.Budget{DailyUSD: cfg.Budget.DailyUSD, MonthlyUSD: cfg.Budget.MonthlyUSD},
		Gate:     gate,
		Clock:    chain.RealClock{},
		Schema:   schema,
		Prompt: func(template string, j chain.Job) (chain.Prompt, error) {
			r, err := set.ArticleFor(template, template, prompts.Vars{Title: j.Title, Category: j.Category, Keywords: j.Keywords, Language: j.Language,
				TargetWords: j.TargetWords, MinSections: cfg.Quality.MinSections, MinSectionWords: cfg.Quality.MinSectionWords})
			return chain.Prompt{System: r.System, User: r.User, Version: r.Version}, err
		},
	}
	if store != nil { // simulate builds a template chain without a store
		c.Notifier = alerts.NewOutbox(store, nil) // queued; the alert flush delivers it
	}
	for _, l := range cfg.Chain {
		cl, err := buildLink(ctx, l)
		if err != nil {
			return nil, err
		}
		c.Links = append(c.Links, cl)
	}
	// Shadow mode: a chain link is shared (same pacer, same cap count); a
	// candidate gets its own client. See chain.Shadow for the cap rule.
	c.Shadow = chain.Shadow{SampleRate: cfg.Shadow.SampleRate, Record: store.RecordShadowComparison}
shadows:
	for _, name := range cfg.Shadow.Providers {
		for _, l := range c.Links {
			if l.Name == name {
				c.Shadow.Links = append(c.Shadow.Links, l)
				continue shadows
			}
		}
		for _, l := range cfg.Candidates {
			if l.Name == name {
				cl, err := buildLink(ctx, l)
				if err != nil {
					return nil, err
				}
				c.Shadow.Links = append(c.Shadow.Links, cl)
			}
		}
	}
	return c, nil
}

// buildPublisher returns the configured publishing target (validated by
// the config loader, so it cannot fail here).
func buildPublisher(cfg *config.Config) chain.Publisher {
	pub, err := publish.New(cfg.Publish.Kind, cfg.Publish.Options())
	if err != nil {
		panic("config loader let through an invalid publish section: " + err.Error())
	}
	return pub
}

// jobsFor turns topics into jobs of one slot, with the job defaults filled
// in, for the commands that need a topic's job outside a run (`review
// approve` re-renders a kept answer; `prompts test` renders each link's
// prompt). The ids are the topic ids; a run takes its jobs from the
// backlog's plan instead (chain.PlanRun).
func jobsFor(cfg *config.Config, topics []config.Topic, slot string) []chain.Job {
	bt := backlogTopics(cfg, topics)
	jobs := make([]chain.Job, 0, len(bt))
	for _, t := range bt {
		t.Job.Slot = slot
		jobs = append(jobs, t.Job)
	}
	return jobs
}

// backlogTopics turns topics into the backlog's entries, with the job
// defaults (language, target words) filled in.
func backlogTopics(cfg *config.Config, topics []config.Topic) []chain.BacklogTopic {
	out := make([]chain.BacklogTopic, 0, len(topics))
	for i, t := range topics {
		lang, words := t.Language, t.TargetWords
		if lang == "" {
			lang = cfg.Job.Language
		}
		if words == 0 {
			words = cfg.Job.TargetWords
		}
		var notBefore time.Time
		if t.NotBefore != "" {
			notBefore, _ = time.Parse(time.DateOnly, t.NotBefore) // validated by the loader
		}
		out = append(out, chain.BacklogTopic{
			Job: chain.Job{ID: t.ID, Topic: t.ID, Title: t.Title, Category: t.Category, Language: lang,
				Keywords: t.Keywords, TargetWords: words},
			Priority: t.Priority, NotBefore: notBefore, Repeat: chain.Repeat(t.Repeat), Index: i,
		})
	}
	return out
}

// breakerSettings maps `retry.circuit` onto the chain's breaker.
func breakerSettings(c config.Circuit) chain.BreakerSettings {
	return chain.BreakerSettings{Window: c.Window, MinSamples: c.MinSamples, FailureRate: c.FailureRate,
		Cooldown: c.Cooldown, MaxCooldown: c.MaxCooldown, CloseAfter: c.CloseAfter}
}

// secrets returns every secret value the config resolved from the
// environment (API keys, the webhook secret, the Telegram bot token), for
// the chain to scrub from providers' answers.
func secrets(cfg *config.Config) []string {
	var out []string
	for _, l := range append(append([]config.Link(nil), cfg.Chain...), cfg.Candidates...) {
		out = append(out, l.APIKey)
	}
	return append(out, string(cfg.Publish.Secret), cfg.Publish.Password, cfg.Alerts.Telegram.Token)
}

// retryPolicy maps the `retry:` section onto the chain's policy. The
// section holds every value (the file's over the chain's defaults), so an
// explicit 0 is passed as 0.
func retryPolicy(r config.Retry) chain.RetryPolicy {
	return chain.RetryPolicy{
		RateLimitedWait: r.RateLimited.Wait, RateLimitedMaxRetries: r.RateLimited.MaxRetries,
		RateLimitedMaxWait: r.RateLimited.MaxWait, ServerErrorWait: r.ServerError.Wait,
		AuthHalt: r.AuthError.Halt, OtherWait: r.Other.Wait,
	}
}

// keyEnvOf is the variable holding the key of the link named provider
// ("" when it has none or is not in the config).
func keyEnvOf(cfg *config.Config, provider string) string {
	for _, l := range append(append([]config.Link(nil), cfg.Chain...), cfg.Candidates...) {
		if l.Name == provider {
			return l.APIKeyEnv
		}
	}
	return ""
}

// keyOf names the key of the link named provider for a message: its
// variable, or "its API key" for a link without one.
func keyOf(cfg *config.Config, provider string) string {
	if env := keyEnvOf(cfg, provider); env != "" {
		return env
	}
	return "its API key"
}

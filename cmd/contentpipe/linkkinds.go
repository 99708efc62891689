package main

import (
	"context"

	"github.com/contentpipe/contentpipe/adapters/gemini"
	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
)

// linkKind is one kind of link (the config's kind:): the prompt family its
// jobs are worded in and how its wire client is built from the link.
type linkKind struct {
	family chain.Family
	client func(ctx context.Context, l config.Link, to chain.Timeouts) (chain.Provider, error)
}

// linkKinds is the table of link kinds, one line per profile.Kinds value
// (the config accepts exactly those). Adding a kind is its adapter package,
// its profile.Kind, its line here, its tests and its README section.
var linkKinds = map[profile.Kind]linkKind{
	profile.KindGemini: {family: chain.FamilyGemini, client: geminiClient},
	profile.KindOpenAI: {family: chain.FamilyOpenAI, client: openaiClient},
}

func geminiClient(ctx context.Context, l config.Link, to chain.Timeouts) (chain.Provider, error) {
	return gemini.New(ctx, gemini.Config{Name: l.Name, Model: l.Model, APIKey: l.APIKey, BaseURL: l.BaseURL, Timeouts: to})
}

func openaiClient(_ context.Context, l config.Link, to chain.Timeouts) (chain.Provider, error) {
	return openai.New(openai.Config{Name: l.Name, Model: l.Model, APIKey: l.APIKey, BaseURL: l.BaseURL, JSONMode: l.JSONMode,
		Provider: profile.ID(l.Provider), Timeouts: to})
}

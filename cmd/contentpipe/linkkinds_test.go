package main

import (
	"context"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/prompts"
)

// TestConfigLinkKinds: the link-kind table has exactly one line per kind
// the config accepts, each with a prompt family the prompts know and a
// client built from a link of that kind.
func TestConfigLinkKinds(t *testing.T) {
	t.Parallel()
	if len(linkKinds) != len(profile.Kinds()) {
		t.Errorf("table has %d kinds, the config accepts %v", len(linkKinds), profile.Kinds())
	}
	for _, k := range profile.Kinds() {
		lk, ok := linkKinds[k]
		if !ok {
			t.Errorf("kind %s: no line in linkKinds", k)
			continue
		}
		if _, err := prompts.Default().ArticleFor("", string(lk.family), prompts.Vars{Title: "t", Language: "en", TargetWords: 100}); err != nil {
			t.Errorf("kind %s: family %q: %v", k, lk.family, err)
		}
		cl, err := buildLink(context.Background(), config.Link{Name: "x", Kind: k, Model: "m", APIKey: "k", BaseURL: "http://127.0.0.1:9/v1", CapReset: "00:00 UTC"})
		if err != nil || cl.Provider == nil || cl.Family != lk.family {
			t.Errorf("kind %s: buildLink = %+v, %v", k, cl, err)
		}
	}
	if _, err := buildLink(context.Background(), config.Link{Name: "x", Kind: "carrier-pigeon", Model: "m", CapReset: "00:00 UTC"}); err == nil {
		t.Error("a kind outside the table built a link")
	}
}

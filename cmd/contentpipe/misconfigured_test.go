package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// TestMisconfiguredLinesForTopicsAndReport: an open misconfigured incident
// of a configured link is a line with the provider's words, the fix and
// when it is called again; once the link's config changed, the line says
// the next job calls it; a link no longer configured has none.
func TestMisconfiguredLinesForTopicsAndReport(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "pipeline.db")
	st, err := telemetry.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	link := config.Link{Name: "gemini", Kind: "gemini", Model: "gemini-1.5-flash", APIKey: "k-123456789"}
	since := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	for _, name := range []string{"gemini", "gone"} {
		m := chain.Misconfig{Since: since, Detail: "http 404 misconfigured: models/gemini-1.5-flash is not found for API version v1beta",
			Fix: "change the link's model", ConfigHash: linkConfigHash(link), ProbeAfter: since.Add(24 * time.Hour)}
		if err := st.UpdateProviderState(ctx, name, func(s *chain.ProviderState) []chain.Transition { s.Misconfigured = &m; return nil }); err != nil {
			t.Fatal(err)
		}
	}
	cfg := &config.Config{Database: path, Chain: []config.Link{link}}
	lines, err := misconfiguredLines(ctx, cfg)
	if err != nil || len(lines) != 1 {
		t.Fatalf("lines %q %v, want one (the link no longer configured has none)", lines, err)
	}
	for _, want := range []string{"provider gemini is misconfigured since 2026-12-01 06:00:00 UTC", "is not found", "fix: change the link's model", "probe at 2026-12-02 06:00 UTC"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line lacks %q: %s", want, lines[0])
		}
	}
	cfg.Chain[0].Model = "gemini-2.5-flash"
	if lines, _ = misconfiguredLines(ctx, cfg); len(lines) != 1 || !strings.Contains(lines[0], "config changed since: the next job calls it") {
		t.Errorf("after a config change: %q", lines)
	}
	if linkConfigHash(link) == linkConfigHash(config.Link{Name: "gemini", Kind: "gemini", Model: "gemini-1.5-flash", APIKey: "k-other-key"}) {
		t.Error("a new key does not change the link's config hash")
	}
	if strings.Contains(linkConfigHash(link), "k-123456789") {
		t.Error("the key is in the hash")
	}
}

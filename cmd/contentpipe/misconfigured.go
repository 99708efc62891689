package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"time"

	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// linkConfigHash identifies what of a link's config a person changes to
// fix a misconfigured link (chain.Link.ConfigHash): its kind, model, key
// (hashed, never shown), endpoint, profile, output limit and request
// form. Caps, prices and timeouts do not make a link work again.
func linkConfigHash(l config.Link) string {
	key := sha256.Sum256([]byte(l.APIKey))
	h := sha256.Sum256([]byte(fmt.Sprintf("%q %q %q %x %q %q %d %q %v %q",
		l.Kind, l.Model, l.APIKeyEnv, key, l.BaseURL, l.Provider, l.MaxTokens, l.JSONMode, l.Stream, l.Prompt)))
	return hex.EncodeToString(h[:12])
}

// misconfiguredLines words the open misconfigured incidents of the
// config's links (none without a database): `topics` and `report` print
// them under their tables, `health` under its own.
func misconfiguredLines(ctx context.Context, cfg *config.Config) ([]string, error) {
	if !dbExists(cfg.Database) {
		return nil, nil
	}
	store, err := telemetry.OpenReadOnly(cfg.Database)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	return misconfiguredWords(ctx, store, cfg)
}

// misconfiguredWords is misconfiguredLines on an open store.
func misconfiguredWords(ctx context.Context, store *telemetry.Store, cfg *config.Config) ([]string, error) {
	links, err := store.MisconfiguredLinks(ctx)
	if err != nil {
		return nil, err
	}
	hashes := map[string]string{}
	for _, l := range append(append([]config.Link(nil), cfg.Chain...), cfg.Candidates...) {
		hashes[l.Name] = linkConfigHash(l)
	}
	var out []string
	for _, m := range links {
		h, ok := hashes[m.Provider]
		if !ok {
			continue // no longer in the config
		}
		next := fmt.Sprintf("not called until its config changes or the daily probe at %s answers", m.ProbeAfter.UTC().Format("2006-01-02 15:04 UTC"))
		if h != m.ConfigHash {
			next = "its config changed since: the next job calls it"
		}
		out = append(out, fmt.Sprintf("provider %s is misconfigured since %s: %s; fix: %s (%s)",
			m.Provider, m.Since.UTC().Format(time.DateTime+" UTC"), shorten(m.Detail, 200), m.Fix, next))
	}
	return out, nil
}

// writeMisconfigured prints the lines of misconfiguredLines, if any.
func writeMisconfigured(w io.Writer, lines []string) {
	for _, l := range lines {
		fmt.Fprintln(w, l)
	}
}

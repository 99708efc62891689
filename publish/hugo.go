package publish

import (
	"context"
	"path/filepath"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Hugo publishes each article where Hugo reads content, as it reads it:
// <Dir>/content/<Section>/<slug>.md, or with Bundle a page bundle
// <Dir>/content/<Section>/<slug>/index.md. Dir is the site's root (where
// its hugo.toml or config.toml is). The front matter is YAML in Hugo's own
// keys: title, date (RFC 3339 UTC), slug, categories and tags (the topic's
// category and keywords; Hugo's default taxonomies), description and
// summary (the first paragraph as plain text), lang (the job's language),
// draft: false; then provider, model, quality_score and job_id, which
// Hugo keeps as page params. The title is not repeated in the body: the
// theme shows it. Model text is escaped for Hugo (escape.go): no shortcode
// ({{< >}}, {{% %}}) can start in it, code blocks included, and HTML shows
// as text, so one article cannot break the site's build.
//
// The zero Section is "posts". Paths, slugs and the at-most-once rules are
// Markdown's (files.go): another job's file at the plain path sends the
// article to <slug>-<8 hex of sha256(job id)>, whose slug front matter
// says the same, so two articles never share a URL. A Hugo is safe for
// concurrent use.
type Hugo struct {
	Dir     string
	Section string
	Bundle  bool
	// Step, when set, is called at each durable step of a delivery: the
	// crash tests kill the process there.
	Step func(step string)
}

var (
	_ chain.Publisher = (*Hugo)(nil)
	_ Stepper         = (*Hugo)(nil)
)

// hugoTarget is the hugo kind's entry in the table of targets.
var hugoTarget = Target{
	Kind:  KindHugo,
	Keys:  []string{"dir", "section", "bundle"},
	Check: func(o Options) []Problem { return checkSection(o.Section) },
	New:   func(o Options) chain.Publisher { return &Hugo{Dir: o.Dir, Section: o.Section, Bundle: o.Bundle} },
	Place: dirPlace(KindHugo),
}

// defaultSection is the Hugo section when Section is "".
const defaultSection = "posts"

// checkSection refuses a section that is not a relative path inside
// content/.
func checkSection(s string) []Problem {
	if s == "" {
		return nil
	}
	clean := filepath.ToSlash(filepath.Clean(s))
	if filepath.IsAbs(s) || clean == "." || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsAny(s, "\\:*?\"<>|") {
		return []Problem{{Key: "section", Problem: "must be a folder inside the site's content/, such as posts or blog/2026",
			Fix: "give a relative folder name without .., or remove the key for the default posts"}}
	}
	return nil
}

// SetStep sets Step.
func (h *Hugo) SetStep(step func(string)) { h.Step = step }

func (h *Hugo) files() files {
	return files{kind: KindHugo, plain: func(a chain.Article) string { return h.path(articleSlug(a)) },
		suffixed: func(a chain.Article) string { return h.path(articleSlug(a) + "-" + jobHash(a.JobID)) },
		render:   h.Document, step: h.Step}
}

// path is the content file of the article with this slug.
func (h *Hugo) path(slug string) string {
	sec := h.Section
	if sec == "" {
		sec = defaultSection
	}
	dir := filepath.Join(h.Dir, "content", filepath.FromSlash(sec))
	if h.Bundle {
		return filepath.Join(dir, slug, bundleIndex)
	}
	return filepath.Join(dir, slug+".md")
}

// Location returns the path the article is (or will be) published at.
func (h *Hugo) Location(a chain.Article) string { return h.files().location(a) }

// Prepare renders a and chooses its path; see Markdown.Prepare.
func (h *Hugo) Prepare(ctx context.Context, a chain.Article) (chain.Delivery, error) {
	return h.files().prepare(ctx, a)
}

// Publish is Prepare, then Deliver.
func (h *Hugo) Publish(ctx context.Context, a chain.Article) (string, error) {
	return h.files().publish(ctx, a)
}

// Deliver writes d.Body to exactly d.Location; see Markdown.Deliver.
func (h *Hugo) Deliver(ctx context.Context, d chain.Delivery) (string, error) {
	return h.files().deliver(ctx, d)
}

// Document renders the content file of a for the chosen path (whose name
// is the slug). The same Article and path always give the same bytes.
func (h *Hugo) Document(a chain.Article, path string) []byte {
	f := newFrontMatter()
	f.str("title", plainText(a.Title))
	f.raw("date", a.Date.UTC().Format(time.RFC3339))
	f.str("slug", slugOfPath(path, false))
	f.list("categories", terms(a.Category))
	f.list("tags", terms(a.Keywords...))
	desc := description(a.Sections)
	f.str("description", desc)
	f.str("summary", desc)
	f.str("lang", oneLine(a.Language))
	f.raw("draft", "false")
	f.origin(a)
	return f.end(markdownBody(a, codeShortcodes))
}

package publish

import (
	"bytes"
	"context"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/contentpipe/contentpipe/chain"
)

// Markdown publishes each article as one Markdown file,
// <Dir>/<slot>/<slug>.md, with YAML front matter (title, date, category,
// provider, model, quality_score, job_id) followed by one "## h2" block per
// section. The title is in the front matter only: every generator that
// reads front matter shows it as the page's heading, and a "# Title" in
// the body showed it twice. For Hugo and Jekyll sites use those kinds
// (Hugo, Jekyll), which write where each generator reads.
//
// The slug is Article.Slug when set, else SlugIn(Article.Title,
// Article.Language), else the topic id's. When the path already holds a
// file of a different job (or a file without a job_id), the article goes
// to <slug>-<8 hex of sha256(job id)>.md instead; Location and Exists apply
// the same rule, so all three agree. The location that Publish returns is
// the authoritative one. Headings and bodies pass through the escaping of
// untrusted model text described in escape.go (template openers broken in
// code too, since the generator is unknown).
//
// Files are written atomically (temporary file in the same directory, write,
// fsync, rename, fsync of the directory) with mode 0644; directories are
// created with mode 0755. The zero Dir is the working directory. Publishing
// is serialised inside one process; across processes contentpipe's run lock
// keeps two runs from publishing at once.
type Markdown struct {
	Dir string
	// Step, when set, is called at each durable step of a delivery (temp
	// file synced, renamed): the crash tests kill the process there.
	Step func(step string)
}

var (
	_ chain.Publisher = (*Markdown)(nil)
	_ Stepper         = (*Markdown)(nil)
)

// markdownTarget is the markdown kind's entry in the table of targets.
var markdownTarget = Target{
	Kind:  KindMarkdown,
	Keys:  []string{"dir"},
	Check: noProblems,
	New:   func(o Options) chain.Publisher { return &Markdown{Dir: o.Dir} },
	Place: dirPlace(KindMarkdown),
}

// SetStep sets Step.
func (m *Markdown) SetStep(step func(string)) { m.Step = step }

func (m *Markdown) files() files {
	return files{kind: KindMarkdown, plain: m.plainPath, suffixed: m.suffixedPath, render: func(a chain.Article, _ string) []byte { return Document(a) }, step: m.Step}
}

// Location returns the path the article is (or will be) published at.
func (m *Markdown) Location(a chain.Article) string { return m.files().location(a) }

// Exists reports whether the file at Location holds this job's article
// (its front matter job_id equals a.JobID).
func (m *Markdown) Exists(ctx context.Context, a chain.Article) (bool, error) {
	return m.files().exists(ctx, a)
}

// Publish writes the article and returns its path: Prepare, then Deliver.
// When the job's file is already there it returns its path without
// rewriting it. No temporary file is left behind on error.
func (m *Markdown) Publish(ctx context.Context, a chain.Article) (string, error) {
	return m.files().publish(ctx, a)
}

// Prepare renders a (Document) and chooses its path (Location).
func (m *Markdown) Prepare(ctx context.Context, a chain.Article) (chain.Delivery, error) {
	return m.files().prepare(ctx, a)
}

// Deliver writes d.Body to exactly d.Location, atomically, and returns the
// path. A file already there that carries d's job id is d's own earlier
// delivery and is left as it is; a file of another job (or without a job
// id) is never overwritten: that is an error.
func (m *Markdown) Deliver(ctx context.Context, d chain.Delivery) (string, error) {
	return m.files().deliver(ctx, d)
}

// plainPath is a's file named by its slug alone; suffixedPath the same
// name with the job's hash, for when another job holds the plain one.
func (m *Markdown) plainPath(a chain.Article) string {
	return filepath.Join(m.Dir, slotDir(a), articleSlug(a)+".md")
}

func (m *Markdown) suffixedPath(a chain.Article) string {
	return filepath.Join(m.Dir, slotDir(a), articleSlug(a)+"-"+jobHash(a.JobID)+".md")
}

// slotDir is the directory name for a's slot: Article.Slot restricted to
// [A-Za-z0-9_-], else the UTC date of Article.Date, else "undated".
func slotDir(a chain.Article) string {
	s := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || (r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return r
		}
		return '-'
	}, a.Slot)
	if strings.Trim(s, "-") != "" {
		return s
	}
	if !a.Date.IsZero() {
		return a.Date.UTC().Format("2006-01-02")
	}
	return "undated"
}

// Document renders the whole Markdown file for a: front matter and body.
// The same Article always gives the same bytes.
func Document(a chain.Article) []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	b.WriteString("title: " + yamlQuote(plainText(a.Title)) + "\n")
	b.WriteString("date: " + a.Date.UTC().Format(time.RFC3339) + "\n")
	b.WriteString("category: " + yamlQuote(oneLine(a.Category)) + "\n")
	b.WriteString("provider: " + yamlQuote(oneLine(a.Provider)) + "\n")
	b.WriteString("model: " + yamlQuote(oneLine(a.Model)) + "\n")
	b.WriteString("quality_score: " + formatScore(a.QualityScore) + "\n")
	b.WriteString("job_id: " + yamlQuote(a.JobID) + "\n")
	b.WriteString("---\n")
	b.WriteString(markdownBody(a, codeTemplates))
	return b.Bytes()
}

// Body renders the article without front matter as plain Markdown (the
// webhook's "markdown" field): "# Title", then the sections as Document
// writes them. It ends with one newline.
func Body(a chain.Article) string {
	var b strings.Builder
	if t := plainText(a.Title); t != "" {
		b.WriteString("# " + t + "\n")
	}
	b.WriteString(markdownBody(a, codeTemplates))
	return b.String()
}

// markdownBody renders the sections: for each "\n## h2\n", then its
// paragraphs each after a blank line, the model text escaped for a
// generator with code rule rule (escape.go).
func markdownBody(a chain.Article, rule codeRule) string {
	var b strings.Builder
	for _, s := range a.Sections {
		if h := oneLine(strings.TrimLeft(strings.TrimSpace(s.H2), "#")); h != "" {
			b.WriteString("\n## " + safeMarkdown(h, rule) + "\n")
		}
		for _, p := range paragraphs(safeMarkdown(s.Body, rule)) {
			b.WriteString("\n" + p + "\n")
		}
	}
	return b.String()
}

var blankLines = regexp.MustCompile(`\n[ \t]*\n`)

// paragraphs splits a section body on blank lines, trimming each paragraph
// and dropping empty ones.
func paragraphs(body string) []string {
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
	var out []string
	for _, p := range blankLines.Split(body, -1) {
		lines := strings.Split(strings.TrimSpace(p), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " \t")
		}
		if p := strings.Join(lines, "\n"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// oneLine collapses all whitespace runs (newlines included) to one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// formatScore writes a quality score as a YAML number (NaN/Inf as 0).
func formatScore(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
}

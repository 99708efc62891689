package publish

import (
	"context"
	"path/filepath"

	"github.com/contentpipe/contentpipe/chain"
)

// Jekyll publishes each article where Jekyll reads posts, as it reads them:
// <Dir>/_posts/YYYY-MM-DD-<slug>.md, dated with the UTC day of
// publication. Dir is the site's root (where its _config.yml is). The front
// matter is YAML in Jekyll's own keys: layout: post (the post layout of
// every theme, as `jekyll new` writes it), title, date ("2006-01-02
// 15:04:05 +0000"), slug, categories and tags (the topic's category and
// keywords), description and excerpt (the first paragraph as plain text;
// Jekyll's own excerpt would be the first heading), lang, published: true,
// render_with_liquid: false (Liquid never runs on model text), and a
// permalink "/<category slug>/:year/:month/:day/:title:output_ext": the
// shape of Jekyll's default, with the category as a slug, because Jekyll
// puts a category in URLs as written ("/k%C3%BCche%20&%20haushalt/…",
// "dev/tools" as two folders); then provider, model, quality_score and
// job_id. The title is not repeated in the body: the layout shows it.
// Model text is escaped for kramdown (escape.go): HTML shows as text, no
// kramdown attribute list or extension ({: …}, {::…}) and no Liquid
// opener starts in prose.
//
// Paths and the at-most-once rules are Markdown's (files.go): another
// job's file at the plain path sends the article to
// YYYY-MM-DD-<slug>-<8 hex of sha256(job id)>.md. A Jekyll is safe for
// concurrent use.
type Jekyll struct {
	Dir string
	// Step, when set, is called at each durable step of a delivery: the
	// crash tests kill the process there.
	Step func(step string)
}

var (
	_ chain.Publisher = (*Jekyll)(nil)
	_ Stepper         = (*Jekyll)(nil)
)

// jekyllTarget is the jekyll kind's entry in the table of targets.
var jekyllTarget = Target{
	Kind:  KindJekyll,
	Keys:  []string{"dir"},
	Check: noProblems,
	New:   func(o Options) chain.Publisher { return &Jekyll{Dir: o.Dir} },
	Place: dirPlace(KindJekyll),
}

// SetStep sets Step.
func (j *Jekyll) SetStep(step func(string)) { j.Step = step }

func (j *Jekyll) files() files {
	return files{kind: KindJekyll, plain: func(a chain.Article) string { return j.path(a, articleSlug(a)) },
		suffixed: func(a chain.Article) string { return j.path(a, articleSlug(a)+"-"+jobHash(a.JobID)) },
		render:   j.Document, step: j.Step}
}

// path is the post file of a with this slug.
func (j *Jekyll) path(a chain.Article, slug string) string {
	return filepath.Join(j.Dir, "_posts", a.Date.UTC().Format("2006-01-02")+"-"+slug+".md")
}

// Location returns the path the article is (or will be) published at.
func (j *Jekyll) Location(a chain.Article) string { return j.files().location(a) }

// Prepare renders a and chooses its path; see Markdown.Prepare.
func (j *Jekyll) Prepare(ctx context.Context, a chain.Article) (chain.Delivery, error) {
	return j.files().prepare(ctx, a)
}

// Publish is Prepare, then Deliver.
func (j *Jekyll) Publish(ctx context.Context, a chain.Article) (string, error) {
	return j.files().publish(ctx, a)
}

// Deliver writes d.Body to exactly d.Location; see Markdown.Deliver.
func (j *Jekyll) Deliver(ctx context.Context, d chain.Delivery) (string, error) {
	return j.files().deliver(ctx, d)
}

// Document renders the post file of a for the chosen path (whose name
// after the date is the slug). The same Article and path always give the
// same bytes.
func (j *Jekyll) Document(a chain.Article, path string) []byte {
	f := newFrontMatter()
	f.str("layout", "post")
	f.str("title", plainText(a.Title))
	f.raw("date", a.Date.UTC().Format("2006-01-02 15:04:05 -0700"))
	f.str("slug", slugOfPath(path, true))
	cats := terms(a.Category)
	f.list("categories", cats)
	f.list("tags", terms(a.Keywords...))
	desc := description(a.Sections)
	f.str("description", desc)
	f.str("excerpt", desc)
	f.str("lang", oneLine(a.Language))
	f.raw("published", "true")
	f.raw("render_with_liquid", "false")
	permalink := "/:year/:month/:day/:title:output_ext"
	if len(cats) > 0 {
		if s := slugify(cats[0], a.Language); s != "" {
			permalink = "/" + s + permalink
		}
	}
	f.str("permalink", permalink)
	f.origin(a)
	return f.end(markdownBody(a, codeVerbatim))
}

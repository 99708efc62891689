package publish

import (
	"context"
	"errors"
	"html"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/publish/sitetest"
	"github.com/contentpipe/contentpipe/publish/wordpresstest"
)

// wpArticles are siteArticles under job ids of their own: the test site
// keeps what earlier runs published.
func wpArticles(t *testing.T) []chain.Article {
	arts := siteArticles()
	n := wordpresstest.Nonce()
	for i := range arts {
		arts[i].JobID += "/" + n
		arts[i].Date = time.Now().UTC().Truncate(time.Second).Add(-time.Duration(i) * time.Minute)
	}
	return arts
}

func wordpressFor(s wordpresstest.Site) *WordPress {
	return &WordPress{URL: s.URL, User: s.User, Password: s.Password}
}

// onePost returns the only post of a's job, failing when there is not
// exactly one, and deletes it when the test ends.
func onePost(t *testing.T, s wordpresstest.Site, a chain.Article) wordpresstest.Post {
	t.Helper()
	posts := s.Search(t, JobKey(a.JobID))
	for _, p := range posts {
		id := p.ID
		t.Cleanup(func() { s.Delete(t, id) })
	}
	if len(posts) != 1 {
		t.Fatalf("%s: %d posts carry the job's key, want 1", a.JobID, len(posts))
	}
	return posts[0]
}

// TestWordPressPublishes publishes every site article (hostile ones
// included) to the real WordPress and reads each post back: title,
// content, excerpt, slug, status, date, categories and tags by name; a
// second delivery of the same Delivery finds the post and creates none.
func TestWordPressPublishes(t *testing.T) {
	s := wordpresstest.Open(t, wordpresstest.EnvSite)
	w := wordpressFor(s)
	ctx := context.Background()
	for _, a := range wpArticles(t) {
		d, err := w.Prepare(ctx, a)
		if err != nil {
			t.Fatal(err)
		}
		link, err := w.Deliver(ctx, d)
		if err != nil {
			t.Fatalf("%s: %v", a.JobID, err)
		}
		again, err := w.Deliver(ctx, d)
		if err != nil || again != link {
			t.Fatalf("%s: second delivery = %q, %v; want the same link %q", a.JobID, again, err, link)
		}
		p := onePost(t, s, a)
		if p.Link != link || p.Status != "publish" {
			t.Errorf("%s: link %q status %q, want %q publish", a.JobID, p.Link, p.Status, link)
		}
		if got, want := html.UnescapeString(p.Title.Raw), plainText(a.Title); got != want {
			t.Errorf("%s: title %q, want %q", a.JobID, got, want)
		}
		// WordPress gives a slug another post holds a "-2" (earlier runs'
		// posts may be there).
		if p.Slug != articleSlug(a) && !regexp.MustCompile(`^`+regexp.QuoteMeta(articleSlug(a))+`-\d+$`).MatchString(p.Slug) {
			t.Errorf("%s: slug %q, want %q", a.JobID, p.Slug, articleSlug(a))
		}
		if want := a.Date.UTC().Format("2006-01-02T15:04:05"); p.DateGMT != want {
			t.Errorf("%s: date_gmt %s, want %s", a.JobID, p.DateGMT, want)
		}
		if got := s.TermNames(t, "categories", p.Categories); !slices.Equal(got, terms(a.Category)) {
			t.Errorf("%s: categories %q, want %q", a.JobID, got, terms(a.Category))
		}
		got, want := s.TermNames(t, "tags", p.Tags), terms(a.Keywords...)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: tags %q, want %q", a.JobID, got, want)
		}
		if !strings.Contains(p.Content.Raw, marker(JobKey(a.JobID))) {
			t.Errorf("%s: the content lost the job's key", a.JobID)
		}
		if strings.TrimSpace(html.UnescapeString(stripTags(p.Excerpt.Rendered))) == "" {
			t.Errorf("%s: no excerpt", a.JobID)
		}
		// What a visitor gets: the rendered content has no markup from the
		// model, and the page shows the title once as its heading.
		sitetest.NoActiveMarkup(t, a.JobID, "<article>"+p.Content.Rendered+"</article>")
		if strings.Contains(p.Content.Rendered, "<iframe") || strings.Contains(p.Content.Rendered, "wp-block-embed") {
			t.Errorf("%s: an embed was made of model text", a.JobID)
		}
		page := s.Page(t, link)
		if !strings.Contains(page, html.EscapeString(plainText(a.Title))) && !strings.Contains(page, strings.ReplaceAll(html.EscapeString(plainText(a.Title)), "&#39;", "&#8217;")) {
			t.Errorf("%s: the post's page does not show its title", a.JobID)
		}
		if a.Topic == "hostile" {
			for _, shown := range []string{"{{&lt; notice warning &gt;}}", "&#91;embed&#93;", "{% for post in site.posts %}"} {
				if !strings.Contains(p.Content.Rendered, shown) && !strings.Contains(p.Content.Rendered, strings.ReplaceAll(shown, "&#93;", "]")) {
					t.Errorf("the hostile post does not show %q as text:\n%s", shown, p.Content.Rendered)
				}
			}
		}
	}
}

var tagRE = regexp.MustCompile(`<[^>]*>`)

func stripTags(s string) string { return tagRE.ReplaceAllString(s, "") }

// TestWordPressStatuses: draft stays a draft; future goes live Delay
// after publication (default 24 h).
func TestWordPressStatuses(t *testing.T) {
	s := wordpresstest.Open(t, wordpresstest.EnvSite)
	arts := wpArticles(t)
	for i, tc := range []struct {
		status string
		delay  time.Duration
		after  time.Duration
	}{{"draft", 0, 0}, {"future", 0, 24 * time.Hour}, {"future", 90 * time.Minute, 90 * time.Minute}} {
		w := wordpressFor(s)
		w.Status, w.Delay = tc.status, tc.delay
		a := arts[i]
		if _, err := w.Publish(context.Background(), a); err != nil {
			t.Fatal(err)
		}
		p := onePost(t, s, a)
		if want := a.Date.UTC().Add(tc.after).Format("2006-01-02T15:04:05"); p.Status != tc.status || p.DateGMT != want {
			t.Errorf("status %s delay %s: got %s at %s, want %s at %s", tc.status, tc.delay, p.Status, p.DateGMT, tc.status, want)
		}
	}
}

// TestWordPressRefusedCredentials: a wrong application password is a
// 401 from the real WordPress, which is a *chain.PublishAuthError (the
// run halts) that does not carry the password.
func TestWordPressRefusedCredentials(t *testing.T) {
	s := wordpresstest.Open(t, wordpresstest.EnvSite)
	w := wordpressFor(s)
	w.Password = "wrong wrong wrong wrong"
	_, err := w.Publish(context.Background(), wpArticles(t)[0])
	pa := chain.AsPublishAuthError(err)
	if pa == nil || pa.Status != http.StatusUnauthorized {
		t.Fatalf("err = %v, want a PublishAuthError with 401", err)
	}
	if strings.Contains(err.Error(), w.Password) || strings.Contains(pa.Fix, w.Password) {
		t.Errorf("the password is in the error: %v", err)
	}
}

// TestWordPressTermsByName: a category found by name is reused, also one
// whose name WordPress stores escaped ("&" as "&amp;"), which its search
// does not match: the term_exists answer names it.
func TestWordPressTermsByName(t *testing.T) {
	s := wordpresstest.Open(t, wordpresstest.EnvSite)
	w := wordpressFor(s)
	ctx := context.Background()
	name := "Küche & Haushalt " + wordpresstest.Nonce()
	first, err := w.termID(ctx, "categories", name)
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.termID(ctx, "categories", name)
	if err != nil || second != first {
		t.Fatalf("second lookup = %d, %v; want %d", second, err, first)
	}
	if got := s.TermNames(t, "categories", []int{first}); got[0] != name {
		t.Errorf("stored name %q, want %q", got[0], name)
	}
}

// TestWordPressKses is what WordPress's own filter (kses) does to raw HTML
// sent without contentpipe's escaping, as the README says: for an Author
// (no unfiltered_html) it removes scripts, frames, styles, handlers and
// javascript: URLs but keeps the comment that carries a job's key; for an
// Editor or Administrator of a single site it keeps everything — so
// contentpipe escapes model text itself, whoever the user is.
func TestWordPressKses(t *testing.T) {
	author := wordpresstest.Open(t, wordpresstest.EnvAuthor)
	editor := wordpresstest.Open(t, wordpresstest.EnvSite)
	raw := `<p>Text <b>bold</b> <a href="javascript:alert(1)">js</a> <a href="https://example.org/">ok</a></p>` +
		`<script>alert('xss')</script><iframe src="https://evil.example/"></iframe><style>p{}</style>` +
		`<img src="x.png" onerror="alert(1)"><!-- contentpipe cpjobkses -->`
	got := map[string]string{}
	for name, s := range map[string]wordpresstest.Site{"author": author, "editor": editor} {
		p := s.Create(t, map[string]any{"title": "kses " + name, "content": raw, "status": "draft"})
		t.Cleanup(func() { s.Delete(t, p.ID) })
		got[name] = p.Content.Raw
	}
	a := got["author"]
	for _, gone := range []string{"<script", "<iframe", "<style", "onerror", "javascript:"} {
		if strings.Contains(a, gone) {
			t.Errorf("kses kept %q for an author: %s", gone, a)
		}
	}
	for _, kept := range []string{"<b>bold</b>", `href="https://example.org/"`, "<!-- contentpipe cpjobkses -->", `<img src="x.png"`} {
		if !strings.Contains(a, kept) {
			t.Errorf("kses removed %q for an author: %s", kept, a)
		}
	}
	if got["editor"] != raw {
		t.Errorf("for an editor WordPress changed the HTML (README says it keeps it):\n%s", got["editor"])
	}
	t.Logf("author's post as stored: %s", a)
}

// TestWordPressAnswers: answers a real WordPress gives only when broken or
// moved, from a server at the network edge: a 3xx is never followed (and
// the POST never repeated as a GET), a 5xx is retryable, a 403 halts.
func TestWordPressAnswers(t *testing.T) {
	for _, tc := range []struct {
		status    int
		retryable bool
		auth      bool
	}{{http.StatusMovedPermanently, true, false}, {http.StatusFound, true, false}, {http.StatusInternalServerError, true, false},
		{http.StatusBadGateway, true, false}, {http.StatusForbidden, false, true}, {http.StatusBadRequest, false, false}} {
		var calls atomic.Int32
		srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
			calls.Add(1)
			if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/elsewhere") {
				rw.Write([]byte("[]"))
				return
			}
			rw.Header().Set("Location", "https://moved.example/elsewhere?token=x")
			rw.WriteHeader(tc.status)
			rw.Write([]byte(`{"code":"some_code","message":"the site's words"}`))
		}))
		w := &WordPress{URL: srv.URL, User: "u", Password: "app-password-secret"}
		_, err := w.Publish(context.Background(), testArticle("job-1", "Title"))
		srv.Close()
		if err == nil {
			t.Fatalf("%d: no error", tc.status)
		}
		if strings.Contains(err.Error(), "app-password-secret") || strings.Contains(err.Error(), "token=x") {
			t.Errorf("%d: the error shows a secret: %v", tc.status, err)
		}
		if calls.Load() != 1 {
			t.Errorf("%d: %d requests, want 1 (nothing followed, nothing repeated)", tc.status, calls.Load())
		}
		if tc.auth {
			if chain.AsPublishAuthError(err) == nil {
				t.Errorf("%d: %v is not a PublishAuthError", tc.status, err)
			}
			continue
		}
		var we *WordPressError
		if !errors.As(err, &we) || we.Retryable() != tc.retryable || we.StatusCode != tc.status {
			t.Errorf("%d: err %v, want a WordPressError retryable=%v", tc.status, err, tc.retryable)
		}
		if tc.status/100 == 3 && !strings.Contains(err.Error(), "redirect not followed: https://moved.example/elsewhere") {
			t.Errorf("%d: %v does not say where it pointed", tc.status, err)
		}
	}
}

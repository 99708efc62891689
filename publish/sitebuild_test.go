package publish

import (
	"context"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/publish/sitetest"
)

// The site tests publish siteArticles (hostile ones included) with the
// hugo and jekyll targets and build the result with the real generators
// (sitetest): every article must become a page with its title, date, URL,
// tags and categories, and no model text may reach a page as markup.

// publishAll publishes every article through pub and returns the chosen
// paths by job id.
func publishAll(t *testing.T, pub chain.Publisher, arts []chain.Article) map[string]string {
	t.Helper()
	paths := map[string]string{}
	for _, a := range arts {
		d, err := pub.Prepare(context.Background(), a)
		if err != nil {
			t.Fatal(err)
		}
		loc, err := pub.Deliver(context.Background(), d)
		if err != nil {
			t.Fatal(err)
		}
		paths[a.JobID] = loc
	}
	return paths
}

func TestHugoBuildsEveryArticle(t *testing.T) {
	hugo := sitetest.Hugo(t)
	for _, bundle := range []bool{false, true} {
		t.Run(fmt.Sprintf("bundle=%v", bundle), func(t *testing.T) {
			dir := sitetest.Dir(t, fmt.Sprintf("hugo-bundle-%v", bundle))
			sitetest.WriteFiles(t, dir, sitetest.HugoSite)
			arts := siteArticles()
			h := &Hugo{Dir: dir, Bundle: bundle}
			paths := publishAll(t, h, arts)
			// A reservation left by a job that took its suffixed name, and a
			// killed writer's temp file, must not break the build either.
			sitetest.WriteFiles(t, dir, map[string]string{"content/posts/.left-over.md.reserved": "job", "content/posts/.x.md.tmp-123": "---\ntitle: [\n"})
			out := sitetest.Build(t, dir, hugo, "--quiet")
			if strings.Contains(out, "ERROR") {
				t.Errorf("hugo reported errors:\n%s", out)
			}
			for _, a := range arts {
				slug := slugOfPath(paths[a.JobID], false)
				page := sitetest.Read(t, filepath.Join(dir, "public", "posts", slug, "index.html"))
				label := a.JobID
				if want := "<h1 class=\"title\">" + html.EscapeString(plainText(a.Title)) + "</h1>"; !strings.Contains(page, strings.ReplaceAll(want, "&#39;", "&rsquo;")) && !strings.Contains(page, want) {
					t.Errorf("%s: title missing: want %s in\n%.600s", label, want, page)
				}
				if want := `datetime="` + a.Date.UTC().Format(time.RFC3339) + `"`; !strings.Contains(page, want) {
					t.Errorf("%s: date missing: %s", label, want)
				}
				if strings.Count(page, "<h1") != 1 {
					t.Errorf("%s: %d h1 headings, want the title once", label, strings.Count(page, "<h1"))
				}
				for _, term := range append([]string{a.Category}, a.Keywords...) {
					if !strings.Contains(page, ">"+html.EscapeString(plainText(term))+"<") && !strings.Contains(page, ">#"+html.EscapeString(plainText(term))+"<") {
						t.Errorf("%s: term %q missing on the page", label, term)
					}
				}
				sitetest.NoActiveMarkup(t, label, page)
			}
			// The taxonomies hold the articles: a category page lists its article.
			terms := sitetest.Read(t, filepath.Join(dir, "public", "categories", "security", "index.html"))
			if strings.Count(terms, "<li>") != 2 {
				t.Errorf("categories/security lists %d pages, want the 2 hostile articles:\n%s", strings.Count(terms, "<li>"), terms)
			}
			if _, err := os.Stat(filepath.Join(dir, "public", "tags", "compost", "index.html")); err != nil {
				t.Errorf("tags/compost was not built: %v", err)
			}
			hostile := sitetest.Read(t, filepath.Join(dir, "public", "posts", "hostile-x-title", "index.html"))
			for _, shown := range []string{"{{&lt; notice warning &gt;}}", "{% for post in site.posts %}", "{{ .Site.Params.secret }}", "{{ &lt; tip &gt;}}", `<a href="#">click</a>,`} {
				if !strings.Contains(hostile, shown) {
					t.Errorf("the hostile article does not show %q as text", shown)
				}
			}
		})
	}
}

func TestJekyllBuildsEveryArticle(t *testing.T) {
	jekyll := sitetest.Jekyll(t)
	dir := sitetest.Dir(t, "jekyll")
	sitetest.WriteFiles(t, dir, sitetest.JekyllSite)
	arts := siteArticles()
	paths := publishAll(t, &Jekyll{Dir: dir}, arts)
	sitetest.WriteFiles(t, dir, map[string]string{"_posts/.2026-11-29-left-over.md.reserved": "job"})
	out := sitetest.Build(t, dir, jekyll, "build", "--trace")
	if strings.Contains(out, "Liquid") || strings.Contains(out, "Error") {
		t.Errorf("jekyll reported problems:\n%s", out)
	}
	feed := sitetest.Read(t, filepath.Join(dir, "_site", "feed.xml"))
	for _, a := range arts {
		label := a.JobID
		slug := slugOfPath(paths[a.JobID], true)
		url := "/" + a.Date.UTC().Format("2006/01/02") + "/" + slug + ".html"
		if s := slugify(a.Category, a.Language); s != "" {
			url = "/" + s + url
		}
		page := sitetest.Read(t, filepath.Join(dir, "_site", filepath.FromSlash(url)))
		if want := ">" + html.EscapeString(plainText(a.Title)) + "</h1>"; !strings.Contains(page, want) && !strings.Contains(page, strings.ReplaceAll(want, "&#39;", "&rsquo;")) {
			t.Errorf("%s: title missing at %s: want %s", label, url, want)
		}
		if want := `datetime="` + a.Date.UTC().Format("2006-01-02T15:04:05+00:00") + `"`; !strings.Contains(page, want) {
			t.Errorf("%s: date missing: %s", label, want)
		}
		if strings.Count(page, "<h1") != 1 {
			t.Errorf("%s: %d h1 headings, want the title once", label, strings.Count(page, "<h1"))
		}
		if !strings.Contains(feed, "https://example.org"+url) {
			t.Errorf("%s: the feed has no entry for %s", label, url)
		}
		for _, term := range append([]string{a.Category}, a.Keywords...) {
			if want := `<category term="` + html.EscapeString(plainText(term)) + `" />`; !strings.Contains(feed, want) && !strings.Contains(feed, strings.ReplaceAll(want, "&#39;", "&#39;")) {
				t.Errorf("%s: the feed has no %s", label, want)
			}
		}
		sitetest.NoActiveMarkup(t, label, page)
	}
	hostile := sitetest.Read(t, filepath.Join(dir, "_site", "security", "2026", "11", "29", "hostile-x-title.html"))
	for _, shown := range []string{"{% for post in site.posts %}", "{{ site.github.token }}", "{: onclick=", "{{&lt; notice warning &gt;}}", `<a href="#">click</a>,`} {
		if !strings.Contains(hostile, shown) {
			t.Errorf("the hostile article does not show %q as text", shown)
		}
	}
}

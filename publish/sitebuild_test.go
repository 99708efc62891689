package publish

import (
	"context"
	"fmt"
	"html"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// The site tests publish siteArticles (hostile ones included) with the
// hugo and jekyll targets and build the result with the real generators
// (Debian's hugo and jekyll): every article must become a page with its
// title, date, URL, tags and categories, and no model text may reach a
// page as markup. Without the generator a test skips, naming the package;
// with CONTENTPIPE_REQUIRE_SITES=1 (CI, which installs them) it fails.
// CONTENTPIPE_KEEP_SITES=DIR keeps the built sites there (to look at).

const envRequireSites = "CONTENTPIPE_REQUIRE_SITES"

// needTool returns the path of a generator, or skips (fails) the test.
func needTool(t *testing.T, name, packages string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is not installed: apt-get install -y %s (CI installs it and sets %s=1)", name, packages, envRequireSites)
	if os.Getenv(envRequireSites) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// siteDir is a fresh site directory: kept under CONTENTPIPE_KEEP_SITES
// when set, else a temporary one.
func siteDir(t *testing.T, name string) string {
	t.Helper()
	keep := os.Getenv("CONTENTPIPE_KEEP_SITES")
	if keep == "" {
		return t.TempDir()
	}
	dir := filepath.Join(keep, name)
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

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

func build(t *testing.T, dir, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "TZ=UTC", "HOME="+dir, "JEKYLL_ENV=production")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %v failed: %v\n%s", filepath.Base(bin), args, err, out)
	}
	return string(out)
}

func readPage(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the page was not built: %v", err)
	}
	return string(b)
}

// noActiveMarkup fails when a built page carries markup from model text:
// a script other than a theme's JSON-LD, or in the article element an
// event handler, a frame, an object, a style element, or a
// javascript:/data: link.
func noActiveMarkup(t *testing.T, label, page string) {
	t.Helper()
	article := regexp.MustCompile(`(?s)<article\b.*</article>`).FindString(page)
	if article == "" {
		t.Errorf("%s: the page has no article element", label)
	}
	for _, m := range regexp.MustCompile(`(?is)<script\b[^>]*>.*?</script>`).FindAllString(page, -1) {
		if !strings.Contains(m, `type="application/ld+json"`) || strings.Contains(m, "alert(") {
			t.Errorf("%s: a script reached the page: %.120s", label, m)
		}
	}
	for _, re := range []string{`(?i)<[a-z][^>]*\son[a-z]+\s*=`, `(?i)<(iframe|object|embed|svg|style)\b`, `(?i)(href|src)\s*=\s*["']?\s*(javascript|data|vbscript):`} {
		if m := regexp.MustCompile(re).FindString(article); m != "" {
			t.Errorf("%s: markup from model text reached the page: %q", label, m)
		}
	}
}

// hugoSite is a minimal theme: what any theme shows of a page (title,
// date, categories and tags with their links, the content), and the term
// pages listing their pages.
var hugoSite = map[string]string{
	"config.toml": `baseURL = "https://example.org/"
title = "contentpipe test site"
languageCode = "en"
`,
	"layouts/_default/baseof.html": `<!DOCTYPE html><html><head><meta charset="utf-8"><title>{{ .Title }}</title>
<style>body{font-family:sans-serif;max-width:44em;margin:2em auto;line-height:1.5}</style></head><body>{{ block "main" . }}{{ end }}</body></html>`,
	"layouts/_default/single.html": `{{ define "main" }}<article><h1 class="title">{{ .Title }}</h1>
<time datetime="{{ .Date.Format "2006-01-02T15:04:05Z07:00" }}">{{ .Date.Format "2 January 2006" }}</time>
<p class="terms">{{ range .GetTerms "categories" }}<a class="category" href="{{ .RelPermalink }}">{{ .LinkTitle }}</a> {{ end }}
{{ range .GetTerms "tags" }}<a class="tag" href="{{ .RelPermalink }}">#{{ .LinkTitle }}</a> {{ end }}</p>
<p class="description">{{ .Description }}</p>
{{ .Content }}</article>{{ end }}`,
	"layouts/_default/list.html": `{{ define "main" }}<h1>{{ .Title }}</h1><ul>{{ range .Pages }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}</ul>{{ end }}`,
}

func TestHugoBuildsEveryArticle(t *testing.T) {
	hugo := needTool(t, "hugo", "hugo")
	for _, bundle := range []bool{false, true} {
		t.Run(fmt.Sprintf("bundle=%v", bundle), func(t *testing.T) {
			dir := siteDir(t, fmt.Sprintf("hugo-bundle-%v", bundle))
			writeFiles(t, dir, hugoSite)
			arts := siteArticles()
			h := &Hugo{Dir: dir, Bundle: bundle}
			paths := publishAll(t, h, arts)
			// A reservation left by a job that took its suffixed name, and a
			// killed writer's temp file, must not break the build either.
			writeFiles(t, dir, map[string]string{"content/posts/.left-over.md.reserved": "job", "content/posts/.x.md.tmp-123": "---\ntitle: [\n"})
			out := build(t, dir, hugo, "--quiet")
			if strings.Contains(out, "ERROR") {
				t.Errorf("hugo reported errors:\n%s", out)
			}
			for _, a := range arts {
				slug := slugOfPath(paths[a.JobID], false)
				page := readPage(t, filepath.Join(dir, "public", "posts", slug, "index.html"))
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
				noActiveMarkup(t, label, page)
			}
			// The taxonomies hold the articles: a category page lists its article.
			terms := readPage(t, filepath.Join(dir, "public", "categories", "security", "index.html"))
			if strings.Count(terms, "<li>") != 2 {
				t.Errorf("categories/security lists %d pages, want the 2 hostile articles:\n%s", strings.Count(terms, "<li>"), terms)
			}
			if _, err := os.Stat(filepath.Join(dir, "public", "tags", "compost", "index.html")); err != nil {
				t.Errorf("tags/compost was not built: %v", err)
			}
			hostile := readPage(t, filepath.Join(dir, "public", "posts", "hostile-script-alert-1-script-x-title", "index.html"))
			for _, shown := range []string{"{{&lt; notice warning &gt;}}", "{% for post in site.posts %}", "{{ .Site.Params.secret }}", "{{ &lt; tip &gt;}}", `<a href="#">click</a>,`} {
				if !strings.Contains(hostile, shown) {
					t.Errorf("the hostile article does not show %q as text", shown)
				}
			}
		})
	}
}

func TestJekyllBuildsEveryArticle(t *testing.T) {
	jekyll := needTool(t, "jekyll", "jekyll jekyll-theme-minima")
	dir := siteDir(t, "jekyll")
	writeFiles(t, dir, map[string]string{
		"_config.yml": "title: contentpipe test site\ntheme: minima\nplugins: [jekyll-feed, jekyll-seo-tag]\nurl: https://example.org\ntimezone: UTC\n",
		"index.md":    "---\nlayout: home\n---\n",
	})
	arts := siteArticles()
	paths := publishAll(t, &Jekyll{Dir: dir}, arts)
	writeFiles(t, dir, map[string]string{"_posts/.2026-11-29-left-over.md.reserved": "job"})
	out := build(t, dir, jekyll, "build", "--trace")
	if strings.Contains(out, "Liquid") || strings.Contains(out, "Error") {
		t.Errorf("jekyll reported problems:\n%s", out)
	}
	feed := readPage(t, filepath.Join(dir, "_site", "feed.xml"))
	for _, a := range arts {
		label := a.JobID
		slug := slugOfPath(paths[a.JobID], true)
		url := "/" + a.Date.UTC().Format("2006/01/02") + "/" + slug + ".html"
		if s := slugify(a.Category, a.Language); s != "" {
			url = "/" + s + url
		}
		page := readPage(t, filepath.Join(dir, "_site", filepath.FromSlash(url)))
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
		noActiveMarkup(t, label, page)
	}
	hostile := readPage(t, filepath.Join(dir, "_site", "security", "2026", "11", "29", "hostile-script-alert-1-script-x-title.html"))
	for _, shown := range []string{"{% for post in site.posts %}", "{{ site.github.token }}", "{: onclick=", "{{&lt; notice warning &gt;}}", `<a href="#">click</a>,`} {
		if !strings.Contains(hostile, shown) {
			t.Errorf("the hostile article does not show %q as text", shown)
		}
	}
}

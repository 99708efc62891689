// Package sitetest builds sites with the real generators for the tests of
// the hugo and jekyll targets: Debian's hugo and jekyll (with the minima
// theme). Without a generator a test skips, naming the package to install;
// with CONTENTPIPE_REQUIRE_SITES=1 (CI, whose .ci/run installs them) it
// fails instead. CONTENTPIPE_KEEP_SITES=DIR keeps the built sites there,
// to look at.
package sitetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// EnvRequire turns a missing generator into a failure.
const EnvRequire = "CONTENTPIPE_REQUIRE_SITES"

// Tool returns the path of a generator ("hugo", "jekyll"), or skips (under
// EnvRequire=1 fails) the test naming the Debian packages to install.
func Tool(t testing.TB, name, packages string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err == nil {
		return p
	}
	msg := fmt.Sprintf("%s is not installed: apt-get install -y %s (CI installs it and sets %s=1)", name, packages, EnvRequire)
	if os.Getenv(EnvRequire) == "1" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Hugo returns the hugo binary, or skips the test.
func Hugo(t testing.TB) string { return Tool(t, "hugo", "hugo") }

// Jekyll returns the jekyll binary, or skips the test.
func Jekyll(t testing.TB) string {
	return Tool(t, "jekyll", "jekyll jekyll-theme-minima ruby-jekyll-feed ruby-jekyll-seo-tag")
}

// Dir is a fresh site directory: DIR/name under CONTENTPIPE_KEEP_SITES,
// else a temporary one.
func Dir(t testing.TB, name string) string {
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

// WriteFiles writes files (slash paths relative to root).
func WriteFiles(t testing.TB, root string, files map[string]string) {
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

// HugoSite is a minimal theme: what any theme shows of a page (title,
// date, categories and tags with their links, the description, the
// content) and the list pages of sections and terms.
var HugoSite = map[string]string{
	"config.toml": `baseURL = "https://example.org/"
title = "contentpipe test site"
languageCode = "en"
`,
	"layouts/_default/baseof.html": `<!DOCTYPE html><html><head><meta charset="utf-8"><title>{{ .Title }}</title>
<style>body{font-family:sans-serif;max-width:44em;margin:2em auto;line-height:1.5;color:#222}.terms a{margin-right:.6em}time{color:#777}</style></head><body>{{ block "main" . }}{{ end }}</body></html>`,
	"layouts/_default/single.html": `{{ define "main" }}<article><h1 class="title">{{ .Title }}</h1>
<time datetime="{{ .Date.Format "2006-01-02T15:04:05Z07:00" }}">{{ .Date.Format "2 January 2006" }}</time>
<p class="terms">{{ range .GetTerms "categories" }}<a class="category" href="{{ .RelPermalink }}">{{ .LinkTitle }}</a> {{ end }}
{{ range .GetTerms "tags" }}<a class="tag" href="{{ .RelPermalink }}">#{{ .LinkTitle }}</a> {{ end }}</p>
<p class="description">{{ .Description }}</p>
{{ .Content }}</article>{{ end }}`,
	"layouts/_default/list.html": `{{ define "main" }}<h1>{{ .Title }}</h1><ul>{{ range .Pages }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}</ul>{{ end }}`,
}

// JekyllSite is a site on Debian's minima theme with its feed (which lists
// each post's categories and tags).
var JekyllSite = map[string]string{
	"_config.yml": "title: contentpipe test site\ntheme: minima\nplugins: [jekyll-feed, jekyll-seo-tag]\nurl: https://example.org\ntimezone: UTC\n",
	"index.md":    "---\nlayout: home\n---\n",
}

// Build runs a generator in dir and returns its output; a failure fails
// the test with the output.
func Build(t testing.TB, dir, bin string, args ...string) string {
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

// Read returns a built file, failing the test when it was not built.
func Read(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the page was not built: %v", err)
	}
	return string(b)
}

var (
	scriptRE  = regexp.MustCompile(`(?is)<script\b[^>]*>.*?</script>`)
	articleRE = regexp.MustCompile(`(?s)<article\b.*</article>`)
	activeRE  = []*regexp.Regexp{
		regexp.MustCompile(`(?i)<[a-z][^>]*\son[a-z]+\s*=`),
		regexp.MustCompile(`(?i)<(iframe|object|embed|svg|style)\b`),
		regexp.MustCompile(`(?i)(href|src)\s*=\s*["']?\s*(javascript|data|vbscript):`),
	}
)

// NoActiveMarkup fails when a built page carries markup from model text: a
// script anywhere other than a theme's JSON-LD, or in the article element
// an event handler, a frame, an object, an svg or style element, or a
// javascript:/data: link.
func NoActiveMarkup(t testing.TB, label, page string) {
	t.Helper()
	for _, m := range scriptRE.FindAllString(page, -1) {
		if !strings.Contains(m, `type="application/ld+json"`) || strings.Contains(m, "alert(") {
			t.Errorf("%s: a script reached the page: %.120s", label, m)
		}
	}
	article := articleRE.FindString(page)
	if article == "" {
		t.Errorf("%s: the page has no article element", label)
	}
	for _, re := range activeRE {
		if m := re.FindString(article); m != "" {
			t.Errorf("%s: markup from model text reached the page: %q", label, m)
		}
	}
}

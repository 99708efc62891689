package publish

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/contentpipe/contentpipe/chain"
)

// frontMatterMap parses a document's front matter.
func frontMatterMap(t *testing.T, doc []byte) (map[string]any, string) {
	t.Helper()
	fm, err := readFrontMatter(strings.NewReader(string(doc)))
	if err != nil {
		t.Fatalf("front matter: %v\n%s", err, doc)
	}
	var m map[string]any
	if err := yaml.Unmarshal(fm, &m); err != nil {
		t.Fatalf("front matter is not YAML: %v\n%s", err, fm)
	}
	_, body, _ := strings.Cut(string(doc[4:]), "\n---\n")
	return m, body
}

func TestHugoDocument(t *testing.T) {
	dir := t.TempDir()
	a := testArticle("job-1", "Küche & Haushalt")
	a.Language, a.Category, a.Keywords = "de", "Küche & Haushalt", []string{"Ordnung", "ordnung", " ", "Küche"}
	for _, tc := range []struct {
		h    *Hugo
		path string
	}{
		{&Hugo{Dir: dir}, filepath.Join(dir, "content", "posts", "kueche-haushalt.md")},
		{&Hugo{Dir: dir, Section: "blog/2026", Bundle: true}, filepath.Join(dir, "content", "blog", "2026", "kueche-haushalt", "index.md")},
	} {
		loc, err := tc.h.Publish(context.Background(), a)
		if err != nil || loc != tc.path {
			t.Fatalf("Publish = %q, %v; want %q", loc, err, tc.path)
		}
		doc, _ := os.ReadFile(loc)
		m, body := frontMatterMap(t, doc)
		want := map[string]any{"title": "Küche & Haushalt", "slug": "kueche-haushalt", "lang": "de", "draft": false, "job_id": "job-1",
			"description": "First paragraph.", "summary": "First paragraph."}
		for k, v := range want {
			if m[k] != v {
				t.Errorf("%s: %s = %#v, want %#v", loc, k, m[k], v)
			}
		}
		if cats, _ := m["categories"].([]any); len(cats) != 1 || cats[0] != "Küche & Haushalt" {
			t.Errorf("categories = %#v", m["categories"])
		}
		if tags, _ := m["tags"].([]any); len(tags) != 2 || tags[0] != "Ordnung" || tags[1] != "Küche" {
			t.Errorf("tags = %#v, want the keywords without blanks and repeats", m["tags"])
		}
		if !strings.Contains(string(doc), "\ndate: 2026-11-29T15:00:00Z\n") {
			t.Errorf("date is not RFC 3339 UTC:\n%s", doc)
		}
		if strings.Contains(body, "# Küche") || !strings.HasPrefix(body, "\n## Why compost\n") {
			t.Errorf("the body repeats the title or lost its first heading:\n%s", body)
		}
	}
}

func TestJekyllDocument(t *testing.T) {
	dir := t.TempDir()
	j := &Jekyll{Dir: dir}
	a := testArticle("job-1", "Home Composting")
	a.Category = "dev/tools"
	loc, err := j.Publish(context.Background(), a)
	if want := filepath.Join(dir, "_posts", "2026-11-29-home-composting.md"); err != nil || loc != want {
		t.Fatalf("Publish = %q, %v; want %q", loc, err, want)
	}
	doc, _ := os.ReadFile(loc)
	m, body := frontMatterMap(t, doc)
	want := map[string]any{"layout": "post", "title": "Home Composting", "slug": "home-composting", "lang": "en", "published": true,
		"render_with_liquid": false, "permalink": "/dev-tools/:year/:month/:day/:title:output_ext", "job_id": "job-1",
		"excerpt": "First paragraph.", "description": "First paragraph."}
	for k, v := range want {
		if m[k] != v {
			t.Errorf("%s = %#v, want %#v", k, m[k], v)
		}
	}
	if !strings.Contains(string(doc), "\ndate: 2026-11-29 15:00:00 +0000\n") {
		t.Errorf("date:\n%s", doc)
	}
	if strings.Contains(body, "# Home") {
		t.Errorf("the body repeats the title:\n%s", body)
	}
	// A category without a slug (a script without transliteration) leaves
	// the category out of the URL.
	b := testArticle("job-2", "Tea")
	b.Category = "茶"
	loc, _ = j.Publish(context.Background(), b)
	doc, _ = os.ReadFile(loc)
	if m, _ := frontMatterMap(t, doc); m["permalink"] != "/:year/:month/:day/:title:output_ext" {
		t.Errorf("permalink = %#v", m["permalink"])
	}
}

// TestFileTargetsCollision: another job's file at the plain path sends the
// article to the suffixed path, and the slug the generator builds the URL
// from says the same, so two articles never share a URL; delivering again
// is a no-op and a foreign file is never overwritten.
func TestFileTargetsCollision(t *testing.T) {
	for _, pub := range []interface {
		chain.Publisher
		Location(chain.Article) string
	}{&Hugo{Dir: t.TempDir()}, &Hugo{Dir: t.TempDir(), Bundle: true}, &Jekyll{Dir: t.TempDir()}} {
		ctx := context.Background()
		first, second := testArticle("job-1", "Same Title"), testArticle("job-2", "Same Title")
		d1, err := pub.Prepare(ctx, first)
		if err != nil {
			t.Fatal(err)
		}
		d2, err := pub.Prepare(ctx, second)
		if err != nil {
			t.Fatal(err)
		}
		if d1.Location == d2.Location {
			t.Fatalf("%T: both jobs prepared %s", pub, d1.Location)
		}
		for _, d := range []chain.Delivery{d2, d1, d2} {
			if _, err := pub.Deliver(ctx, d); err != nil {
				t.Fatalf("%T: %v", pub, err)
			}
		}
		m1, _ := frontMatterMap(t, d1.Body)
		m2, _ := frontMatterMap(t, d2.Body)
		if m1["slug"] != "same-title" || m2["slug"] != "same-title-"+jobHash("job-2") {
			t.Errorf("%T: slugs %v and %v", pub, m1["slug"], m2["slug"])
		}
		foreign := chain.Delivery{JobID: "job-3", Location: d1.Location, Body: []byte("---\njob_id: job-3\n---\n")}
		if _, err := pub.Deliver(ctx, foreign); err == nil || !strings.Contains(err.Error(), "already holds another article") {
			t.Errorf("%T: a foreign delivery over job-1's file: %v", pub, err)
		}
		if pub.Location(first) != d1.Location || pub.Location(second) != d2.Location {
			t.Errorf("%T: Location disagrees with Prepare", pub)
		}
	}
}

func TestTable(t *testing.T) {
	want := []Kind{KindMarkdown, KindHugo, KindJekyll, KindWebhook, KindWordPress}
	got := Kinds()
	if len(got) != len(want) {
		t.Fatalf("Kinds = %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Kinds = %v, want %v", got, want)
		}
	}
	dir := t.TempDir()
	abs, _ := filepath.Abs(dir)
	// Places a database recorded before the table must still match.
	for _, tc := range []struct {
		kind Kind
		o    Options
		want string
	}{
		{KindMarkdown, Options{Dir: dir}, "markdown " + abs},
		{KindWebhook, Options{URL: "https://u:p@h.example/hook?token=x#f"}, "webhook https://h.example/hook"},
		{KindHugo, Options{Dir: dir}, "hugo " + abs},
		{KindJekyll, Options{Dir: dir}, "jekyll " + abs},
		{KindWordPress, Options{URL: "https://u:p@blog.example/?x=1"}, "wordpress https://blog.example"},
	} {
		if got := Place(tc.kind, tc.o); got != tc.want {
			t.Errorf("Place(%s) = %q, want %q", tc.kind, got, tc.want)
		}
	}
	for _, tc := range []struct {
		kind Kind
		o    Options
		want string
	}{
		{"ghost", Options{}, "unknown kind"},
		{KindWebhook, Options{}, "url: missing"},
		{KindWordPress, Options{URL: "https://b.example", User: "u"}, "password_env: missing"},
		{KindWordPress, Options{URL: "https://b.example", User: "u", Password: "p", Status: "pending"}, `unknown status "pending"`},
		{KindHugo, Options{Section: "../up"}, "section: must be a folder inside"},
	} {
		if _, err := New(tc.kind, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("New(%s, %+v) = %v, want %q", tc.kind, tc.o, err, tc.want)
		}
	}
	for _, k := range Kinds() {
		o := Options{Dir: dir, URL: "https://b.example", User: "u", Password: "p"}
		p, err := New(k, o)
		if err != nil {
			t.Fatalf("New(%s): %v", k, err)
		}
		if _, ok := p.(Stepper); !ok {
			t.Errorf("%s: %T cannot be stepped by the crash tests", k, p)
		}
	}
}

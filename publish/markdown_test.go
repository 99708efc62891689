package publish

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/contentpipe/contentpipe/chain"
)

func testArticle(jobID, title string) chain.Article {
	return chain.Article{
		JobID:        jobID,
		Topic:        "home-composting",
		Slot:         "2026-11-29",
		Title:        title,
		Category:     "home",
		Language:     "en",
		Keywords:     []string{"compost", "garden"},
		Provider:     "gemini",
		Model:        "gemini-flash-latest",
		QualityScore: 87.5,
		Date:         time.Date(2026, 11, 29, 18, 0, 0, 0, time.FixedZone("x", 3*3600)),
		Sections: []chain.Section{
			{H2: "Why compost", Body: "First paragraph.\n\nSecond paragraph\nwith a line break.  \n\n\n"},
			{H2: "## Getting started", Body: "Only paragraph."},
		},
	}
}

func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			names = append(names, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

type mdFrontMatter struct {
	Title        string  `yaml:"title"`
	Date         string  `yaml:"date"`
	Category     string  `yaml:"category"`
	Provider     string  `yaml:"provider"`
	Model        string  `yaml:"model"`
	QualityScore float64 `yaml:"quality_score"`
	JobID        string  `yaml:"job_id"`
}

func parseFrontMatter(t *testing.T, doc []byte) (mdFrontMatter, map[string]any, string) {
	t.Helper()
	fm, err := readFrontMatter(bytes.NewReader(doc))
	if err != nil {
		t.Fatalf("front matter: %v\n%s", err, doc)
	}
	var v mdFrontMatter
	if err := yaml.Unmarshal(fm, &v); err != nil {
		t.Fatalf("front matter is not valid YAML: %v\n%s", err, fm)
	}
	var m map[string]any
	if err := yaml.Unmarshal(fm, &m); err != nil {
		t.Fatalf("front matter map: %v", err)
	}
	_, rest, _ := strings.Cut(string(doc[4:]), "\n---\n")
	return v, m, rest
}

func TestMarkdownPublishWritesDocument(t *testing.T) {
	dir := t.TempDir()
	m := &Markdown{Dir: dir}
	a := testArticle("job-1", "Home Composting: A Starter's Guide")
	want := filepath.Join(dir, "2026-11-29", "home-composting-a-starter-s-guide.md")
	if got := m.Location(a); got != want {
		t.Fatalf("Location = %q, want %q", got, want)
	}
	loc, err := m.Publish(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if loc != want {
		t.Fatalf("Publish location = %q, want %q", loc, want)
	}
	doc, err := os.ReadFile(loc)
	if err != nil {
		t.Fatal(err)
	}
	fm, keys, body := parseFrontMatter(t, doc)
	if len(keys) != 7 {
		t.Errorf("front matter has %d keys, want 7: %v", len(keys), keys)
	}
	wantFM := mdFrontMatter{
		Title: "Home Composting: A Starter's Guide", Date: "2026-11-29T15:00:00Z", Category: "home",
		Provider: "gemini", Model: "gemini-flash-latest", QualityScore: 87.5, JobID: "job-1",
	}
	if fm.Date == "" {
		// goccy may decode an unquoted timestamp into a string field either way; check the raw text too.
		t.Errorf("date missing")
	}
	if !strings.Contains(string(doc), "\ndate: 2026-11-29T15:00:00Z\n") {
		t.Errorf("date is not RFC 3339 UTC:\n%s", doc)
	}
	fm.Date = wantFM.Date
	if fm != wantFM {
		t.Errorf("front matter = %+v, want %+v", fm, wantFM)
	}
	// The title is in the front matter only: a "# Title" in the body made
	// every generator show it twice.
	wantBody := "\n## Why compost\n\nFirst paragraph.\n\nSecond paragraph\nwith a line break.\n\n## Getting started\n\nOnly paragraph.\n"
	if body != wantBody {
		t.Errorf("body = %q, want %q", body, wantBody)
	}
	st, err := os.Stat(loc)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o644 {
		t.Errorf("file mode = %v, want 0644", st.Mode().Perm())
	}
	if files := listDir(t, dir); len(files) != 1 {
		t.Errorf("files after publish = %v, want exactly the article (no temp files)", files)
	}
	ok, err := m.Exists(context.Background(), a)
	if err != nil || !ok {
		t.Errorf("Exists = %v, %v; want true", ok, err)
	}
	other := a
	other.JobID = "job-2"
	if ok, err := m.Exists(context.Background(), other); err != nil || ok {
		t.Errorf("Exists(other job) = %v, %v; want false", ok, err)
	}
}

func TestMarkdownFrontMatterHardTitles(t *testing.T) {
	titles := []string{
		`Backups: the "3-2-1" rule`,
		"Line one\nline two: with colon",
		`Back\slash 'single' # not a comment`,
		"- starts like a list item: yes",
		"null",
		"123",
		"Tab\there and bell \a and DEL \x7f and NEL \u0085 and LS \u2028",
		"{flow: mapping} [and, list] & *alias !tag %dir @at `tick`",
		"Evde ekmek mayası: İlk adımlar",
		"bad utf8 \xff\xfe end",
	}
	for _, title := range titles {
		a := testArticle("job:with \"quotes\"\nand newline", title)
		a.Category = "cat: \"x\""
		a.Model = "meta-llama/llama-3.3-70b-instruct:free"
		doc := Document(a)
		fm, keys, _ := parseFrontMatter(t, doc)
		if len(keys) != 7 {
			t.Errorf("%q: %d keys, want 7", title, len(keys))
		}
		if want := oneLine(strings.ToValidUTF8(title, "\uFFFD")); fm.Title != want {
			t.Errorf("title round trip = %q, want %q", fm.Title, want)
		}
		if fm.JobID != a.JobID || fm.Category != a.Category || fm.Model != a.Model {
			t.Errorf("%q: round trip %+v", title, fm)
		}
	}
}

func TestYAMLQuoteRoundTrip(t *testing.T) {
	for _, s := range []string{"a\nb", "tab\tx", "cr\rlf", "\x00\x01\x1b", "é ç İ 日本", `"\"`, "\u2028\u2029\ufeff", "\u0085\u009f"} {
		var v map[string]string
		if err := yaml.Unmarshal([]byte("k: "+yamlQuote(s)+"\n"), &v); err != nil {
			t.Fatalf("%q: %v (quoted %s)", s, err, yamlQuote(s))
		}
		if v["k"] != s {
			t.Errorf("round trip %q = %q (quoted %s)", s, v["k"], yamlQuote(s))
		}
	}
}

func TestMarkdownPublishTwiceIsIdempotent(t *testing.T) {
	dir := t.TempDir()
	m := &Markdown{Dir: dir}
	a := testArticle("job-1", "Backups for small offices")
	loc1, err := m.Publish(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	first, _ := os.ReadFile(loc1)
	st1, _ := os.Stat(loc1)

	// A second run after a crash between publishing and recording: a fresh
	// publisher, the same job, a later publication time and another provider.
	again := a
	again.Date = a.Date.Add(time.Hour)
	again.Provider = "groq"
	loc2, err := (&Markdown{Dir: dir}).Publish(context.Background(), again)
	if err != nil {
		t.Fatal(err)
	}
	if loc2 != loc1 {
		t.Fatalf("second publish location %q, first %q", loc2, loc1)
	}
	second, _ := os.ReadFile(loc2)
	if !bytes.Equal(first, second) {
		t.Errorf("second publish changed the file")
	}
	st2, _ := os.Stat(loc2)
	if !os.SameFile(st1, st2) {
		t.Errorf("second publish replaced the file")
	}
	if files := listDir(t, dir); len(files) != 1 {
		t.Errorf("files = %v, want one", files)
	}
}

func TestMarkdownSlugCollision(t *testing.T) {
	dir := t.TempDir()
	m := &Markdown{Dir: dir}
	ctx := context.Background()
	a := testArticle("topic-a/2026-11-29", "Home composting")
	b := testArticle("topic-b/2026-11-29", "Home Composting!")
	locA, err := m.Publish(ctx, a)
	if err != nil {
		t.Fatal(err)
	}
	wantB := filepath.Join(dir, "2026-11-29", "home-composting-"+jobHash(b.JobID)+".md")
	if got := m.Location(b); got != wantB {
		t.Fatalf("Location(b) before publish = %q, want %q", got, wantB)
	}
	locB, err := m.Publish(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	if locB != wantB || locB == locA {
		t.Fatalf("Publish(b) = %q, want %q (a at %q)", locB, wantB, locA)
	}
	if len(jobHash(b.JobID)) != 8 {
		t.Errorf("hash suffix %q is not 8 characters", jobHash(b.JobID))
	}
	for _, c := range []struct {
		a   chain.Article
		loc string
	}{{a, locA}, {b, locB}} {
		doc, err := os.ReadFile(c.loc)
		if err != nil {
			t.Fatal(err)
		}
		fm, _, _ := parseFrontMatter(t, doc)
		if fm.JobID != c.a.JobID {
			t.Errorf("%s holds job %q, want %q", c.loc, fm.JobID, c.a.JobID)
		}
		if got := m.Location(c.a); got != c.loc {
			t.Errorf("Location after publish = %q, want %q", got, c.loc)
		}
		if ok, err := m.Exists(ctx, c.a); !ok || err != nil {
			t.Errorf("Exists(%s) = %v, %v", c.a.JobID, ok, err)
		}
		// Publishing again is a no-op at the same place.
		if again, err := m.Publish(ctx, c.a); err != nil || again != c.loc {
			t.Errorf("republish %s = %q, %v; want %q", c.a.JobID, again, err, c.loc)
		}
	}
	// A foreign file without front matter is never overwritten either.
	foreign := testArticle("topic-c/2026-11-29", "Hand written")
	fpath := filepath.Join(dir, "2026-11-29", "hand-written.md")
	if err := os.WriteFile(fpath, []byte("# mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	locC, err := m.Publish(ctx, foreign)
	if err != nil {
		t.Fatal(err)
	}
	if locC == fpath {
		t.Errorf("publish overwrote a hand-written file")
	}
	if got, _ := os.ReadFile(fpath); string(got) != "# mine\n" {
		t.Errorf("hand-written file changed: %q", got)
	}
	// Both names taken by others: an error, nothing written.
	d := testArticle("topic-d/2026-11-29", "Hand written")
	if err := os.WriteFile(filepath.Join(dir, "2026-11-29", "hand-written-"+jobHash(d.JobID)+".md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := len(listDir(t, dir))
	if _, err := m.Publish(ctx, d); err == nil {
		t.Errorf("publish with both names taken succeeded")
	}
	if after := len(listDir(t, dir)); after != before {
		t.Errorf("files %d → %d after a failed publish", before, after)
	}
}

func TestMarkdownSlugChoice(t *testing.T) {
	dir := t.TempDir()
	m := &Markdown{Dir: dir}
	a := testArticle("j", "Ignored title")
	a.Slug = "Custom Slug"
	if got := filepath.Base(m.Location(a)); got != "custom-slug.md" {
		t.Errorf("explicit slug: %q", got)
	}
	a.Slug = ""
	a.Title = "日本語のタイトル"
	if got := filepath.Base(m.Location(a)); got != "home-composting.md" {
		t.Errorf("topic fallback: %q", got)
	}
	a.Topic = ""
	if got := filepath.Base(m.Location(a)); got != "article-"+jobHash("j")+".md" {
		t.Errorf("last fallback: %q", got)
	}
	a.Slot = "../../etc"
	if got := m.Location(a); !strings.HasPrefix(got, dir+string(filepath.Separator)) || strings.Contains(got, "..") {
		t.Errorf("slot escaped the directory: %q", got)
	}
	a.Slot = ""
	if got := filepath.Base(filepath.Dir(m.Location(a))); got != "2026-11-29" {
		t.Errorf("slot from date: %q", got)
	}
}

func TestWriteAtomicErrorLeavesNoTempFile(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory where the file should go makes the rename fail
	// after the temporary file was written and synced.
	target := filepath.Join(dir, "slot", "article.md")
	if err := os.MkdirAll(filepath.Join(target, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := writeAtomic(target, []byte("data"), func(string) {}); err == nil {
		t.Fatal("writeAtomic onto a directory succeeded")
	}
	entries, err := os.ReadDir(filepath.Dir(target))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "article.md" {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("entries after failed write = %v, want only the blocking directory", names)
	}
}

func TestMarkdownDirectoryInTheWayIsNotClobbered(t *testing.T) {
	dir := t.TempDir()
	m := &Markdown{Dir: dir}
	a := testArticle("job-1", "Blocked")
	plain := m.Location(a)
	if err := os.MkdirAll(filepath.Join(plain, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	loc, err := m.Publish(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if loc == plain {
		t.Fatalf("published onto the directory path")
	}
	if st, err := os.Stat(filepath.Join(plain, "sub")); err != nil || !st.IsDir() {
		t.Errorf("blocking directory changed: %v", err)
	}
	for _, f := range listDir(t, dir) {
		if strings.Contains(f, ".tmp-") {
			t.Errorf("temp file left behind: %s", f)
		}
	}
}

func TestMarkdownPublishNeedsJobIDAndLiveContext(t *testing.T) {
	m := &Markdown{Dir: t.TempDir()}
	if _, err := m.Publish(context.Background(), testArticle("", "x")); err == nil {
		t.Error("publish without job id succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := m.Publish(ctx, testArticle("j", "x")); err == nil {
		t.Error("publish with a cancelled context succeeded")
	}
	if files := listDir(t, m.Dir); len(files) != 0 {
		t.Errorf("files written: %v", files)
	}
}

func TestMarkdownConcurrentSameSlug(t *testing.T) {
	dir := t.TempDir()
	m := &Markdown{Dir: dir}
	ids := []string{"a", "b"}
	errs := make(chan error, len(ids))
	for _, id := range ids {
		go func() {
			_, err := m.Publish(context.Background(), testArticle(id, "Same title"))
			errs <- err
		}()
	}
	for range ids {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	files := listDir(t, dir)
	if len(files) != 2 {
		t.Fatalf("files = %v, want 2 distinct", files)
	}
	for _, id := range ids {
		if ok, err := m.Exists(context.Background(), testArticle(id, "Same title")); !ok || err != nil {
			t.Errorf("job %s lost: %v %v", id, ok, err)
		}
	}
}

func TestPublishRemovesLeftoverTempFiles(t *testing.T) {
	dir := t.TempDir()
	m := &Markdown{Dir: dir}
	a := testArticle("2026-11-29/leftover", "Leftover temp files")
	loc := m.Location(a)
	if err := os.MkdirAll(filepath.Dir(loc), 0o755); err != nil {
		t.Fatal(err)
	}
	// A run killed between CreateTemp and Rename left these.
	left := filepath.Join(filepath.Dir(loc), "."+filepath.Base(loc)+".tmp-123456")
	other := filepath.Join(filepath.Dir(loc), ".another-job.md.tmp-999")
	for _, f := range []string{left, other} {
		if err := os.WriteFile(f, []byte("partial"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Publish(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(left); !os.IsNotExist(err) {
		t.Fatalf("leftover temp file of this article still there: %v", err)
	}
	if _, err := os.Stat(other); err != nil {
		t.Fatalf("another article's temp file was removed: %v", err)
	}
}

// A job that prepared a slug's plain name first (here: in another process,
// not yet delivered) keeps it; another job of that slug is prepared to its
// suffixed name, and both deliveries land.
func TestMarkdownPrepareReservesThePlainName(t *testing.T) {
	dir := t.TempDir()
	first, second := &Markdown{Dir: dir}, &Markdown{Dir: dir}
	ctx := context.Background()
	da, err := first.Prepare(ctx, testArticle("a", "Same title"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := second.Prepare(ctx, testArticle("b", "Same title"))
	if err != nil {
		t.Fatal(err)
	}
	if da.Location == db.Location {
		t.Fatalf("both jobs prepared to %s", da.Location)
	}
	if again, err := first.Prepare(ctx, testArticle("a", "Same title")); err != nil || again.Location != da.Location {
		t.Fatalf("job a prepared again to %s (%v), want its reserved %s", again.Location, err, da.Location)
	}
	for _, d := range []chain.Delivery{db, da} {
		if _, err := first.Deliver(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if files := listDir(t, dir); len(files) != 2 {
		t.Fatalf("files = %v, want the two articles and no reservation left", files)
	}
}

package main

import (
	"fmt"
	"html"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/publish"
	"github.com/contentpipe/contentpipe/publish/sitetest"
	"github.com/contentpipe/contentpipe/publish/wordpresstest"
)

// The publishing targets hugo, jekyll and wordpress under the real binary
// killed at every step of a delivery — the mark, each durable step of the
// target (a file's temp write, rename and directory sync; WordPress's
// lookup, terms, the POST about to go, the POST written and unanswered,
// the answer) and the record — then run again until the backlog is done:
// every job is published exactly once (one file, one post), as
// TestCrashPoints holds for markdown and webhook.

// targetTopics is the number of topics of a targetWorld: one delivery is
// killed at each of its steps (the steps of a second one are the same, and
// TestCrashPoints covers two jobs per run).
const targetTopics = 1

// targetWorld is a world of targetTopics topics (ids unique to this world:
// the WordPress site keeps every run's posts) publishing with the flow
// mapping publish.
func targetWorld(t *testing.T, publishYAML string, env ...string) *simWorld {
	t.Helper()
	w := newWorld(t, worldOptions{topics: 0, profiles: crashPointProfiles(), publish: publishYAML,
		job: fmt.Sprintf("{posts_per_run: %d, deadline: 1m, language: en, target_words: 400, parallel: 1}", targetTopics)})
	w.env = append(w.env, env...)
	n := wordpresstest.Nonce()
	var tb strings.Builder
	for i := 0; i < targetTopics; i++ {
		fmt.Fprintf(&tb, "- {id: kill-%s-%d, title: \"Practical guide number %d to home energy savings\", category: \"Küche & Haushalt\", keywords: [insulation, heat pump]}\n", n, i, i)
	}
	if err := os.WriteFile(filepath.Join(w.dir, "topics.yaml"), []byte(tb.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	w.topics = targetTopics
	return w
}

// deliverySteps are the indexes (1-based) of the steps of a run inside a
// delivery: from the committed mark, through the target's steps, to the
// record about to commit. (A kill before the mark commits or after the
// record did is the same for every target: TestCrashPoints has them.)
func deliverySteps(steps []string, target string) []int {
	var out []int
	for i, name := range steps {
		if strings.HasPrefix(name, target+":") || strings.HasPrefix(name, "committed: mark publishing") || strings.HasPrefix(name, "before commit: finish job") {
			out = append(out, i+1)
		}
	}
	return out
}

// jobIDs are the world's published job ids and their recorded locations.
func jobIDs(t *testing.T, w *simWorld, label string) map[string]string {
	t.Helper()
	var f crashFigures
	finish(t, w, &f)
	db := filepath.Join(w.dir, "data", "pipeline.db")
	integrity(t, db)
	conn := openDB(t, db)
	rows, err := conn.Query("SELECT id, location FROM jobs WHERE status = 'published'")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ids := map[string]string{}
	for rows.Next() {
		var id, loc string
		if err := rows.Scan(&id, &loc); err != nil {
			t.Fatal(err)
		}
		ids[id] = loc
	}
	if len(ids) != w.topics {
		t.Fatalf("%s: %d of %d jobs published:\n%s", label, len(ids), w.topics, dumpJobs(t, conn, ""))
	}
	return ids
}

// filesByJob maps job ids (front matter job_id) to the files under root
// matching pattern that carry them.
func filesByJob(t *testing.T, root, pattern string) map[string][]string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(root, pattern))
	byJob := map[string][]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			if id, ok := strings.CutPrefix(line, "job_id: "); ok {
				id = strings.Trim(id, `"`)
				byJob[id] = append(byJob[id], f)
			}
		}
	}
	return byJob
}

func TestCrashPointsSiteTargets(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("crash points: skipped with -short")
	}
	for _, tc := range []struct {
		kind, publish, files string
	}{
		{"hugo", "{kind: hugo, dir: site}", "site/content/posts/*.md"},
		{"hugo", "{kind: hugo, dir: site, bundle: true}", "site/content/posts/*/index.md"},
		{"jekyll", "{kind: jekyll, dir: site}", "site/_posts/*.md"},
	} {
		t.Run(tc.publish, func(t *testing.T) {
			t.Parallel()
			steps := stepNames(t, targetWorld(t, tc.publish))
			kills := deliverySteps(steps, tc.kind)
			if len(kills) != targetTopics*5 { // per job: the committed mark, the three file steps, the record about to commit
				t.Fatalf("%d delivery steps of %s in %q", len(kills), tc.kind, steps)
			}
			for _, n := range kills {
				w := targetWorld(t, tc.publish)
				runUntilKilled(t, w, strconv.Itoa(n))
				label := fmt.Sprintf("%s killed at step %d (%s)", tc.kind, n, steps[n-1])
				ids := jobIDs(t, w, label)
				byJob := filesByJob(t, w.dir, tc.files)
				for id, loc := range ids {
					if fs := byJob[id]; len(fs) != 1 || fs[0] != loc {
						t.Fatalf("%s: job %s has files %v, recorded at %s", label, id, fs, loc)
					}
				}
				if len(byJob) != len(ids) {
					t.Fatalf("%s: files of %d jobs, %d published", label, len(byJob), len(ids))
				}
				if tmp, _ := filepath.Glob(filepath.Join(w.dir, filepath.Dir(tc.files), ".*.tmp-*")); len(tmp) > 0 {
					t.Fatalf("%s: temp files left: %v", label, tmp)
				}
			}
			t.Logf("%s: %d kills in the deliveries of %d jobs; every job one file", tc.publish, len(kills), targetTopics)
		})
	}
}

// TestWordPressKillSweep kills the real binary at every step of its
// deliveries to the real WordPress and counts each job's posts through the
// REST API: one each, at the link the database recorded.
func TestWordPressKillSweep(t *testing.T) {
	if testing.Short() {
		t.Skip("crash points: skipped with -short")
	}
	t.Parallel()
	site := wordpresstest.Open(t, wordpresstest.EnvSite)
	cfg := fmt.Sprintf("{kind: wordpress, url: %q, user: %q, password_env: T_WP_PASSWORD}", site.URL, site.User)
	env := "T_WP_PASSWORD=" + site.Password
	var created []int
	t.Cleanup(func() { site.Delete(t, created...) })
	probe := targetWorld(t, cfg, env)
	steps := stepNames(t, probe)
	for id := range jobIDs(t, probe, "probe") {
		for _, p := range site.Search(t, publish.JobKey(id)) {
			created = append(created, p.ID)
		}
	}
	kills := deliverySteps(steps, "wordpress")
	for _, want := range []string{"wordpress: looking up", "wordpress: terms ready", "wordpress: creating", "wordpress: request written", "wordpress: created"} {
		if !strings.Contains(strings.Join(steps, "\n"), want) {
			t.Fatalf("no step %q in %q", want, steps)
		}
	}
	perJob := map[int]int{}
	start := time.Now()
	for _, n := range append([]int{0}, kills...) {
		w := targetWorld(t, cfg, env)
		label := "no kill"
		if n > 0 {
			runUntilKilled(t, w, strconv.Itoa(n))
			label = fmt.Sprintf("killed at step %d (%s)", n, steps[n-1])
		}
		for id, loc := range jobIDs(t, w, label) {
			posts := site.Search(t, publish.JobKey(id))
			for _, p := range posts {
				created = append(created, p.ID)
			}
			perJob[len(posts)]++
			if len(posts) != 1 || posts[0].Link != loc {
				t.Fatalf("%s: job %s has %d posts (recorded at %s)", label, id, len(posts), loc)
			}
		}
	}
	t.Logf("WordPress: %d kills at the steps of %d deliveries, then reruns: posts per job %v (count: jobs) (%s)",
		len(kills), targetTopics, perJob, time.Since(start).Round(time.Second))
}

// TestWordPressRefusedPasswordHalts: the real WordPress refuses a wrong
// application password with 401; the run halts (exit 3) with the alert
// of an auth failure, takes no further job, and the job waits marked; the
// next run with the right password publishes it once.
func TestWordPressRefusedPasswordHalts(t *testing.T) {
	t.Parallel()
	site := wordpresstest.Open(t, wordpresstest.EnvSite)
	cfg := fmt.Sprintf("{kind: wordpress, url: %q, user: %q, password_env: T_WP_PASSWORD}", site.URL, site.User)
	w := targetWorld(t, cfg, "T_WP_PASSWORD=not-the-password")
	r := run(t, w.dir, w.env, "run")
	if r.code != exitHalted || !strings.Contains(r.stderr+r.stdout, "refused our credentials (401") || !strings.Contains(r.stderr+r.stdout, "publish.user") {
		t.Fatalf("exit %d, want %d with the auth failure and its fix:\n%s\n%s", r.code, exitHalted, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, "not-the-password") {
		t.Fatal("the password was printed")
	}
	conn := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
	if n := count(t, conn, "SELECT COUNT(*) FROM alerts WHERE rule = 'auth_error'"); n != 1 {
		t.Errorf("%d auth_error alerts, want 1", n)
	}
	if n := count(t, conn, "SELECT COUNT(*) FROM jobs WHERE status = 'publishing'"); n != 1 {
		t.Errorf("%d jobs wait marked, want 1 (the run took no further job):\n%s", n, dumpJobs(t, conn, ""))
	}
	w.env = append(w.env, "T_WP_PASSWORD="+site.Password)
	for id := range jobIDs(t, w, "after the fix") {
		posts := site.Search(t, publish.JobKey(id))
		for _, p := range posts {
			id := p.ID
			t.Cleanup(func() { site.Delete(t, id) })
		}
		if len(posts) != 1 {
			t.Errorf("job %s: %d posts", id, len(posts))
		}
	}
}

// siteTopics are the end-to-end topics: three plain ones, with categories
// that break URLs when written as they are, and two whose title and
// keywords carry markup, which the providers' answers then repeat in their
// text (the simulators write keywords into sentences) — an answer steered
// by someone else's text.
const siteTopics = `- {id: compost, title: "Home composting for beginners", category: "dev/tools", keywords: [compost, garden]}
- {id: kueche, title: "Ordnung in der Küche: kleine Räume", category: "Küche & Haushalt", keywords: [ordnung, kueche]}
- {id: ekmek, title: "Evde ekmek mayası", category: "Mutfak", language: tr, keywords: [ekmek, maya]}
- {id: hostile, title: "Hostile <script>alert(1)</script> {{< notice >}} guide", category: Security, keywords: ["<script>alert('xss')</script>", "{{< notice warning >}}", "{% for p in site.posts %}"]}
- {id: hostile-2, title: "Second hostile guide", category: Security, keywords: ["<img src=x onerror=alert(1)>", "[click](javascript:alert(1))", "{{ .Site.Params.secret }}"]}
`

// TestSitesEndToEnd is the whole story on the real binary and the real
// generators: a run publishes the plain topics to a Hugo and a Jekyll
// site, sends the two hostile answers to review (markup is a defect),
// `review approve` publishes them escaped, and hugo and jekyll build every
// article into a page with its title, date and terms, and no script.
func TestSitesEndToEnd(t *testing.T) {
	t.Parallel()
	for _, kind := range []string{"hugo", "jekyll"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			var bin string
			var site map[string]string
			if kind == "hugo" {
				bin, site = sitetest.Hugo(t), sitetest.HugoSite
			} else {
				bin, site = sitetest.Jekyll(t), sitetest.JekyllSite
			}
			w := newWorld(t, worldOptions{topics: 0, profiles: crashPointProfiles(), publish: fmt.Sprintf("{kind: %s, dir: site}", kind),
				job: "{posts_per_run: 10, deadline: 1m, language: en, target_words: 400, parallel: 1}"})
			if err := os.WriteFile(filepath.Join(w.dir, "topics.yaml"), []byte(siteTopics), 0o644); err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(w.dir, "site")
			if keep := os.Getenv("CONTENTPIPE_KEEP_SITES"); keep != "" {
				dir = sitetest.Dir(t, "e2e-"+kind)
				if err := os.Symlink(dir, filepath.Join(w.dir, "site")); err != nil {
					t.Fatal(err)
				}
			}
			sitetest.WriteFiles(t, dir, site)
			r := run(t, w.dir, w.env, "run")
			if r.code != 1 || !strings.Contains(r.stdout, "3 published, 2 review") {
				t.Fatalf("run: exit %d, want 1 with 3 published and 2 in review:\n%s\n%s", r.code, r.stdout, r.stderr)
			}
			for _, id := range []string{"hostile", "hostile-2"} {
				show := run(t, w.dir, w.env, "review", "show", id)
				if !strings.Contains(show.stdout, "markup") {
					t.Errorf("review show %s does not name the markup:\n%s", id, show.stdout)
				}
				if a := run(t, w.dir, w.env, "review", "approve", id); a.code != 0 {
					t.Fatalf("review approve %s: exit %d\n%s\n%s", id, a.code, a.stdout, a.stderr)
				}
			}
			conn := openDB(t, filepath.Join(w.dir, "data", "pipeline.db"))
			rows, err := conn.Query("SELECT id, title, location, published_at FROM jobs WHERE status = 'published' ORDER BY id")
			if err != nil {
				t.Fatal(err)
			}
			type pub struct{ id, title, loc, at string }
			var pubs []pub
			for rows.Next() {
				var p pub
				if err := rows.Scan(&p.id, &p.title, &p.loc, &p.at); err != nil {
					t.Fatal(err)
				}
				pubs = append(pubs, p)
			}
			rows.Close()
			if len(pubs) != 5 {
				t.Fatalf("%d jobs published, want 5", len(pubs))
			}
			args := []string{"--quiet"}
			if kind == "jekyll" {
				args = []string{"build"}
			}
			out := sitetest.Build(t, dir, bin, args...)
			pages := 0
			for _, p := range pubs {
				doc := sitetest.Read(t, p.loc)
				slug := frontMatterValue(doc, "slug")
				var page string
				if kind == "hugo" {
					page = sitetest.Read(t, filepath.Join(dir, "public", "posts", slug, "index.html"))
				} else {
					url := strings.TrimSuffix(strings.NewReplacer(":year", p.at[:4], ":month", p.at[5:7], ":day", p.at[8:10], ":title", slug, ":output_ext", ".html").
						Replace(frontMatterValue(doc, "permalink")), "/")
					page = sitetest.Read(t, filepath.Join(dir, "_site", filepath.FromSlash(url)))
				}
				pages++
				title := frontMatterValue(doc, "title")
				if !strings.Contains(page, html.EscapeString(title)+"</h1>") {
					t.Errorf("%s: the page does not show the title %q", p.id, title)
				}
				if !strings.Contains(page, `datetime="`+p.at[:10]) {
					t.Errorf("%s: the page has no date %s", p.id, p.at[:10])
				}
				sitetest.NoActiveMarkup(t, p.id, page)
			}
			t.Logf("%s: %d articles published (2 of them hostile, approved from review), %d pages built; %s", kind, len(pubs), pages, strings.TrimSpace(out))
		})
	}
}

// frontMatterValue is the value of a "key: value" line of a document's
// front matter, unquoted.
func frontMatterValue(doc, key string) string {
	for _, line := range strings.Split(doc, "\n") {
		if v, ok := strings.CutPrefix(line, key+": "); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return v
		}
	}
	return ""
}

// Package wordpresstest reaches the real WordPress the wordpress tests run
// against: the site scripts/wordpress.sh installs and starts on loopback
// (Debian's wordpress package on PHP's built-in server with MariaDB), named
// by CONTENTPIPE_TEST_WORDPRESS=http://USER:APPLICATION-PASSWORD@HOST:PORT.
// Without it a test skips, saying how to get it; with
// CONTENTPIPE_REQUIRE_WORDPRESS=1 (CI, whose .ci/run starts the site) it
// fails instead.
package wordpresstest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The variables: the Editor's site URL, the Author's, and the switch that
// turns a missing site into a failure.
const (
	EnvSite    = "CONTENTPIPE_TEST_WORDPRESS"
	EnvAuthor  = "CONTENTPIPE_TEST_WORDPRESS_AUTHOR"
	EnvRequire = "CONTENTPIPE_REQUIRE_WORDPRESS"
)

// Site is one user's access to the test WordPress.
type Site struct {
	URL      string // the site's address, without user info
	User     string
	Password string // the user's application password
}

// Open returns the site env names (EnvSite or EnvAuthor) after checking
// that it answers as that user; it skips t (fails it under EnvRequire=1)
// when env is unset or the site does not answer.
func Open(t testing.TB, env string) Site {
	t.Helper()
	raw := os.Getenv(env)
	how := "run scripts/wordpress.sh as root (it installs Debian's wordpress, php-cli and mariadb-server and starts the site on 127.0.0.1:8089), then: set -a; . /var/lib/contentpipe-wordpress/env; set +a"
	if raw == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s is not set but %s=1: %s", env, EnvRequire, how)
		}
		t.Skipf("WordPress test skipped: %s is not set; %s", env, how)
	}
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		t.Fatalf("%s must be http://USER:APPLICATION-PASSWORD@HOST:PORT", env)
	}
	pw, _ := u.User.Password()
	s := Site{User: u.User.Username(), Password: pw}
	u.User = nil
	s.URL = strings.TrimRight(u.String(), "/")
	var me struct {
		Slug string `json:"slug"`
	}
	if err := s.get("wp/v2/users/me", nil, &me); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("the WordPress of %s does not answer as %s: %v (%s)", env, s.User, err, how)
		}
		t.Skipf("WordPress test skipped: the site of %s does not answer: %v; %s", env, err, how)
	}
	return s
}

// Nonce is a fresh suffix for job ids: the site keeps every run's posts
// until a test deletes them, and a job id seen before would be found.
func Nonce() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return strconv.FormatInt(time.Now().Unix(), 36) + hex.EncodeToString(b[:])
}

// Text is a field WordPress gives raw (context=edit) and rendered.
type Text struct {
	Raw      string `json:"raw"`
	Rendered string `json:"rendered"`
}

// Post is a post as the REST API shows it with context=edit.
type Post struct {
	ID         int    `json:"id"`
	Link       string `json:"link"`
	Status     string `json:"status"`
	Slug       string `json:"slug"`
	DateGMT    string `json:"date_gmt"`
	Title      Text   `json:"title"`
	Content    Text   `json:"content"`
	Excerpt    Text   `json:"excerpt"`
	Categories []int  `json:"categories"`
	Tags       []int  `json:"tags"`
}

// Statuses are every status a post can have, for the lookups.
const Statuses = "publish,future,draft,pending,private,trash"

// Search returns every post, in any status, whose title, excerpt or
// content holds term.
func (s Site) Search(t testing.TB, term string) []Post {
	t.Helper()
	var posts []Post
	q := url.Values{"search": {term}, "status": {Statuses}, "context": {"edit"}, "per_page": {"100"}}
	if err := s.get("wp/v2/posts", q, &posts); err != nil {
		t.Fatalf("search posts for %q: %v", term, err)
	}
	return posts
}

// Post returns one post by id.
func (s Site) Post(t testing.TB, id int) Post {
	t.Helper()
	var p Post
	if err := s.get("wp/v2/posts/"+strconv.Itoa(id), url.Values{"context": {"edit"}}, &p); err != nil {
		t.Fatalf("post %d: %v", id, err)
	}
	return p
}

// TermNames returns the names of the terms of taxonomy ("categories",
// "tags") with these ids, unescaped, in the order of ids.
func (s Site) TermNames(t testing.TB, taxonomy string, ids []int) []string {
	t.Helper()
	names := make([]string, 0, len(ids))
	for _, id := range ids {
		var term struct {
			Name string `json:"name"`
		}
		if err := s.get("wp/v2/"+taxonomy+"/"+strconv.Itoa(id), nil, &term); err != nil {
			t.Fatalf("%s %d: %v", taxonomy, id, err)
		}
		names = append(names, html.UnescapeString(term.Name))
	}
	return names
}

// Delete removes posts for good (not to the trash).
func (s Site) Delete(t testing.TB, ids ...int) {
	t.Helper()
	for _, id := range ids {
		if err := s.do(http.MethodDelete, "wp/v2/posts/"+strconv.Itoa(id), url.Values{"force": {"true"}}, nil, nil); err != nil {
			t.Errorf("delete post %d: %v", id, err)
		}
	}
}

// Create posts a raw post as this user (no contentpipe in between) and
// returns it as WordPress stored it.
func (s Site) Create(t testing.TB, fields map[string]any) Post {
	t.Helper()
	var p Post
	if err := s.do(http.MethodPost, "wp/v2/posts", url.Values{"context": {"edit"}}, fields, &p); err != nil {
		t.Fatalf("create post: %v", err)
	}
	return s.Post(t, p.ID)
}

// Page fetches a public page of the site.
func (s Site) Page(t testing.TB, link string) string {
	t.Helper()
	resp, err := http.Get(link)
	if err != nil {
		t.Fatalf("get %s: %v", link, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("get %s: %s", link, resp.Status)
	}
	return string(b)
}

func (s Site) get(route string, q url.Values, out any) error {
	return s.do(http.MethodGet, route, q, nil, out)
}

func (s Site) do(method, route string, q url.Values, in, out any) error {
	u := s.URL + "/wp-json/" + route
	if q != nil {
		u += "?" + q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = strings.NewReader(string(b))
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		return err
	}
	req.SetBasicAuth(s.User, s.Password)
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c := http.Client{Timeout: 30 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: %s: %.300s", method, route, resp.Status, b)
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(b, out)
}

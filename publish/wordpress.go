package publish

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"strings"
	"time"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"

	"github.com/contentpipe/contentpipe/chain"
)

// WordPress publishes each article as a post of a WordPress site through
// its REST API (POST /wp-json/wp/v2/posts), authenticated with an
// application password (Users → Profile → Application Passwords; HTTP
// Basic with User and Password). The post gets the title, the article as
// HTML, an excerpt (the first paragraph as plain text), the slug, Status
// (publish, draft or future: then it goes live Delay after publication,
// default 24 h), date_gmt, and the topic's category and keywords as
// categories and tags, each found by name or created.
//
// At most once, on a stock WordPress: the post carries its job's key — an
// HTML comment "<!-- contentpipe cpjob<32 hex of sha256(job id)> -->" at
// the end of its content, invisible on the page, kept by WordPress's own
// filters (kses) — and every delivery looks the key up (the REST search of
// posts in every status, trash included, then the slug) before it creates
// anything, so a delivery killed before, during or after the POST leaves
// one post per job: the next one finds it and returns its link. Meta
// fields would need a plugin to be visible to the REST API; the slug alone
// would not do (WordPress gives a taken slug a "-2" and a person may edit
// it). Categories and tags are idempotent by name (WordPress refuses a
// second term of one name and says which exists).
//
// Model text is rendered to HTML with HTML and template openers escaped
// (escape.go) and every '[' written as &#91;, so that no WordPress
// shortcode runs; bare URLs become links, so none is turned into an embed.
// The user needs the Editor role (or Administrator): an Author may publish
// but not create categories or tags.
//
// A 401 or 403 is a *chain.PublishAuthError (the run halts); a 5xx, a
// timeout or a 3xx (never followed: net/http would turn the POST into a
// GET) is an error that leaves the job for a later run. The password never
// appears in an error. A WordPress is safe for concurrent use.
type WordPress struct {
	URL      string // the site's address, e.g. https://example.org (the REST API is under /wp-json/)
	User     string
	Password string
	Status   string        // publish (""), draft or future
	Delay    time.Duration // status future: how long after publication the post goes live; 0 = 24h
	Client   *http.Client  // nil = a client with a 30 s timeout
	// Step, when set, is called at each step of a delivery WordPress may
	// see: the crash tests kill the process there.
	Step func(step string)
}

var (
	_ chain.Publisher = (*WordPress)(nil)
	_ Stepper         = (*WordPress)(nil)
)

// wordpressTarget is the wordpress kind's entry in the table of targets.
var wordpressTarget = Target{
	Kind:  KindWordPress,
	Keys:  []string{"url", "user", "password_env", "status", "delay"},
	Check: checkWordPress,
	New: func(o Options) chain.Publisher {
		return &WordPress{URL: o.URL, User: o.User, Password: o.Password, Status: o.Status, Delay: o.Delay, Client: o.Client}
	},
	Place: func(o Options) string { return "wordpress " + siteAddress(o.URL) },
}

// WordPress post statuses publish.status accepts.
var wordpressStatuses = []string{"publish", "draft", "future"}

func checkWordPress(o Options) []Problem {
	ps := checkHTTPURL(o.URL, "add url: https://… (the site's address; the REST API is under /wp-json/)")
	if o.User == "" {
		ps = append(ps, Problem{Key: "user", Problem: "missing", Fix: "add user: the WordPress user the application password belongs to (an Editor or Administrator)"})
	}
	if o.Password == "" {
		ps = append(ps, Problem{Key: "password_env", Problem: "missing",
			Fix: "add password_env: WORDPRESS_APP_PASSWORD and export the user's application password there (Users → Profile → Application Passwords)"})
	}
	if o.Status != "" && !contains(wordpressStatuses, o.Status) {
		ps = append(ps, Problem{Key: "status", Problem: fmt.Sprintf("unknown status %q", o.Status), Fix: "use publish, draft or future"})
	}
	if o.Delay < 0 {
		ps = append(ps, Problem{Key: "delay", Problem: "must not be negative", Fix: "give how long after publication a future post goes live, e.g. 24h"})
	}
	return ps
}

func contains(list []string, v string) bool {
	for _, s := range list {
		if s == v {
			return true
		}
	}
	return false
}

// SetStep sets Step.
func (w *WordPress) SetStep(step func(string)) { w.Step = step }

func (w *WordPress) step(name string) {
	if w.Step != nil {
		w.Step("wordpress: " + name)
	}
}

// defaultFutureDelay is WordPress.Delay when it is 0.
const defaultFutureDelay = 24 * time.Hour

// wpPost is a delivery's body: the post to create, with its categories and
// tags by name (their ids are the site's, found when it is delivered).
type wpPost struct {
	Key        string   `json:"key"`
	Title      string   `json:"title"`
	Content    string   `json:"content"`
	Excerpt    string   `json:"excerpt"`
	Slug       string   `json:"slug"`
	Status     string   `json:"status"`
	DateGMT    string   `json:"date_gmt"`
	Categories []string `json:"categories"`
	Tags       []string `json:"tags"`
}

// JobKey is the key a WordPress post carries for its job: "cpjob" and 32
// hex digits of sha256(job id). Search the posts for it to find a job's
// post (wp-admin's search box, or /wp-json/wp/v2/posts?search=KEY).
func JobKey(jobID string) string {
	sum := sha256.Sum256([]byte(jobID))
	return "cpjob" + hex.EncodeToString(sum[:16])
}

// marker is the HTML comment that carries key in a post's content.
func marker(key string) string { return "<!-- contentpipe " + key + " -->" }

// withMarker puts key's marker inside the first element of content (before
// its first closing tag): WordPress wraps a comment that stands alone in a
// paragraph of its own, which a theme shows as an empty line.
func withMarker(content, key string) string {
	if i := strings.Index(content, "</"); i >= 0 {
		return content[:i] + marker(key) + content[i:]
	}
	return content + marker(key) + "\n"
}

// Location is URL#<job id>; Deliver returns the post's link instead.
func (w *WordPress) Location(a chain.Article) string { return siteAddress(w.URL) + "#" + a.JobID }

// Prepare renders a as the post to create (the same Article always gives
// the same bytes); it calls nothing.
func (w *WordPress) Prepare(_ context.Context, a chain.Article) (chain.Delivery, error) {
	if a.JobID == "" {
		return chain.Delivery{}, errors.New("publish wordpress: article has no job id")
	}
	status := w.Status
	if status == "" {
		status = "publish"
	}
	date := a.Date.UTC()
	if status == "future" {
		d := w.Delay
		if d == 0 {
			d = defaultFutureDelay
		}
		date = date.Add(d)
	}
	content, err := wordpressHTML(a)
	if err != nil {
		return chain.Delivery{}, fmt.Errorf("publish wordpress %s: render: %w", a.JobID, err)
	}
	key := JobKey(a.JobID)
	p := wpPost{Key: key, Title: html.EscapeString(plainText(a.Title)), Content: withMarker(content, key),
		Excerpt: html.EscapeString(description(a.Sections)), Slug: articleSlug(a), Status: status,
		DateGMT: date.Format("2006-01-02T15:04:05"), Categories: terms(a.Category), Tags: terms(a.Keywords...)}
	body, err := json.Marshal(p)
	if err != nil {
		return chain.Delivery{}, fmt.Errorf("publish wordpress %s: encode: %w", a.JobID, err)
	}
	return chain.Delivery{JobID: a.JobID, Location: w.Location(a), Body: body}, nil
}

// markdownHTML renders Markdown to HTML: CommonMark with tables,
// strikethrough and bare URLs as links; raw HTML is never passed through.
var markdownHTML = goldmark.New(goldmark.WithExtensions(extension.Table, extension.Strikethrough, extension.Linkify))

// wordpressHTML is the article's sections as HTML for a post: escaped as
// every Markdown target escapes model text, rendered, and '[' written as
// &#91; so that WordPress runs no shortcode of it.
func wordpressHTML(a chain.Article) (string, error) {
	var b bytes.Buffer
	if err := markdownHTML.Convert([]byte(markdownBody(a, codeVerbatim)), &b); err != nil {
		return "", err
	}
	return strings.ReplaceAll(b.String(), "[", "&#91;"), nil
}

// Publish is Prepare, then Deliver.
func (w *WordPress) Publish(ctx context.Context, a chain.Article) (string, error) {
	d, err := w.Prepare(ctx, a)
	if err != nil {
		return "", err
	}
	return w.Deliver(ctx, d)
}

// Deliver creates the post d describes unless the site already has the
// post of d's job, and returns the post's link.
func (w *WordPress) Deliver(ctx context.Context, d chain.Delivery) (string, error) {
	var p wpPost
	if err := json.Unmarshal(d.Body, &p); err != nil || p.Key == "" {
		return "", fmt.Errorf("publish wordpress %s: the delivery is not a WordPress post", d.JobID)
	}
	link, err := w.deliver(ctx, p)
	if err != nil {
		return "", fmt.Errorf("publish wordpress %s: %w", d.JobID, err)
	}
	return link, nil
}

func (w *WordPress) deliver(ctx context.Context, p wpPost) (string, error) {
	// WordPress serves a request with credentials it does not accept as an
	// anonymous one (a search of drafts then fails with a 400): ask who we
	// are first, which answers 401 for them.
	var me struct {
		ID int `json:"id"`
	}
	if err := w.call(ctx, http.MethodGet, "wp/v2/users/me", url.Values{"_fields": {"id"}}, nil, &me); err != nil {
		return "", fmt.Errorf("check the credentials: %w", err)
	}
	w.step("looking up")
	if link, ok, err := w.find(ctx, p); err != nil || ok {
		return link, err
	}
	cats, err := w.termIDs(ctx, "categories", p.Categories)
	if err != nil {
		return "", err
	}
	tags, err := w.termIDs(ctx, "tags", p.Tags)
	if err != nil {
		return "", err
	}
	w.step("terms ready")
	req := map[string]any{"title": p.Title, "content": p.Content, "excerpt": p.Excerpt, "slug": p.Slug,
		"status": p.Status, "date_gmt": p.DateGMT, "categories": cats, "tags": tags}
	var created struct {
		ID   int    `json:"id"`
		Link string `json:"link"`
	}
	w.step("creating")
	// The request written and its answer not yet read: the kill "during
	// the POST" of the crash tests.
	trace := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) { w.step("request written") }})
	if err := w.call(trace, http.MethodPost, "wp/v2/posts", nil, req, &created); err != nil {
		return "", fmt.Errorf("create post: %w", err)
	}
	w.step("created")
	if created.Link == "" {
		return "", fmt.Errorf("create post: WordPress answered without the post's link")
	}
	return created.Link, nil
}

// lookupStatuses are every status a post of ours may have: a post a person
// trashed still counts as delivered.
const lookupStatuses = "publish,future,draft,pending,private,trash"

// find looks for the post that carries p's key: by a search of every
// status for the key, then by p's slug, each answer checked for the
// marker in its raw content.
func (w *WordPress) find(ctx context.Context, p wpPost) (string, bool, error) {
	for _, q := range []url.Values{{"search": {p.Key}}, {"slug": {p.Slug}}} {
		q.Set("status", lookupStatuses)
		q.Set("context", "edit")
		q.Set("per_page", "20")
		q.Set("_fields", "id,link,content")
		var posts []struct {
			Link    string `json:"link"`
			Content struct {
				Raw string `json:"raw"`
			} `json:"content"`
		}
		if err := w.call(ctx, http.MethodGet, "wp/v2/posts", q, nil, &posts); err != nil {
			return "", false, fmt.Errorf("look up the job's post: %w", err)
		}
		for _, post := range posts {
			if strings.Contains(post.Content.Raw, marker(p.Key)) {
				return post.Link, true, nil
			}
		}
	}
	return "", false, nil
}

// termIDs finds or creates each named term of taxonomy ("categories",
// "tags") and returns their ids in order.
func (w *WordPress) termIDs(ctx context.Context, taxonomy string, names []string) ([]int, error) {
	ids := []int{}
	for _, name := range names {
		id, err := w.termID(ctx, taxonomy, name)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", taxonomy, name, err)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

func (w *WordPress) termID(ctx context.Context, taxonomy, name string) (int, error) {
	var found []struct {
		ID   int    `json:"id"`
		Name string `json:"name"`
	}
	q := url.Values{"search": {name}, "per_page": {"100"}, "_fields": {"id,name"}, "hide_empty": {"false"}}
	if err := w.call(ctx, http.MethodGet, "wp/v2/"+taxonomy, q, nil, &found); err != nil {
		return 0, err
	}
	for _, t := range found {
		// WordPress stores names HTML-escaped ("Küche &amp; Haushalt") and
		// compares them ignoring case.
		if strings.EqualFold(html.UnescapeString(t.Name), name) {
			return t.ID, nil
		}
	}
	var created struct {
		ID int `json:"id"`
	}
	err := w.call(ctx, http.MethodPost, "wp/v2/"+taxonomy, nil, map[string]string{"name": name}, &created)
	var se *WordPressError
	if errors.As(err, &se) && se.Code == "term_exists" && se.TermID > 0 {
		return se.TermID, nil // a name the search did not match (escaped characters): WordPress says which
	}
	if err != nil {
		return 0, err
	}
	return created.ID, nil
}

// WordPressError is a WordPress answer other than 2xx (and other than 401
// or 403, which are a *chain.PublishAuthError): its status, WordPress's
// error code and message, and for a 3xx where it pointed (not followed).
type WordPressError struct {
	StatusCode int
	Code       string // e.g. "rest_invalid_param", "term_exists"
	Message    string
	Location   string // 3xx: the address it redirected to, without query
	TermID     int    // term_exists: the existing term
}

func (e *WordPressError) Error() string {
	s := fmt.Sprintf("WordPress answered %d %s", e.StatusCode, http.StatusText(e.StatusCode))
	if e.StatusCode/100 == 3 {
		s += " (redirect not followed"
		if e.Location != "" {
			s += ": " + e.Location + "; set publish.url to that address"
		}
		s += ")"
	}
	if e.Code != "" {
		s += ": " + e.Code
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// Retryable reports whether a later delivery may succeed: 5xx, 408, 429
// and 3xx. Other 4xx answers need a change on one side or the other.
func (e *WordPressError) Retryable() bool {
	return e.StatusCode >= 500 || e.StatusCode/100 == 3 ||
		e.StatusCode == http.StatusRequestTimeout || e.StatusCode == http.StatusTooManyRequests
}

// wpResponseLimit bounds how much of one answer is read.
const wpResponseLimit = 16 << 20

// call sends one REST request to route (under /wp-json/) and decodes a 2xx
// answer's JSON into out.
func (w *WordPress) call(ctx context.Context, method, route string, q url.Values, in, out any) error {
	base, err := url.Parse(strings.TrimRight(w.URL, "/") + "/wp-json/" + route)
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return errors.New("url must be the site's absolute http(s) address")
	}
	if q != nil {
		base.RawQuery = q.Encode()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return err
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, base.String(), body)
	if err != nil {
		return fmt.Errorf("build request: %w", err)
	}
	req.SetBasicAuth(w.User, w.Password)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "contentpipe")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := w.client().Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is named below, without its query
		}
		return fmt.Errorf("%s %s: %w", method, safeURL(base), err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, wpResponseLimit))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, safeURL(base), err)
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(raw, out); err != nil {
			return fmt.Errorf("%s %s: the answer is not the REST API's JSON (is %s a WordPress site with /wp-json/ reachable?): %v",
				method, safeURL(base), siteAddress(w.URL), err)
		}
		return nil
	}
	return w.statusError(resp, base, raw)
}

// statusError turns an answer outside 2xx into a *chain.PublishAuthError
// (401, 403) or a *WordPressError.
func (w *WordPress) statusError(resp *http.Response, u *url.URL, raw []byte) error {
	var e struct {
		Code    string `json:"code"`
		Message string `json:"message"`
		Data    struct {
			TermID int `json:"term_id"`
		} `json:"data"`
	}
	_ = json.Unmarshal(raw, &e)
	msg := e.Message
	if msg == "" && e.Code == "" {
		msg = string(raw)
	}
	msg = w.quote(html.UnescapeString(msg))
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		if e.Code != "" {
			msg = e.Code + ": " + msg
		}
		return &chain.PublishAuthError{Target: "wordpress " + siteAddress(w.URL), Status: resp.StatusCode, Message: msg,
			Fix: fmt.Sprintf("Check publish.user (%s) and the application password in the variable publish.password_env names, and that the user is an Editor or Administrator (it creates posts, categories and tags)", w.quote(w.User))}
	}
	we := &WordPressError{StatusCode: resp.StatusCode, Code: w.quote(e.Code), Message: msg, TermID: e.Data.TermID}
	if l := resp.Header.Get("Location"); resp.StatusCode/100 == 3 && l != "" {
		if loc, err := u.Parse(l); err == nil {
			we.Location = w.quote(safeURL(loc))
		}
	}
	return we
}

// client is Client (or a 30 s client) made to refuse every redirect. A
// copy is changed, never the caller's.
func (w *WordPress) client() *http.Client {
	c := http.Client{Timeout: defaultTimeout}
	if w.Client != nil {
		c = *w.Client
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &c
}

// quote makes text from an answer fit for an error: valid UTF-8, one line,
// at most 512 bytes, the password redacted.
func (w *WordPress) quote(s string) string {
	s = oneLine(strings.ToValidUTF8(s, "\uFFFD"))
	if w.Password != "" {
		s = strings.ReplaceAll(s, w.Password, "[redacted]")
	}
	if len(s) > responseQuoteLimit {
		s = strings.ToValidUTF8(s[:responseQuoteLimit], "") + "…"
	}
	return s
}

// siteAddress is a site URL without user info, query, fragment and
// trailing slash.
func siteAddress(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return strings.TrimRight(raw, "/")
	}
	return strings.TrimRight(safeURL(u), "/")
}

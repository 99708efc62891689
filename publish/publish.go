package publish

import (
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Kind names a publishing target: the value of the config's publish.kind.
type Kind string

// The publishing kinds, in the order of the README.
const (
	KindMarkdown  Kind = "markdown"
	KindHugo      Kind = "hugo"
	KindJekyll    Kind = "jekyll"
	KindWebhook   Kind = "webhook"
	KindWordPress Kind = "wordpress"
)

// Options are the settings of a target, from the config's publish:
// section; each kind reads the fields its Target lists in Keys and ignores
// the others. The zero value of each field is its documented default.
type Options struct {
	Dir      string        // markdown: the output directory; hugo, jekyll: the site's root
	Section  string        // hugo: the content section; "" = "posts"
	Bundle   bool          // hugo: one page bundle per article (<slug>/index.md)
	URL      string        // webhook: the endpoint; wordpress: the site's address
	Secret   []byte        // webhook: the HMAC key; nil = unsigned
	User     string        // wordpress: the user the application password belongs to
	Password string        // wordpress: the application password; never printed
	Status   string        // wordpress: publish (""), draft or future
	Delay    time.Duration // wordpress, status future: how long after publication the post goes live; 0 = 24h
	Client   *http.Client  // webhook, wordpress: nil = a client with a 30 s timeout
}

// Problem is one thing wrong with a kind's Options, named by its config
// key (without "publish."), with the fix.
type Problem struct {
	Key, Problem, Fix string
}

// Target is one publishing kind: the config keys it reads, what it needs of
// them, how it is built and how its place is named in the database.
type Target struct {
	Kind Kind
	// Keys are the publish.* keys (besides kind) the kind reads; the config
	// warns about any other key that is set.
	Keys []string
	// Check returns what is missing or wrong in o (nil = nothing).
	Check func(o Options) []Problem
	// New builds the publisher from checked options.
	New func(o Options) chain.Publisher
	// Place names where the kind publishes, recorded by the database on
	// its first publishing run so that a database is never used with two
	// targets: "<kind> <absolute dir>" or "<kind> <url without query>".
	Place func(o Options) string
}

// targets is the table of publishing kinds: adding one is its own file
// (its Target value and its publisher), its line here, its tests and its
// README section.
var targets = []Target{markdownTarget, hugoTarget, jekyllTarget, webhookTarget, wordpressTarget}

// Kinds returns every publishing kind, in the table's order.
func Kinds() []Kind {
	out := make([]Kind, len(targets))
	for i, t := range targets {
		out[i] = t.Kind
	}
	return out
}

// Lookup returns the Target of kind.
func Lookup(kind Kind) (Target, bool) {
	i := slices.IndexFunc(targets, func(t Target) bool { return t.Kind == kind })
	if i < 0 {
		return Target{}, false
	}
	return targets[i], true
}

// New builds the publisher of kind from o, after its Check.
func New(kind Kind, o Options) (chain.Publisher, error) {
	t, ok := Lookup(kind)
	if !ok {
		return nil, fmt.Errorf("publish: unknown kind %q (kinds: %v)", kind, Kinds())
	}
	if ps := t.Check(o); len(ps) > 0 {
		return nil, fmt.Errorf("publish %s: %s: %s; %s", kind, ps[0].Key, ps[0].Problem, ps[0].Fix)
	}
	return t.New(o), nil
}

// Place names where kind publishes with o (Target.Place); "" for an
// unknown kind.
func Place(kind Kind, o Options) string {
	t, ok := Lookup(kind)
	if !ok {
		return ""
	}
	return t.Place(o)
}

// Stepper is a publisher whose durable steps can be observed: the crash
// tests kill the process at each one. Every publisher of this package is
// one.
type Stepper interface {
	SetStep(step func(name string))
}

// dirPlace is Place for the kinds that write files: the kind and the
// absolute directory.
func dirPlace(kind Kind) func(o Options) string {
	return func(o Options) string {
		dir, err := filepath.Abs(o.Dir)
		if err != nil {
			dir = o.Dir
		}
		return string(kind) + " " + dir
	}
}

// noProblems is Check for a kind whose options have working defaults.
func noProblems(Options) []Problem { return nil }

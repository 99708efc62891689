package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/goccy/go-yaml/ast"
)

// MaxTopicIDBytes is the longest topic id: a job id (the topic id, plus
// "/<period>" for a series) keys the jobs table, and PostgreSQL refuses an
// index row over about 2,700 bytes. 200 leaves room for every backend.
const MaxTopicIDBytes = 200

// Topic is one entry of the topics file: a work unit that is published once.
type Topic struct {
	ID          string   `yaml:"id"`           // unique, slug-safe: letters, digits, '-', '_', '.'
	Title       string   `yaml:"title"`        // required
	Category    string   `yaml:"category"`     // optional
	Keywords    []string `yaml:"keywords"`     // optional
	Language    string   `yaml:"language"`     // "" = job.language
	TargetWords int      `yaml:"target_words"` // 0 = job.target_words
	Priority    int      `yaml:"priority"`     // higher first; default 0
	NotBefore   string   `yaml:"not_before"`   // UTC date YYYY-MM-DD before which it is not due; "" = none
	Repeat      string   `yaml:"repeat"`       // "", "daily", "weekly" or "monthly"
}

// The values of a topic's repeat key.
const (
	RepeatDaily   = "daily"
	RepeatWeekly  = "weekly"
	RepeatMonthly = "monthly"
)

// LoadTopics is Loader{}.LoadTopics.
func LoadTopics(path string) ([]Topic, error) { return Loader{}.LoadTopics(path) }

// ParseTopics is Loader{}.ParseTopics.
func ParseTopics(path string, data []byte) ([]Topic, error) { return Loader{}.ParseTopics(path, data) }

// LoadTopics reads the topics file at path: a YAML list of {id, title,
// category, keywords, language?, target_words?}. A missing or unreadable
// file is an *Error; any other problem (YAML syntax, unknown key, wrong
// type, missing id or title, duplicate id, bad or unsupported language) is
// an Errors with every problem of the file.
func (l Loader) LoadTopics(path string) ([]Topic, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Msg: "topics file not found",
				Fix: "create it (a YAML list of {id, title, category, keywords}, copy data/topics.example.yaml) or point `topics:` in the config at it", cause: err}
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("read topics: %v", unwrapPathErr(err)), Fix: "check the path and its permissions", cause: err}
	}
	return l.ParseTopics(path, data)
}

// ParseTopics parses data as the topics file at path (used in messages).
// An explicit empty list ([]) yields no topics and no error.
func (l Loader) ParseTopics(path string, data []byte) ([]Topic, error) {
	t, perr := parseTree(path, "topics", data)
	if perr != nil {
		return nil, perr.list()
	}
	if t.body == nil {
		return nil, (&Error{File: path, Line: 1, Msg: "the topics file is empty",
			Fix: "add topics as a YAML list, e.g.\n    - id: go-generics\n      title: Go generics in practice\n      category: programming\n      keywords: [go, generics]"}).list()
	}
	if _, ok := resolve(t.body).(*ast.SequenceNode); !ok && len(t.errs) == 0 {
		return nil, (&Error{File: path, Line: max(lineOf(t.body), 1), Msg: "topics: want a list of topics, got " + describe(t.body),
			Fix: "write the file as a YAML list with one `- id: …` entry per topic"}).list()
	}
	var all []Topic
	if !t.decodeInto(&all) {
		return nil, t.errs.orNil()
	}
	p := &loader{opt: l, t: t}
	topics := make([]Topic, 0, len(all))
	seen := map[string]int{}
	for i := range all {
		path := fmt.Sprintf("topics[%d]", i)
		if t.isBad(path) {
			continue
		}
		p.topic(&all[i], path, seen)
		topics = append(topics, all[i])
	}
	if err := t.errs.orNil(); err != nil {
		return nil, err
	}
	return topics, nil
}

func (p *loader) topic(t *Topic, path string, seen map[string]int) {
	given := func(key string) bool { return p.t.given[path+"."+key] }
	t.ID, t.Title, t.NotBefore = strings.TrimSpace(t.ID), strings.TrimSpace(t.Title), strings.TrimSpace(t.NotBefore)
	p.check(given("id"), path+".id", "add id: a-unique-slug to this topic (it keys the job; never change it once published)", "%s: missing required key \"id\"", path)
	if given("id") {
		p.check(linkNameRE.MatchString(t.ID), path+".id", "use letters, digits, '-', '_' or '.', starting with a letter or digit", "%s: bad topic id %q", path, t.ID)
		p.check(len(t.ID) <= MaxTopicIDBytes, path+".id", fmt.Sprintf("shorten the id to at most %d bytes (it keys the job in the database)", MaxTopicIDBytes),
			"%s: topic id %.40q… is %d bytes long, over %d", path, t.ID, len(t.ID), MaxTopicIDBytes)
		if first, dup := seen[t.ID]; dup {
			p.check(false, path+".id", "give each topic a unique id", "%s: duplicate topic id %q (first defined at line %d)", path, t.ID, first)
		} else {
			seen[t.ID] = p.t.line(path + ".id")
		}
	}
	where := nameOf(path, t.ID)
	p.check(given("title"), path+".title", "add title: … to this topic", "%s: missing required key \"title\"", where)
	p.check(!given("title") || t.Title != "", path+".title", "give the topic a title", "%s: title must not be empty", where)
	p.noNUL(path, where, "title", t.Title)
	p.noNUL(path, where, "category", t.Category)
	p.noNUL(path, where, "keywords", strings.Join(t.Keywords, ","))
	if t.Language != "" {
		p.language(path+".language", where, t.Language, "use a lower-case language code such as en, tr, de, pt-BR, or remove it to use job.language")
	}
	if given("target_words") {
		p.positive(path+".target_words", t.TargetWords)
	}
	if given("not_before") {
		_, err := time.Parse(time.DateOnly, t.NotBefore)
		p.check(err == nil, path+".not_before", "give a UTC date, e.g. not_before: 2026-12-05", "%s: not_before %q is not a date YYYY-MM-DD", where, t.NotBefore)
	}
	switch t.Repeat {
	case "", RepeatDaily, RepeatWeekly, RepeatMonthly:
	default:
		p.check(false, path+".repeat", "use repeat: daily, weekly or monthly, or remove it for a topic published once", "%s: unknown repeat %q", where, t.Repeat)
	}
}

// noNUL refuses a NUL byte in a topic's text: PostgreSQL cannot store one
// in a text column, so the job could never be claimed there.
func (p *loader) noNUL(path, where, key, v string) {
	p.check(!strings.ContainsRune(v, 0), path+"."+key, "remove the NUL byte (\\0 or \\x00 in the YAML string); no database text may hold one",
		"%s: %s contains a NUL byte", where, key)
}

// list is e as an Errors.
func (e *Error) list() error { return Errors{e} }

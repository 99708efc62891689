package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// Topic is one entry of the topics file (SPEC §4): a work unit that is due
// once per slot.
type Topic struct {
	ID          string   // unique, slug-safe: letters, digits, '-', '_', '.'
	Title       string   // required
	Category    string   // optional
	Keywords    []string // optional
	Language    string   // "" = job.language
	TargetWords int      // 0 = job.target_words
}

var topicKeys = []string{"id", "title", "category", "keywords", "language", "target_words"}

// LoadTopics reads the topics file at path: a YAML list of {id, title,
// category, keywords, language?, target_words?}. Every problem (missing
// file, YAML syntax, unknown key, wrong type, missing id or title, duplicate
// id, bad language code) is an *Error with the file and line.
func LoadTopics(path string) ([]Topic, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Msg: "topics file not found",
				Fix: "create it (a YAML list of {id, title, category, keywords}, copy data/topics.example.yaml) or point `topics:` in the config at it", cause: err}
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("read topics: %v", unwrapPathErr(err)), Fix: "check the path and its permissions", cause: err}
	}
	return ParseTopics(path, data)
}

// ParseTopics parses data as the topics file at path (used in messages).
// An explicit empty list ([]) yields no topics and no error.
func ParseTopics(path string, data []byte) ([]Topic, error) {
	d, root := parseRoot(path, data)
	if d.err != nil {
		return nil, d.err
	}
	if root == nil {
		return nil, &Error{File: path, Line: 1, Msg: "the topics file is empty",
			Fix: "add topics as a YAML list, e.g.\n    - id: go-generics\n      title: Go generics in practice\n      category: programming\n      keywords: [go, generics]"}
	}
	if _, ok := d.resolve(root).(*ast.SequenceNode); !ok && d.err == nil {
		d.fail(lineOf(root), "write the file as a YAML list with one `- id: …` entry per topic", "topics: want a list of topics, got %s", describe(d.resolve(root)))
		return nil, d.err
	}
	items := d.list(root, "topics", 1)
	topics := make([]Topic, 0, len(items))
	seen := map[string]int{}
	for i, it := range items {
		path := fmt.Sprintf("topics[%d]", i)
		o := d.object(it.node, path, it.line, topicKeys)
		if d.failed() {
			return nil, d.err
		}
		var t Topic
		o.check(o.has("id"), "id", "add id: a-unique-slug to this topic (it keys the job; never change it once published)", "%s: missing required key \"id\"", path)
		o.str("id", &t.ID)
		t.ID = strings.TrimSpace(t.ID)
		o.check(linkNameRE.MatchString(t.ID), "id", "use letters, digits, '-', '_' or '.', starting with a letter or digit", "%s: bad topic id %q", path, t.ID)
		if first, dup := seen[t.ID]; dup && !d.failed() {
			d.fail(o.lineOf("id"), "give each topic a unique id", "%s: duplicate topic id %q (first defined at line %d)", path, t.ID, first)
		}
		seen[t.ID] = o.lineOf("id")
		o.check(o.has("title"), "title", "add title: … to this topic", "%s (%s): missing required key \"title\"", path, t.ID)
		o.str("title", &t.Title)
		t.Title = strings.TrimSpace(t.Title)
		o.check(t.Title != "", "title", "give the topic a title", "%s (%s): title must not be empty", path, t.ID)
		o.str("category", &t.Category)
		o.strs("keywords", &t.Keywords)
		o.str("language", &t.Language)
		o.check(t.Language == "" || languageRE.MatchString(t.Language), "language", "use a lower-case language code such as en, tr, de, pt-BR, or remove it to use job.language",
			"%s (%s): bad language code %q", path, t.ID, t.Language)
		if o.has("target_words") {
			o.integer("target_words", &t.TargetWords)
			o.positive("target_words", t.TargetWords)
		}
		if d.failed() {
			return nil, d.err
		}
		topics = append(topics, t)
	}
	return topics, nil
}

package config

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// tree is one parsed YAML document with an index of where each value sits.
// goccy decodes it (in its raw form, raw.go) and stops at the first problem; the
// tree turns that problem's token into a path and a line, takes the
// offending entry out and lets goccy decode again, until nothing is left:
// so one pass reports every problem of the file.
type tree struct {
	file  string
	root  string           // path of the document body: "" for the config, "topics" for the topics file
	body  ast.Node         // nil for an empty document
	paths map[string]*slot // by path; the first of duplicates
	byTok map[*token.Token]*slot
	byKey map[*token.Token]*slot
	bad   map[string]bool // paths taken out after an error: no further checks there
	errs  Errors
	gone  map[string]bool // anchors that went with a removed entry
	given map[string]bool // paths the file gives a (non-null) value at; set by decodeInto
}

// slot is one place that holds a value: a mapping entry, a list item or the
// document body.
type slot struct {
	path  string
	line  int // of the key; of the value for list items and the body
	value ast.Node
	key   string         // the entry's key; "" for list items and the body
	set   func(ast.Node) // replaces the value
	drop  func()         // removes the entry (or nulls the value)
}

// parseTree parses data as one YAML document. A syntax error, or more than
// one document, is the only error and the tree is nil.
func parseTree(file, root string, data []byte) (*tree, *Error) {
	f, err := parser.ParseBytes(data, 0, parser.AllowDuplicateMapKey())
	if err != nil {
		return nil, syntaxError(file, err)
	}
	t := &tree{file: file, root: root, paths: map[string]*slot{}, byTok: map[*token.Token]*slot{},
		byKey: map[*token.Token]*slot{}, bad: map[string]bool{}, gone: map[string]bool{}, given: map[string]bool{}}
	for i, doc := range f.Docs {
		if doc == nil || doc.Body == nil || doc.Body.Type() == ast.NullType {
			continue
		}
		if t.body != nil {
			return nil, &Error{File: file, Line: max(lineOf(doc.Body), 1), Msg: fmt.Sprintf("more than one YAML document (document %d)", i+1),
				Fix: "keep one document in the file (remove the second `---`)"}
		}
		t.body = doc.Body
	}
	if t.body != nil {
		anchors := map[string]bool{}
		t.index(t.body, root, max(lineOf(t.body), 1), func(n ast.Node) { t.body = n }, anchors)
	}
	return t, nil
}

func syntaxError(file string, err error) *Error {
	line, msg := 1, err.Error()
	var se *yaml.SyntaxError
	if errors.As(err, &se) {
		msg = se.Message
		if se.Token != nil && se.Token.Position != nil {
			line = se.Token.Position.Line
			// A plain scalar ran on into an over-indented "key:" line: the
			// offending colon is the next token.
			if nx := se.Token.Next; strings.Contains(msg, "mapping value is not allowed") &&
				nx != nil && nx.Value == ":" && nx.Position != nil {
				line = nx.Position.Line
			}
		}
	}
	fix := "check indentation (spaces, not tabs) and quoting on this line and the one above"
	if strings.Contains(msg, "mapping value is not allowed") {
		fix = "this key is indented under a value, or a value contains \": \" (quote it): align the key with its siblings"
	}
	return &Error{File: file, Line: max(line, 1), Msg: "YAML syntax error: " + msg, Fix: fix}
}

// index records n (the value at path) and everything under it. Merge keys
// are put first in their mapping, a merged list as one entry per element
// with the first last, so that goccy (where the later key wins) gives the
// explicit keys and the earlier merges precedence. Aliases to anchors not
// defined before them, and a key given twice, are reported here.
func (t *tree) index(n ast.Node, path string, line int, set func(ast.Node), anchors map[string]bool) *slot {
	s := &slot{path: path, line: line, value: n}
	s.set = func(x ast.Node) { set(x); s.value = x }
	s.drop = func() { s.set(null(n)) }
	if _, dup := t.paths[path]; !dup {
		t.paths[path] = s
	}
	v := t.unwrap(n, s, anchors)
	switch w := v.(type) {
	case *ast.AliasNode:
		if w.Value != nil && w.Value.GetToken() != nil {
			t.byTok[w.Value.GetToken()] = s // goccy reports an alias at its name
		}
		if name := aliasName(w); !anchors[name] {
			t.aliasError(s, name)
		}
	case *ast.MappingNode:
		t.mapping(w, path, anchors)
	case *ast.MappingValueNode:
		t.entry(nil, w, path, anchors)
	case *ast.SequenceNode:
		for i := range w.Values {
			item := w.Values[i]
			l := lineOf(item)
			if l == 0 {
				l = line
			}
			t.index(item, fmt.Sprintf("%s[%d]", path, i), l, func(x ast.Node) { w.Values[i] = x }, anchors)
		}
	}
	return s
}

// unwrap goes through the anchors and tags around n, recording each
// anchor's name and each token on the way as s's, and returns the value.
func (t *tree) unwrap(n ast.Node, s *slot, anchors map[string]bool) ast.Node {
	for n != nil {
		if tk := n.GetToken(); tk != nil {
			if _, ok := t.byTok[tk]; !ok {
				t.byTok[tk] = s
			}
		}
		switch w := n.(type) {
		case *ast.AnchorNode:
			if w.Name != nil {
				anchors[w.Name.GetToken().Value] = true
			}
			if w.Value == nil {
				w.Value = null(w) // goccy dereferences an empty anchor or tag
			}
			n = w.Value
		case *ast.TagNode:
			if w.Value == nil {
				w.Value = null(w)
			}
			n = w.Value
		default:
			return n
		}
	}
	return nil
}

func (t *tree) aliasError(s *slot, name string) {
	if !t.gone[name] {
		t.errs = append(t.errs, &Error{File: t.file, Line: s.line, Msg: "unknown alias *" + name, Fix: "define the anchor (&" + name + ") before using it"})
	}
	t.bad[s.path] = true
	s.set(null(s.value))
}

func aliasName(a *ast.AliasNode) string {
	if a.Value == nil {
		return ""
	}
	return a.Value.GetToken().Value
}

func (t *tree) mapping(m *ast.MappingNode, path string, anchors map[string]bool) {
	var merges, plain []*ast.MappingValueNode
	for _, mv := range m.Values {
		if isMerge(mv) {
			if seq, ok := mv.Value.(*ast.SequenceNode); ok {
				for i := len(seq.Values) - 1; i >= 0; i-- {
					merges = append(merges, ast.MappingValue(mv.Start, mv.Key, seq.Values[i]))
				}
				continue
			}
			merges = append(merges, mv)
			continue
		}
		plain = append(plain, mv)
	}
	m.Values = append(merges, plain...)
	first := map[string]int{}
	for _, mv := range m.Values {
		if isMerge(mv) {
			t.index(mv.Value, path, lineOf(mv.Key), func(x ast.Node) { mv.Value = x }, anchors)
			continue
		}
		key := keyText(mv)
		if l, dup := first[key]; dup {
			t.errs = append(t.errs, &Error{File: t.file, Line: max(lineOf(mv.Key), 1),
				Msg: fmt.Sprintf("YAML syntax error: mapping key %q already defined (first at line %d)", key, l),
				Fix: "remove one of the two entries; a key may appear only once in a mapping"})
			m.Values = removeEntry(m.Values, mv)
			continue
		}
		first[key] = lineOf(mv.Key)
		t.entry(m, mv, path, anchors)
	}
}

func (t *tree) entry(owner *ast.MappingNode, mv *ast.MappingValueNode, parent string, anchors map[string]bool) {
	key := keyText(mv)
	s := t.index(mv.Value, joinPath(parent, key), max(lineOf(mv.Key), 1), func(x ast.Node) { mv.Value = x }, anchors)
	s.key = key
	if owner != nil {
		s.drop = func() {
			owner.Values = removeEntry(owner.Values, mv)
			if a, ok := mv.Value.(*ast.AnchorNode); ok && a.Name != nil {
				t.gone[a.Name.GetToken().Value] = true
			}
		}
	}
	if tk := mv.Key.GetToken(); tk != nil {
		t.byKey[tk] = s
	}
}

func isMerge(mv *ast.MappingValueNode) bool { return mv.Key != nil && mv.Key.IsMergeKey() }

func keyText(mv *ast.MappingValueNode) string {
	var k ast.Node = mv.Key
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	if s, ok := k.(*ast.StringNode); ok {
		return s.Value
	}
	if k == nil || k.GetToken() == nil {
		return ""
	}
	return k.GetToken().Value
}

func removeEntry(vs []*ast.MappingValueNode, mv *ast.MappingValueNode) []*ast.MappingValueNode {
	out := vs[:0:0]
	for _, v := range vs {
		if v != mv {
			out = append(out, v)
		}
	}
	return out
}

func null(at ast.Node) ast.Node {
	var pos *token.Position
	if at != nil && at.GetToken() != nil {
		pos = at.GetToken().Position
	}
	return ast.Null(token.New("null", "null", pos))
}

func joinPath(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

// parentPath is "chain[1]" for "chain[1].price" and "chain" for "chain[1]".
func parentPath(path string) string {
	if i := strings.LastIndexAny(path, ".["); i >= 0 {
		return path[:i]
	}
	return ""
}

// line is the line of path, or of its nearest parent present in the file.
func (t *tree) line(path string) int {
	for ; path != t.root && path != ""; path = parentPath(path) {
		if s, ok := t.paths[path]; ok {
			return s.line
		}
	}
	return 1
}

// isBad reports whether path, or a parent of it, was taken out after an error.
func (t *tree) isBad(path string) bool {
	for ; !t.bad[path]; path = parentPath(path) {
		if path == "" || path == t.root {
			return false
		}
	}
	return true
}

// maxDecodeErrors bounds the decode passes (one per problem) on a file that
// is not a config at all.
const maxDecodeErrors = 50

// decodeInto decodes the document into its raw form (rawType of what dst
// points to: a Config holding the defaults, or a list of topics), recording
// each decode error and taking its entry out until the rest decodes; then
// fills dst from it. It reports false when the document cannot be decoded
// at all.
func (t *tree) decodeInto(dst any) bool {
	v := reflect.ValueOf(dst).Elem()
	raw := reflect.New(rawType(v.Type()))
	for range len(t.paths) + 2 {
		if len(t.errs) >= maxDecodeErrors {
			last := 1
			for _, e := range t.errs {
				last = max(last, e.Line)
			}
			t.errs = append(t.errs, &Error{File: t.file, Line: last,
				Msg: fmt.Sprintf("too many problems: stopped after %d", maxDecodeErrors), Fix: "fix these and check again"})
			return false
		}
		raw.Elem().SetZero()
		if t.body == nil || t.bad[t.root] {
			return false
		}
		err := decodeNode(t.body, raw.Interface())
		if err == nil {
			fill(v, raw.Elem(), t.root, t.given)
			return true
		}
		n := len(t.errs)
		if !t.explain(err, raw.Type().Elem()) {
			return false
		}
		// Taking the entry out must change what goccy sees; if the same
		// problem comes back, stop rather than report it again.
		if len(t.errs) > n && n > 0 && *t.errs[n-1] == *t.errs[len(t.errs)-1] {
			t.errs = t.errs[:len(t.errs)-1]
			return false
		}
	}
	return false
}

// decodeNode is goccy's strict decode of n into dst, with a panic inside
// goccy (found by fuzzing on odd tags) turned into an error.
func decodeNode(n ast.Node, dst any) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the YAML decoder failed on this file (%v)", r)
		}
	}()
	return yaml.NodeToValue(n, dst, yaml.DisallowUnknownField(), yaml.AllowDuplicateMapKey())
}

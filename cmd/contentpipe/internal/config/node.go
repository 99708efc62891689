package config

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// definedAtRE matches goccy's "already defined at [line:col]".
var definedAtRE = regexp.MustCompile(`already defined at \[(\d+):\d+\]`)

// decoder walks a goccy/go-yaml AST against the fixed key schema of the
// config and topics files. It keeps the first error (sticky, like
// bufio.Scanner): after a failure every getter is a no-op.
type decoder struct {
	file    string
	anchors map[string]ast.Node
	err     *Error
}

func (d *decoder) fail(line int, fix, format string, args ...any) {
	if d.err == nil {
		d.err = &Error{File: d.file, Line: max(line, 1), Msg: fmt.Sprintf(format, args...), Fix: fix}
	}
}

func (d *decoder) failed() bool { return d.err != nil }

// parseRoot parses one YAML document and returns its body (nil when the
// document is empty or only comments).
func parseRoot(file string, data []byte) (*decoder, ast.Node) {
	d := &decoder{file: file, anchors: map[string]ast.Node{}}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		line, msg := 1, err.Error()
		var se *yaml.SyntaxError
		if errors.As(err, &se) {
			msg = se.Message
			if se.Token != nil && se.Token.Position != nil {
				line = se.Token.Position.Line
				// A plain scalar ran on into an over-indented "key:" line:
				// the offending colon is the next token.
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
		if m := definedAtRE.FindStringSubmatch(msg); m != nil {
			msg = strings.Replace(msg, m[0], "already defined (first at line "+m[1]+")", 1)
			fix = "remove one of the two entries; a key may appear only once in a mapping"
		}
		d.fail(line, fix, "YAML syntax error: %s", msg)
		return d, nil
	}
	var body ast.Node
	for i, doc := range f.Docs {
		if doc == nil || doc.Body == nil {
			continue
		}
		if body != nil {
			d.fail(lineOf(doc.Body), "keep one document in the file (remove the second `---`)", "more than one YAML document (document %d)", i+1)
			return d, nil
		}
		body = doc.Body
	}
	if body != nil {
		d.collectAnchors(body)
	}
	return d, body
}

func (d *decoder) collectAnchors(n ast.Node) {
	switch v := n.(type) {
	case *ast.AnchorNode:
		if v.Name != nil {
			d.anchors[v.Name.GetToken().Value] = v.Value
		}
		if v.Value != nil {
			d.collectAnchors(v.Value)
		}
	case *ast.MappingNode:
		for _, mv := range v.Values {
			d.collectAnchors(mv)
		}
	case *ast.MappingValueNode:
		if v.Value != nil {
			d.collectAnchors(v.Value)
		}
	case *ast.SequenceNode:
		for _, x := range v.Values {
			if x != nil {
				d.collectAnchors(x)
			}
		}
	case *ast.TagNode:
		if v.Value != nil {
			d.collectAnchors(v.Value)
		}
	}
}

// lineOf is the 1-based line a node starts on (0 if unknown).
func lineOf(n ast.Node) int {
	if n == nil {
		return 0
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil {
		return 0
	}
	return tk.Position.Line
}

// resolve follows anchors and aliases and drops non-string tags. A nil
// result means null (or a failure, recorded in d).
func (d *decoder) resolve(n ast.Node) ast.Node {
	for range 32 {
		switch v := n.(type) {
		case nil:
			return nil
		case *ast.NullNode:
			return nil
		case *ast.AnchorNode:
			n = v.Value
		case *ast.AliasNode:
			name := ""
			if v.Value != nil {
				name = v.Value.GetToken().Value
			}
			t, ok := d.anchors[name]
			if !ok {
				d.fail(lineOf(v), "define the anchor (&"+name+") before using it", "unknown alias *%s", name)
				return nil
			}
			n = t
		case *ast.TagNode:
			if v.Start != nil && (v.Start.Value == "!!str" || v.Start.Value == "!str") {
				return v
			}
			n = v.Value
		default:
			return n
		}
	}
	d.fail(lineOf(n), "remove the alias loop", "aliases nested too deeply")
	return nil
}

// describe renders a value for "got …" in type errors.
func describe(n ast.Node) string {
	switch v := n.(type) {
	case nil:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.StringNode:
		s := v.Value
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return strconv.Quote(s)
	default:
		if tk := n.GetToken(); tk != nil {
			return tk.Value
		}
		return n.Type().String()
	}
}

// field is one key of a mapping: the key, the key's line, the value.
type field struct {
	key  string
	line int
	val  ast.Node
}

// object is a decoded YAML mapping with a fixed set of allowed keys.
type object struct {
	d      *decoder
	path   string // dotted path; "" at top level
	line   int    // line of the key holding this mapping; 1 at top level
	fields map[string]field
}

func (o *object) name(key string) string {
	if o.path == "" {
		return key
	}
	return o.path + "." + key
}

func (o *object) where() string {
	if o.path == "" {
		return "at top level"
	}
	return "in " + o.path
}

// object decodes n as a mapping whose keys must be in known. A null or
// absent node is an empty mapping.
func (d *decoder) object(n ast.Node, path string, line int, known []string) *object {
	o := &object{d: d, path: path, line: max(line, 1), fields: map[string]field{}}
	if d.failed() {
		return o
	}
	n = d.resolve(n)
	if n == nil {
		return o
	}
	var merges []ast.Node
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, mv := range v.Values {
			if !d.entry(o, mv, known, &merges) {
				return o
			}
		}
	case *ast.MappingValueNode:
		if !d.entry(o, v, known, &merges) {
			return o
		}
	default:
		what := "the top level"
		if path != "" {
			what = path
		}
		d.fail(lineOf(n), "write "+what+" as `key: value` lines", "%s: want a mapping, got %s", orTop(path), describe(n))
		return o
	}
	// Merge keys (<<: *anchor): explicit keys win.
	for _, m := range merges {
		sub := d.object(m, path, lineOf(m), known)
		for k, f := range sub.fields {
			if _, ok := o.fields[k]; !ok {
				o.fields[k] = f
			}
		}
	}
	return o
}

func orTop(path string) string {
	if path == "" {
		return "top level"
	}
	return path
}

func (d *decoder) entry(o *object, mv *ast.MappingValueNode, known []string, merges *[]ast.Node) bool {
	var k ast.Node = mv.Key
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	if _, ok := k.(*ast.MergeKeyNode); ok {
		v := d.resolve(mv.Value)
		if seq, ok := v.(*ast.SequenceNode); ok {
			*merges = append(*merges, seq.Values...)
		} else if v != nil {
			*merges = append(*merges, v)
		}
		return !d.failed()
	}
	line := lineOf(k)
	key := ""
	switch kv := d.resolve(k).(type) {
	case *ast.StringNode:
		key = kv.Value
	case nil:
		key = ""
	default:
		if tk := kv.GetToken(); tk != nil {
			key = tk.Value
		}
	}
	for _, kn := range known {
		if kn == key {
			o.fields[key] = field{key: key, line: line, val: mv.Value}
			return true
		}
	}
	fix := suggest(key, known, "known keys "+o.where())
	if isSecretKey(key) {
		fix = "secrets never go into the config file: put the value in an environment variable and name the variable (e.g. api_key_env: GEMINI_API_KEY)"
	}
	d.fail(line, fix, "unknown key %q %s", key, o.where())
	return false
}

func isSecretKey(key string) bool {
	k := strings.ToLower(key)
	if strings.HasSuffix(k, "_env") {
		return false
	}
	for _, s := range []string{"api_key", "apikey", "token", "secret", "password", "chat_id"} {
		if k == s || strings.HasSuffix(k, s) {
			return true
		}
	}
	return false
}

// has reports whether key is present with a non-null value.
func (o *object) has(key string) bool {
	f, ok := o.fields[key]
	if !ok {
		return false
	}
	_, null := f.val.(*ast.NullNode)
	return f.val != nil && !null
}

// lineOf is the line of key, or of the enclosing mapping when key is absent.
func (o *object) lineOf(key string) int {
	if f, ok := o.fields[key]; ok {
		return f.line
	}
	return o.line
}

// value returns key's resolved value node and its line; nil when absent or null.
func (o *object) value(key string) (ast.Node, int) {
	if o.d.failed() {
		return nil, 0
	}
	f, ok := o.fields[key]
	if !ok {
		return nil, 0
	}
	n := o.d.resolve(f.val)
	line := lineOf(n)
	if line == 0 {
		line = f.line
	}
	return n, line
}

// sub decodes key as a nested mapping.
func (o *object) sub(key string, known []string) *object {
	f, ok := o.fields[key]
	if !ok {
		return o.d.object(nil, o.name(key), o.line, known)
	}
	return o.d.object(f.val, o.name(key), f.line, known)
}

func (o *object) typeErr(key string, n ast.Node, line int, want, fix string) {
	o.d.fail(line, fix, "%s: want %s, got %s", o.name(key), want, describe(n))
}

// scalarString returns the text of a scalar node and whether n is a scalar.
func scalarString(n ast.Node) (string, bool) {
	switch v := n.(type) {
	case *ast.StringNode:
		return v.Value, true
	case *ast.LiteralNode:
		if v.Value != nil {
			return v.Value.Value, true
		}
		return "", true
	case *ast.TagNode:
		if v.Value == nil {
			return "", true
		}
		if s, ok := scalarString(v.Value); ok {
			return s, true
		}
		if tk := v.Value.GetToken(); tk != nil {
			return tk.Value, true
		}
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return n.GetToken().Value, true
	}
	return "", false
}

// str decodes key as a string (numbers and booleans are taken as written).
func (o *object) str(key string, dst *string) {
	n, line := o.value(key)
	if n == nil {
		return
	}
	s, ok := scalarString(n)
	if !ok {
		o.typeErr(key, n, line, "a string", "write a single value, e.g. "+key+": value")
		return
	}
	*dst = s
}

// integer decodes key as an int.
func (o *object) integer(key string, dst *int) {
	n, line := o.value(key)
	if n == nil {
		return
	}
	fix := "write a whole number without quotes, e.g. " + key + ": 4"
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			if x < math.MinInt || x > math.MaxInt {
				break
			}
			*dst = int(x)
			return
		case uint64:
			if x <= math.MaxInt {
				*dst = int(x)
				return
			}
		}
		o.typeErr(key, n, line, "an integer in range", fix)
		return
	case *ast.FloatNode:
		if v.Value == math.Trunc(v.Value) && math.Abs(v.Value) < 1<<53 {
			*dst = int(v.Value)
			return
		}
	}
	o.typeErr(key, n, line, "an integer", fix)
}

// float decodes key as a float64 (integers accepted).
func (o *object) float(key string, dst *float64) {
	n, line := o.value(key)
	if n == nil {
		return
	}
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			*dst = float64(x)
			return
		case uint64:
			*dst = float64(x)
			return
		}
	case *ast.FloatNode:
		*dst = v.Value
		return
	case *ast.StringNode:
		// goccy keeps unquoted exponent forms such as 1e3 as strings.
		if v.Token != nil && v.Token.Type == token.StringType {
			if f, err := strconv.ParseFloat(v.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				*dst = f
				return
			}
		}
	}
	o.typeErr(key, n, line, "a number", "write a number without quotes, e.g. "+key+": 0.5")
}

// boolean decodes key as a bool.
func (o *object) boolean(key string, dst *bool) {
	n, line := o.value(key)
	if n == nil {
		return
	}
	if b, ok := n.(*ast.BoolNode); ok {
		*dst = b.Value
		return
	}
	o.typeErr(key, n, line, "true or false", "write "+key+": true or "+key+": false")
}

// duration decodes key as a Go duration ("30s", "10m"); a bare 0 is allowed.
func (o *object) duration(key string, dst *time.Duration) {
	n, line := o.value(key)
	if n == nil {
		return
	}
	const fix = "use Go syntax like 30s, 10m, 1h30m (units ns, us, ms, s, m, h)"
	switch v := n.(type) {
	case *ast.IntegerNode:
		if x, ok := v.Value.(int64); ok && x == 0 {
			*dst = 0
			return
		}
		if x, ok := v.Value.(uint64); ok && x == 0 {
			*dst = 0
			return
		}
		o.d.fail(line, fix, "%s: bad duration %s: a number needs a unit", o.name(key), describe(n))
		return
	case *ast.StringNode:
		dur, err := time.ParseDuration(strings.TrimSpace(v.Value))
		if err != nil {
			o.d.fail(line, fix, "%s: bad duration %s", o.name(key), describe(n))
			return
		}
		if dur < 0 {
			o.d.fail(line, "use a positive duration, or 0s for none", "%s: duration %s must not be negative", o.name(key), describe(n))
			return
		}
		*dst = dur
		return
	}
	o.d.fail(line, fix, "%s: want a duration, got %s", o.name(key), describe(n))
}

// item is one element of a YAML list with its line.
type item struct {
	node ast.Node
	line int
}

// list decodes key as a YAML sequence. Absent or null is an empty list;
// present reports whether the key was given at all.
func (o *object) list(key string) (items []item, present bool) {
	f, ok := o.fields[key]
	if !ok || o.d.failed() {
		return nil, false
	}
	return o.d.list(f.val, o.name(key), f.line), true
}

func (d *decoder) list(n ast.Node, path string, line int) []item {
	if d.failed() {
		return nil
	}
	n = d.resolve(n)
	if n == nil {
		return nil
	}
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		d.fail(lineOf(n), "write "+orTop(path)+" as a list: one `- ` entry per line, or [a, b]", "%s: want a list, got %s", orTop(path), describe(n))
		return nil
	}
	items := make([]item, 0, len(seq.Values))
	for _, v := range seq.Values {
		l := lineOf(v)
		if l == 0 {
			l = line
		}
		items = append(items, item{node: v, line: l})
	}
	return items
}

// strs decodes key as a list of strings.
func (o *object) strs(key string, dst *[]string) {
	items, present := o.list(key)
	if !present || o.d.failed() {
		return
	}
	out := make([]string, 0, len(items))
	for i, it := range items {
		n := o.d.resolve(it.node)
		s, ok := scalarString(n)
		if !ok || n == nil {
			o.d.fail(it.line, "write each entry as a plain value", "%s[%d]: want a string, got %s", o.name(key), i, describe(n))
			return
		}
		out = append(out, s)
	}
	*dst = out
}

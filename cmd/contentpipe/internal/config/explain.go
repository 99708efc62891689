package config

import (
	"errors"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// explain records err at its path and takes the offending entry out. It
// reports false when err cannot be placed (decoding cannot go on).
func (t *tree) explain(err error, root reflect.Type) bool {
	var (
		unknown *yaml.UnknownFieldError
		typ     *yaml.TypeError
		shape   *yaml.UnexpectedNodeTypeError
		over    *yaml.OverflowError
		val     *valueError
		yerr    yaml.Error
	)
	var tk *token.Token // where the value of the wrong type starts
	var w string        // what it should have been
	switch {
	case errors.As(err, &unknown):
		s := t.byKey[unknown.Token]
		if s == nil {
			break
		}
		t.unknownKey(s, root)
		s.drop()
		return true
	case errors.As(err, &val) && val.want == "":
		if s := t.at(val.node.GetToken()); s != nil {
			fix := val.fix
			if val.env {
				fix = envFix(t, s.path)
			}
			t.fail(s, val.node, s.name(t)+": "+val.msg, fix)
			return true
		}
	case errors.As(err, &val):
		tk, w = val.node.GetToken(), val.want
	case errors.As(err, &typ):
		tk, w = typ.Token, want(typ.DstType)
	case errors.As(err, &shape):
		tk, w = shape.Token, "a mapping"
		if shape.Expected == ast.SequenceType {
			w = "a list"
		}
	case errors.As(err, &over):
		tk, w = over.Token, "an integer in range"
	}
	if s := t.at(tk); s != nil && w != "" {
		t.wrongType(s, tk, w)
		return true
	}
	if errors.As(err, &yerr) {
		// An alias whose anchor went with an entry taken out above.
		if s := t.at(yerr.GetToken()); s != nil {
			if a, ok := resolve(s.value).(*ast.AliasNode); ok {
				t.aliasError(s, aliasName(a))
				return true
			}
		}
	}
	line, msg := 1, err.Error()
	if errors.As(err, &yerr) {
		msg = yerr.GetMessage()
		if tk := yerr.GetToken(); tk != nil && tk.Position != nil {
			line = tk.Position.Line
		}
	}
	t.errs = append(t.errs, &Error{File: t.file, Line: line, Msg: "cannot decode: " + msg, Fix: "check this line (" + exampleConfig + ")"})
	return false
}

// at is the slot holding the value that tk starts.
func (t *tree) at(tk *token.Token) *slot {
	if tk == nil {
		return nil
	}
	return t.byTok[tk]
}

// name is the path as messages show it ("top level" for the body).
func (s *slot) name(t *tree) string {
	if s.path == "" {
		return "top level"
	}
	return s.path
}

func (t *tree) fail(s *slot, n ast.Node, msg, fix string) {
	line := lineOf(n)
	if line == 0 {
		line = s.line
	}
	t.errs = append(t.errs, &Error{File: t.file, Line: line, Msg: msg, Fix: fix})
	t.bad[s.path] = true
	s.set(null(s.value))
}

func (t *tree) unknownKey(s *slot, root reflect.Type) {
	parent := parentPath(s.path)
	where := "at top level"
	if parent != "" {
		where = "in " + parent
	}
	rel := strings.TrimPrefix(strings.TrimPrefix(parent, t.root), ".")
	known := keysOf(root, rel)
	fix := suggest(s.key, known, "known keys "+where)
	// The key it was probably meant to be counts as reported: no second
	// message saying that one is missing.
	if c := closest(s.key, known); c != "" {
		t.bad[joinPath(parent, c)] = true
	}
	if isSecretKey(s.key) {
		t.bad[joinPath(parent, strings.ToLower(s.key)+"_env")] = true
		fix = "secrets never go into the config file: put the value in an environment variable and name the variable (e.g. api_key_env: GEMINI_API_KEY)"
	}
	t.errs = append(t.errs, &Error{File: t.file, Line: s.line, Msg: fmt.Sprintf("unknown key %q %s", s.key, where), Fix: fix})
}

func (t *tree) wrongType(s *slot, tk *token.Token, w string) {
	name := s.name(t)
	var fix string
	switch w {
	case "a string":
		fix = "write a single value, e.g. " + s.key + ": value"
	case "an integer", "an integer in range":
		fix = "write a whole number without quotes, e.g. " + s.key + ": 4"
	case "a number":
		fix = "write a number without quotes, e.g. " + s.key + ": " + numberIn(resolve(s.value), "0.5")
	case "true or false":
		fix = "write " + s.key + ": true or " + s.key + ": false"
	case "a duration":
		fix = durationFix
	case "a list":
		fix = "write " + name + " as a list: one `- ` entry per line, or [a, b]"
	default:
		fix = "write " + name + " as `key: value` lines"
	}
	line := s.line
	if tk != nil && tk.Position != nil {
		line = tk.Position.Line
	}
	t.errs = append(t.errs, &Error{File: t.file, Line: line, Msg: fmt.Sprintf("%s: want %s, got %s", name, w, describe(resolve(s.value))), Fix: fix})
	t.bad[s.path] = true
	s.set(null(s.value))
}

// numberIn is the number a quoted value such as "5$" or "0.8 USD" holds
// (5, 0.8), for the fix's example; def when it holds none.
func numberIn(n ast.Node, def string) string {
	v, ok := n.(*ast.StringNode)
	if !ok {
		return def
	}
	if m := numberRE.FindString(v.Value); m != "" {
		return m
	}
	return def
}

var numberRE = regexp.MustCompile(`-?\d+(\.\d+)?`)

// want names a Go destination type the way the file's reader thinks of it.
func want(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "a list"
	}
	return "a mapping"
}

// envFix is the fix for an *_env value that is not a variable name; its
// example is named after the link or the notifier, never after the value.
func envFix(t *tree, path string) string {
	key := path[strings.LastIndexByte(path, '.')+1:]
	example := map[string]string{"token_env": "TELEGRAM_BOT_TOKEN", "chat_id_env": "TELEGRAM_CHAT_ID", "secret_env": "WEBHOOK_SECRET"}[key]
	if example == "" {
		name := "PROVIDER"
		if s, ok := t.paths[parentPath(path)+".name"]; ok {
			if v, ok := s.value.(*ast.StringNode); ok && linkNameRE.MatchString(v.Value) {
				if up := strings.ToUpper(strings.NewReplacer("-", "_", ".", "_").Replace(v.Value)); envNameRE.MatchString(up) {
					name = up
				}
			}
		}
		example = name + "_" + strings.ToUpper(strings.TrimSuffix(key, "_env"))
	}
	return fmt.Sprintf("put the secret in the environment (export %s=...) and give the NAME of an environment variable here, e.g. %s: %s", example, key, example)
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

// resolve drops anchors and tags around a value.
func resolve(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.AnchorNode:
			n = v.Value
		case *ast.TagNode:
			n = v.Value
		default:
			return n
		}
	}
}

// describe renders a value for "got …" in type errors.
func describe(n ast.Node) string {
	switch v := resolve(n).(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.AliasNode:
		return "*" + aliasName(v)
	case *ast.StringNode:
		s := v.Value
		if len(s) > 40 {
			s = s[:40] + "…"
		}
		return strconv.Quote(s)
	default:
		if tk := v.GetToken(); tk != nil {
			return tk.Value
		}
		return v.Type().String()
	}
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

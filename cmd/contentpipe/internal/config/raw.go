package config

import (
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// The decoder does not fill Config directly: goccy would truncate 4.5 to 4,
// take "4" for 4 and let a pasted key pass for a variable name, and a
// decoded 0 or "" could not be told from an absent key. It fills the raw
// form of a type instead (rawType): the same tagged fields, each leaf a
// pointer (nil = absent or null) to a type that checks the value as it is
// decoded. fill then copies every non-nil leaf over the defaults.

// rawType is t as written in a file: a struct keeps its tagged fields
// (untagged ones are not in the file) with their tags; a leaf becomes a
// pointer to its validating type; a list of structs a list of raw ones.
func rawType(t reflect.Type) reflect.Type {
	switch t.Kind() {
	case reflect.Struct:
		var fields []reflect.StructField
		for i := range t.NumField() {
			f := t.Field(i)
			if key := yamlKey(f); key != "" {
				f.Type = rawType(f.Type)
				if strings.HasSuffix(key, "_env") {
					f.Type = reflect.TypeFor[*envVar]()
				}
				fields = append(fields, reflect.StructField{Name: f.Name, Type: f.Type, Tag: f.Tag})
			}
		}
		return reflect.StructOf(fields)
	case reflect.Slice:
		if t.Elem().Kind() == reflect.Struct {
			return reflect.SliceOf(rawType(t.Elem()))
		}
		return t
	case reflect.Int64:
		return reflect.TypeFor[*duration]() // time.Duration, the only int64 of the file
	case reflect.Int:
		return reflect.TypeFor[*wholeNumber]()
	case reflect.Float64:
		return reflect.TypeFor[*number]()
	}
	return reflect.PointerTo(t) // strings and bools as they are
}

// fill copies the raw value src (of rawType(dst's type)) into dst, the
// given ones over what dst holds; each list item starts from its defaults
// (DefaultLink for a link). It records the path of every value the file
// gives in given.
func fill(dst, src reflect.Value, path string, given map[string]bool) {
	switch src.Kind() {
	case reflect.Pointer:
		if !src.IsNil() {
			dst.Set(src.Elem().Convert(dst.Type()))
			given[path] = true
		}
	case reflect.Struct:
		for i := range src.NumField() {
			f := src.Type().Field(i)
			fill(dst.FieldByName(f.Name), src.Field(i), joinPath(path, yamlKey(f)), given)
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		given[path] = true
		if src.Type() == dst.Type() {
			dst.Set(src)
			return
		}
		if src.Len() == 0 {
			return // a list of none is nil, as a list built one by one
		}
		dst.Set(reflect.MakeSlice(dst.Type(), src.Len(), src.Len()))
		for i := range src.Len() {
			if l, ok := dst.Index(i).Addr().Interface().(*Link); ok {
				*l = DefaultLink()
			}
			fill(dst.Index(i), src.Index(i), fmt.Sprintf("%s[%d]", path, i), given)
		}
	}
}

// valueError is a value of the right YAML shape that a field type refuses
// while decoding, with the node it is about; explain reports it at that
// node's path and line.
type valueError struct {
	node ast.Node
	want string // what the value should have been ("an integer"), or "" with msg
	msg  string // follows "<path>: "
	fix  string
	env  bool // an *_env value that is not a variable name: the fix is built from the path
}

func (e *valueError) Error() string { return e.msg }

// wholeNumber is a count. goccy alone would truncate 4.5 to 4 and take "4"
// for 4; here a count is written as a whole number, or it is an error.
type wholeNumber int

// UnmarshalYAML takes an integer, or a float with no fractional part.
func (w *wholeNumber) UnmarshalYAML(node ast.Node) error {
	switch node.Type() {
	case ast.IntegerType:
		var n int
		if err := yaml.NodeToValue(node, &n); err != nil {
			return err
		}
		*w = wholeNumber(n)
		return nil
	case ast.FloatType:
		var f float64
		if err := yaml.NodeToValue(node, &f); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			*w = wholeNumber(f)
			return nil
		}
	}
	return &valueError{node: node, want: "an integer"}
}

// maxNumber bounds every number of the config that takes a fraction
// (prices, budgets, shares, factors): nothing it sets means anything above
// a billion, and a cost computed from a larger price can overflow to +Inf.
const maxNumber = 1e9

// number is a finite number of sensible size: .inf, .nan and anything past
// maxNumber are refused, each with its own message, before any range check
// of the key could call them negative or out of range.
type number float64

// UnmarshalYAML takes an integer or a float that is finite and at most
// maxNumber in size; anything else keeps goccy's own type error.
func (x *number) UnmarshalYAML(node ast.Node) error {
	var f float64
	text := strings.TrimSpace(node.GetToken().Value)
	err := yaml.NodeToValue(node, &f)
	if err != nil {
		// 1e400 does not fit a float64: goccy gives up on it.
		if v, perr := strconv.ParseFloat(text, 64); perr != nil && math.IsInf(v, 0) {
			return &valueError{node: node, msg: text + " is infinite (too large for a number)", fix: numberFix}
		}
		return err
	}
	switch {
	case math.IsNaN(f):
		return &valueError{node: node, msg: text + " is not a number", fix: numberFix}
	case math.IsInf(f, 0):
		return &valueError{node: node, msg: text + " is infinite", fix: numberFix}
	case math.Abs(f) > maxNumber:
		return &valueError{node: node, msg: text + " is too large (at most 1e9)", fix: numberFix}
	}
	*x = number(f)
	return nil
}

const numberFix = "write a finite number of sensible size, e.g. 0.5 (USD, shares and factors are never infinite or above 1e9)"

// duration is a Go duration ("30s", "10m"); a bare 0 means none.
type duration time.Duration

const durationFix = "use Go syntax like 30s, 10m, 1h30m (units ns, us, ms, s, m, h)"

// UnmarshalYAML parses a duration string, refusing a negative one and a
// number without a unit.
func (d *duration) UnmarshalYAML(node ast.Node) error {
	switch n := node.(type) {
	case *ast.IntegerNode:
		var v int64
		if err := yaml.NodeToValue(n, &v); err == nil && v == 0 {
			*d = 0
			return nil
		}
		return &valueError{node: node, msg: "bad duration " + describe(node) + ": a number needs a unit", fix: durationFix}
	case *ast.StringNode:
		v, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			return &valueError{node: node, msg: "bad duration " + describe(node), fix: durationFix}
		}
		if v < 0 {
			return &valueError{node: node, msg: "duration " + describe(node) + " must not be negative", fix: "use a positive duration, or 0s for none"}
		}
		*d = duration(v)
		return nil
	}
	return &valueError{node: node, want: "a duration"}
}

// envVar is the value of an *_env key: the name of an environment variable,
// upper-case letters, digits and '_', not starting with a digit. Anything
// else is refused without being echoed, because what is there instead is
// often the secret itself (a Groq key, gsk_…, even looks like a lower-case
// variable name). rawType gives every *_env key this type.
type envVar string

// UnmarshalYAML takes a string that is a conventional variable name, or "".
func (e *envVar) UnmarshalYAML(node ast.Node) error {
	var s string
	if err := yaml.NodeToValue(node, &s); err != nil {
		return err
	}
	if s != "" && !envNameRE.MatchString(s) {
		return &valueError{node: node, env: true,
			msg: "not an environment variable name (upper-case letters, digits and _; the value is not shown: it looks like a key was pasted here)"}
	}
	*e = envVar(s)
	return nil
}

// keysOf lists the yaml keys of the struct type that the path (relative
// to the file's root, e.g. "chain[1].price") decodes into, in the raw type
// root, for did-you-mean hints; nil when the path is not a mapping.
func keysOf(root reflect.Type, path string) []string {
	t := root
	for _, seg := range strings.Split(strings.ReplaceAll(path, "[", ".["), ".") {
		switch {
		case seg == "":
		case seg[0] == '[' && t.Kind() == reflect.Slice:
			t = t.Elem()
		case seg[0] != '[' && t.Kind() == reflect.Struct:
			f, ok := fieldByKey(t, seg)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		keys = append(keys, yamlKey(t.Field(i)))
	}
	return keys
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return k
}

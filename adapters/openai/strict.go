package openai

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// strictKeywords are the schema keywords every strict-mode dialect takes
// (OpenAI's Structured Outputs, Cerebras and Groq strict json_schema):
// structure, enums and descriptions. Validation keywords (minLength,
// minItems, pattern, format…) and annotations ($schema, $id, title) are
// dropped from the strict form; the quality gate still validates the answer
// against the full schema.
var strictKeywords = map[string]bool{
	"type": true, "properties": true, "required": true, "additionalProperties": true,
	"items": true, "enum": true, "const": true, "anyOf": true, "description": true,
	"$ref": true, "$defs": true, "definitions": true,
}

// refused are the keywords a strict schema cannot express; dropping them
// would change what the schema allows.
var refused = map[string]bool{"allOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
	"patternProperties": true, "dependentSchemas": true, "prefixItems": true}

// StrictSchema derives the strict-mode form of a JSON schema (the
// json_schema response format with strict: true): the root must be an
// object; every object gets additionalProperties: false and lists all its
// properties in required; only strictKeywords are kept, in their order.
// It refuses a schema whose meaning the strict form cannot keep (allOf,
// oneOf, not, …). The input is not changed.
func StrictSchema(schema []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	root, err := readNode(dec)
	if err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("not valid JSON: data after the schema")
	}
	if !root.isObject() || !root.objectSchema() {
		return nil, errors.New("strict mode needs an object schema at the root")
	}
	if err := strict(root); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	root.write(&buf)
	return buf.Bytes(), nil
}

// strict rewrites one schema node in place.
func strict(n *node) error {
	if !n.isObject() {
		return nil // true/false schemas and the like stay as they are
	}
	var kept []field
	for _, f := range n.fields {
		if refused[f.key] {
			return fmt.Errorf("strict mode cannot express %q", f.key)
		}
		if strictKeywords[f.key] {
			kept = append(kept, f)
		}
	}
	n.fields = kept
	for _, f := range n.fields {
		switch f.key {
		case "properties", "$defs", "definitions":
			if f.val.isObject() {
				for _, p := range f.val.fields {
					if err := strict(p.val); err != nil {
						return err
					}
				}
			}
		case "items":
			if err := strict(f.val); err != nil {
				return err
			}
		case "anyOf":
			for _, v := range f.val.elems {
				if err := strict(v); err != nil {
					return err
				}
			}
		}
	}
	if n.objectSchema() {
		var names []*node
		if props := n.get("properties"); props != nil && props.isObject() {
			for _, p := range props.fields {
				b, _ := json.Marshal(p.key)
				names = append(names, &node{raw: b})
			}
		}
		n.set("required", &node{array: true, elems: names})
		n.set("additionalProperties", &node{raw: []byte("false")})
	}
	return nil
}

// node is a JSON value that keeps the order of object keys.
type node struct {
	object bool
	fields []field
	array  bool
	elems  []*node
	raw    []byte // a scalar as written
}

type field struct {
	key string
	val *node
}

func (n *node) isObject() bool { return n.object }

// objectSchema reports whether n describes an object: type "object" or
// properties of its own.
func (n *node) objectSchema() bool {
	if n.get("properties") != nil {
		return true
	}
	t := n.get("type")
	return t != nil && string(t.raw) == `"object"`
}

func (n *node) get(key string) *node {
	for _, f := range n.fields {
		if f.key == key {
			return f.val
		}
	}
	return nil
}

// set replaces key's value, or appends key.
func (n *node) set(key string, v *node) {
	for i := range n.fields {
		if n.fields[i].key == key {
			n.fields[i].val = v
			return
		}
	}
	n.fields = append(n.fields, field{key, v})
}

func readNode(dec *json.Decoder) (*node, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := &node{object: true}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				key, _ := kt.(string)
				v, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.fields = append(n.fields, field{key, v})
			}
			_, err := dec.Token() // '}'
			return n, err
		case '[':
			n := &node{array: true}
			for dec.More() {
				v, err := readNode(dec)
				if err != nil {
					return nil, err
				}
				n.elems = append(n.elems, v)
			}
			_, err := dec.Token() // ']'
			return n, err
		}
		return nil, fmt.Errorf("unexpected %v", t)
	case json.Number:
		return &node{raw: []byte(t.String())}, nil
	}
	b, err := json.Marshal(tok)
	return &node{raw: b}, err
}

func (n *node) write(buf *bytes.Buffer) {
	switch {
	case n.object:
		buf.WriteByte('{')
		for i, f := range n.fields {
			if i > 0 {
				buf.WriteByte(',')
			}
			k, _ := json.Marshal(f.key)
			buf.Write(k)
			buf.WriteByte(':')
			f.val.write(buf)
		}
		buf.WriteByte('}')
	case n.array:
		buf.WriteByte('[')
		for i, e := range n.elems {
			if i > 0 {
				buf.WriteByte(',')
			}
			e.write(buf)
		}
		buf.WriteByte(']')
	default:
		buf.Write(n.raw)
	}
}

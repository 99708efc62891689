package quality

import (
	"encoding/json"
	"reflect"
)

// articleSchema is data/article.schema.json as this package knows it. When
// a gate is built from a schema equal to it (as JSON values), documents that
// articleDocValid accepts skip gojsonschema, which decodes every document
// into interface values and costs more than all the checks together;
// everything else still goes through gojsonschema.
const articleSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "$id": "https://contentpipe.dev/schema/article.schema.json",
  "title": "Article",
  "description": "The article JSON every provider must answer with (README: Prompts).",
  "type": "object",
  "required": ["title", "sections"],
  "additionalProperties": false,
  "properties": {
    "title": {"type": "string", "minLength": 1},
    "sections": {
      "type": "array",
      "minItems": 1,
      "items": {
        "type": "object",
        "required": ["h2", "body"],
        "additionalProperties": false,
        "properties": {
          "h2": {"type": "string", "minLength": 1},
          "body": {"type": "string", "minLength": 1}
        }
      }
    }
  }
}`

// isArticleSchema reports whether schemaJSON is articleSchema.
func isArticleSchema(schemaJSON []byte) bool {
	var a, b any
	if json.Unmarshal(schemaJSON, &a) != nil || json.Unmarshal([]byte(articleSchema), &b) != nil {
		return false
	}
	return reflect.DeepEqual(a, b)
}

// articleDocValid reports whether doc, a valid JSON text, certainly
// satisfies articleSchema: an object with exactly the keys "title" (a
// non-empty string) and "sections" (a non-empty array of objects with
// exactly the keys "h2" and "body", non-empty strings). Keys must be written
// without escapes, and every occurrence of a repeated key must qualify. A
// false answer means "ask gojsonschema", not "invalid".
func articleDocValid(doc []byte) bool {
	w := jwalk{b: doc}
	var title, sections bool
	ok := w.object(func(key []byte) bool {
		switch string(key) {
		case "title":
			title = true
			return w.nonEmptyString()
		case "sections":
			sections = true
			return w.sections()
		}
		return false
	})
	w.space()
	return ok && title && sections && w.i == len(doc)
}

// jwalk walks a valid JSON text.
type jwalk struct {
	b []byte
	i int
}

func (w *jwalk) space() {
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case ' ', '\t', '\r', '\n':
			w.i++
		default:
			return
		}
	}
}

// eat consumes c (after white space) when it comes next.
func (w *jwalk) eat(c byte) bool {
	w.space()
	if w.i < len(w.b) && w.b[w.i] == c {
		w.i++
		return true
	}
	return false
}

// object walks an object, calling member for each key with the value next;
// member must consume the value. Keys with escapes are refused.
func (w *jwalk) object(member func(key []byte) bool) bool {
	if !w.eat('{') {
		return false
	}
	if w.eat('}') {
		return true
	}
	for {
		if !w.eat('"') {
			return false
		}
		start := w.i
		for w.i < len(w.b) && w.b[w.i] != '"' && w.b[w.i] != '\\' {
			w.i++
		}
		if w.i >= len(w.b) || w.b[w.i] != '"' {
			return false
		}
		key := w.b[start:w.i]
		w.i++
		if !w.eat(':') {
			return false
		}
		w.space()
		if !member(key) {
			return false
		}
		if w.eat(',') {
			continue
		}
		return w.eat('}')
	}
}

// nonEmptyString consumes a string value with at least one character.
func (w *jwalk) nonEmptyString() bool {
	if !w.eat('"') {
		return false
	}
	if w.i < len(w.b) && w.b[w.i] == '"' {
		return false
	}
	for w.i < len(w.b) {
		switch w.b[w.i] {
		case '\\':
			w.i += 2
		case '"':
			w.i++
			return true
		default:
			w.i++
		}
	}
	return false
}

// sections consumes a non-empty array of sections.
func (w *jwalk) sections() bool {
	if !w.eat('[') || w.eat(']') {
		return false
	}
	for {
		var h2, body bool
		ok := w.object(func(key []byte) bool {
			switch string(key) {
			case "h2":
				h2 = true
			case "body":
				body = true
			default:
				return false
			}
			return w.nonEmptyString()
		})
		if !ok || !h2 || !body {
			return false
		}
		if w.eat(',') {
			continue
		}
		return w.eat(']')
	}
}

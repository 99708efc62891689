package openai_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/xeipuuv/gojsonschema"

	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/data"
)

// strictRules checks the strict-mode rules (OpenAI Structured Outputs,
// Cerebras and Groq strict json_schema) on every object of a schema:
// additionalProperties false, every property required, no keyword outside
// the strict subset.
func strictRules(t *testing.T, where string, v any) {
	t.Helper()
	m, ok := v.(map[string]any)
	if !ok {
		return
	}
	for k := range m {
		switch k {
		case "type", "properties", "required", "additionalProperties", "items", "enum", "const", "anyOf", "description", "$ref", "$defs", "definitions":
		default:
			t.Errorf("%s: keyword %q in a strict schema", where, k)
		}
	}
	if props, ok := m["properties"].(map[string]any); ok || m["type"] == "object" {
		if m["additionalProperties"] != false {
			t.Errorf("%s: object without additionalProperties: false", where)
		}
		req, _ := m["required"].([]any)
		if len(req) != len(props) {
			t.Errorf("%s: required %v, properties %d", where, req, len(props))
		}
		for k, p := range props {
			strictRules(t, where+"."+k, p)
		}
	}
	strictRules(t, where+"[]", m["items"])
}

func TestStrictSchema(t *testing.T) {
	for name, schema := range map[string][]byte{
		"article": data.ArticleSchema,
		"health":  []byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`),
	} {
		t.Run(name, func(t *testing.T) {
			strict, err := openai.StrictSchema(schema)
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(strict, &v); err != nil {
				t.Fatalf("%s: %v", strict, err)
			}
			strictRules(t, name, v)
		})
	}
	strict, err := openai.StrictSchema(data.ArticleSchema)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"description":"The article JSON every provider must answer with (README: Prompts).","type":"object","required":["title","sections"],"additionalProperties":false,"properties":{"title":{"type":"string"},"sections"`; !strings.HasPrefix(string(strict), want) {
		t.Fatalf("strict article schema %s; want it to start %s (keys kept in their order)", strict, want)
	}
	// The strict form still takes every article the full schema takes.
	full, _ := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(data.ArticleSchema))
	loose, _ := gojsonschema.NewSchema(gojsonschema.NewBytesLoader(strict))
	for _, doc := range []string{`{"title":"Tea","sections":[{"h2":"Origins","body":"Tea began in China."}]}`} {
		a, _ := full.Validate(gojsonschema.NewStringLoader(doc))
		b, _ := loose.Validate(gojsonschema.NewStringLoader(doc))
		if !a.Valid() || !b.Valid() {
			t.Fatalf("%s: full %v strict %v", doc, a.Errors(), b.Errors())
		}
	}
	for _, bad := range []string{`{"oneOf":[{"type":"object"}]}`, `{"type":"array"}`, `{"type":"object","properties":{"a":{"allOf":[]}}}`, `{"type":`} {
		if _, err := openai.StrictSchema([]byte(bad)); err == nil {
			t.Errorf("StrictSchema(%s) accepted", bad)
		}
	}
}

// TestStrictSchemaSent: the json_schema request carries the strict form,
// for the health request's schema too.
func TestStrictSchemaSent(t *testing.T) {
	srv := transporttest.Replay(t, fixture("cerebras", "chat_ok.http"))
	req := request(false)
	req.Schema = []byte(`{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]}`)
	if _, err := newClient(t, "cerebras", srv.URL+"/v1", openai.JSONSchema, generous).Generate(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	var body struct {
		ResponseFormat struct {
			JSONSchema struct {
				Strict bool `json:"strict"`
				Schema any  `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(srv.Last(t).Body, &body); err != nil {
		t.Fatal(err)
	}
	if !body.ResponseFormat.JSONSchema.Strict {
		t.Fatal("not strict")
	}
	strictRules(t, "health", body.ResponseFormat.JSONSchema.Schema)
}

// TestUsageThatCannotBeTrue: usage a provider reports is kept as reported,
// but flagged when it cannot be true.
func TestUsageThatCannotBeTrue(t *testing.T) {
	for _, tt := range []struct {
		usage   string
		suspect bool
	}{
		{`{"prompt_tokens":253,"completion_tokens":31,"total_tokens":284}`, false},
		{`{"prompt_tokens":-1000000,"completion_tokens":31,"total_tokens":-999969}`, true},
		{`{"prompt_tokens":253,"completion_tokens":31,"total_tokens":284,"cost":-10}`, true},
		{`{"prompt_tokens":253,"completion_tokens":900000,"total_tokens":900253}`, true},
	} {
		srv := transporttest.NewServer(t, func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":%s}`, tt.usage)
		})
		resp, err := newClient(t, "openrouter", srv.URL, openai.JSONObject, generous).Generate(context.Background(), request(false))
		if err != nil {
			t.Fatal(err)
		}
		if (resp.UsageSuspect != "") != tt.suspect {
			t.Errorf("usage %s: UsageSuspect %q", tt.usage, resp.UsageSuspect)
		}
		var u struct {
			P int `json:"prompt_tokens"`
		}
		_ = json.Unmarshal([]byte(tt.usage), &u)
		if resp.InputTokens != u.P {
			t.Errorf("usage %s: input tokens %d, not as reported", tt.usage, resp.InputTokens)
		}
	}

}

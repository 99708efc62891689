package openai

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/contentpipe/contentpipe/adapters/profile"
)

// read is what the adapter takes from extras.
func (x extras) read() (cost *float64, err *profile.ErrorObject, groq any) {
	if x.Usage != nil {
		cost = x.Usage.Cost
	}
	if x.XGroq != nil {
		groq = x.XGroq.Usage
	}
	return cost, x.Error, groq
}

// checkExtras fails when skipping the decode of body (mayHoldKey false)
// would read something other than a full decode does.
func checkExtras(t *testing.T, body []byte) {
	t.Helper()
	if mayHoldKey(body, extrasKeys) {
		return
	}
	var full extras
	_ = json.Unmarshal(body, &full)
	c, e, g := full.read()
	if c != nil || e != nil || (g != nil && !reflect.ValueOf(g).IsNil()) {
		t.Fatalf("decode skipped, but a full decode reads cost=%v error=%v x_groq=%v from %q", c, e, g, body)
	}
}

func TestExtrasSkip(t *testing.T) {
	for _, tc := range []struct {
		body string
		may  bool
	}{
		{`{"choices":[{"message":{"content":"{\"title\":\"x\"}"}}],"usage":{"prompt_tokens":3}}`, false},
		{`{"usage":{"prompt_tokens":3,"cost":0.01}}`, true},
		{`{"usage":{"COST":0.01}}`, true},
		{`{"usage":{"co\u0073t":0.01}}`, true},
		{`{"usage":{"coſt":0.01}}`, true}, // U+017F folds to 's' in encoding/json
		{`{"Error":{"message":"m"}}`, true},
		{`{"x_groq":{"usage":{}}}`, true},
		{`{"X_GROQ":{"usage":{}}}`, true},
		{`{"x-groq":{}}`, false},
		{`{"choices":[{"message":{"content":"an error occurred"}}]}`, false},
		{`{"choices":[{"message":{"content":"the \"error\" word"}}]}`, false},
		{`{"choices":[{"message":{"content":"the \"error\u0022 word"}}]}`, true}, // a false positive: one decode
		{`{"choices":[{"message":{"content":"x\"Error"}}],"\u0065rror":{}}`, true},
		{`{"errors":[]}`, false},
		{`"`, false},
		{`"cost`, false},
	} {
		if got := mayHoldKey([]byte(tc.body), extrasKeys); got != tc.may {
			t.Errorf("mayHoldKey(%s) = %v, want %v", tc.body, got, tc.may)
		}
		checkExtras(t, []byte(tc.body))
	}
}

func FuzzExtrasSkip(f *testing.F) {
	f.Add([]byte(`{"usage":{"cost":1},"error":{"message":"m"},"x_groq":{"usage":{"total_tokens":1}}}`))
	f.Add([]byte(`{"Usage":{"Cost":1}}`))
	f.Add([]byte(`{"choices":[{"message":{"content":"text"}}]}`))
	f.Fuzz(func(t *testing.T, body []byte) { checkExtras(t, body) })
}

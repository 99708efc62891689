package quality

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Tests of answer extraction: the JSON found in a model's reply, bounded,
// repaired when cut off, and odd inputs.

func TestExtract(t *testing.T) {
	obj := `{"title":"T","sections":[{"h2":"A","body":"x {y} \"z\" ` + "```go\\nfmt.Println()\\n```" + `"}]}`
	cases := []struct {
		name, in string
		want     string // "" = error expected
		err      error
	}{
		{"plain", obj, obj, nil},
		{"fenced json", "```json\n" + obj + "\n```", obj, nil},
		{"fenced without language", "```\n" + obj + "\n```\n", obj, nil},
		{"bom and fence", "\uFEFF```json\n" + obj + "\n```", obj, nil},
		{"prose around", "Here you go:\n\n" + obj + "\n\nThanks!", obj, nil},
		{"prose braces first", "Use {braces} and {{templates}} carefully. " + obj, obj, nil},
		{"invalid object first", `{"note": oops} ` + obj, obj, nil},
		{"double encoded", mustJSON(obj), obj, nil},
		{"trailing commas", `{"title":"T","sections":[{"h2":"A","body":"b",},],}`, `{"title":"T","sections":[{"h2":"A","body":"b"}]}`, nil},
		{"nested objects", `{"a":{"b":{"c":[1,2,{"d":"}"}]}}}`, `{"a":{"b":{"c":[1,2,{"d":"}"}]}}}`, nil},
		{"empty", "", "", ErrNoJSON},
		{"no json", "# Title\n\nJust markdown.", "", ErrNoJSON},
		{"unterminated", obj[:40], "", ErrTruncated},
		{"too large", strings.Repeat(" ", MaxInput+1), "", ErrInputLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Extract(c.in)
			if c.err != nil {
				if !errors.Is(err, c.err) {
					t.Fatalf("err %v, want %v", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != c.want {
				t.Errorf("got %s\nwant %s", got, c.want)
			}
		})
	}
}

func mustJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestExtractBounded feeds adversarial inputs; each must return promptly
// (the test's own timeout is the bound) with an error.
func TestExtractBounded(t *testing.T) {
	inputs := []string{
		strings.Repeat("{", 1<<20),
		strings.Repeat(`{"`, 1<<19),
		strings.Repeat(`{"a" b} `, 1<<17),
		strings.Repeat("[", 1<<20),
		`{"a":` + strings.Repeat("[", 5000),
	}
	for _, in := range inputs {
		if _, err := Extract(in); err == nil {
			t.Errorf("%q…: no error", in[:10])
		}
	}
}

// TestRecoverTruncatedJSON: an answer cut off inside the last body is
// repaired, scored with the truncation penalty, and keeps its article.
func TestRecoverTruncatedJSON(t *testing.T) {
	g := newTestGate(t, Settings{})
	full := baseArticle(t, "good_en_cycling.json").json(t)
	for _, frac := range []float64{0.95, 0.9, 0.75, 0.5} {
		cut := full[:int(float64(len(full))*frac)]
		r := g.Evaluate("```json\n"+cut, Spec{Language: "en"})
		if r.Pass {
			t.Errorf("cut at %.0f%%: passed", 100*frac)
		}
		c, ok := checkNamed(r, "truncated")
		if !ok || !strings.Contains(c.Detail, "recovered") || r.Article == nil || r.Outright && !hasCheck(r, CheckSections) {
			t.Errorf("cut at %.0f%%: want a recovered article with a truncation check, got outright=%v %s", 100*frac, r.Outright, r.Reasons())
		}
	}
	// Cut inside a key or an escape: still recovered to the last complete value.
	for _, cut := range []string{full[:strings.LastIndex(full, `"body"`)+3], full[:strings.LastIndex(full, `\"`)+1]} {
		if cut == "" {
			continue
		}
		r := g.Evaluate(cut, Spec{})
		if r.Article == nil && !r.Outright {
			t.Errorf("cut %q…: no article and not outright", cut[len(cut)-10:])
		}
	}
}

func TestEvaluateOddInputs(t *testing.T) {
	g := newTestGate(t, Settings{})
	inputs := []string{
		"", "{}", "null", `{"title":1}`, `{"title":"x","sections":[]}`, `{"title":"x","sections":[{"h2":"a","body":"b"}]}`,
		"\xff\xfe{\"title\":\"\xff\"}", strings.Repeat(`{"a":`, 300), `{"title":"x","sections":[{"h2":"a","body":"` + strings.Repeat("word ", 100000) + `"}]}`,
	}
	for _, in := range inputs {
		r := g.Evaluate(in, Spec{Language: "tr", TargetWords: 1500, Truncated: true})
		if r.Score < 0 || r.Score > 100 || (r.Pass && r.Outright) || (r.Article == nil && !r.Outright) {
			t.Errorf("%q…: inconsistent result %+v", clip(in, 20), r)
		}
		if r.Pass {
			t.Errorf("%q…: passed", clip(in, 20))
		}
	}
	// Schema failures are outright with score 0 and name the problem.
	r := g.Evaluate(`{"title":"x","sections":[{"h2":"a","text":"b"}]}`, Spec{})
	if c, ok := checkNamed(r, "schema"); !ok || !r.Outright || r.Score != 0 || !strings.Contains(c.Detail, "body") {
		t.Errorf("schema failure: %+v", r)
	}
}

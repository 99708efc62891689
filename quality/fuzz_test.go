package quality

import (
	"encoding/json"
	"strings"
	"testing"
)

// fuzzSeeds adds the corpus answers and a few awkward shapes. The corpus
// answers are large (10–20 KB), and the fuzzer minimises every new
// interesting input, which stalls on inputs that size; fuzz with a short
// minimisation budget:
//
//	go test ./quality -run XXX -fuzz FuzzEvaluate -fuzztime 60s -fuzzminimizetime 1s
func fuzzSeeds(f *testing.F) {
	for _, it := range loadCorpus(f) {
		f.Add(it.text)
	}
	for _, s := range []string{
		"", "{", "}", "{}", "[]", `"{\"title\":\"x\"}"`, "```json\n{\"title\":\"x\",\"sections\":[{\"h2\":\"a\",\"body\":\"b\\",
		"\uFEFF\uFEFF{\"a\":1,}", `{"title":"İ","sections":[{"h2":"ı","body":"I\u0307 ister misiniz?"}]}`,
	} {
		f.Add(s)
	}
}

// FuzzEvaluate: the gate never panics and its result is consistent.
func FuzzEvaluate(f *testing.F) {
	fuzzSeeds(f)
	g := corpusGate(f)
	f.Fuzz(func(t *testing.T, text string) {
		for _, spec := range []Spec{{Language: "en", TargetWords: 1500}, {Language: "tr", Truncated: true}} {
			r := g.Evaluate(text, spec)
			if r.Score < 0 || r.Score > 100 {
				t.Fatalf("score %v out of range", r.Score)
			}
			if r.Pass && (r.Outright || r.Score < g.Settings().Threshold) {
				t.Fatalf("inconsistent pass: %+v", r)
			}
			if r.Article == nil && !r.Outright {
				t.Fatalf("no article but not outright: %+v", r)
			}
			if r.Outright && r.Score != 0 {
				t.Fatalf("outright with score %v", r.Score)
			}
		}
	})
}

// FuzzExtract: Extract never panics and only returns valid JSON objects
// that occur in the input (or, for a double-encoded answer, in its string).
func FuzzExtract(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, text string) {
		out, err := Extract(text)
		if err != nil {
			if out != nil {
				t.Fatal("bytes with an error")
			}
			return
		}
		if !json.Valid(out) || out[0] != '{' {
			t.Fatalf("not a JSON object: %q", out)
		}
		if !strings.Contains(text, string(out)) && !strings.HasPrefix(strings.TrimSpace(strings.TrimLeft(text, " \t\r\n\uFEFF")), `"`) && !strings.Contains(string(out), "}") {
			t.Fatalf("object not from the input: %q", out)
		}
		_ = extract(text) // the repair path too
	})
}

// benchArticle is a good English article of at least 1,500 words.
func benchArticle(b *testing.B) (string, int) {
	a := baseArticle(b, "good_en_compost.json")
	extra := baseArticle(b, "good_en_cycling.json").Sections
	for i := 0; bodyWords(&a) < 1500; i++ {
		a.Sections = append(a.Sections, extra[i])
	}
	return a.json(b), bodyWords(&a)
}

// BenchmarkEvaluate scores a 1,500-word English article, the language check
// included.
func BenchmarkEvaluate(b *testing.B) {
	benchEvaluate(b, "en")
}

// BenchmarkEvaluateNoLanguage is BenchmarkEvaluate without the language
// check: the difference is the language identifier's share.
func BenchmarkEvaluateNoLanguage(b *testing.B) {
	benchEvaluate(b, "")
}

func benchEvaluate(b *testing.B, lang string) {
	g := corpusGate(b)
	text, words := benchArticle(b)
	spec := Spec{Language: lang, TargetWords: 1500}
	if r := g.Evaluate(text, spec); !r.Pass {
		b.Fatalf("benchmark article fails: %s", r.Reasons())
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		g.Evaluate(text, spec)
	}
	b.ReportMetric(float64(words), "words")
}

// BenchmarkLanguage is the language check alone on the same article.
func BenchmarkLanguage(b *testing.B) {
	text, _ := benchArticle(b)
	r := corpusGate(b).Evaluate(text, Spec{})
	an := new(analysis)
	an.analyze(r.Article)
	id := newLangID()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if f := id.checkLanguage(r.Article, an.bodies, English); len(f.wrong) > 0 {
			b.Fatal(f.wrong)
		}
	}
}

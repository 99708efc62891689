package chain

import (
	"testing"

	"github.com/contentpipe/contentpipe/quality"
)

// A link's own template renders for its calls, jobs and prompts tests
// alike, and its version is recorded on the call; a link without one gets
// its family's.
func TestLinkPromptTemplate(t *testing.T) {
	s := newScenario(t, "a", "b")
	s.link("a").Prompt = "llama"
	s.script("a", step{resp: Response{Text: "BAD thin"}})
	s.script("b", step{resp: Response{Text: "GOOD"}})
	res := s.run("t1")
	if res.Status != JobPublished || res.Winner.Provider != "b" {
		t.Fatalf("status %s winner %+v", res.Status, res.Winner)
	}
	want := map[string]string{"a": "article@test/llama", "b": "article@test/openai"}
	for _, c := range s.store.calls {
		if c.PromptVersion != want[c.Provider] || c.Purpose != PurposeJob {
			t.Errorf("%s job call: version %q purpose %q, want %q job", c.Provider, c.PromptVersion, c.Purpose, want[c.Provider])
		}
	}

	s.store.calls = nil
	job := Job{ID: "prompts/2026-11-29T10:00:00Z/t1", Topic: "t1", Title: "t1", Language: "en", TargetWords: 100}
	checks, err := s.chain.CheckPrompts(t.Context(), job)
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 2 {
		t.Fatalf("%d checks, want one per link", len(checks))
	}
	a, b := checks[0], checks[1]
	if a.Provider != "a" || a.Version != want["a"] || a.Pass || a.Score == nil || *a.Score != 40 || len(a.Checks) != 1 || a.Sections != 1 {
		t.Errorf("link a: %+v, want the llama version, rejected at 40 with one check", a)
	}
	if b.Provider != "b" || b.Version != want["b"] || !b.Pass || b.Outcome != OutcomeOK || b.CostUSD <= 0 && b.Latency < 0 {
		t.Errorf("link b: %+v, want the openai version, passed", b)
	}
	if len(s.store.calls) != 2 {
		t.Fatalf("%d calls recorded, want 2", len(s.store.calls))
	}
	for _, c := range s.store.calls {
		if c.Purpose != PurposePrompts || c.RequestID != job.ID || c.Attempt != 0 || c.PromptVersion != want[c.Provider] {
			t.Errorf("prompts call %+v: want purpose prompts, attempt 0, version %q", c, want[c.Provider])
		}
	}
}

// A prompts test does not feed the breaker: a failed answer is no sample.
func TestCheckPromptsNoBreakerSample(t *testing.T) {
	s := newScenario(t, "a")
	s.script("a", step{err: &ProviderError{Status: 500, Outcome: OutcomeServerError}})
	checks, err := s.chain.CheckPrompts(t.Context(), Job{ID: "prompts/x", Topic: "x", Title: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if len(checks) != 1 || checks[0].Outcome != OutcomeServerError || checks[0].Pass || !checks[0].Called() {
		t.Fatalf("checks %+v", checks)
	}
	st := s.store.states["a"]
	if st != nil && len(st.Breaker.Events) != 0 {
		t.Errorf("breaker events %v after a prompts test, want none", st.Breaker.Events)
	}
}

// A prompts test hands the gate's checks over as they are (typed, not
// their stored strings), and a job call stores each as its String.
func TestPromptChecksTyped(t *testing.T) {
	s := newScenario(t, "a")
	s.script("a", step{resp: Response{Text: "BAD thin"}}, step{resp: Response{Text: "BAD thin"}})
	checks, err := s.chain.CheckPrompts(t.Context(), Job{ID: "prompts/t1", Topic: "t1", Title: "t1", Language: "en", TargetWords: 100})
	if err != nil {
		t.Fatal(err)
	}
	want := quality.Check{Name: quality.CheckWords, Penalty: 60}
	if len(checks) != 1 || len(checks[0].Checks) != 1 || checks[0].Checks[0] != want {
		t.Fatalf("checks %+v, want one %+v", checks, want)
	}
	if got := s.store.calls[0].Checks; len(got) != 1 || got[0] != want.String() {
		t.Errorf("stored checks %q, want [%q]", got, want.String())
	}
}

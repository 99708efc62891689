package chain_test

import (
	"testing"

	"github.com/contentpipe/contentpipe/chain"
)

// TestWalksContinueTheJobsAttemptNumbers: a job walked again (a later run
// after a deferral) numbers its calls after the ones the store holds, which
// the walk reads once with the job's too-large links (JobHistory).
func TestWalksContinueTheJobsAttemptNumbers(t *testing.T) {
	w := newWorld(t)
	w.chain.Gate = decodeGate{}
	article := `{"title":"Espresso","sections":[{"h2":"Grind","body":"fine and even"}]}`
	reset, _ := chain.ParseCapReset("")
	w.chain.Links = []*chain.Link{{Name: "echo", Model: "m", Family: "openai", CapReset: reset,
		Provider: echoing{resp: chain.Response{Text: article, HTTPStatus: 200}}}}
	for range 3 {
		w.run("a")
	}
	w.run("b")
	var got []int
	for _, c := range w.calls("echo") {
		got = append(got, c.attempt)
	}
	if len(got) != 4 || got[0] != 1 || got[1] != 2 || got[2] != 3 || got[3] != 1 {
		t.Fatalf("attempts %v, want 1 2 3 for job a's three walks and 1 for job b", got)
	}
}

package telemetry

import (
	"math"
	"reflect"
	"testing"

	"github.com/contentpipe/contentpipe/chain"
)

// The report breaks the window's answered job calls down by prompt
// version; calls without an answer, other purposes and calls outside the
// window are left out.
func TestReportPromptVersions(t *testing.T) { forEachBackend(t, testReportPromptVersions) }

func testReportPromptVersions(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	calls := []chain.Call{
		{Provider: "groq", RequestID: "j1", Attempt: 1, TS: at(23, 6), QualityScore: fp(90), Outcome: chain.OutcomeOK, PromptVersion: "article@2/llama"},
		{Provider: "groq", RequestID: "j2", Attempt: 1, TS: at(24, 6), QualityScore: fp(60), Outcome: chain.OutcomeRejected, PromptVersion: "article@2/llama"},
		{Provider: "openrouter", RequestID: "j2", Attempt: 2, TS: at(24, 7), QualityScore: fp(81), Outcome: chain.OutcomeOK, PromptVersion: "article@2/llama"},
		{Provider: "gemini", RequestID: "j3", Attempt: 1, TS: at(25, 6), QualityScore: fp(95), Outcome: chain.OutcomeOK, PromptVersion: "article@1/gemini"},
		// No answer, another purpose, outside the window: not counted.
		{Provider: "gemini", RequestID: "j4", Attempt: 1, TS: at(25, 7), HTTPStatus: 429, Outcome: chain.OutcomeRateLimited, PromptVersion: "article@1/gemini"},
		{Provider: "groq", RequestID: "p", TS: at(25, 8), QualityScore: fp(10), Outcome: chain.OutcomeRejected, PromptVersion: "article@2/llama", Purpose: chain.PurposePrompts},
		{Provider: "groq", RequestID: "j1", Attempt: 2, TS: at(23, 6), QualityScore: fp(10), Outcome: chain.OutcomeRejected, PromptVersion: "article@2/llama", Shadow: true, Purpose: chain.PurposeShadow},
		{Provider: "groq", RequestID: "j0", Attempt: 1, TS: at(20, 6), QualityScore: fp(10), Outcome: chain.OutcomeRejected, PromptVersion: "article@1/llama"},
	}
	for _, c := range calls {
		if err := s.RecordCall(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	d, err := s.Report(ctx, repSince, repUntil, "gemini")
	if err != nil {
		t.Fatal(err)
	}
	want := []PromptVersionQuality{
		{Version: "article@2/llama", Calls: 3, Passed: 2, MeanScore: 77},
		{Version: "article@1/gemini", Calls: 1, Passed: 1, MeanScore: 95},
	}
	if !reflect.DeepEqual(d.PromptVersions, want) {
		t.Fatalf("PromptVersions = %+v, want %+v", d.PromptVersions, want)
	}
	if r := d.PromptVersions[0].PassRate(); math.Abs(r-2.0/3) > 1e-9 {
		t.Errorf("pass rate %v, want 2/3", r)
	}
	if (PromptVersionQuality{}).PassRate() != 0 {
		t.Error("pass rate without calls is not 0")
	}
}

package alerts

import (
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/telemetry"
)

// The text report has a section with one row per prompt version: calls,
// pass rate and mean score.
func TestReportTextPromptVersions(t *testing.T) {
	since := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	d := telemetry.ReportData{Since: since, Until: since.AddDate(0, 0, 7), Totals: telemetry.ProviderCalls{Calls: 4},
		PromptVersions: []telemetry.PromptVersionQuality{
			{Version: "article@2/llama", Calls: 3, Passed: 2, MeanScore: 77},
			{Version: "", Calls: 1, Passed: 1, MeanScore: 95},
		}}
	text := NewReport(d).Text()
	want := "\nQuality by prompt version (answered job calls in the window)\n" +
		"  version                   calls  pass rate  mean score\n" +
		"  article@2/llama               3      66.7%        77.0\n" +
		"  (not recorded)                1     100.0%        95.0\n"
	if !strings.Contains(text, want) {
		t.Errorf("no prompt version section like\n%s\nin\n%s", want, text)
	}
	d.PromptVersions = nil
	if text := NewReport(d).Text(); !strings.Contains(text, "Quality by prompt version (answered job calls in the window)\n  no scored answers\n") {
		t.Errorf("no empty prompt version section in\n%s", text)
	}
}

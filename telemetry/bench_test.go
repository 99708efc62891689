package telemetry

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// BenchmarkRecordCall measures one durable insert of a calls row and its
// outputs row (a 1,500-word answer) in WAL mode with synchronous NORMAL.
func BenchmarkRecordCall(b *testing.B) {
	s, _ := openTemp(b)
	ctx := context.Background()
	text := strings.Repeat("word ", 1500)
	score := 82.0
	c := chain.Call{Provider: "gemini", Model: "gemini-flash-latest", RequestID: "bench@2026-11-29", TS: time.Now(),
		InputTokens: 900, OutputTokens: 2100, Latency: 8 * time.Second, FirstToken: 700 * time.Millisecond,
		HTTPStatus: 200, CostUSD: 0.0055, QualityScore: &score, Outcome: chain.OutcomeOK, PromptVersion: "article@3/gemini",
		Purpose: chain.PurposeJob, Checks: []string{"words:-5"}, Text: text}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		c.Attempt = i + 1
		if err := s.RecordCall(ctx, c); err != nil {
			b.Fatal(err)
		}
	}
}

package alerts

import (
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

func TestSpendAlerts(t *testing.T) {
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	got := SpendAlerts([]SpendUse{
		{SpendCheck: SpendCheck{Limit: chain.LimitChainDay, From: day, Max: 1}, Used: 0.79},
		{SpendCheck: SpendCheck{Limit: chain.LimitChainMonth, From: day, Max: 10}, Used: 8.5},
		{SpendCheck: SpendCheck{Limit: chain.LimitTokens, Provider: "groq", From: day, Max: 1000}, Used: 700, Skipped: true},
	}, 0)
	var keys []string
	for _, a := range got {
		keys = append(keys, a.Key)
	}
	want := "budget:budget.monthly_usd::2026-12-01:warn budget:daily_tokens:groq:2026-12-01:reached budget:daily_tokens:groq:2026-12-01:warn"
	if strings.Join(keys, " ") != want {
		t.Fatalf("keys %v, want %s", keys, want)
	}
	if !strings.Contains(got[0].Text, "$8.5000 of its budget.monthly_usd of $10.0000 (85%") || !strings.Contains(got[1].Text, "700 tokens used") {
		t.Errorf("texts:\n%s\n%s", got[0].Text, got[1].Text)
	}
}

package whatif

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

// smallModel is a compact, eventful fault model for tests.
func smallModel() *Model {
	return &Model{
		Seed: 7, BusyDays: 0.3,
		Groups: map[string]Outages{"google": {Every: 72 * time.Hour, Length: 6 * time.Hour}},
		Providers: map[string]ProviderModel{
			"gemini": {Group: "google", RateLimit: RateLimit{PerMinute: 0.1, Burst: 90 * time.Second, DailyQuota: 20, BusyDayQuota: 2,
				QuotaReset: "00:00 America/Los_Angeles"}, Quality: Quality{LowQuality: 0.05}},
			"groq":       {Quality: Quality{Thin: true, Length: 0.85}, Errors: Errors{Unavailable: 0.05}},
			"cerebras":   {Errors: Errors{Timeout: 0.05}},
			"openrouter": {Quality: Quality{BadJSON: 0.05}},
		},
	}
}

func TestSameSeedSameTable(t *testing.T) {
	a := runSim(t, smallModel(), 11, 5)
	b := runSim(t, smallModel(), 11, 5)
	strip := func(r *Report) []Row {
		rows := append([]Row(nil), r.Rows...)
		for i := range rows {
			rows[i].DB = ""
		}
		return rows
	}
	if !reflect.DeepEqual(strip(a), strip(b)) {
		t.Fatalf("same seed, different tables:\n%+v\n%+v", strip(a), strip(b))
	}
	if len(a.Rows) != 4 {
		t.Fatalf("want 4 rows (chain and three baselines), got %d", len(a.Rows))
	}
	for _, r := range a.Rows {
		if r.Jobs != 5*6 {
			t.Errorf("%s: %d jobs, want %d", r.Scenario, r.Jobs, 5*6)
		}
		if r.Calls == 0 || r.CostUSD <= 0 {
			t.Errorf("%s: no calls or no cost: %+v", r.Scenario, r)
		}
	}
	c := runSim(t, smallModel(), 12, 5)
	if reflect.DeepEqual(strip(a), strip(c)) {
		t.Fatal("a different seed gave the very same table: the seed is not used")
	}
	// The chain must beat its first link alone in this eventful world.
	ch, single := a.Row(ScenarioChain), a.Row(ScenarioSingle)
	if ch.SuccessRate <= single.SuccessRate || single.FallbackShare != 0 || ch.FallbackShare == 0 {
		t.Fatalf("chain %+v\nsingle %+v", ch, single)
	}
	if got := a.Row(ScenarioCostOrder).Order[0]; got != "openrouter" {
		t.Fatalf("cost order starts with %s, want the cheapest, openrouter", got)
	}
}

func TestBlackouts(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }
	walks := []walk{
		{start: at(0), end: at(0.1), published: true},
		{start: at(0.1), end: at(0.2), noAnswer: true}, // one unlucky job: not a blackout
		{start: at(4), end: at(4.1), published: true},
		{start: at(8), end: at(8.1), noAnswer: true}, // a blackout of two passes, 8 h
		{start: at(12), end: at(12.1), noAnswer: true},
		{start: at(16), end: at(16), published: false}, // review: answers came
		{start: at(20), end: at(20.1), noAnswer: true},
		{start: at(24), end: at(24.1), published: true},
		{start: at(30), end: at(30.1), noAnswer: true}, // open at the end
		{start: at(31), end: at(31.1), noAnswer: true},
	}
	h, n, days := blackouts(walks, at(33))
	if n != 2 || days != 2 || fmt.Sprintf("%.1f", h) != "19.1" {
		t.Fatalf("blackouts = %.2f h, %d, %d days; want 19.1 h (16.1 + 3), 2, 2 days", h, n, days)
	}
}

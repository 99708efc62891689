package telemetry

import (
	"context"
	"testing"
	"time"
)

func TestLastRunAndHealth(t *testing.T) { forEachBackend(t, testLastRunAndHealth) }

// testLastRunAndHealth: the last run's summary replaces the one before,
// and LastHealth is each provider's newest row.
func testLastRunAndHealth(t *testing.T) {
	s, _ := openTemp(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	if _, ok, err := s.LastRun(ctx); err != nil || ok {
		t.Fatalf("fresh store: ok %v err %v", ok, err)
	}
	for _, v := range []string{"first", "second"} {
		if err := s.SaveLastRun(ctx, v, now); err != nil {
			t.Fatal(err)
		}
	}
	if v, ok, err := s.LastRun(ctx); err != nil || !ok || v != "second" {
		t.Fatalf("last run: %q %v %v", v, ok, err)
	}
	rows := []HealthCheck{
		{TS: now, Provider: "groq", OK: false, Outcome: "timeout"},
		{TS: now, Provider: "gemini", OK: true, Outcome: "ok", Latency: 1200 * time.Millisecond},
		{TS: now.Add(time.Hour), Provider: "groq", OK: true, Outcome: "ok", Latency: 300 * time.Millisecond},
	}
	for _, h := range rows {
		if err := s.RecordHealth(ctx, h); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.LastHealth(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Provider != "gemini" || got[0].Latency != 1200*time.Millisecond ||
		got[1].Provider != "groq" || !got[1].OK || !got[1].TS.Equal(now.Add(time.Hour)) {
		t.Fatalf("last health: %+v", got)
	}
}

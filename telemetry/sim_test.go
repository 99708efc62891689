package telemetry

import (
	"context"
	"reflect"
	"sort"
	"strings"
	"testing"
)

func TestSimulatorTotals(t *testing.T) { forEachBackend(t, testSimulatorTotals) }

func testSimulatorTotals(t *testing.T) {
	path := seedReport(t)
	s, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	jobs, err := s.JobTotals(ctx, "gemini")
	if err != nil {
		t.Fatal(err)
	}
	// Seven jobs; j1, j2, j0 and j7 published, only j0 on its slot day
	// (2026-11-20); all but j1 by a fallback.
	if want := (JobTotals{Jobs: 7, Published: 4, PublishedOnSlotDay: 1, PublishedFallback: 3, MeanQuality: 78.75}); jobs != want {
		t.Errorf("job totals %+v, want %+v", jobs, want)
	}
	calls, err := s.JobCallTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Eight job calls (the shadow and health calls do not count); the
	// rejected groq answer is the only paid failure.
	if calls.Calls != 8 || !near(calls.CostUSD, 13.034) || !near(calls.WastedUSD, 0.004) {
		t.Errorf("job call totals %+v, want 8 calls, $13.034, $0.004 wasted", calls)
	}
	secs, err := s.PublishSeconds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Float64s(secs)
	// j7 has no calls or skips; j2 took from 06:00 to 08:00.
	if len(secs) != 3 || !near(secs[0], 0) || !near(secs[1], 0) || secs[2] < 7199.99 || secs[2] > 7200.01 {
		t.Errorf("publish seconds %v, want [0 0 7200]", secs)
	}
	evs, err := s.ProviderEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var skips []string
	health, shadow := false, false
	for _, e := range evs {
		if r, ok := strings.CutPrefix(e.Outcome, "skip:"); ok {
			skips = append(skips, e.Provider+":"+r)
		}
		if e.Provider == "cerebras" && e.TS.Equal(at(25, 5)) {
			health = true
		}
		if e.Provider == "groq" && e.TS.Equal(at(23, 6)) {
			shadow = true
		}
	}
	sort.Strings(skips)
	if want := []string{"gemini:exhausted", "gemini:exhausted", "groq:cap", "groq:circuit_open"}; !reflect.DeepEqual(skips, want) {
		t.Errorf("skips %v, want %v", skips, want)
	}
	if !health || shadow {
		t.Errorf("provider events: health call present %v (want true), shadow call present %v (want false)", health, shadow)
	}
}

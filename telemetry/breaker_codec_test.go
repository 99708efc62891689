package telemetry

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

func codecBreakers() []chain.Breaker {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 123456789, time.UTC)
	var window chain.BreakerEvents
	for i := range 64 {
		window = append(window, chain.BreakerEvent{At: t0.Add(time.Duration(i) * time.Second).Truncate(time.Millisecond).UTC(), Fail: i%3 == 0})
	}
	return []chain.Breaker{
		{},
		{Events: window},
		{State: chain.BreakerClosed, Events: window[:1]},
		{State: chain.BreakerOpen, OpenedAt: t0, Cooldown: 4 * time.Minute},
		{State: chain.BreakerHalfOpen, OpenedAt: t0, Cooldown: -time.Second, Successes: 1, ProbeAt: t0.In(time.FixedZone("x", 3600))},
		{State: `a"b<&>\` + "\x01é", Successes: -3},
		{OpenedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}, // json.Marshal refuses it
	}
}

// encodeBreaker writes what json.Marshal writes, and decodeBreaker reads
// back what json.Unmarshal reads.
func TestBreakerCodecMatchesEncodingJSON(t *testing.T) {
	for _, b := range codecBreakers() {
		want, werr := json.Marshal(b)
		got, gerr := encodeBreaker(b)
		if (werr != nil) != (gerr != nil) || string(got) != string(want) {
			t.Fatalf("encode %+v:\n got %s (%v)\nwant %s (%v)", b, got, gerr, want, werr)
		}
		if werr == nil {
			checkDecode(t, string(want))
		}
	}
	for _, s := range []string{`{}`, `{"state":"open"}`, `{"state":"closed","events":[]}`, `{"state":"","events":null,"opened_at":"0001-01-01T00:00:00Z","probe_at":"0001-01-01T00:00:00Z"}`,
		`{"state":"","events":[01],"opened_at":"0001-01-01T00:00:00Z","probe_at":"0001-01-01T00:00:00Z"}`,
		`{"state":"","opened_at":"0001-01-01T00:00:00Z","cooldown":1.5,"probe_at":"0001-01-01T00:00:00Z"}`,
		`{"state":"","opened_at":"0001-01-01T00:00:00Z","successes":99999999999999999999,"probe_at":"0001-01-01T00:00:00Z"}`,
		`{"state":"","opened_at":"2026-13-01T00:00:00Z","probe_at":"0001-01-01T00:00:00Z"}`,
		`{"state":"","opened_at":"0001-01-01T00:00:00Z","probe_at":"0001-01-01T00:00:00Z"} `,
		`{"state":"","events":[1,-2,99999999999999999999],"opened_at":"0001-01-01T00:00:00Z","probe_at":"0001-01-01T00:00:00Z"}`,
	} {
		checkDecode(t, s)
	}
}

func checkDecode(t *testing.T, s string) {
	t.Helper()
	var want, got chain.Breaker
	werr := json.Unmarshal([]byte(s), &want)
	gerr := decodeBreaker(s, &got)
	if (werr != nil) != (gerr != nil) || werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("decode %s:\n got %+v (%v)\nwant %+v (%v)", s, got, gerr, want, werr)
	}
}

func FuzzBreakerDecode(f *testing.F) {
	for _, b := range codecBreakers() {
		if raw, err := json.Marshal(b); err == nil {
			f.Add(string(raw))
		}
	}
	f.Fuzz(func(t *testing.T, s string) { checkDecode(t, s) })
}

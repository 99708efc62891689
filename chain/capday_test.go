package chain

import (
	"strings"
	"testing"
	"time"
)

func mustParseCapReset(t *testing.T, s string) CapReset {
	t.Helper()
	r, err := ParseCapReset(s)
	if err != nil {
		t.Fatalf("ParseCapReset(%q): %v", s, err)
	}
	return r
}

func TestParseCapReset(t *testing.T) {
	good := []struct {
		in        string
		h, m      int
		zone, str string
	}{
		{"", 0, 0, "UTC", "00:00 UTC"},
		{"   ", 0, 0, "UTC", "00:00 UTC"},
		{"06:30", 6, 30, "UTC", "06:30 UTC"},
		{"6:30", 6, 30, "UTC", "06:30 UTC"},
		{"00:00 America/Los_Angeles", 0, 0, "America/Los_Angeles", "00:00 America/Los_Angeles"},
		{" 23:59   Europe/Istanbul ", 23, 59, "Europe/Istanbul", "23:59 Europe/Istanbul"},
		{"12:00 UTC", 12, 0, "UTC", "12:00 UTC"},
	}
	for _, c := range good {
		r := mustParseCapReset(t, c.in)
		if r.Hour != c.h || r.Minute != c.m || r.Loc.String() != c.zone || r.String() != c.str {
			t.Errorf("ParseCapReset(%q) = %+v %q, want %02d:%02d %s", c.in, r, r.String(), c.h, c.m, c.zone)
		}
		back := mustParseCapReset(t, r.String())
		if back.Hour != r.Hour || back.Minute != r.Minute || back.Loc.String() != r.Loc.String() {
			t.Errorf("String round trip of %q: %+v", c.in, back)
		}
	}
	bad := []string{"24:00", "12:60", "6:5", "noon", "12", "-1:00", "+1:00", "1:2:3", "006:00",
		"00:00 Mars/Olympus_Mons", "00:00 America/Los_Angeles extra", "00:00 Local", ":30"}
	for _, in := range bad {
		_, err := ParseCapReset(in)
		if err == nil {
			t.Errorf("ParseCapReset(%q) accepted", in)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "HH:MM") || !strings.Contains(msg, "America/Los_Angeles") || !strings.HasPrefix(msg, "cap_reset") {
			t.Errorf("ParseCapReset(%q) error %q does not name the expected format", in, msg)
		}
	}
	if got := (CapReset{}).String(); got != "00:00 UTC" {
		t.Errorf("zero CapReset = %q", got)
	}
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t.UTC()
}

func TestCapResetDayWindows(t *testing.T) {
	cases := []struct {
		reset       string
		now         string
		start, next string
		dayLen      time.Duration // Next(now) - DayStart(now)
		comment     string
	}{
		{"", "2026-08-24T18:00:00Z", "2026-08-24T00:00:00Z", "2026-08-25T00:00:00Z", 24 * time.Hour, "UTC day"},
		{"", "2026-08-25T00:00:00Z", "2026-08-25T00:00:00Z", "2026-08-26T00:00:00Z", 24 * time.Hour, "exactly at the reset: a new day"},
		{"", "2026-08-24T23:59:59.999Z", "2026-08-24T00:00:00Z", "2026-08-25T00:00:00Z", 24 * time.Hour, "last instant of the day"},
		{"06:30", "2026-08-24T05:00:00Z", "2026-08-23T06:30:00Z", "2026-08-24T06:30:00Z", 24 * time.Hour, "before today's reset"},
		{"00:00 America/Los_Angeles", "2026-08-24T06:59:00Z", "2026-08-23T07:00:00Z", "2026-08-24T07:00:00Z", 24 * time.Hour, "PDT"},
		{"00:00 America/Los_Angeles", "2026-12-01T09:00:00Z", "2026-12-01T08:00:00Z", "2026-12-02T08:00:00Z", 24 * time.Hour, "PST"},
		// Spring forward: 2026-03-08 02:00 PST → 03:00 PDT, a 23-hour day.
		{"00:00 America/Los_Angeles", "2026-03-08T12:00:00Z", "2026-03-08T08:00:00Z", "2026-03-09T07:00:00Z", 23 * time.Hour, "spring-forward day"},
		// Fall back: 2026-11-01 02:00 PDT → 01:00 PST, a 25-hour day.
		{"00:00 America/Los_Angeles", "2026-11-01T20:00:00Z", "2026-11-01T07:00:00Z", "2026-11-02T08:00:00Z", 25 * time.Hour, "fall-back day"},
		// 02:30 does not exist on the spring-forward day: that day starts at
		// the jump, 03:00 PDT (10:00Z), the first instant reading ≥ 02:30.
		{"02:30 America/Los_Angeles", "2026-03-08T09:59:59Z", "2026-03-07T10:30:00Z", "2026-03-08T10:00:00Z", 23*time.Hour + 30*time.Minute, "skipped wall time, before the jump"},
		{"02:30 America/Los_Angeles", "2026-03-08T10:00:00Z", "2026-03-08T10:00:00Z", "2026-03-09T09:30:00Z", 23*time.Hour + 30*time.Minute, "skipped wall time, at the jump"},
		// 01:30 happens twice on the fall-back day: the first (PDT, 08:30Z) counts.
		{"01:30 America/Los_Angeles", "2026-11-01T08:30:00Z", "2026-11-01T08:30:00Z", "2026-11-02T09:30:00Z", 25 * time.Hour, "repeated wall time, first occurrence"},
		{"01:30 America/Los_Angeles", "2026-11-01T09:30:00Z", "2026-11-01T08:30:00Z", "2026-11-02T09:30:00Z", 25 * time.Hour, "repeated wall time, second occurrence is not a reset"},
		{"01:30 America/Los_Angeles", "2026-11-01T08:29:00Z", "2026-10-31T08:30:00Z", "2026-11-01T08:30:00Z", 24 * time.Hour, "day before the fall-back"},
		{"00:00 Europe/Istanbul", "2026-08-24T20:59:59Z", "2026-08-23T21:00:00Z", "2026-08-24T21:00:00Z", 24 * time.Hour, "UTC+3"},
	}
	for _, c := range cases {
		r := mustParseCapReset(t, c.reset)
		now := utc(c.now)
		start, next := r.DayStart(now), r.Next(now)
		if !start.Equal(utc(c.start)) || !next.Equal(utc(c.next)) {
			t.Errorf("%s (%q at %s): day [%s, %s), want [%s, %s)", c.comment, c.reset, c.now, start, next, c.start, c.next)
		}
		if start.Location() != time.UTC || next.Location() != time.UTC {
			t.Errorf("%s: results not in UTC: %s %s", c.comment, start.Location(), next.Location())
		}
		if got := next.Sub(start); got != c.dayLen {
			t.Errorf("%s: day length %s, want %s", c.comment, got, c.dayLen)
		}
		// The answer must not depend on the zone now is expressed in.
		if la := now.In(r.loc()); !r.DayStart(la).Equal(start) || !r.Next(la).Equal(next) {
			t.Errorf("%s: answers differ for now in another zone", c.comment)
		}
	}
}

// TestCapResetInvariants sweeps the DST weeks of America/Los_Angeles in
// uneven steps and checks DayStart ≤ now < Next with consistent neighbours.
func TestCapResetInvariants(t *testing.T) {
	// America/Santiago skips midnight itself when it springs forward
	// (2026-09-06) and repeats 23:xx when it falls back (2026-04-04).
	for _, spec := range []string{"", "00:00 America/Los_Angeles", "02:30 America/Los_Angeles", "01:30 America/Los_Angeles",
		"23:45 Asia/Kolkata", "00:00 America/Santiago", "23:30 America/Santiago"} {
		r := mustParseCapReset(t, spec)
		for _, from := range []string{"2026-03-05T00:00:00Z", "2026-10-29T00:00:00Z", "2026-04-01T00:00:00Z", "2026-09-03T00:00:00Z"} {
			now := utc(from)
			end := now.Add(7 * 24 * time.Hour)
			for ; now.Before(end); now = now.Add(17*time.Minute + 13*time.Second) {
				start, next := r.DayStart(now), r.Next(now)
				if start.After(now) || !next.After(now) {
					t.Fatalf("%q at %s: day [%s, %s) does not hold now", spec, now, start, next)
				}
				if l := next.Sub(start); l < 22*time.Hour || l > 26*time.Hour {
					t.Fatalf("%q at %s: day length %s", spec, now, l)
				}
				if !r.DayStart(next).Equal(next) {
					t.Fatalf("%q at %s: DayStart(Next) = %s, want %s", spec, now, r.DayStart(next), next)
				}
				// The day starts at the first instant reading HH:MM or later.
				if w := start.In(r.loc()); w.Hour()*60+w.Minute() < r.Hour*60+r.Minute {
					t.Fatalf("%q at %s: day starts at wall time %s", spec, now, w)
				}
				if w := start.Add(-time.Minute).In(r.loc()); w.YearDay() == start.In(r.loc()).YearDay() && w.Hour()*60+w.Minute() >= r.Hour*60+r.Minute {
					t.Fatalf("%q at %s: a minute before the day start already reads %s", spec, now, w)
				}
				if !r.Next(start.Add(-time.Nanosecond)).Equal(start) {
					t.Fatalf("%q at %s: Next just before DayStart = %s, want %s", spec, now, r.Next(start.Add(-time.Nanosecond)), start)
				}
			}
		}
	}
}

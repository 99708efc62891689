package chain

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// capResetFormat is the expected shape of a cap_reset value, for errors.
const capResetFormat = `want "HH:MM" or "HH:MM <IANA zone>", e.g. "00:00 America/Los_Angeles"`

// CapReset is when a provider's day starts (the link's cap_reset): a wall
// clock time in a time zone. Daily caps count requests per such day and a
// daily quota is exhausted until the next one. The zero value is 00:00 UTC;
// a nil Loc means UTC. It is a plain value, safe for concurrent use.
type CapReset struct {
	Hour, Minute int
	Loc          *time.Location
}

// ParseCapReset parses a cap_reset value: "HH:MM" (UTC) or "HH:MM Zone" with
// an IANA zone name such as "00:00 America/Los_Angeles". The empty string is
// 00:00 UTC. "Local" is refused: a cap day must not depend on the machine.
func ParseCapReset(s string) (CapReset, error) {
	f := strings.Fields(s)
	if len(f) == 0 {
		return CapReset{Loc: time.UTC}, nil
	}
	if len(f) > 2 {
		return CapReset{}, fmt.Errorf("cap_reset %q: %s", s, capResetFormat)
	}
	h, m, ok := parseClock(f[0])
	if !ok {
		return CapReset{}, fmt.Errorf("cap_reset %q: bad clock time %q: %s", s, f[0], capResetFormat)
	}
	r := CapReset{Hour: h, Minute: m, Loc: time.UTC}
	if len(f) == 2 {
		if f[1] == "Local" {
			return CapReset{}, fmt.Errorf("cap_reset %q: zone Local depends on the machine: %s", s, capResetFormat)
		}
		loc, err := time.LoadLocation(f[1])
		if err != nil {
			return CapReset{}, fmt.Errorf("cap_reset %q: unknown time zone %q: %s", s, f[1], capResetFormat)
		}
		r.Loc = loc
	}
	return r, nil
}

// parseClock parses "H:MM" or "HH:MM" (00:00 to 23:59).
func parseClock(s string) (h, m int, ok bool) {
	hs, ms, found := strings.Cut(s, ":")
	if !found || len(hs) < 1 || len(hs) > 2 || len(ms) != 2 {
		return 0, 0, false
	}
	for _, c := range hs + ms {
		if c < '0' || c > '9' {
			return 0, 0, false
		}
	}
	h, _ = strconv.Atoi(hs)
	m, _ = strconv.Atoi(ms)
	return h, m, h <= 23 && m <= 59
}

// String returns the value in the form ParseCapReset reads: "00:00 UTC".
func (r CapReset) String() string {
	return fmt.Sprintf("%02d:%02d %s", r.Hour, r.Minute, r.loc())
}

func (r CapReset) loc() *time.Location {
	if r.Loc == nil {
		return time.UTC
	}
	return r.Loc
}

// at returns the reset on the local calendar day y-m-d+days: the first
// instant of that day whose wall clock reads r's time or later. time.Date
// leaves the side of a DST change open, so both cases are settled here: a
// wall time skipped by a spring-forward gap resets at the jump (02:30 in
// America/Los_Angeles on 2026-03-08 is 03:00 PDT), and a wall time repeated
// by a fall-back resets at its first occurrence.
func (r CapReset) at(y int, m time.Month, d, days int) time.Time {
	loc := r.loc()
	t := time.Date(y, m, d+days, r.Hour, r.Minute, 0, 0, loc)
	if t.Hour() == r.Hour && t.Minute() == r.Minute {
		start, _ := t.ZoneBounds()
		if start.IsZero() {
			return t
		}
		_, off := t.Zone()
		_, before := start.Add(-time.Nanosecond).Zone()
		if diff := time.Duration(before-off) * time.Second; diff > 0 {
			if alt := t.Add(-diff); alt.Hour() == r.Hour && alt.Minute() == r.Minute && alt.YearDay() == t.YearDay() {
				return alt // the first of a repeated wall time
			}
		}
		return t
	}
	want := time.Date(y, m, d+days, r.Hour, r.Minute, 0, 0, time.UTC)
	got := time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), 0, time.UTC)
	start, end := t.ZoneBounds()
	if got.Before(want) {
		return end // t lies before the gap
	}
	return start // t lies after the gap
}

// DayStart returns the most recent reset at or before now, in UTC: the start
// of the cap day that now falls in. Days are calendar days of the zone, so a
// DST change gives a 23- or 25-hour day.
func (r CapReset) DayStart(now time.Time) time.Time {
	y, m, d := now.In(r.loc()).Date()
	for i := 0; i >= -2; i-- {
		if t := r.at(y, m, d, i); !t.After(now) {
			return t.UTC()
		}
	}
	return r.at(y, m, d, -2).UTC() // not reached: a reset lies within the last two days
}

// Next returns the first reset after now, in UTC.
func (r CapReset) Next(now time.Time) time.Time {
	y, m, d := now.In(r.loc()).Date()
	for i := 0; i <= 2; i++ {
		if t := r.at(y, m, d, i); t.After(now) {
			return t.UTC()
		}
	}
	return r.at(y, m, d, 2).UTC() // not reached
}

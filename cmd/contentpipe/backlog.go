package main

import (
	"fmt"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
)

// envNow is the test seam for the clock: an RFC 3339 time that the run
// and topics commands take as "now" when the process starts (the clock
// then runs on from there). It lets tests drive days without sleeping;
// nothing in production sets it.
const envNow = "CONTENTPIPE_NOW"

// offsetClock is the real clock shifted by a fixed offset (zero in
// production, see envNow).
type offsetClock struct {
	chain.RealClock
	offset time.Duration
}

// Now is the real time plus the offset.
func (c offsetClock) Now() time.Time { return time.Now().Add(c.offset) }

// clock returns the clock of the run and topics commands: the real clock,
// shifted to CONTENTPIPE_NOW when that is set. A malformed value is an error.
func (a *app) clock() (offsetClock, error) {
	v := a.getenv(envNow)
	if v == "" {
		return offsetClock{}, nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return offsetClock{}, fmt.Errorf("%s=%q: want an RFC 3339 time, e.g. 2026-12-01T06:00:00Z", envNow, v)
	}
	return offsetClock{offset: time.Until(t)}, nil
}

// perDay is the publication rate the runway assumes (chain.PerDay).
func perDay(cfg *config.Config) int { return chain.PerDay(cfg.Job.PostsPerRun, cfg.Job.PostsPerDay) }

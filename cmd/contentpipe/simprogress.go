package main

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// simProgress shows how far the scenarios of `simulate` got, on stderr:
// on a terminal one line rewritten in place (at most five times a second)
// and cleared before anything else is written; forced onto a pipe
// (--progress), a plain line at every tenth of the work. It is safe for
// concurrent use (the scenarios run at once).
type simProgress struct {
	w     io.Writer
	tty   bool
	days  int
	names []string
	now   func() time.Time
	start time.Time

	mu    sync.Mutex
	done  map[string]int
	drawn time.Time // when the line was last drawn; zero = not on screen
	tenth int       // plain: the last tenth printed
}

// newSimProgress is the progress of scenarios over days on w: nil (no
// progress) unless w is a terminal or force is set.
func newSimProgress(w io.Writer, force bool, names []string, days int) *simProgress {
	tty := isTerminal(w)
	if !tty && !force {
		return nil
	}
	return &simProgress{w: w, tty: tty, days: days, names: names, now: time.Now, start: time.Now(), done: map[string]int{}}
}

// day records that scenario finished day (1 to days).
func (p *simProgress) day(scenario string, day int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done[scenario] = day
	total := 0
	for _, n := range p.names {
		total += p.done[n]
	}
	all := p.days * len(p.names)
	if !p.tty {
		if t := 10 * total / max(all, 1); t > p.tenth {
			p.tenth = t
			fmt.Fprintf(p.w, "simulate: %d%% of the days simulated (%s) after %s\n", 10*t, p.counts(), p.elapsed())
		}
		return
	}
	if now := p.now(); total == all || now.Sub(p.drawn) >= 200*time.Millisecond {
		p.drawn = now
		fmt.Fprintf(p.w, "\r\033[Ksimulate: %s of %d days (%s)", p.counts(), p.days, p.elapsed())
	}
}

// counts is "chain 120 · single 118 · …": the days each scenario finished.
func (p *simProgress) counts() string {
	parts := make([]string, len(p.names))
	for i, n := range p.names {
		parts[i] = fmt.Sprintf("%s %d", n, p.done[n])
	}
	return strings.Join(parts, " · ")
}

func (p *simProgress) elapsed() string {
	return p.now().Sub(p.start).Round(100 * time.Millisecond).String()
}

// clear takes the line off the terminal before something else is written
// there (a log line, the table); the next day draws it again.
func (p *simProgress) clear() {
	if p == nil || !p.tty {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.drawn.IsZero() {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = time.Time{}
	}
}

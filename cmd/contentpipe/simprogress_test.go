package main

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestSimProgress: nothing on a pipe unless forced; on a terminal one
// line rewritten in place at most five times a second and cleared before
// other output; forced onto a pipe, a plain line per tenth of the work.
func TestSimProgress(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	if p := newSimProgress(&b, false, []string{"chain"}, 10); p != nil {
		t.Fatal("progress on a buffer that is no terminal, not forced")
	}
	var nilp *simProgress
	nilp.day("chain", 1) // no progress: a no-op
	nilp.clear()

	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &simProgress{w: &b, tty: true, days: 10, names: []string{"chain", "naive"}, now: func() time.Time { return now },
		start: now, done: map[string]int{}}
	p.day("chain", 1)
	p.day("naive", 1) // within 200ms: not drawn again
	now = now.Add(time.Second)
	p.day("chain", 2)
	p.clear()
	want := "\r\033[Ksimulate: chain 1 · naive 0 of 10 days (0s)" + "\r\033[Ksimulate: chain 2 · naive 1 of 10 days (1s)" + "\r\033[K"
	if b.String() != want {
		t.Errorf("terminal progress:\n got %q\nwant %q", b.String(), want)
	}

	b.Reset()
	p = newSimProgress(&b, true, []string{"chain", "naive"}, 10)
	for d := 1; d <= 10; d++ {
		p.day("chain", d)
		p.day("naive", d)
	}
	p.clear() // not a terminal: nothing to clear
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 10 || !strings.HasPrefix(lines[0], "simulate: 10% of the days simulated (chain 1 · naive 1)") ||
		!strings.HasPrefix(lines[9], "simulate: 100% of the days simulated (chain 10 · naive 10)") || strings.Contains(b.String(), "\r") {
		t.Errorf("forced progress on a pipe:\n%s", b.String())
	}
}

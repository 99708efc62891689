package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/contentpipe/contentpipe/chain"
)

// progress prints a run's live progress: one line per event (a try, a
// skip, a wait and its reason, an outcome), each prefixed with the job
// (k of n) and its topic. On a terminal a wait of a second or more also
// gets a countdown on the line below the last event, rewritten in place
// until the next event; otherwise the lines are plain (main adds a
// timestamp to each). A wait whose reason the failure line before it has
// just printed says only how long it waits.
type progress struct {
	w     io.Writer
	tty   bool
	total int

	mu         sync.Mutex
	index      map[string]int
	lastReason map[string]string // per job: the reason printed by its last outcome line
	next       int
	stop       chan struct{}
}

func newProgress(w io.Writer, total int) *progress {
	tty := false
	if f, ok := w.(*os.File); ok {
		tty = term.IsTerminal(int(f.Fd()))
	}
	return &progress{w: w, tty: tty, total: total, index: map[string]int{}, lastReason: map[string]string{}}
}

func (p *progress) jobNo(j chain.Job) int {
	n, ok := p.index[j.ID]
	if !ok {
		p.next++
		n = p.next
		p.index[j.ID] = n
	}
	return n
}

// event handles one chain event; safe for concurrent use.
func (p *progress) event(e chain.Event) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopTicker()
	no := p.jobNo(e.Job)
	prefix := fmt.Sprintf("[job %d/%d %s]", no, p.total, e.Job.Topic)
	var line string
	switch e.Kind {
	case chain.EventTry:
		delete(p.lastReason, e.Job.ID)
		line = fmt.Sprintf("%s trying %s (attempt %d)", prefix, e.Provider, e.Attempt)
	case chain.EventSkip:
		delete(p.lastReason, e.Job.ID)
		line = fmt.Sprintf("%s skipping %s: %s", prefix, e.Provider, e.Reason)
	case chain.EventWait:
		line = fmt.Sprintf("%s waiting %s before the next try", prefix, e.Wait.Round(100*time.Millisecond))
		if e.Reason != "" && e.Reason != p.lastReason[e.Job.ID] {
			line += ": " + e.Reason
		}
	case chain.EventOutcome:
		if shorten(e.Reason, 120) == e.Reason {
			p.lastReason[e.Job.ID] = e.Reason // printed in full below
		}
		switch e.Outcome {
		case chain.OutcomeOK:
			line = fmt.Sprintf("%s %s answered, quality %.0f: accepted", prefix, e.Provider, e.Score)
		case chain.OutcomeRejected:
			line = fmt.Sprintf("%s %s answered, quality %.0f: rejected (%s)", prefix, e.Provider, e.Score, shorten(e.Reason, 120))
		default:
			line = fmt.Sprintf("%s %s failed: %s — %s", prefix, e.Provider, e.Outcome, shorten(e.Reason, 120))
		}
	default:
		return
	}
	if s, ok := p.w.(*lineStamper); ok && s.json {
		_ = s.Record("INFO", line, eventFields(e, no, p.total)...)
		return
	}
	if !p.tty {
		fmt.Fprintln(p.w, line)
		return
	}
	fmt.Fprintf(p.w, "\r\033[K%s\n", line)
	if e.Kind == chain.EventWait && e.Wait >= time.Second {
		p.startTicker(prefix, e.Provider, e.Wait)
	}
}

// startTicker shows a countdown so that a long wait never looks like a hang.
func (p *progress) startTicker(prefix, provider string, d time.Duration) {
	stop := make(chan struct{})
	p.stop = stop
	end := time.Now().Add(d)
	go func() {
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case now := <-t.C:
				left := end.Sub(now)
				if left < 0 {
					left = 0
				}
				p.mu.Lock()
				if p.stop == stop {
					fmt.Fprintf(p.w, "\r\033[K%s %s: retrying in %s", prefix, provider, left.Round(time.Second))
				}
				p.mu.Unlock()
			}
		}
	}()
}

func (p *progress) stopTicker() {
	if p.stop != nil {
		close(p.stop)
		p.stop = nil
		fmt.Fprint(p.w, "\r\033[K")
	}
}

// close stops any countdown.
func (p *progress) close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopTicker()
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// eventFields are the fields of a chain event's JSON log record (see
// README "Running it from cron or systemd"): what the line says, as keys a
// log pipeline can filter on. Empty values are left out.
func eventFields(e chain.Event, no, total int) []any {
	f := []any{"event", e.Kind, "job", e.Job.ID, "topic", e.Job.Topic, "job_no", no, "jobs", total}
	if e.Provider != "" {
		f = append(f, "provider", e.Provider)
	}
	if e.Attempt > 0 {
		f = append(f, "attempt", e.Attempt)
	}
	if e.Outcome != "" {
		f = append(f, "outcome", string(e.Outcome))
	}
	if e.Kind == chain.EventOutcome && (e.Outcome == chain.OutcomeOK || e.Outcome == chain.OutcomeRejected) {
		f = append(f, "score", e.Score)
	}
	if e.Kind == chain.EventWait {
		f = append(f, "wait", e.Wait.Round(time.Millisecond), "wait_ms", e.Wait.Milliseconds())
	}
	if e.Reason != "" {
		f = append(f, "reason", e.Reason)
	}
	return f
}

package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/publish"
	"github.com/contentpipe/contentpipe/telemetry"
)

// crashPoints is the crash tests' seam: every durable step of a publishing
// command (each commit of the store, just before and just after; each step
// of a delivery) is numbered 1, 2, … in the order the process reaches it.
// With CONTENTPIPE_CRASH_AT=N the process SIGKILLs itself at step N, with
// CONTENTPIPE_CRASH_AT=PREFIX@K at the K-th step whose name starts with
// PREFIX; with CONTENTPIPE_CRASH_LOG=FILE each step is appended to FILE as
// "N name". Neither is set in production, and then the steps cost a nil
// check.
type crashPoints struct {
	mu     sync.Mutex
	n      int
	at     int    // kill at step number at (0 = by name)
	prefix string // else kill at the k-th step named prefix…
	k      int
	log    *os.File
}

// newCrashPoints reads the seam's environment; nil when it is not set.
func newCrashPoints() *crashPoints {
	spec := os.Getenv("CONTENTPIPE_CRASH_AT")
	logPath := os.Getenv("CONTENTPIPE_CRASH_LOG")
	if spec == "" && logPath == "" {
		return nil
	}
	c := &crashPoints{}
	if n, err := strconv.Atoi(spec); err == nil {
		c.at = n
	} else if prefix, k, ok := strings.Cut(spec, "@"); ok {
		c.prefix = prefix
		c.k, _ = strconv.Atoi(k)
	}
	if logPath != "" {
		if f, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600); err == nil {
			c.log = f
		}
	}
	return c
}

// step numbers one durable step and kills the process when it is the one.
func (c *crashPoints) step(name string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	if c.log != nil {
		fmt.Fprintf(c.log, "%d %s\n", c.n, name)
	}
	if c.prefix != "" && strings.HasPrefix(name, c.prefix) {
		c.k--
		if c.k == 0 {
			c.at = c.n
		}
	}
	if c.n == c.at {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
}

// arm hooks the seam into the store and the publisher (no-op when c is nil).
func (c *crashPoints) arm(store *telemetry.Store, pub chain.Publisher) {
	if c == nil {
		return
	}
	store.Step = c.step
	if p, ok := pub.(publish.Stepper); ok {
		p.SetStep(c.step)
	}
}

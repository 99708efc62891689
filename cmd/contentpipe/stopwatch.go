package main

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// exitStopped is the exit status of a command ended by stopWatch: 128 +
// SIGTERM's number, as a shell reports a process the signal ended.
const exitStopped = 143

// stopGrace is how long a command may go on after SIGTERM or SIGINT
// before the process exits anyway: its work (a query, a chart, a health
// walk) is cancelled through the command's context, and nothing it does
// must outlive the signal by more than this.
const stopGrace = 5 * time.Second

// ownStop are the commands whose stop after a signal is their own and
// bounded: run lets the job in flight finish (each call cancelled, the
// delivery bounded by job.deadline), serve the run in flight.
var ownStop = map[string]bool{"run": true, "serve": true}

// runningCommand is the top-level command being run ("" before cobra
// parsed the arguments), for stopWatch.
var runningCommand atomic.Value

// stopWatch waits for ctx to end (the signal) and then, unless the command
// ended first (done closed) or stops on its own terms (ownStop), gives it
// grace and calls exit(exitStopped), saying so on stderr.
func stopWatch(ctx context.Context, done <-chan struct{}, grace time.Duration, stderr io.Writer, exit func(int)) {
	select {
	case <-done:
		return
	case <-ctx.Done():
	}
	name, _ := runningCommand.Load().(string)
	if ownStop[name] {
		return
	}
	select {
	case <-done:
	case <-time.After(grace):
		fmt.Fprintf(stderr, "contentpipe: %s did not end within %s of the signal: stopped\n", name, grace)
		exit(exitStopped)
	}
}

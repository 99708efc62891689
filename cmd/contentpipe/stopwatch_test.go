package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// TestStopWatch: after the signal a command that does not end is stopped
// after the grace (exit 143, saying so); one that ends in time, or run and
// serve (which stop on their own terms), is not.
func TestStopWatch(t *testing.T) {
	for _, tc := range []struct {
		command  string
		endsIn   time.Duration // 0: never
		wantExit bool
	}{
		{"report", 0, true},
		{"sql", 10 * time.Millisecond, false},
		{"run", 0, false},
		{"serve", 0, false},
	} {
		runningCommand.Store(tc.command)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		exited := make(chan int, 1)
		var stderr bytes.Buffer
		finished := make(chan struct{})
		go func() {
			stopWatch(ctx, done, 50*time.Millisecond, &stderr, func(c int) { exited <- c })
			close(finished)
		}()
		cancel()
		if tc.endsIn > 0 {
			time.Sleep(tc.endsIn)
			close(done)
		}
		select {
		case <-finished:
		case <-time.After(2 * time.Second):
			close(done)
			<-finished
		}
		var code int
		select {
		case code = <-exited:
		default:
		}
		if got := code == exitStopped; got != tc.wantExit {
			t.Errorf("%s: exit %d, want stopped=%v", tc.command, code, tc.wantExit)
		}
		if tc.wantExit && !strings.Contains(stderr.String(), "did not end within") {
			t.Errorf("%s: stderr %q", tc.command, stderr.String())
		}
	}
	runningCommand.Store("")
}

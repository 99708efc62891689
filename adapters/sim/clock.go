package sim

import (
	"context"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// VirtualClock is a chain.Clock whose time only moves when someone sleeps
// on it: Sleep advances it at once and never blocks. It is what makes a
// simulated year finish in seconds. The zero value starts at the zero time;
// it is safe for concurrent use (but concurrent sleepers each advance it).
type VirtualClock struct {
	mu  sync.Mutex
	now time.Time
}

var _ chain.Clock = (*VirtualClock)(nil)

// NewVirtualClock returns a clock reading start.
func NewVirtualClock(start time.Time) *VirtualClock { return &VirtualClock{now: start} }

// Now returns the virtual time.
func (c *VirtualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Sleep advances the clock by d (nothing for d ≤ 0) unless ctx is done.
func (c *VirtualClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.Advance(d)
	return nil
}

// Advance moves the clock forward by d (never backward).
func (c *VirtualClock) Advance(d time.Duration) {
	if d <= 0 {
		return
	}
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t when t is later than its time.
func (c *VirtualClock) Set(t time.Time) {
	c.mu.Lock()
	if t.After(c.now) {
		c.now = t
	}
	c.mu.Unlock()
}

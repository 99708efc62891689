package chain_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// shiftClock is the wall clock moved forward by a settable offset.
type shiftClock struct {
	chain.RealClock
	off *atomic.Int64
}

func (c shiftClock) Now() time.Time { return time.Now().Add(time.Duration(c.off.Load())) }

// held answers a good article once release is closed (a run paused past
// its claim's lease: SIGSTOP).
type held struct {
	release chan struct{}
	text    string
}

func (h held) Generate(ctx context.Context, _ chain.Request) (chain.Response, error) {
	<-h.release
	return chain.Response{Text: h.text, HTTPStatus: 200}, nil
}

// TestPausedRunDoesNotPassTheCeiling: posts_per_day 2. Run A claims "late"
// and is paused inside the provider past its claim's lease; run B, which
// no longer counts A's stale claim, publishes two other topics. When A
// resumes, its mark is refused (the day is full): nothing more is
// delivered, and "late" is deferred for another day.
func TestPausedRunDoesNotPassTheCeiling(t *testing.T) {
	const article = `{"title":"Espresso","sections":[{"h2":"Grind","body":"fine"}]}`
	off := &atomic.Int64{}
	clock := shiftClock{off: off}
	a := newWorld(t)
	b := newWorldAt(t, filepath.Join(filepath.Dir(a.dbPath), "pipeline.db"))
	reset, _ := chain.ParseCapReset("")
	hold := held{release: make(chan struct{}), text: article}
	for _, w := range []*world{a, b} {
		w.chain.Gate, w.chain.Clock, w.chain.Deadline = decodeGate{}, clock, 30*time.Minute
	}
	a.chain.Links = []*chain.Link{{Name: "held", Model: "m", Family: "openai", CapReset: reset, Provider: hold}}
	b.chain.Links = []*chain.Link{{Name: "quick", Model: "m", Family: "openai", CapReset: reset, Provider: echoing{resp: chain.Response{Text: article, HTTPStatus: 200}}}}
	pubA, pubB := &keptPublisher{}, &keptPublisher{}
	ra := &chain.Runner{Chain: a.chain, Jobs: a.store, Publisher: pubA, Owner: chain.Owner{Host: "h", PID: 1}, Lease: time.Minute, PostsPerDay: 2}
	rb := &chain.Runner{Chain: b.chain, Jobs: b.store, Publisher: pubB, Owner: chain.Owner{Host: "h", PID: 2}, Lease: time.Minute, PostsPerDay: 2}
	done := make(chan chain.Summary, 1)
	go func() { done <- ra.Run(context.Background(), []chain.Job{job("late")}, 1) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if rec, ok, _ := b.store.Job(context.Background(), job("late").ID); ok && rec.Status == chain.JobRunning {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("run A never claimed its job")
		}
		time.Sleep(10 * time.Millisecond)
	}
	off.Store(int64(2 * time.Minute)) // A's claim is now older than its lease
	if sum := rb.Run(context.Background(), []chain.Job{job("x"), job("y")}, 2); sum.Published != 2 {
		t.Fatalf("run B: %+v", sum)
	}
	close(hold.release)
	sum := <-done
	if sum.Published != 0 || len(sum.Reports) != 1 || !errors.Is(sum.Reports[0].Err, chain.ErrDayFull) {
		t.Fatalf("run A after its pause: %+v (want its mark refused with ErrDayFull)", sum)
	}
	if rec, _, _ := a.store.Job(context.Background(), job("late").ID); rec.Status != chain.JobDeferred {
		t.Fatalf("late is %s, want deferred", rec.Status)
	}
}

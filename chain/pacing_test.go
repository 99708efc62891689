package chain

import (
	"strings"
	"sync"
	"testing"
	"time"
)

var paceT0 = time.Date(2026, 11, 29, 18, 0, 0, 0, time.UTC)

// near reports whether got is within 50ms of want (rate's float arithmetic).
func near(got, want time.Duration) bool {
	d := got - want
	return d > -50*time.Millisecond && d < 50*time.Millisecond
}

func TestPacerUnlimited(t *testing.T) {
	p := NewPacer(0, 0)
	if p != nil {
		t.Fatalf("NewPacer(0, 0) = %v, want nil", p)
	}
	d, r := p.Reserve(paceT0, 1_000_000)
	if d != 0 || r != nil {
		t.Fatalf("nil pacer: %s %v", d, r)
	}
	r.Settle(5)
	r.Cancel()
	// tpm only: requests are not limited.
	p = NewPacer(0, 1_000_000)
	for i := range 1000 {
		if d, _ := p.Reserve(paceT0, 1); d != 0 {
			t.Fatalf("request %d delayed %s without an rpm limit", i, d)
		}
	}
}

func TestPacerRPM(t *testing.T) {
	p := NewPacer(3, 0)
	for i := range 3 {
		if d, _ := p.Reserve(paceT0.Add(time.Duration(i)*time.Second), 500); d != 0 {
			t.Fatalf("request %d delayed %s", i+1, d)
		}
	}
	// The 4th within the minute waits for one request's refill (20s from
	// the start, 17s after t0+3s).
	at := paceT0.Add(3 * time.Second)
	d, _ := p.Reserve(at, 500)
	if !near(d, 17*time.Second) {
		t.Fatalf("4th request delayed %s, want ~17s", d)
	}
	// The 5th, asked when the 4th may go, waits another 20s.
	d, _ = p.Reserve(at.Add(d), 500)
	if !near(d, 20*time.Second) {
		t.Fatalf("5th request delayed %s, want ~20s", d)
	}
	// After a quiet minute the burst is back.
	late := paceT0.Add(5 * time.Minute)
	for i := range 3 {
		if d, _ := p.Reserve(late, 1); d != 0 {
			t.Fatalf("after a quiet period request %d delayed %s", i+1, d)
		}
	}
}

func TestPacerTPM(t *testing.T) {
	p := NewPacer(0, 1200) // 20 tokens a second
	if d, _ := p.Reserve(paceT0, 1000); d != 0 {
		t.Fatalf("first call delayed %s", d)
	}
	// 200 left; 500 more need 300 tokens = 15s.
	if d, _ := p.Reserve(paceT0, 500); !near(d, 15*time.Second) {
		t.Fatalf("second call delayed %s, want ~15s", d)
	}
}

func TestPacerSettle(t *testing.T) {
	// Unused tokens come back.
	p := NewPacer(0, 1200)
	_, r := p.Reserve(paceT0, 1000)
	r.Settle(300)
	if d, _ := p.Reserve(paceT0, 900); d != 0 {
		t.Fatalf("after giving back 700 tokens a 900-token call waits %s", d)
	}
	if d, _ := p.Reserve(paceT0, 100); !near(d, 5*time.Second) {
		t.Fatalf("bucket should be empty: waited %s, want ~5s", d)
	}
	// Extra tokens become debt.
	q := NewPacer(0, 1200)
	_, r = q.Reserve(paceT0, 100)
	r.Settle(700)
	if d, _ := q.Reserve(paceT0, 500); d != 0 {
		t.Fatalf("500 of the 500 left waited %s", d)
	}
	if d, _ := q.Reserve(paceT0, 200); !near(d, 10*time.Second) {
		t.Fatalf("after a 600-token overrun a 200-token call waits %s, want ~10s", d)
	}
	// A second Settle does nothing.
	w := NewPacer(0, 1200)
	_, r = w.Reserve(paceT0, 600)
	r.Settle(0)
	r.Settle(0)
	if tokens := w.tok.TokensAt(paceT0); tokens > 1200 {
		t.Fatalf("double settle overfilled the bucket: %.0f", tokens)
	}
	if d, _ := w.Reserve(paceT0, 1200); d != 0 {
		t.Fatalf("full bucket expected, waited %s", d)
	}
	if d, _ := w.Reserve(paceT0, 60); !near(d, 3*time.Second) {
		t.Fatalf("bucket should be empty after 1200: waited %s", d)
	}
}

func TestPacerOversizedRequest(t *testing.T) {
	// An estimate above the burst is capped at the burst: it waits for a
	// full bucket instead of failing forever.
	p := NewPacer(0, 1200)
	p.Reserve(paceT0, 1200)
	d, r := p.Reserve(paceT0, 50_000)
	if !near(d, time.Minute) {
		t.Fatalf("oversized call delayed %s, want ~1m (a full bucket)", d)
	}
	// Its real use is charged: 50 000 - 1200 more tokens of debt.
	r.Settle(50_000)
	at := paceT0.Add(d)
	d2, _ := p.Reserve(at, 1)
	want := time.Duration(float64(50_000-1200+1) / 20 * float64(time.Second))
	if !near(d2, want) {
		t.Fatalf("after the oversized call the next waits %s, want ~%s", d2, want)
	}
}

func TestPacerCancel(t *testing.T) {
	p := NewPacer(1, 0)
	if d, _ := p.Reserve(paceT0, 0); d != 0 {
		t.Fatal("first call delayed")
	}
	d, r := p.Reserve(paceT0, 0)
	if !near(d, time.Minute) {
		t.Fatalf("second call delayed %s", d)
	}
	r.Cancel() // the caller did not wait: the deadline was too near
	r.Cancel()
	if d, _ := p.Reserve(paceT0, 0); !near(d, time.Minute) {
		t.Fatalf("after a cancel the next call waits %s, want ~1m (not 2m)", d)
	}
	// Cancelled tokens come back too.
	q := NewPacer(0, 1200)
	q.Reserve(paceT0, 1200)
	_, r = q.Reserve(paceT0, 600)
	r.Cancel()
	r.Settle(600) // after Cancel: nothing
	if d, _ := q.Reserve(paceT0, 600); !near(d, 30*time.Second) {
		t.Fatalf("after cancelling 600 tokens a 600-token call waits %s, want ~30s", d)
	}
}

func TestPacerConcurrent(t *testing.T) {
	p := NewPacer(600, 60_000)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				at := paceT0.Add(time.Duration(g*50+i) * time.Millisecond)
				_, r := p.Reserve(at, 100)
				if i%3 == 0 {
					r.Cancel()
				} else {
					r.Settle(50 + i)
				}
			}
		})
	}
	wg.Wait()
	if d, _ := p.Reserve(paceT0.Add(time.Hour), 100); d != 0 {
		t.Fatalf("an hour later the pacer still delays %s", d)
	}
}

func TestEstimateTokens(t *testing.T) {
	cases := []struct {
		prompt string
		max    int
		want   int
	}{
		{"", 0, 0},
		{strings.Repeat("abcd", 100), 500, 600},
		{"abcde", 0, 2},
		{strings.Repeat("x", 6000), 8192, 1500 + 8192},
		{"abcd", -5, 1},
	}
	for _, c := range cases {
		if got := EstimateTokens(c.prompt, c.max); got != c.want {
			t.Errorf("EstimateTokens(%d chars, %d) = %d, want %d", len(c.prompt), c.max, got, c.want)
		}
	}
}

// EstimateTokens is estimate for a prompt held in one string.
func EstimateTokens(prompt string, maxTokens int) int {
	return (len(prompt)+3)/4 + max(maxTokens, 0)
}

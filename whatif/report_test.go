package whatif

import (
	"fmt"
	"testing"
	"time"
)

func TestBlackouts(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 6, 0, 0, 0, time.UTC)
	at := func(h float64) time.Time { return t0.Add(time.Duration(h * float64(time.Hour))) }
	walks := []walk{
		{start: at(0), end: at(0.1), published: true},
		{start: at(0.1), end: at(0.2), noAnswer: true}, // one unlucky job: not a blackout
		{start: at(4), end: at(4.1), published: true},
		{start: at(8), end: at(8.1), noAnswer: true}, // a blackout of two passes, 8 h
		{start: at(12), end: at(12.1), noAnswer: true},
		{start: at(16), end: at(16), published: false}, // review: answers came
		{start: at(20), end: at(20.1), noAnswer: true},
		{start: at(24), end: at(24.1), published: true},
		{start: at(30), end: at(30.1), noAnswer: true}, // open at the end
		{start: at(31), end: at(31.1), noAnswer: true},
	}
	h, n, days := blackouts(walks, at(33))
	if n != 2 || days != 2 || fmt.Sprintf("%.1f", h) != "19.1" {
		t.Fatalf("blackouts = %.2f h, %d, %d days; want 19.1 h (16.1 + 3), 2, 2 days", h, n, days)
	}
}

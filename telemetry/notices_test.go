package telemetry

import (
	"context"
	"sync"
	"testing"
	"time"
)

func TestClaimNoticeOncePerValue(t *testing.T) { forEachBackend(t, testClaimNoticeOncePerValue) }

func testClaimNoticeOncePerValue(t *testing.T) {
	s, path := openTemp(t)
	ctx := context.Background()
	now := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	if _, ok, err := s.Notice(ctx, "telegram_disabled"); err != nil || ok {
		t.Fatalf("fresh store: ok %v err %v", ok, err)
	}
	steps := []struct {
		value string
		want  bool
	}{{"2026-12-01", true}, {"2026-12-01", false}, {"2026-12-02", true}, {"2026-12-02", false}}
	for i, st := range steps {
		got, err := s.ClaimNotice(ctx, "telegram_disabled", st.value, now)
		if err != nil || got != st.want {
			t.Fatalf("step %d claim %s: %v, %v; want %v", i, st.value, got, err, st.want)
		}
	}
	if v, ok, err := s.Notice(ctx, "telegram_disabled"); err != nil || !ok || v != "2026-12-02" {
		t.Fatalf("notice: %q %v %v", v, ok, err)
	}
	// The state is in the file: another store on it agrees.
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if got, err := s2.ClaimNotice(ctx, "telegram_disabled", "2026-12-02", now); err != nil || got {
		t.Fatalf("reopened store claimed again: %v %v", got, err)
	}
}

func TestClaimNoticeConcurrentOneWinner(t *testing.T) {
	forEachBackend(t, testClaimNoticeConcurrentOneWinner)
}

func testClaimNoticeConcurrentOneWinner(t *testing.T) {
	s, path := openTemp(t)
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		wins int
	)
	for i := 0; i < 8; i++ {
		st := s
		if i%2 == 1 {
			st = s2
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := st.ClaimNotice(context.Background(), "k", "2026-12-01", time.Now())
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 {
		t.Fatalf("%d winners, want 1", wins)
	}
}

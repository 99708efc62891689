package telemetry

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestEnqueueAlertDedupe(t *testing.T) { forEachBackend(t, testEnqueueAlertDedupe) }

func testEnqueueAlertDedupe(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	quiet := 24 * time.Hour
	a := Alert{Key: "provider_down:groq", Rule: "provider_down", Severity: "warning", Text: "groq failing for 1h"}

	enqueue := func(a Alert, at time.Time) bool {
		t.Helper()
		q, err := s.EnqueueAlert(ctx, a, quiet, at)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}
	if !enqueue(a, t0) {
		t.Fatal("first alert not queued")
	}
	if enqueue(a, t0.Add(time.Minute)) {
		t.Fatal("duplicate of a pending alert queued")
	}
	if enqueue(a, t0.Add(48*time.Hour)) {
		t.Fatal("duplicate of a pending alert queued after the quiet period")
	}
	if !enqueue(Alert{Key: "auth:gemini", Text: "401"}, t0) {
		t.Fatal("other key not queued")
	}
	got, err := s.ClaimPendingAlerts(ctx, "me", t0.Add(time.Hour), 10)
	if err != nil || len(got) != 2 || got[0].Key != a.Key || got[0].Text != a.Text || !got[0].CreatedAt.Equal(t0) {
		t.Fatalf("claimed %+v, %v", got, err)
	}
	sent := t0.Add(time.Hour)
	if err := s.MarkAlertSent(ctx, got[0].ID, sent); err != nil {
		t.Fatal(err)
	}
	if enqueue(a, sent.Add(23*time.Hour)) {
		t.Fatal("alert queued within the quiet period after sending")
	}
	if !enqueue(a, sent.Add(25*time.Hour)) {
		t.Fatal("alert not queued after the quiet period")
	}
	if n := queryInt(t, s, "SELECT count(*) FROM alerts WHERE key = ?", a.Key); n != 2 {
		t.Fatalf("rows for the key = %d, want 2 (history kept)", n)
	}
	if _, err := s.EnqueueAlert(ctx, Alert{Text: "no key"}, quiet, t0); err == nil {
		t.Fatal("alert without key accepted")
	}
}

func TestAlertRetryAndLease(t *testing.T) { forEachBackend(t, testAlertRetryAndLease) }

func testAlertRetryAndLease(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	if _, err := s.EnqueueAlert(ctx, Alert{Key: "k", Text: "x"}, time.Hour, t0); err != nil {
		t.Fatal(err)
	}
	got, err := s.ClaimPendingAlerts(ctx, "a", t0, 10)
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	// Leased: nobody else gets it until the lease ends.
	if again, _ := s.ClaimPendingAlerts(ctx, "b", t0.Add(AlertLease/2), 10); len(again) != 0 {
		t.Fatalf("leased alert given again: %+v", again)
	}
	// The holder died: after the lease another sender gets it.
	again, err := s.ClaimPendingAlerts(ctx, "b", t0.Add(AlertLease+time.Second), 10)
	if err != nil || len(again) != 1 || again[0].ID != got[0].ID {
		t.Fatalf("expired lease: %+v %v", again, err)
	}
	// Telegram answered 429: retry later, not before.
	next := t0.Add(AlertLease + time.Minute)
	if err := s.MarkAlertFailed(ctx, got[0].ID, "telegram 429 retry_after 45", next); err != nil {
		t.Fatal(err)
	}
	if early, _ := s.ClaimPendingAlerts(ctx, "c", next.Add(-time.Second), 10); len(early) != 0 {
		t.Fatalf("alert retried before next_try_at: %+v", early)
	}
	late, err := s.ClaimPendingAlerts(ctx, "c", next, 10)
	if err != nil || len(late) != 1 || late[0].Attempts != 1 || late[0].LastError != "telegram 429 retry_after 45" {
		t.Fatalf("retry: %+v %v", late, err)
	}
	if err := s.MarkAlertSent(ctx, late[0].ID, next); err != nil {
		t.Fatal(err)
	}
	if none, _ := s.ClaimPendingAlerts(ctx, "d", next.Add(time.Hour), 10); len(none) != 0 {
		t.Fatalf("sent alert claimed again: %+v", none)
	}
	if err := s.MarkAlertFailed(ctx, late[0].ID, "x", next); err == nil {
		t.Fatal("marking a sent alert failed succeeded")
	}
	_, rows, _ := s.Query(ctx, "SELECT attempts, sent_at, lease_owner FROM alerts")
	if fmt.Sprint(rows) != fmt.Sprintf("[[2 %s <nil>]]", FormatTime(next)) {
		t.Fatalf("row = %v", rows)
	}
}

func TestClaimPendingAlertsTwoStores(t *testing.T) {
	forEachBackend(t, testClaimPendingAlertsTwoStores)
}

func testClaimPendingAlertsTwoStores(t *testing.T) {
	s, path := openTemp(t)
	const total = 40
	for i := range total {
		if q, err := s.EnqueueAlert(t.Context(), Alert{Key: fmt.Sprint("k", i), Text: "t"}, time.Hour, t0); err != nil || !q {
			t.Fatal(q, err)
		}
	}
	var (
		mu   sync.Mutex
		seen = map[int64]string{}
		wg   sync.WaitGroup
	)
	for _, owner := range []string{"proc-a", "proc-b"} {
		o, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer o.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				got, err := o.ClaimPendingAlerts(context.Background(), owner, t0.Add(time.Minute), 3)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				for _, a := range got {
					mu.Lock()
					if prev, dup := seen[a.ID]; dup {
						t.Errorf("alert %d given to %s and %s", a.ID, prev, owner)
					}
					seen[a.ID] = owner
					mu.Unlock()
					if err := o.MarkAlertSent(context.Background(), a.ID, t0.Add(time.Minute)); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if len(seen) != total {
		t.Fatalf("%d alerts sent, want %d", len(seen), total)
	}
	if n := queryInt(t, s, "SELECT count(*) FROM alerts WHERE sent_at IS NULL"); n != 0 {
		t.Fatalf("%d alerts left pending", n)
	}
}

// TestAlertLeaseOfADeadSender: a sender killed mid-send leaves its lease;
// with a registered process as the owner, the lease is taken over at once
// when that process is gone, and kept while it lives.
func TestAlertLeaseOfADeadSender(t *testing.T) { forEachBackend(t, testAlertLeaseOfADeadSender) }

func testAlertLeaseOfADeadSender(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	for _, k := range []string{"live", "dead"} {
		if _, err := s.EnqueueAlert(ctx, Alert{Key: k, Text: k}, time.Hour, t0); err != nil {
			t.Fatal(err)
		}
	}
	live, err := s.Register()
	if err != nil {
		t.Fatal(err)
	}
	defer live.Close()
	dead, err := s.Register()
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.ClaimPendingAlerts(ctx, OwnerKey(live.Owner), t0, 1); len(got) != 1 || got[0].Key != "live" {
		t.Fatalf("live sender's claim: %+v", got)
	}
	if got, _ := s.ClaimPendingAlerts(ctx, OwnerKey(dead.Owner), t0, 1); len(got) != 1 || got[0].Key != "dead" {
		t.Fatalf("second sender's claim: %+v", got)
	}
	dead.Close() // as the kernel does when the process dies
	got, err := s.ClaimPendingAlerts(ctx, "another sender", t0.Add(time.Second), 10)
	if err != nil || len(got) != 1 || got[0].Key != "dead" {
		t.Fatalf("within the lease, want only the dead sender's alert: %+v %v", got, err)
	}
}

func TestEnqueueAlertConcurrentWorkers(t *testing.T) {
	forEachBackend(t, testEnqueueAlertConcurrentWorkers)
}

// Workers with their own store handles raising the same alert at the same
// moment queue it once, and none of them gets an error.
func testEnqueueAlertConcurrentWorkers(t *testing.T) {
	s, path := openTemp(t)
	const workers, rounds = 6, 5
	stores := []*Store{s}
	for range workers - 1 {
		o, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { o.Close() })
		stores = append(stores, o)
	}
	for r := range rounds {
		key := fmt.Sprint("chain_down:", r)
		var (
			wg     sync.WaitGroup
			mu     sync.Mutex
			queued int
			errs   []error
		)
		start := make(chan struct{})
		for _, o := range stores {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				q, err := o.EnqueueAlert(context.Background(), Alert{Key: key, Rule: "chain_down", Severity: "critical", Text: "every provider failed"}, time.Hour, t0)
				mu.Lock()
				defer mu.Unlock()
				if err != nil {
					errs = append(errs, err)
				}
				if q {
					queued++
				}
			}()
		}
		close(start)
		wg.Wait()
		if len(errs) > 0 || queued != 1 {
			t.Fatalf("round %d: %d workers queued the alert (want 1), errors %v", r, queued, errs)
		}
		if n := queryInt(t, s, "SELECT count(*) FROM alerts WHERE key = ?", key); n != 1 {
			t.Fatalf("round %d: %d rows for the key, want 1", r, n)
		}
	}
}

package telemetry

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Several workers on one database: each with its own Store handle (its own
// connections, as separate processes have) and several goroutines.

// TestClaimsManyWorkers: 6 handles × 4 goroutines claim 150 jobs in one
// order and in the reverse order; every job is claimed exactly once.
func TestClaimsManyWorkers(t *testing.T) { forEachBackend(t, testClaimsManyWorkers) }

func testClaimsManyWorkers(t *testing.T) {
	_, spec := openTemp(t)
	const handles, perHandle, jobs = 6, 4, 150
	var (
		claims [jobs]atomic.Int32
		wg     sync.WaitGroup
		start  = make(chan struct{})
	)
	for h := range handles {
		s, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for g := range perHandle {
			owner := chain.Owner{Host: "h", PID: h*perHandle + g + 1, Token: fmt.Sprintf("w%d-%d", h, g)}
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k := range jobs {
					i := k
					if (h+g)%2 == 1 {
						i = jobs - 1 - k
					}
					ok, cur, err := s.ClaimJob(context.Background(), job(fmt.Sprint("j", i)), owner, everyoneAlive, time.Hour, time.Now())
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						claims[i].Add(1)
						if cur.Status != chain.JobRunning {
							t.Errorf("job %d claimed with status %q", i, cur.Status)
						}
					}
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	for i := range claims {
		if n := claims[i].Load(); n != 1 {
			t.Errorf("job j%d claimed %d times, want exactly once", i, n)
		}
	}
}

// TestReserveSpend16Workers: 16 workers (4 handles × 4 goroutines) reserve
// until refused; the cap, the token limit and the money budget each hold
// exactly: what was granted never passes a limit, and the limit that
// refused was reached to the last unit it allows.
func TestReserveSpend16Workers(t *testing.T) { forEachBackend(t, testReserveSpend16Workers) }

func testReserveSpend16Workers(t *testing.T) {
	_, spec := openTemp(t)
	now := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	price := chain.Price{InputPerMTok: 1, OutputPerMTok: 2}
	est := price.Cost(1000, 2000) // USD of one reservation
	base := chain.SpendRequest{Provider: "p", DayStart: utcMidnight(now), Now: now,
		ChainDayStart: utcMidnight(now), ChainMonthStart: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC),
		InputTokens: 1000, MaxOutput: 2000, Price: price}
	for _, c := range []struct {
		name  string
		set   func(*chain.SpendRequest)
		want  int
		limit chain.SpendLimit
	}{
		{"cap", func(r *chain.SpendRequest) { r.Cap = 37 }, 37, chain.LimitCap},
		{"tokens", func(r *chain.SpendRequest) { r.DailyTokens = 41*3000 + 2999 }, 41, chain.LimitTokens},
		{"link budget", func(r *chain.SpendRequest) { r.DailyUSD = 29*est + est/2 }, 29, chain.LimitLinkUSD},
		{"chain budget", func(r *chain.SpendRequest) { r.ChainDailyUSD = 23*est + est/2 }, 23, chain.LimitChainDay},
	} {
		req := base
		req.Provider = strings.ReplaceAll(c.name, " ", "-")
		// A day of its own: the chain budget counts every provider.
		req.Now = now.AddDate(0, 0, len(c.name))
		req.DayStart, req.ChainDayStart = utcMidnight(req.Now), utcMidnight(req.Now)
		c.set(&req)
		var (
			granted atomic.Int32
			wrong   atomic.Value
			wg      sync.WaitGroup
		)
		for h := range 4 {
			s, err := Open(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			_ = h
			for range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						g, err := s.ReserveSpend(context.Background(), req)
						if err != nil {
							t.Error(err)
							return
						}
						if g.Refused != "" {
							if g.Refused != c.limit {
								wrong.Store(g.Refused)
							}
							return
						}
						granted.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		if n := granted.Load(); n != int32(c.want) {
			t.Errorf("%s: %d reservations granted by 16 workers, want exactly %d", c.name, n, c.want)
		}
		if w := wrong.Load(); w != nil {
			t.Errorf("%s: refused by %v, want %s", c.name, w, c.limit)
		}
	}
}

// TestClaimSlotOnce: 12 workers claim the same schedule slot; one wins.
// The next slot and another schedule have their own winner; a slot
// already run has none.
func TestClaimSlotOnce(t *testing.T) { forEachBackend(t, testClaimSlotOnce) }

func testClaimSlotOnce(t *testing.T) {
	_, spec := openTemp(t)
	slot := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		schedule string
		at       time.Time
		want     int32
	}{{"run", slot, 1}, {"run", slot.Add(time.Hour), 1}, {"health", slot, 1}, {"run", slot.Add(time.Hour), 0}} {
		var (
			wins atomic.Int32
			wg   sync.WaitGroup
		)
		for h := range 3 {
			s, err := Open(spec)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					ok, err := s.ClaimSlot(context.Background(), c.schedule, c.at, chain.Owner{Host: "h", PID: h*4 + g, Token: fmt.Sprint(h, g)})
					if err != nil {
						t.Error(err)
					}
					if ok {
						wins.Add(1)
					}
				}()
			}
		}
		wg.Wait()
		if n := wins.Load(); n != c.want {
			t.Errorf("slot %s %s: %d winners, want %d", c.schedule, FormatTime(c.at), n, c.want)
		}
	}
}

// leaseClock is a clock a test steps: the Store.Now of the stores of one
// test, as the one clock (NTP-synchronised) of their machines.
type leaseClock struct {
	mu sync.Mutex
	t  time.Time
}

func newLeaseClock() *leaseClock { return &leaseClock{t: time.Now()} }

func (c *leaseClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *leaseClock) step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// renew is one heartbeat of p's lease at now (PostgreSQL; nothing on
// SQLite): what the heartbeat goroutine does every OwnerLease/4.
func (p *Process) renew(t *testing.T, now time.Time) {
	t.Helper()
	if p.pg == nil {
		return
	}
	if err := p.pg.renew(t.Context(), p.pg.s.ownerLease(), now); err != nil {
		t.Fatal(err)
	}
}

// twoWorkers opens the test's database twice, as two worker processes
// would, with the given owner lease and delivery window and a clock the
// test steps, and registers a process on each (closed at the end of the
// test). The leases are long enough that the heartbeats' real tickers do
// not fire during the test: it renews them (renew) as it steps the clock.
func twoWorkers(t *testing.T, lease, window time.Duration) (s, s2 *Store, a, b *Process, clk *leaseClock) {
	t.Helper()
	s, spec := openTemp(t)
	s2, err := Open(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s2.Close() })
	clk = newLeaseClock()
	for _, st := range []*Store{s, s2} {
		st.OwnerLease, st.DeliveryWindow, st.Now = lease, window, clk.Now
	}
	if a, err = s.Register(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	if b, err = s2.Register(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return s, s2, a, b, clk
}

// TestPausedOwnerLosesItsClaim: a registered process that stops renewing
// (a pause past its lease on PostgreSQL; on SQLite past its claim's lease)
// loses the job to another worker; when it resumes its heartbeat, mark and
// finish are refused, also after the new holder published and released
// the job.
func TestPausedOwnerLosesItsClaim(t *testing.T) { forEachBackend(t, testPausedOwnerLosesItsClaim) }

func testPausedOwnerLosesItsClaim(t *testing.T) {
	s, s2, a, b, clk := twoWorkers(t, 2*time.Minute, 30*time.Second)
	ctx := t.Context()
	lease := time.Hour // the claim's lease
	now := clk.Now()
	if ok, _, err := s.ClaimJob(ctx, job("x"), a.Owner, s.Alive, lease, now); !ok || err != nil {
		t.Fatalf("claim by a: %v %v", ok, err)
	}
	if ok, _, _ := s2.ClaimJob(ctx, job("x"), b.Owner, s2.Alive, lease, now); ok {
		t.Fatal("b claimed the job of a live a")
	}
	takeoverAt := now
	if s.pg() {
		for range 8 { // renewed meanwhile: still alive
			clk.step(s.OwnerLease / 4)
			a.renew(t, clk.Now())
			b.renew(t, clk.Now())
		}
		if ok, _, _ := s2.ClaimJob(ctx, job("x"), b.Owner, s2.Alive, lease, clk.Now()); ok {
			t.Fatal("b claimed the job of a process that renews its lease")
		}
		a.pause()
		clk.step(s.OwnerLease + 100*time.Millisecond)
		b.renew(t, clk.Now())
		if s2.Alive(a.Owner) {
			t.Fatal("a paused past its lease is still alive")
		}
		takeoverAt = clk.Now()
	} else {
		// The OS lock of a stopped process stays held: only the claim's
		// lease frees its job.
		takeoverAt = now.Add(lease + time.Second)
	}
	ok, _, err := s2.ClaimJob(ctx, job("x"), b.Owner, s2.Alive, lease, takeoverAt)
	if err != nil || !ok {
		t.Fatalf("takeover by b: %v %v", ok, err)
	}
	rec := job("x")
	rec.Provider, rec.Attempt, rec.Location, rec.Status = "groq", 1, "out/x.md", chain.JobPublishing
	if err := s.MarkPublishing(ctx, rec, a.Owner, takeoverAt); err == nil {
		t.Fatal("a marked a job b took over")
	}
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "x", Status: chain.JobDeferred}, a.Owner, takeoverAt); err == nil {
		t.Fatal("a finished a job b took over")
	}
	if err := s2.MarkPublishing(ctx, rec, b.Owner, takeoverAt); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckDelivery(ctx, "x", a.Owner, lease, takeoverAt); err == nil {
		t.Fatal("a may deliver a job b holds")
	}
	if _, err := s2.CheckDelivery(ctx, "x", b.Owner, lease, takeoverAt); err != nil {
		t.Fatalf("b may not deliver its own job: %v", err)
	}
	if err := s2.FinishJob(ctx, chain.JobRecord{ID: "x", Status: chain.JobPublished}, b.Owner, takeoverAt); err != nil {
		t.Fatal(err)
	}
	// Released and published: a's late finish still changes nothing.
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "x", Status: chain.JobDeferred}, a.Owner, takeoverAt); err == nil {
		t.Fatal("a's late finish overwrote the published job")
	}
	if got, _, _ := s.Job(ctx, "x"); got.Status != chain.JobPublished {
		t.Fatalf("job x is %s, want published", got.Status)
	}
	// A job not in the table yet is recorded as finished by anyone.
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "fresh", Topic: "fresh", Slot: "2026-12-01", Status: chain.JobPublished}, a.Owner, takeoverAt); err != nil {
		t.Fatalf("finish of a new job: %v", err)
	}
}

// TestPublishingTakeoverWaitsForTheDeliveryWindow (PostgreSQL): a holder
// paused right after its durable mark keeps the job until its lease ran
// out by more than the delivery window; only then does another worker
// reconcile it, and the holder's own CheckDelivery refuses.
func TestPublishingTakeoverWaitsForTheDeliveryWindow(t *testing.T) {
	forEachBackend(t, testPublishingTakeoverWaitsForTheDeliveryWindow)
}

func testPublishingTakeoverWaitsForTheDeliveryWindow(t *testing.T) {
	if backendOf(t) != BackendPostgres {
		t.Skip("on SQLite a stopped process keeps its OS lock: only the claim's lease frees it (TestPausedOwnerLosesItsClaim)")
	}
	s, s2, a, b, clk := twoWorkers(t, 2*time.Minute, time.Minute)
	ctx := t.Context()
	lease := time.Hour
	if ok, _, err := s.ClaimJob(ctx, job("m"), a.Owner, s.Alive, lease, clk.Now()); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	rec := job("m")
	rec.Provider, rec.Attempt, rec.Location, rec.Payload = "groq", 1, "out/m.md", []byte("body")
	if err := s.MarkPublishing(ctx, rec, a.Owner, clk.Now()); err != nil {
		t.Fatal(err)
	}
	deadline, err := s.CheckDelivery(ctx, "m", a.Owner, lease, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	a.pause()
	until, _, _ := ownerLeaseUntil(ctx, s.db, a.Owner.Token)
	// Expired, but not yet by the delivery window: b waits.
	clk.step(until.Sub(clk.Now()) + 100*time.Millisecond)
	b.renew(t, clk.Now())
	if s2.Alive(a.Owner) {
		t.Fatal("a is alive past its lease")
	}
	if ok, _, _ := s2.ClaimJob(ctx, job("m"), b.Owner, s2.Alive, lease, clk.Now()); ok {
		t.Fatal("b took over a publishing job within the delivery window of its holder's lease")
	}
	clk.step(until.Add(s.DeliveryWindow).Sub(clk.Now()) + 100*time.Millisecond)
	b.renew(t, clk.Now())
	if !clk.Now().After(deadline) {
		t.Fatal("the takeover came before a's delivery deadline")
	}
	ok, cur, err := s2.ClaimJob(ctx, job("m"), b.Owner, s2.Alive, lease, clk.Now())
	if err != nil || !ok || cur.Status != chain.JobPublishing || string(cur.Payload) != "body" {
		t.Fatalf("reconciliation claim: %v %v %+v", ok, err, cur)
	}
	if _, err := s.CheckDelivery(ctx, "m", a.Owner, lease, clk.Now()); err == nil {
		t.Fatal("the paused holder may still deliver after the takeover")
	}
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "m", Status: chain.JobPublished}, a.Owner, clk.Now()); err == nil {
		t.Fatal("the paused holder finished a job taken over")
	}
}

// TestOwnerLeaseOnPostgres: a registered process is alive while it runs,
// dead once closed (its claims free at once), and a late mark of a process
// whose lease has less than the delivery window left is refused.
func TestOwnerLeaseOnPostgres(t *testing.T) { forEachBackend(t, testOwnerLeaseOnPostgres) }

func testOwnerLeaseOnPostgres(t *testing.T) {
	s, _ := openTemp(t)
	if !s.pg() {
		t.Skip("SQLite liveness is the OS lock (TestAlertLeaseOfADeadSender, the cmd crash tests)")
	}
	clk := newLeaseClock()
	s.OwnerLease, s.DeliveryWindow, s.Now = 2*time.Minute, 50*time.Second, clk.Now
	ctx := t.Context()
	p, err := s.Register()
	if err != nil {
		t.Fatal(err)
	}
	if !s.Alive(p.Owner) {
		t.Fatal("a registered process is not alive")
	}
	if ok, _, err := s.ClaimJob(ctx, job("k"), p.Owner, s.Alive, time.Hour, clk.Now()); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	p.pause()
	until, _, _ := ownerLeaseUntil(ctx, s.db, p.Owner.Token)
	clk.step(until.Add(-s.DeliveryWindow).Sub(clk.Now()) + 50*time.Millisecond)
	rec := job("k")
	rec.Location = "out/k.md"
	if err := s.MarkPublishing(ctx, rec, p.Owner, clk.Now()); err == nil || !strings.Contains(err.Error(), "delivery window") {
		t.Fatalf("mark with a lease about to run out: %v", err)
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if s.Alive(p.Owner) {
		t.Fatal("a closed process is alive")
	}
	q := chain.Owner{Host: "other", PID: 9, Token: "q"}
	if ok, _, err := s.ClaimJob(ctx, job("k"), q, s.Alive, time.Hour, clk.Now()); !ok || err != nil {
		t.Fatalf("claim of a closed process's job: %v %v", ok, err)
	}
	if _, err := (&Store{OwnerLease: time.Second, DeliveryWindow: time.Second, d: postgresDialect, db: s.db}).Register(); err == nil {
		t.Fatal("a lease shorter than twice the delivery window was accepted")
	}
}

// TestCeiling16Workers: 16 workers claim distinct jobs under a ceiling of
// 10 publications a day; exactly 10 are claimed.
func TestCeiling16Workers(t *testing.T) { forEachBackend(t, testCeiling16Workers) }

func testCeiling16Workers(t *testing.T) {
	_, spec := openTemp(t)
	now := time.Now()
	var (
		claimed, full atomic.Int32
		wg            sync.WaitGroup
		start         = make(chan struct{})
	)
	for h := range 4 {
		s, err := Open(spec)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		for g := range 4 {
			w := h*4 + g
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for k := range 3 {
					owner := chain.Owner{Host: "h", PID: w + 1, Token: fmt.Sprint("w", w)}
					ok, cur, err := s.ClaimJobWithin(context.Background(), job(fmt.Sprintf("c%d-%d", w, k)), owner, everyoneAlive, time.Hour, now, utcMidnight(now), 10)
					if err != nil {
						t.Error(err)
						return
					}
					if ok {
						claimed.Add(1)
					} else if cur.Status == chain.JobDayFull {
						full.Add(1)
					}
				}
			}()
		}
	}
	close(start)
	wg.Wait()
	if c, f := claimed.Load(), full.Load(); c != 10 || f != 38 {
		t.Fatalf("%d claimed, %d refused as day full; want exactly 10 and 38", c, f)
	}
}

func TestCheckDeliveryShortJobLease(t *testing.T) { forEachBackend(t, testCheckDeliveryShortJobLease) }

// A job lease shorter than the delivery window still delivers while the
// claim holds (another worker may take a publishing job only a delivery
// window after its claim ran out), and refuses once it ran out.
func testCheckDeliveryShortJobLease(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	a, err := s.Register()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	const lease = 2 * time.Second
	at := time.Now().UTC().Truncate(time.Millisecond)
	if ok, _, err := s.ClaimJob(ctx, job("d"), a.Owner, everyoneAlive, lease, at); !ok || err != nil {
		t.Fatalf("claim: %v %v", ok, err)
	}
	rec := job("d")
	rec.Provider, rec.Attempt, rec.Location, rec.Payload = "groq", 1, "out/d.md", []byte("body")
	if err := s.MarkPublishing(ctx, rec, a.Owner, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CheckDelivery(ctx, "d", a.Owner, lease, at.Add(lease-time.Millisecond)); err != nil {
		t.Fatalf("claim with 1ms left refused: %v", err)
	}
	if _, err := s.CheckDelivery(ctx, "d", a.Owner, lease, at.Add(lease)); err == nil || !strings.Contains(err.Error(), "ran out") {
		t.Fatalf("claim run out accepted: %v", err)
	}
	other := chain.Owner{Host: "other", PID: 1, Token: "other-token"}
	window := s.deliveryWindow()
	if ok, _, _ := s.ClaimJob(ctx, job("d"), other, everyoneAlive, lease, at.Add(lease+window-time.Millisecond)); ok {
		t.Fatal("a publishing job taken over within the delivery window after its claim ran out")
	}
	if ok, _, err := s.ClaimJob(ctx, job("d"), other, everyoneAlive, lease, at.Add(lease+window+time.Second)); !ok || err != nil {
		t.Fatalf("a publishing job not taken over a delivery window after its claim ran out: %v %v", ok, err)
	}
}

// TestPostgresEndsIdleTransactions: the store's connections carry
// idle_in_transaction_session_timeout, so a worker paused inside a
// transaction cannot hold the others' locks for longer; a URL may set its
// own.
func TestPostgresEndsIdleTransactions(t *testing.T) {
	for _, tc := range []struct{ param, want string }{{"", pgIdleInTx}, {"&idle_in_transaction_session_timeout=3s", "3s"}} {
		u := newPostgresDB(t) + tc.param
		s, err := Open(u)
		if err != nil {
			t.Fatal(err)
		}
		var got string
		if err := s.db.QueryRowContext(t.Context(), "SHOW idle_in_transaction_session_timeout").Scan(&got); err != nil {
			t.Fatal(err)
		}
		s.Close()
		if got != tc.want {
			t.Errorf("URL param %q: idle_in_transaction_session_timeout = %s, want %s", tc.param, got, tc.want)
		}
	}
}

// pause stops the heartbeat without releasing the lease, as a process
// stopped by SIGSTOP does: its lease then runs out.
func (p *Process) pause() {
	if p.pg != nil {
		p.pg.stop()
		<-p.pg.done
	}
}

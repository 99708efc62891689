package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// Liveness across machines, and the delivery window.
//
// On PostgreSQL a process that takes claims is a row of owners (token,
// host, pid, lease_until). Register inserts it, a heartbeat goroutine
// renews lease_until every OwnerLease/4, and Process.Close stops the
// heartbeat and deletes the row. Alive(owner) is "the row exists and its
// lease has not run out": a machine that died, lost its network or was
// paused (SIGSTOP) past its lease loses its claims to the other workers.
// Leases compare the workers' own clocks, which must agree (NTP) to well
// within DeliveryWindow.
//
// A paused worker may resume after its claims were taken. MarkPublishing
// and FinishJob check the claim inside their transaction (the job's owner
// columns name the process), so its late mark or finish is refused. The one
// window left is between the durable mark and the delivery itself. The rule
// that closes it:
//
//   - a worker delivers only after CheckDelivery — its claim still held and
//     not run out, and its owner lease with at least DeliveryWindow left —
//     and bounds the delivery by the deadline CheckDelivery returns (now +
//     DeliveryWindow); MarkPublishing applies the same check to the owner
//     lease;
//   - another worker takes over a job in publishing (to reconcile it) only
//     when the holder cannot still be inside such a delivery (deliveryOver):
//     the holder is dead for sure (SQLite: its OS lock is free), its owner
//     row is gone, or its owner lease or claim lease ran out more than
//     DeliveryWindow ago.
//
// So a delivery the first worker started has ended before the second one
// starts its own, even when the first was paused in between; the second
// sends the same bytes under the same key (the mark holds them), so a
// target that dedupes sees one delivery either way.

// DefaultOwnerLease is how long a process on PostgreSQL counts as alive
// after its last heartbeat.
const DefaultOwnerLease = 2 * time.Minute

// DefaultDeliveryWindow bounds one delivery (a webhook call, a file write)
// that CheckDelivery allowed; it must exceed the publisher's own timeout.
const DefaultDeliveryWindow = 45 * time.Second

// ownerRetention is how long an expired owners row stays: long past any
// takeover, so a resumed process still finds its lease expired, not gone.
const ownerRetention = 24 * time.Hour

func (s *Store) ownerLease() time.Duration {
	if s.OwnerLease > 0 {
		return s.OwnerLease
	}
	return DefaultOwnerLease
}

// now is the time on the leases' clock (Store.Now).
func (s *Store) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Store) deliveryWindow() time.Duration {
	if s.DeliveryWindow > 0 {
		return s.DeliveryWindow
	}
	return DefaultDeliveryWindow
}

// pgLease is a registered process's row in owners and its heartbeat.
type pgLease struct {
	s     *Store
	token string
	stop  context.CancelFunc
	done  chan struct{}
	once  sync.Once
	err   error
}

// registerPG inserts o's row with a fresh lease, removes rows expired for
// longer than ownerRetention, and starts the heartbeat.
func (s *Store) registerPG(o chain.Owner) (*Process, error) {
	lease, window := s.ownerLease(), s.deliveryWindow()
	if lease < 2*window {
		return nil, fmt.Errorf("register process: the owner lease %s must be at least twice the delivery window %s", lease, window)
	}
	now := s.now()
	ctx := context.Background()
	err := s.write(ctx, "register process", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM owners WHERE lease_until < ?", FormatTime(now.Add(-ownerRetention))); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, "INSERT INTO owners (token, host, pid, started_at, lease_until) VALUES (?, ?, ?, ?, ?)",
			o.Token, o.Host, o.PID, FormatTime(now), FormatTime(now.Add(lease)))
		return err
	})
	if err != nil {
		return nil, err
	}
	hctx, stop := context.WithCancel(ctx)
	l := &pgLease{s: s, token: o.Token, stop: stop, done: make(chan struct{})}
	go l.heartbeat(hctx, lease)
	return &Process{Owner: o, pg: l}, nil
}

// heartbeat renews the lease every lease/4 until stopped. A renewal that
// fails (the server unreachable) is tried again at the next tick; when
// none succeeds for a whole lease, the lease runs out and the process's
// claims go to others, as they should.
func (l *pgLease) heartbeat(ctx context.Context, lease time.Duration) {
	defer close(l.done)
	t := time.NewTicker(lease / 4)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(ctx, lease/4)
		err := l.renew(rctx, lease, l.s.now())
		cancel()
		if err != nil && ctx.Err() == nil {
			slog.Warn("renew process lease", "database", l.s.path, "err", err)
		}
	}
}

// renew sets the lease to run until now + lease. A row that is gone
// (removed long after it expired) is logged: this process lost every
// claim and stays without a lease.
func (l *pgLease) renew(ctx context.Context, lease time.Duration, now time.Time) error {
	res, err := l.s.db.ExecContext(ctx, "UPDATE owners SET lease_until = ? WHERE token = ?",
		FormatTime(now.Add(lease)), l.token)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n == 0 {
		slog.Warn("process lease lost: its row was removed after it expired", "database", l.s.path)
	}
	return nil
}

// close stops the heartbeat and deletes the row: the claims still held are
// free at once.
func (l *pgLease) close() error {
	l.once.Do(func() {
		l.stop()
		<-l.done
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := l.s.db.ExecContext(ctx, "DELETE FROM owners WHERE token = ?", l.token); err != nil {
			l.err = fmt.Errorf("release process lease: %w", err)
		}
	})
	return l.err
}

// alivePG is Alive on PostgreSQL. When the server cannot be asked the
// owner counts as alive (only a lease seen expired frees a claim).
func (s *Store) alivePG(o chain.Owner) bool {
	if o.Token == "" {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	until, found, err := ownerLeaseUntil(ctx, s.db, o.Token)
	if err != nil {
		return true
	}
	return found && until.After(s.now())
}

func ownerLeaseUntil(ctx context.Context, q queryRower, token string) (time.Time, bool, error) {
	var until string
	err := q.QueryRowContext(ctx, "SELECT lease_until FROM owners WHERE token = ?", token).Scan(&until)
	if errors.Is(err, sql.ErrNoRows) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	t, err := ParseTime(until)
	return t, err == nil, err
}

// checkOwnerLease fails on PostgreSQL when owner's lease has less than
// DeliveryWindow left at now (its heartbeat is late: a pause, a lost
// connection) or is gone. now is on the leases' clock (Store.Now),
// whatever clock the caller's job times come from. On SQLite the OS lock is the liveness, and
// an owner without a token (written before tokens) has no lease: nil.
func (s *Store) checkOwnerLease(ctx context.Context, q queryRower, owner chain.Owner, now time.Time) error {
	if !s.d.leases || owner.Token == "" {
		return nil
	}
	until, found, err := ownerLeaseUntil(ctx, q, owner.Token)
	if err != nil {
		return err
	}
	if !found {
		return fmt.Errorf("process %s pid %d holds no lease in %s (not registered, or its lease expired long ago)", owner.Host, owner.PID, s.path)
	}
	if left := until.Sub(now); left < s.deliveryWindow() {
		return fmt.Errorf("the lease of process %s pid %d has %s left, less than the delivery window %s (a pause or a lost connection): its claims may go to another worker",
			owner.Host, owner.PID, left.Round(time.Millisecond), s.deliveryWindow())
	}
	return nil
}

// deliveryOver reports whether the holder of r, a job in publishing whose
// claim another worker may take (live: what alive said of the holder),
// can no longer be inside a delivery CheckDelivery allowed. now is the
// claim's clock, leaseNow the leases' (Store.Now). See the rule at the top
// of this file.
func (s *Store) deliveryOver(ctx context.Context, tx *sql.Tx, r jobRow, live bool, lease time.Duration, now, leaseNow time.Time) (bool, error) {
	window := s.deliveryWindow()
	if now.Sub(r.claimedAt) > lease+window {
		return true, nil
	}
	if !s.d.leases {
		return !live, nil // the OS lock is free: the holder is dead
	}
	if r.owner.Token == "" {
		return !live, nil // no lease to wait for: what alive said
	}
	until, found, err := ownerLeaseUntil(ctx, tx, r.owner.Token)
	if err != nil {
		return false, err
	}
	return !found || leaseNow.Sub(until) > window, nil
}

// CheckDelivery is the last check before a delivery of job id by owner:
// the job is in publishing and claimed by owner, its claim (taken or
// renewed at claimed_at, holding for lease) has not run out at now, and,
// on PostgreSQL, owner's process lease has at least DeliveryWindow left
// (the claim's times are the caller's clock, the lease's Store.Now).
// A claim needs no more than "not run out": deliveryOver lets another
// worker take a publishing job only DeliveryWindow after its claim ran
// out, so a delivery started before that and bounded by the window ends
// first, however short the job lease. It returns
// the deadline on the leases' clock (Store.Now; the wall clock unless
// set) the delivery must end by (DeliveryWindow from then): a delivery bounded by it ends before any other worker may
// reconcile the job. Bound only the delivery with it, not what follows
// (recording the job published).
func (s *Store) CheckDelivery(ctx context.Context, id string, owner chain.Owner, lease time.Duration, now time.Time) (time.Time, error) {
	r, found, err := getJob(ctx, s.db, id)
	if err != nil {
		return time.Time{}, fmt.Errorf("check delivery of %s: %w", id, err)
	}
	switch {
	case !found:
		return time.Time{}, fmt.Errorf("check delivery of %s: no such job", id)
	case !r.claimed || r.owner != owner:
		return time.Time{}, fmt.Errorf("job %s is not claimed by this process any more: not delivered", id)
	case r.rec.Status != chain.JobPublishing:
		return time.Time{}, fmt.Errorf("job %s is %s, not publishing: not delivered", id, r.rec.Status)
	}
	window := s.deliveryWindow()
	if over := now.Sub(r.claimedAt.Add(lease)); over >= 0 {
		return time.Time{}, fmt.Errorf("the claim on job %s ran out %s ago (lease %s): not delivered (the next run reconciles it)",
			id, over.Round(time.Millisecond), lease)
	}
	leaseNow := s.now()
	if err := s.checkOwnerLease(ctx, s.db, owner, leaseNow); err != nil {
		return time.Time{}, fmt.Errorf("job %s not delivered: %w", id, err)
	}
	return leaseNow.Add(window), nil
}

// ClaimSlot takes the scheduled run of schedule at slot (the time the
// schedule is due, the same on every worker) for owner: the first worker
// to claim it gets true, every other false, so `serve` on N machines runs
// each scheduled run once. A slot is never handed over: a worker that dies
// in its run leaves the jobs it claimed to the next run, which takes them
// over after their leases. Slots older than 30 days are removed.
func (s *Store) ClaimSlot(ctx context.Context, schedule string, slot time.Time, owner chain.Owner) (bool, error) {
	at := FormatTime(slot.Truncate(time.Second))
	var won bool
	err := s.writeMode(ctx, "claim slot "+schedule+" "+at, writeMode{locked: true}, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `INSERT INTO schedule_slots (schedule, slot, owner_host, owner_pid, owner_token, claimed_at)
VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (schedule, slot) DO NOTHING`,
			schedule, at, owner.Host, owner.PID, owner.Token, FormatTime(s.now()))
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		won = n == 1
		if won {
			_, err = tx.ExecContext(ctx, "DELETE FROM schedule_slots WHERE schedule = ? AND slot < ?",
				schedule, FormatTime(slot.Add(-30*24*time.Hour)))
		}
		return err
	})
	if err != nil {
		return false, err
	}
	return won, nil
}

var _ chain.DeliveryChecker = (*Store)(nil)

// Keys of the transaction-level advisory locks (pg_advisory_xact_lock) that
// serialize the decisions counting many rows on PostgreSQL: a lock held to
// the commit, taken first in a READ COMMITTED transaction, so that every
// later statement sees what the previous holder committed. Waiting for it
// costs less than the serialization failures and reruns the same decisions
// meet under SERIALIZABLE with 16 workers (see BENCHMARKS.md).
const (
	pgLockSpend   = 0x636f7370 // reservations: caps, token limits, budgets
	pgLockCeiling = 0x636f6365 // claims under the day's publication ceiling
)

// pgLock takes the advisory lock key for the rest of tx (PostgreSQL only:
// on SQLite the write transaction is the lock).
func (s *Store) pgLock(ctx context.Context, tx *sql.Tx, key int64) error {
	if s.d.advisoryLock == "" {
		return nil
	}
	_, err := tx.ExecContext(ctx, s.d.advisoryLock, key)
	return err
}

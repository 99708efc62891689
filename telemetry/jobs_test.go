package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

var t0 = time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)

func job(id string) chain.JobRecord {
	return chain.JobRecord{ID: id, Topic: "topic-" + id, Slot: "2026-11-29", Title: "Title " + id, Category: "tech", Language: "en"}
}

func everyoneAlive(chain.Owner) bool { return true }

func TestClaimJobRace(t *testing.T) { forEachBackend(t, testClaimJobRace) }

func testClaimJobRace(t *testing.T) {
	_, path := openTemp(t)
	for round := range 5 {
		id := fmt.Sprint("race-", round)
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			wins  int
			start = make(chan struct{})
		)
		for pid := 1; pid <= 2; pid++ {
			s, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				ok, cur, err := s.ClaimJob(context.Background(), job(id), chain.Owner{Host: "h", PID: pid}, everyoneAlive, time.Hour, t0)
				if err != nil {
					t.Error(err)
					return
				}
				if ok {
					if cur.Status != chain.JobRunning {
						t.Errorf("claimed job status %q", cur.Status)
					}
					mu.Lock()
					wins++
					mu.Unlock()
				}
			}()
		}
		close(start)
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d owners claimed the job, want exactly 1", round, wins)
		}
	}
}

func TestClaimJobTakeover(t *testing.T) { forEachBackend(t, testClaimJobTakeover) }

func testClaimJobTakeover(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	a, b := chain.Owner{Host: "h", PID: 100}, chain.Owner{Host: "h", PID: 200}
	lease := 20 * time.Minute

	ok, cur, err := s.ClaimJob(ctx, job("j1"), a, everyoneAlive, lease, t0)
	if err != nil || !ok || cur.Status != chain.JobRunning || cur.Title != "Title j1" || cur.Slot != "2026-11-29" {
		t.Fatalf("first claim: %v %+v %v", ok, cur, err)
	}
	// A live holder with a young claim keeps it.
	ok, cur, err = s.ClaimJob(ctx, job("j1"), b, everyoneAlive, lease, t0.Add(5*time.Minute))
	if err != nil || ok || cur.Status != chain.JobRunning {
		t.Fatalf("claim of a held job: %v %+v %v", ok, cur, err)
	}
	// Heartbeat renews: the lease counts from the last heartbeat.
	if err := s.HeartbeatJob(ctx, "j1", a, t0.Add(15*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if ok, _, _ := s.ClaimJob(ctx, job("j1"), b, everyoneAlive, lease, t0.Add(30*time.Minute)); ok {
		t.Fatal("claim taken over despite a heartbeat within the lease")
	}
	// Expired lease: taken over although the holder looks alive.
	ok, _, err = s.ClaimJob(ctx, job("j1"), b, everyoneAlive, lease, t0.Add(36*time.Minute))
	if err != nil || !ok {
		t.Fatalf("expired lease not taken over: %v %v", ok, err)
	}
	// The old owner has lost the claim.
	if err := s.HeartbeatJob(ctx, "j1", a, t0.Add(37*time.Minute)); err == nil {
		t.Fatal("heartbeat of a lost claim succeeded")
	}

	// Dead owner: taken over at once.
	if ok, _, _ := s.ClaimJob(ctx, job("j2"), a, everyoneAlive, lease, t0); !ok {
		t.Fatal("claim j2")
	}
	deadA := func(o chain.Owner) bool { return o != a }
	ok, _, err = s.ClaimJob(ctx, job("j2"), b, deadA, lease, t0.Add(time.Second))
	if err != nil || !ok {
		t.Fatalf("dead owner's claim not taken over: %v %v", ok, err)
	}
	// The same owner may claim again.
	if ok, _, _ := s.ClaimJob(ctx, job("j2"), b, everyoneAlive, lease, t0.Add(2*time.Second)); !ok {
		t.Fatal("re-claim by the holder refused")
	}

	// Deferred jobs are due again; finished ones are never reclaimed.
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "j2", Status: chain.JobDeferred, LastError: "every provider failed"}, a, t0.Add(time.Minute)); err == nil {
		t.Fatal("a process that lost its claim finished the job")
	}
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "j2", Status: chain.JobDeferred, LastError: "every provider failed"}, b, t0.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	ok, cur, err = s.ClaimJob(ctx, job("j2"), a, everyoneAlive, lease, t0.Add(2*time.Minute))
	if err != nil || !ok || cur.Status != chain.JobRunning || cur.LastError != "every provider failed" {
		t.Fatalf("deferred job: %v %+v %v", ok, cur, err)
	}
	for _, st := range []chain.JobStatus{chain.JobPublished, chain.JobReview, chain.JobRejected} {
		id := "fin-" + string(st)
		if ok, _, _ := s.ClaimJob(ctx, job(id), a, everyoneAlive, lease, t0); !ok {
			t.Fatalf("claim %s", id)
		}
		if err := s.FinishJob(ctx, chain.JobRecord{ID: id, Status: st}, a, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		ok, cur, err := s.ClaimJob(ctx, job(id), b, func(chain.Owner) bool { return false }, lease, t0.Add(48*time.Hour))
		if err != nil || ok || cur.Status != st {
			t.Fatalf("finished %s reclaimed: %v %+v %v", st, ok, cur, err)
		}
	}
}

func TestPublishingReconciliation(t *testing.T) { forEachBackend(t, testPublishingReconciliation) }

func testPublishingReconciliation(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	a, b := chain.Owner{Host: "h", PID: 1}, chain.Owner{Host: "h", PID: 2}
	lease := time.Hour
	if ok, _, _ := s.ClaimJob(ctx, job("p"), a, everyoneAlive, lease, t0); !ok {
		t.Fatal("claim")
	}
	when := t0.Add(3*time.Minute + 456*time.Millisecond)
	pre := job("p")
	pre.Provider, pre.Model, pre.QualityScore, pre.Attempt, pre.Location = "groq", "llama", ptr(81), 2, "out/2026-11-29/p.md"
	if err := s.MarkPublishing(ctx, pre, a, when); err != nil {
		t.Fatal(err)
	}
	// Held by a live owner: not claimable.
	if ok, _, _ := s.ClaimJob(ctx, job("p"), b, everyoneAlive, lease, when.Add(time.Minute)); ok {
		t.Fatal("publishing job of a live owner claimed")
	}
	// Owner died between publishing and recording: claimable, stays publishing.
	ok, cur, err := s.ClaimJob(ctx, job("p"), b, func(chain.Owner) bool { return false }, lease, when.Add(2*time.Minute))
	if err != nil || !ok {
		t.Fatalf("claim for reconciliation: %v %v", ok, err)
	}
	if cur.Status != chain.JobPublishing || !cur.UpdatedAt.Equal(when) || cur.Provider != "groq" || cur.Attempt != 2 ||
		cur.Location != "out/2026-11-29/p.md" || cur.QualityScore == nil || *cur.QualityScore != 81 {
		t.Fatalf("reconciliation record = %+v", cur)
	}
	if err := s.HeartbeatJob(ctx, "p", b, when.Add(3*time.Minute)); err != nil {
		t.Fatal(err)
	}
	pub := when.Add(4 * time.Minute)
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "p", Status: chain.JobPublished, PublishedAt: pub}, b, pub); err != nil {
		t.Fatal(err)
	}
	got, found, err := s.Job(ctx, "p")
	if err != nil || !found {
		t.Fatal(found, err)
	}
	// FinishJob keeps the winner fields it was not given.
	if got.Status != chain.JobPublished || !got.PublishedAt.Equal(pub) || got.Provider != "groq" || got.Model != "llama" ||
		got.Location != "out/2026-11-29/p.md" || got.Attempt != 2 {
		t.Fatalf("published job = %+v", got)
	}
	if err := s.HeartbeatJob(ctx, "p", b, pub); err == nil {
		t.Fatal("heartbeat after FinishJob succeeded (claim not released)")
	}
	if _, found, err := s.Job(ctx, "unknown"); found || err != nil {
		t.Fatalf("unknown job: %v %v", found, err)
	}
	list, err := s.JobsByStatus(ctx, chain.JobPublished)
	if err != nil || len(list) != 1 || list[0].ID != "p" {
		t.Fatalf("JobsByStatus = %+v, %v", list, err)
	}
	if list, _ := s.JobsByStatus(ctx, chain.JobReview); len(list) != 0 {
		t.Fatalf("review jobs = %+v", list)
	}
}

func TestPurgeOutputs(t *testing.T) { forEachBackend(t, testPurgeOutputs) }

func testPurgeOutputs(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	now := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)
	rec := func(id string, age time.Duration) {
		t.Helper()
		if err := s.RecordCall(ctx, chain.Call{Provider: "g", RequestID: id, Attempt: 1, TS: now.Add(-age), Outcome: chain.OutcomeOK, QualityScore: ptr(80), Text: "text of " + id}); err != nil {
			t.Fatal(err)
		}
	}
	rec("old", 40*24*time.Hour)
	rec("older", 90*24*time.Hour)
	rec("new", 2*24*time.Hour)
	rec("inreview", 40*24*time.Hour)
	if err := s.FinishJob(ctx, chain.JobRecord{ID: "inreview", Topic: "t", Slot: "2026-10-20", Status: chain.JobReview}, chain.Owner{}, now); err != nil {
		t.Fatal(err)
	}
	n, err := s.PurgeOutputs(ctx, now.Add(-30*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("purged %d (%v), want 2", n, err)
	}
	_, rows, _ := s.Query(ctx, "SELECT request_id FROM outputs ORDER BY request_id")
	if fmt.Sprint(rows) != "[[inreview] [new]]" {
		t.Fatalf("outputs left = %v", rows)
	}
	if c := queryInt(t, s, "SELECT count(*) FROM calls"); c != 4 {
		t.Fatalf("calls = %d, want 4 (calls stay)", c)
	}
	if n, _ := s.PurgeOutputs(ctx, now.Add(-30*24*time.Hour)); n != 0 {
		t.Fatalf("second purge deleted %d", n)
	}
}

// TestClaimUnstorableJob: a job PostgreSQL cannot store (a NUL byte in its
// title, an id of 3,001 bytes) fails its claim with chain.ErrJobUnstorable,
// which a run takes as that job's problem, not the store's; the store goes
// on claiming other jobs. SQLite stores both.
func TestClaimUnstorableJob(t *testing.T) { forEachBackend(t, testClaimUnstorableJob) }

func testClaimUnstorableJob(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	owner := chain.Owner{Host: "h", PID: 1}
	for _, j := range []chain.JobRecord{
		{ID: "nul", Topic: "nul", Slot: "2026-12-01", Title: "bad\x00title"},
		{ID: longID(3001), Topic: "long", Slot: "2026-12-01", Title: "T"},
	} {
		_, _, err := s.ClaimJobWithin(ctx, j, owner, nil, time.Minute, t0, t0, 3)
		switch {
		case backendOf(t) == BackendPostgres && !errors.Is(err, chain.ErrJobUnstorable):
			t.Errorf("claim %.20q: %v, want chain.ErrJobUnstorable", j.ID, err)
		case backendOf(t) == BackendSQLite && err != nil:
			t.Errorf("claim %.20q on SQLite: %v", j.ID, err)
		}
	}
	if ok, _, err := s.ClaimJob(ctx, chain.JobRecord{ID: "fine", Topic: "fine", Slot: "2026-12-01", Title: "T"}, owner, nil, time.Minute, t0); err != nil || !ok {
		t.Fatalf("a good job after the bad ones: %v %v", ok, err)
	}
}

// longID is an id of n letters that does not compress (PostgreSQL
// compresses a repetitive index key below its row limit).
func longID(n int) string {
	r := rand.New(rand.NewPCG(1, 2))
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('a' + r.IntN(26))
	}
	return string(b)
}

package chain

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// brokenJobs is a JobStore whose every claim fails, as a database locked by
// another process through all its busy retries.
type brokenJobs struct {
	JobStore
	claims int
}

func (b *brokenJobs) ClaimJob(context.Context, JobRecord, Owner, func(Owner) bool, time.Duration, time.Time) (bool, JobRecord, error) {
	b.claims++
	return false, JobRecord{}, errors.New("database is locked")
}

func TestRunStopsAtTheFirstClaimError(t *testing.T) {
	s := newScenario(t, "gemini")
	jobs := &brokenJobs{}
	r := &Runner{Chain: s.chain, Jobs: jobs, Owner: Owner{Host: "h", PID: 1}}
	var cands []Job
	for _, topic := range []string{"a", "b", "c", "d"} {
		cands = append(cands, Job{ID: JobID(topic, "2026-11-29"), Topic: topic, Slot: "2026-11-29"})
	}
	sum := r.Run(context.Background(), cands, 4)
	if jobs.claims != 1 {
		t.Fatalf("%d claims tried on a failing store, want 1 (the rest stay due)", jobs.claims)
	}
	if sum.Errors != 1 || len(sum.Reports) != 1 || sum.Reports[0].Err == nil {
		t.Fatalf("summary %+v", sum)
	}
	if s.prov["gemini"].count() != 0 {
		t.Fatal("a provider was called although no job could be claimed")
	}
}

// unstorableJobs is a JobStore that cannot store job "bad" (as PostgreSQL
// refuses a NUL byte or an over-long id) and finds every other job
// published already.
type unstorableJobs struct {
	JobStore
	claims []string
}

func (u *unstorableJobs) ClaimJob(_ context.Context, j JobRecord, _ Owner, _ func(Owner) bool, _ time.Duration, _ time.Time) (bool, JobRecord, error) {
	u.claims = append(u.claims, j.ID)
	if j.ID == "bad" {
		return false, JobRecord{}, fmt.Errorf("claim: %w: invalid byte sequence for encoding \"UTF8\": 0x00", ErrJobUnstorable)
	}
	return false, JobRecord{ID: j.ID, Status: JobPublished}, nil
}

type alertLog struct{ got []Alert }

func (a *alertLog) Notify(_ context.Context, al Alert) error {
	a.got = append(a.got, al)
	return nil
}

// TestRunSkipsAnUnstorableJob: a job the store cannot hold is reported and
// alerted, and the run goes on with the others.
func TestRunSkipsAnUnstorableJob(t *testing.T) {
	s := newScenario(t, "gemini")
	jobs := &unstorableJobs{}
	al := &alertLog{}
	r := &Runner{Chain: s.chain, Jobs: jobs, Notifier: al, Owner: Owner{Host: "h", PID: 1}}
	var cands []Job
	for _, id := range []string{"a", "bad", "c", "d"} {
		cands = append(cands, Job{ID: id, Topic: id, Slot: "2026-11-29"})
	}
	sum := r.Run(context.Background(), cands, 4)
	if len(jobs.claims) != 4 {
		t.Fatalf("claims tried %v, want all 4: one bad job must not stop the run", jobs.claims)
	}
	if sum.Errors != 1 || len(sum.Reports) != 1 || !errors.Is(sum.Reports[0].Err, ErrJobUnstorable) {
		t.Fatalf("summary %+v", sum)
	}
	if len(al.got) != 1 || al.got[0].Rule != "job_unstorable" || !strings.Contains(al.got[0].Text, `"bad"`) {
		t.Fatalf("alerts %+v", al.got)
	}
}

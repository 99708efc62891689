package chain

import (
	"context"
	"errors"
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

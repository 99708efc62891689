package telemetry

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// BenchmarkMarkPublishing is the cost of the durable publishing mark (one
// write transaction committed at synchronous=FULL: the WAL is fsynced),
// against the same kind of write at NORMAL (a heartbeat). Their difference
// is what at most once across power cuts costs per published job.
func BenchmarkMarkPublishing(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "pipeline.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	owner := chain.Owner{Host: "h", PID: 1, Token: "t"}
	rec := chain.JobRecord{ID: "2026-12-01/bench", Topic: "bench", Slot: "2026-12-01"}
	if ok, _, err := s.ClaimJob(ctx, rec, owner, nil, time.Hour, time.Now()); err != nil || !ok {
		b.Fatal(ok, err)
	}
	mark := rec
	mark.Provider, mark.Model, mark.Attempt, mark.Location = "groq", "llama", 1, "out/2026-12-01/bench.md"
	mark.Payload = make([]byte, 12<<10) // a 1,500-word article
	b.Run("durable mark", func(b *testing.B) {
		for b.Loop() {
			if err := s.MarkPublishing(ctx, mark, owner, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("normal write (heartbeat)", func(b *testing.B) {
		for b.Loop() {
			if err := s.HeartbeatJob(ctx, rec.ID, owner, time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkOpenCheck is the check every run makes at open (QuickCheck of
// the state tables) against PRAGMA quick_check of the whole file, with
// benchRows calls rows (CONTENTPIPE_BENCH_ROWS=1000000 for the
// BENCHMARKS.md figure).
func BenchmarkOpenCheck(b *testing.B) {
	s, err := Open(filepath.Join(b.TempDir(), "pipeline.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	fillCalls(b, s, benchRows(b), time.Now())
	ctx := context.Background()
	b.Run("state tables (run)", func(b *testing.B) {
		for b.Loop() {
			if err := s.QuickCheck(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("whole file quick_check", func(b *testing.B) {
		for b.Loop() {
			if err := s.check(ctx, "PRAGMA quick_check"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

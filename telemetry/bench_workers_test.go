package telemetry

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// BenchmarkClaims measures job claims and spend reservations per second
// with 1, 4 and 16 concurrent workers, on SQLite and on PostgreSQL (with
// CONTENTPIPE_TEST_POSTGRES), each worker with its own Store handle as a
// separate process would have. It reports ops/s and the p50/p99 latency
// of one claim (or reservation). The reservations share one daily cap set
// below the number of attempts: the benchmark fails unless exactly the
// cap was granted — the shared quota stays exact under 16 workers.
//
//	go test ./telemetry -run '^$' -bench Claims -benchtime 2s
func BenchmarkClaims(b *testing.B) {
	for _, backend := range []string{BackendSQLite, BackendPostgres} {
		b.Run(backend, func(b *testing.B) {
			for _, workers := range []int{1, 4, 16} {
				b.Run(fmt.Sprintf("claim/workers=%d", workers), func(b *testing.B) {
					benchWorkers(b, backend, workers, benchClaim, false)
				})
				b.Run(fmt.Sprintf("reserve/workers=%d", workers), func(b *testing.B) {
					benchWorkers(b, backend, workers, benchReserve, true)
				})
			}
		})
	}
}

// benchOp is one operation of a worker: op i of the benchmark on store s.
// It reports whether the operation was granted (a claim taken, a
// reservation granted).
type benchOp func(ctx context.Context, s *Store, worker, i int, cap int) (bool, error)

func benchClaim(ctx context.Context, s *Store, worker, i, _ int) (bool, error) {
	owner := chain.Owner{Host: "bench", PID: worker + 1, Token: fmt.Sprint("w", worker)}
	ok, _, err := s.ClaimJob(ctx, job(fmt.Sprint("job-", i)), owner, everyoneAlive, time.Hour, time.Now())
	return ok, err
}

var benchDay = time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)

func benchReserve(ctx context.Context, s *Store, _, _ int, cap int) (bool, error) {
	g, err := s.ReserveSpend(ctx, chain.SpendRequest{Provider: "shared", DayStart: benchDay, Now: benchDay.Add(time.Hour),
		ChainDayStart: benchDay, ChainMonthStart: benchDay, InputTokens: 1000, MaxOutput: 2000,
		Price: chain.Price{InputPerMTok: 0.3, OutputPerMTok: 2.5}, Cap: cap})
	return g.Refused == "", err
}

// benchWorkers runs b.N operations op over workers; shared says op takes
// from the shared quota (cap), so exactly cap of them must be granted.
func benchWorkers(b *testing.B, backend string, workers int, op benchOp, shared bool) {
	b.StopTimer()
	testBackend.Store(b, backend)
	defer testBackend.Delete(b)
	_, spec := openTemp(b)
	stores := make([]*Store, workers)
	for w := range stores {
		s, err := Open(spec)
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		stores[w] = s
	}
	ctx := context.Background()
	n := b.N
	cap := max(1, n*3/4) // the shared quota: refuses the last quarter
	var (
		next    atomic.Int64
		granted atomic.Int64
		wg      sync.WaitGroup
		lat     = make([][]time.Duration, workers)
	)
	b.StartTimer()
	start := time.Now()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				t := time.Now()
				ok, err := op(ctx, stores[w], w, i, cap)
				lat[w] = append(lat[w], time.Since(t))
				if err != nil {
					b.Error(err)
					return
				}
				if ok {
					granted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(lat...)
	slices.Sort(all)
	if len(all) == 0 {
		return
	}
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))].Microseconds()) / 1000
	}
	b.ReportMetric(float64(len(all))/elapsed.Seconds(), "ops/s")
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(0, "ns/op")
	want := int64(n) // every claim is of a new job
	if shared {
		want = int64(cap)
		// The database agrees: exactly cap reservations are open.
		if got := queryInt(b, stores[0], "SELECT count(*) FROM cap_reservations WHERE provider = 'shared' AND settled = 0"); got != want {
			b.Fatalf("%d open reservations in the database, want exactly the cap %d", got, want)
		}
	}
	if got := granted.Load(); got != want {
		b.Fatalf("%d of %d operations granted by %d workers, want exactly %d", got, n, workers, want)
	}
}

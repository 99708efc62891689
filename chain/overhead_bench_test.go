package chain_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
)

// BenchmarkOverhead measures what the chain adds to a plain HTTP exchange,
// in one process against the same loopback servers: "nethttp" posts the
// request body with net/http and reads the answer; "chain" runs a whole job
// through the chain with the real SQLite store and the real adapter, the
// gate reduced to decoding the article (decodeGate). Each sub-benchmark
// reports its p50 and p99 latency per op in µs; the overhead is the chain's
// figure minus the baseline's. "failover" is a first link answering 503 and
// a second answering, against two plain requests (the breaker off, so
// that every op fails over).
func BenchmarkOverhead(b *testing.B) {
	ok := capture(b, sim.FlavorCerebras, sim.Profile{Seed: 1})
	down := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultUnavailable: 1}}
	fail := capture(b, sim.FlavorGroq, down)
	body := bytes.Repeat([]byte("x"), 4096) // about the size of an article prompt
	b.Run("healthy/nethttp", func(b *testing.B) {
		url := replay(b, ok) + "/chat/completions"
		measure(b, func() { plainPost(b, url, body) })
	})
	b.Run("healthy/chain", func(b *testing.B) {
		w := benchWorld(b, spec{name: "cerebras", flavor: sim.FlavorCerebras, baseURL: replay(b, ok)})
		w.chain.Gate = decodeGate{}
		// The default breaker: every success is a sample in its window.
		w.chain.Breaker = chain.BreakerSettings{}
		measureJobs(b, w)
	})
	b.Run("failover/nethttp", func(b *testing.B) {
		bad, good := replay(b, fail)+"/chat/completions", replay(b, ok)+"/chat/completions"
		measure(b, func() { plainPost(b, bad, body); plainPost(b, good, body) })
	})
	b.Run("failover/chain", func(b *testing.B) {
		w := benchWorld(b,
			spec{name: "groq", flavor: sim.FlavorGroq, baseURL: replay(b, fail)},
			spec{name: "cerebras", flavor: sim.FlavorCerebras, baseURL: replay(b, ok)})
		w.chain.Gate = decodeGate{}
		measureJobs(b, w)
	})
}

// plainPost is the baseline exchange: one POST, the answer read to its end.
func plainPost(b *testing.B, url string, body []byte) {
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

func measureJobs(b *testing.B, w *world) {
	ctx := context.Background()
	i := 0
	measure(b, func() {
		i++
		res, err := w.chain.Generate(ctx, job(fmt.Sprintf("overhead-%d", i)))
		if err != nil {
			b.Fatal(err)
		}
		if res.Status != chain.JobPublished {
			b.Fatalf("job %d: status %s story %v", i, res.Status, res.Story)
		}
	})
}

// measure runs op b.N times and reports the p50 and p99 of its latency.
func measure(b *testing.B, op func()) {
	b.Helper()
	b.ReportAllocs()
	var lat []time.Duration
	cpu0 := cpuTime()
	b.ResetTimer()
	for b.Loop() {
		t := time.Now()
		op()
		lat = append(lat, time.Since(t))
	}
	b.StopTimer()
	cpu := cpuTime() - cpu0
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(q float64) float64 {
		return float64(lat[min(len(lat)-1, int(q*float64(len(lat))))].Nanoseconds()) / 1e3
	}
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	// CPU time per op (user+sys of the whole process, the loopback server
	// included) is less sensitive than latency to a machine shared with
	// other work.
	b.ReportMetric(float64(cpu.Microseconds())/float64(len(lat)), "cpu-µs/op")
}

// cpuTime is the process's user+sys CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package chain_test

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	sqlite3 "github.com/mattn/go-sqlite3"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// BenchmarkOverhead measures what the chain adds to a plain HTTP exchange,
// in one process against the same loopback servers: "nethttp" posts the
// request body with net/http and reads the answer; "chain" runs a whole job
// through the chain with the real SQLite store and the real adapter, the
// gate reduced to decoding the article (decodeGate). Each sub-benchmark
// reports its p50 and p99 latency per op in µs; the overhead is the chain's
// figure minus the baseline's. "failover" is a first link answering 503 and
// a second answering, against two plain requests (the breaker off, so
// that every op fails over). "floor" is the least a durable attempt can
// cost: the plain request, the answer decoded once with encoding/json, then
// one SQLite transaction (WAL, synchronous=NORMAL, telemetry's schema)
// writing what an attempt must leave (floorStore); failing over, one such
// transaction per attempt.
func BenchmarkOverhead(b *testing.B) {
	ok := capture(b, sim.FlavorCerebras, sim.Profile{Seed: 1})
	down := sim.Profile{Rates: map[sim.Fault]float64{sim.FaultUnavailable: 1}}
	fail := capture(b, sim.FlavorGroq, down)
	body := bytes.Repeat([]byte("x"), 4096) // about the size of an article prompt
	b.Run("healthy/nethttp", func(b *testing.B) {
		url := replay(b, ok) + "/chat/completions"
		measure(b, func() { plainPost(b, url, body) })
	})
	b.Run("healthy/floor", func(b *testing.B) {
		url, st := replay(b, ok)+"/chat/completions", openFloor(b)
		i := 0
		measure(b, func() { i++; st.attempt(b, i, 1, floorPost(b, url, body)) })
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
	b.Run("failover/floor", func(b *testing.B) {
		bad, good := replay(b, fail)+"/chat/completions", replay(b, ok)+"/chat/completions"
		st := openFloor(b)
		i := 0
		measure(b, func() {
			i++
			st.attempt(b, i, 1, floorPost(b, bad, body))
			st.attempt(b, i, 2, floorPost(b, good, body))
		})
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

// floorAnswer is what the floor keeps of an answer: its status, and for a
// 2xx the OpenAI-compatible body decoded once.
type floorAnswer struct {
	status  int
	latency time.Duration
	body    struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
}

// floorPost is plainPost with the answer decoded once.
func floorPost(b *testing.B, url string, body []byte) *floorAnswer {
	t0 := time.Now()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	a := &floorAnswer{status: resp.StatusCode}
	if resp.StatusCode/100 == 2 {
		if err := json.NewDecoder(resp.Body).Decode(&a.body); err != nil || len(a.body.Choices) == 0 {
			b.Fatalf("decode the answer: %v (%d choices)", err, len(a.body.Choices))
		}
	} else {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	a.latency = time.Since(t0)
	return a
}

// floorStore is a database with telemetry's schema (made by telemetry.Open)
// written through one connection of its own with prepared statements.
type floorStore struct {
	db                   *sql.DB
	call, output, upsert *sql.Stmt
}

func openFloor(b *testing.B) *floorStore {
	b.Helper()
	path := filepath.Join(b.TempDir(), "floor.db")
	st, err := telemetry.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	db := sql.OpenDB(floorConnector{"file:" + path + "?_journal_mode=WAL&_synchronous=NORMAL&_txlock=immediate&_busy_timeout=5000&_foreign_keys=1"})
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	f := &floorStore{db: db}
	for _, p := range []struct {
		stmt **sql.Stmt
		q    string
	}{
		{&f.call, `INSERT INTO calls (provider, model, request_id, attempt, ts, input_tokens, output_tokens, latency_ms,
	http_status, cost_estimate_usd, outcome) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`},
		{&f.output, `INSERT INTO outputs (call_id, request_id, attempt, text, created_at) VALUES (?, ?, ?, ?, ?)`},
		{&f.upsert, `INSERT INTO provider_state (provider, breaker, updated_at) VALUES (?, ?, ?)
ON CONFLICT (provider) DO UPDATE SET breaker = excluded.breaker, updated_at = excluded.updated_at`},
	} {
		if *p.stmt, err = db.Prepare(p.q); err != nil {
			b.Fatal(err)
		}
	}
	return f
}

// attempt writes one attempt in one transaction: its calls row (with the
// table's indexes), its answer in outputs when there is one, the
// provider's state upserted.
func (f *floorStore) attempt(b *testing.B, job, n int, a *floorAnswer) {
	provider, outcome, text := "groq", "server_error", ""
	if a.status/100 == 2 {
		provider, outcome, text = "cerebras", "ok", a.body.Choices[0].Message.Content
	}
	id, now := fmt.Sprintf("floor-%d", job), telemetry.FormatTime(time.Now())
	tx, err := f.db.Begin()
	if err != nil {
		b.Fatal(err)
	}
	res, err := tx.Stmt(f.call).Exec(provider, a.body.Model, id, n, now, a.body.Usage.PromptTokens, a.body.Usage.CompletionTokens,
		a.latency.Milliseconds(), a.status, 0.0001, outcome)
	if err == nil && text != "" {
		var callID int64
		if callID, err = res.LastInsertId(); err == nil {
			_, err = tx.Stmt(f.output).Exec(callID, id, n, text, now)
		}
	}
	if err == nil {
		_, err = tx.Stmt(f.upsert).Exec(provider, `{"samples":[1]}`, now)
	}
	if err == nil {
		err = tx.Commit()
	}
	if err != nil {
		tx.Rollback() //nolint:errcheck
		b.Fatal(err)
	}
}

// floorConnector opens the floor's connections with the SQLite driver the
// store uses.
type floorConnector struct{ dsn string }

func (c floorConnector) Connect(context.Context) (driver.Conn, error) {
	return (&sqlite3.SQLiteDriver{}).Open(c.dsn)
}
func (c floorConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }

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

package chain_test

// world is the harness of the HTTP scenarios (http_test.go): real SDK
// clients through the real transport against loopback sim servers, the
// real gate, a real SQLite file, the wall clock.

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/gemini"
	"github.com/contentpipe/contentpipe/adapters/openai"
	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/data"
	"github.com/contentpipe/contentpipe/prompts"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/telemetry"
)

// Article size of every job: small enough for fast tests, large enough for
// the real gate's checks to mean something.
const (
	targetWords     = 600
	minSections     = 4
	minSectionWords = 80
)

// spec is one link of a test chain.
type spec struct {
	name     string
	flavor   sim.Flavor
	prof     sim.Profile
	timeouts chain.Timeouts
	stream   bool
	dailyCap int
	rpm      int
	baseURL  string // overrides the sim server's URL (a proxy, a dead port)
	// provider is the link's profile (config provider:) of an
	// OpenAI-compatible link; "" = the flavor's own.
	provider  profile.ID
	maxTokens int
	price     *chain.Price
}

// world is a chain on the wall clock over real HTTP and a real SQLite file.
type world struct {
	t       testing.TB
	dbPath  string
	store   *telemetry.Store
	chain   *chain.Chain
	servers map[string]*sim.Server

	mu     sync.Mutex
	events []chain.Event
}

// testPolicy is the default policy scaled down to milliseconds.
func testPolicy() chain.RetryPolicy {
	return chain.RetryPolicy{
		RateLimitedWait:       200 * time.Millisecond,
		RateLimitedMaxRetries: 2,
		RateLimitedMaxWait:    2 * time.Second,
		ServerErrorWait:       0,
		AuthHalt:              true,
		OtherWait:             100 * time.Millisecond,
	}
}

func newWorld(t testing.TB, specs ...spec) *world {
	t.Helper()
	return newWorldAt(t, filepath.Join(t.TempDir(), "pipeline.db"), specs...)
}

// newWorldAt is newWorld on an existing database file (a later run).
func newWorldAt(t testing.TB, dbPath string, specs ...spec) *world {
	t.Helper()
	w := &world{t: t, dbPath: dbPath, servers: map[string]*sim.Server{}}
	st, err := telemetry.Open(w.dbPath)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { st.Close() })
	w.store = st
	gate, err := quality.NewGate(data.ArticleSchema, quality.Settings{Threshold: 70, MinSections: minSections, MinSectionWords: minSectionWords})
	if err != nil {
		t.Fatalf("gate: %v", err)
	}
	set := prompts.Default()
	w.chain = &chain.Chain{
		Policy:   testPolicy(),
		Deadline: 5 * time.Second,
		Store:    st,
		Gate:     gate,
		Clock:    chain.RealClock{},
		Schema:   data.ArticleSchema,
		Prompt: func(family string, j chain.Job) (chain.Prompt, error) {
			r, err := set.ArticleFor("", family, prompts.Vars{Title: j.Title, Category: j.Category, Keywords: j.Keywords,
				Language: j.Language, TargetWords: j.TargetWords, MinSections: minSections, MinSectionWords: minSectionWords})
			return chain.Prompt{System: r.System, User: r.User, Version: r.Version}, err
		},
		Progress: func(e chain.Event) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.events = append(w.events, e)
		},
	}
	for _, s := range specs {
		w.chain.Links = append(w.chain.Links, w.link(s))
	}
	return w
}

// link starts s's sim server (unless s.baseURL is set) and builds its link
// with the real adapter, as cmd/contentpipe's buildLink does.
func (w *world) link(s spec) *chain.Link {
	t := w.t
	t.Helper()
	base := s.baseURL
	if base == "" {
		srv, err := sim.Start(s.flavor, s.prof)
		if err != nil {
			t.Fatalf("start sim %s: %v", s.name, err)
		}
		t.Cleanup(srv.Close)
		w.servers[s.name] = srv
		base = srv.BaseURL()
	}
	reset, err := chain.ParseCapReset("")
	if err != nil {
		t.Fatal(err)
	}
	l := &chain.Link{Name: s.name, Model: s.flavor.DefaultModel(), Infra: s.name, DailyCap: s.dailyCap, CapReset: reset,
		Price: chain.Price{InputPerMTok: 0.3, OutputPerMTok: 2.5}, Stream: s.stream, Pacer: chain.NewPacer(s.rpm, 0), MaxTokens: s.maxTokens}
	if s.price != nil {
		l.Price = *s.price
	}
	if s.flavor == sim.FlavorGemini {
		l.Family = "gemini"
		c, err := gemini.New(context.Background(), gemini.Config{Name: s.name, Model: l.Model, APIKey: "test-key", BaseURL: base, Timeouts: s.timeouts})
		if err != nil {
			t.Fatal(err)
		}
		l.Provider = c
	} else {
		l.Family = "openai"
		c, err := openai.New(openai.Config{Name: s.name, Model: l.Model, APIKey: "test-key", BaseURL: base, JSONMode: openai.JSONObject, Timeouts: s.timeouts,
			Provider: s.provider})
		if err != nil {
			t.Fatal(err)
		}
		l.Provider = c
	}
	return l
}

func job(topic string) chain.Job {
	slot := "2026-11-29"
	return chain.Job{ID: chain.JobID(topic, slot), Topic: topic, Slot: slot, Title: "Home espresso for beginners: " + topic,
		Category: "food", Keywords: []string{"espresso", "grinder", "crema"}, Language: "en", TargetWords: targetWords}
}

// run generates one job and fails the test on a store error.
func (w *world) run(topic string) chain.Result {
	w.t.Helper()
	res, err := w.chain.Generate(context.Background(), job(topic))
	if err != nil {
		w.t.Fatalf("generate %s: %v", topic, err)
	}
	return res
}

func (w *world) requests(name string) int { return w.servers[name].Requests() }

// waits returns the waits the chain announced for provider (kind "wait").
func (w *world) waits(provider string) []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []time.Duration
	for _, e := range w.events {
		if e.Kind == "wait" && e.Provider == provider {
			out = append(out, e.Wait)
		}
	}
	return out
}

// query reads rows from the SQLite file through a separate read-only store.
func (w *world) query(q string, args ...any) [][]any {
	w.t.Helper()
	ro, err := telemetry.OpenReadOnly(w.dbPath)
	if err != nil {
		w.t.Fatalf("open read-only: %v", err)
	}
	defer ro.Close()
	_, rows, err := ro.Query(context.Background(), q, args...)
	if err != nil {
		w.t.Fatalf("query %q: %v", q, err)
	}
	return rows
}

// callRow is one calls row as stored.
type callRow struct {
	provider, requestID, outcome, detail, prevErr string
	attempt, status                               int
	ts                                            time.Time
	latency                                       time.Duration
	score                                         *float64
}

func (w *world) calls(provider string) []callRow {
	w.t.Helper()
	rows := w.query(`SELECT provider, request_id, attempt, ts, latency_ms, http_status, outcome, detail, previous_error, quality_score
FROM calls WHERE provider = ? ORDER BY id`, provider)
	out := make([]callRow, 0, len(rows))
	for _, r := range rows {
		ts, err := telemetry.ParseTime(r[3].(string))
		if err != nil {
			w.t.Fatal(err)
		}
		c := callRow{provider: r[0].(string), requestID: r[1].(string), attempt: int(r[2].(int64)), ts: ts,
			latency: time.Duration(r[4].(int64)) * time.Millisecond, status: int(r[5].(int64)), outcome: r[6].(string),
			detail: r[7].(string), prevErr: r[8].(string)}
		if f, ok := r[9].(float64); ok {
			c.score = &f
		}
		out = append(out, c)
	}
	return out
}

func (w *world) count(q string, args ...any) int {
	w.t.Helper()
	rows := w.query(q, args...)
	return int(rows[0][0].(int64))
}

func (w *world) skips(provider string, reason chain.SkipReason) int {
	return w.count("SELECT COUNT(*) FROM skips WHERE provider = ? AND reason = ?", provider, string(reason))
}

// state reads provider_state: exhausted_until (zero when NULL) and the breaker.
func (w *world) state(provider string) (until time.Time, br chain.Breaker) {
	w.t.Helper()
	rows := w.query("SELECT exhausted_until, breaker FROM provider_state WHERE provider = ?", provider)
	if len(rows) == 0 {
		return time.Time{}, chain.Breaker{}
	}
	if s, ok := rows[0][0].(string); ok {
		var err error
		if until, err = telemetry.ParseTime(s); err != nil {
			w.t.Fatal(err)
		}
	}
	if err := json.Unmarshal([]byte(rows[0][1].(string)), &br); err != nil {
		w.t.Fatalf("breaker json: %v", err)
	}
	return until, br
}

func outcomes(cs []callRow) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.outcome
	}
	return out
}

package chain_test

// The scripted chain scenarios of chain_test.go, once more over real HTTP:
// real SDK clients (genai, go-openai) through the real transport against the
// loopback sim servers, the real quality gate, a real SQLite file, and the
// wall clock with small durations. Every assertion reads the calls, skips,
// outputs, provider_state and provider_events rows back from the SQLite
// file. Timing bounds are lower bounds (a wait is at least its floor) or
// generous upper bounds that only tell "waited" from "did not wait".

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/adapters/transport/transporttest"
	"github.com/contentpipe/contentpipe/chain"
)

// TestHTTPProviderDelayIsAFloor: a per-minute 429 is retried at the same
// provider after at least the provider's own delay, read from each wire
// format (Gemini RetryInfo, OpenRouter X-RateLimit-Reset in epoch ms, Groq's
// whole-second retry-after header, which rounds 300ms up to 1s).
func TestHTTPProviderDelayIsAFloor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		flavor sim.Flavor
		floor  time.Duration
		// OpenRouter names an absolute reset instant (epoch ms): the wait is
		// measured from when the answer is read, so it may be a few ms less
		// than the delay the server had in mind when it wrote the instant.
		early time.Duration
	}{
		{sim.FlavorGemini, 300 * time.Millisecond, 0},
		{sim.FlavorOpenRouter, 300 * time.Millisecond, 20 * time.Millisecond},
		{sim.FlavorGroq, time.Second, 0},
	} {
		t.Run(string(tc.flavor), func(t *testing.T) {
			t.Parallel()
			w := newWorld(t,
				spec{name: "first", flavor: tc.flavor, prof: sim.Profile{Script: []sim.Fault{sim.FaultRateMinute}, RetryAfter: 300 * time.Millisecond}},
				spec{name: "second", flavor: sim.FlavorCerebras})
			res := w.run("a")
			if res.Status != chain.JobPublished || res.Winner.Provider != "first" {
				t.Fatalf("status %s winner %+v story %v", res.Status, res.Winner, res.Story)
			}
			cs := w.calls("first")
			if len(cs) != 2 || cs[0].outcome != "rate_limited" || cs[0].status != 429 || cs[1].outcome != "ok" || cs[1].attempt != 2 {
				t.Fatalf("calls %+v", cs)
			}
			if cs[1].prevErr == "" || !strings.HasPrefix(cs[1].prevErr, "rate_limited 429") {
				t.Fatalf("previous_error %q", cs[1].prevErr)
			}
			// ts is stored to the millisecond: allow 1ms of rounding.
			if gap := cs[1].ts.Sub(cs[0].ts); gap < tc.floor-time.Millisecond-tc.early {
				t.Fatalf("retry %s after the 429, before the provider's %s", gap, tc.floor)
			}
			ws := w.waits("first")
			if len(ws) != 1 || ws[0] < tc.floor-tc.early || ws[0] > tc.floor+tc.floor/10 {
				t.Fatalf("waits %v, want one in [%s, %s]", ws, tc.floor, tc.floor+tc.floor/10)
			}
			if n := w.requests("second"); n != 0 {
				t.Fatalf("second link called %d times although the first recovered", n)
			}
		})
	}
}

// bare429 fronts a sim server: the odd requests get a Groq-format 429 that
// names no delay at all (no retry-after, no "try again in"), the even ones
// go through to the sim. The sim always advertises a delay, so this is the
// only way to exercise the full-jitter backoff over HTTP.
func bare429(t *testing.T, target string) string {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(&url.URL{Scheme: u.Scheme, Host: u.Host})
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if n.Add(1)%2 == 1 {
			rw.Header().Set("Content-Type", "application/json")
			rw.WriteHeader(http.StatusTooManyRequests)
			_, _ = rw.Write([]byte(`{"error":{"message":"Rate limit reached for requests per minute (RPM).","type":"requests","code":"rate_limit_exceeded"}}`))
			return
		}
		proxy.ServeHTTP(rw, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + u.Path
}

// TestHTTPJitterSpreadsWaits: without a provider delay the wait is full
// jitter in [0, rate_limited.wait]; the draws differ from job to job and the
// retry never starts before its drawn wait has passed.
func TestHTTPJitterSpreadsWaits(t *testing.T) {
	t.Parallel()
	srv, err := sim.Start(sim.FlavorGroq, sim.Profile{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	w := newWorld(t, spec{name: "groq", flavor: sim.FlavorGroq, baseURL: bare429(t, srv.BaseURL())})
	const jobs = 8
	for i := range jobs {
		if res := w.run(fmt.Sprintf("j%d", i)); res.Status != chain.JobPublished {
			t.Fatalf("job %d: status %s story %v", i, res.Status, res.Story)
		}
	}
	ws := w.waits("groq")
	if len(ws) != jobs {
		t.Fatalf("%d waits, want %d", len(ws), jobs)
	}
	distinct := map[time.Duration]bool{}
	lo, hi := time.Hour, time.Duration(0)
	for _, d := range ws {
		if d < 0 || d > 200*time.Millisecond {
			t.Fatalf("wait %s outside [0, 200ms]", d)
		}
		distinct[d] = true
		lo, hi = min(lo, d), max(hi, d)
	}
	if len(distinct) < jobs-1 || hi-lo < 20*time.Millisecond {
		t.Fatalf("waits not spread: %v", ws)
	}
	cs := w.calls("groq")
	if len(cs) != 2*jobs {
		t.Fatalf("%d calls, want %d", len(cs), 2*jobs)
	}
	for i := 0; i < len(cs); i += 2 {
		first, retry := cs[i], cs[i+1]
		if first.outcome != "rate_limited" || retry.outcome != "ok" || first.requestID != retry.requestID {
			t.Fatalf("calls %d,%d: %+v / %+v", i, i+1, first, retry)
		}
		if gap := retry.ts.Sub(first.ts); gap < ws[i/2]-time.Millisecond {
			t.Fatalf("job %s retried %s after the 429, before its %s wait", first.requestID, gap, ws[i/2])
		}
	}
}

// TestHTTPNoWaitRunsPastTheDeadline: a provider delay that does not fit the
// job's remaining deadline is not waited (the provider is marked exhausted
// for that delay and the next one is called at once), and neither is
// other.wait after a timeout when it would end past the deadline.
func TestHTTPNoWaitRunsPastTheDeadline(t *testing.T) {
	t.Parallel()
	t.Run("429 delay", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t,
			spec{name: "gemini", flavor: sim.FlavorGemini, prof: sim.Profile{Script: []sim.Fault{sim.FaultRateMinute}, RetryAfter: 1500 * time.Millisecond}},
			spec{name: "groq", flavor: sim.FlavorGroq})
		w.chain.Deadline = time.Second
		res := w.run("a")
		if res.Status != chain.JobPublished || res.Winner.Provider != "groq" {
			t.Fatalf("status %s winner %+v story %v", res.Status, res.Winner, res.Story)
		}
		if ws := w.waits("gemini"); len(ws) != 0 {
			t.Fatalf("waited %v although the delay did not fit", ws)
		}
		g, q := w.calls("gemini"), w.calls("groq")
		if len(g) != 1 || g[0].outcome != "rate_limited" || len(q) != 1 || q[0].outcome != "ok" {
			t.Fatalf("gemini %+v groq %+v", g, q)
		}
		if gap := q[0].ts.Sub(g[0].ts); gap >= 1500*time.Millisecond {
			t.Fatalf("groq called %s after gemini's 429: the delay was waited", gap)
		}
		// Exhausted for the provider's delay (not for the day).
		until, _ := w.state("gemini")
		if d := until.Sub(g[0].ts); d < 1400*time.Millisecond || d > time.Minute {
			t.Fatalf("exhausted until %s, %s after the call; want about 1.5s", until, d)
		}
	})
	t.Run("other.wait after a timeout", func(t *testing.T) {
		t.Parallel()
		w := newWorld(t,
			spec{name: "gemini", flavor: sim.FlavorGemini, prof: sim.Profile{Script: []sim.Fault{sim.FaultHang}}, timeouts: chain.Timeouts{FirstToken: 800 * time.Millisecond}},
			spec{name: "groq", flavor: sim.FlavorGroq})
		w.chain.Deadline = 2 * time.Second
		w.chain.Policy.OtherWait = 1500 * time.Millisecond
		res := w.run("a")
		if res.Status != chain.JobPublished || res.Winner.Provider != "groq" {
			t.Fatalf("status %s winner %+v story %v", res.Status, res.Winner, res.Story)
		}
		if ws := w.waits("gemini"); len(ws) != 0 {
			t.Fatalf("waited %v although other.wait did not fit", ws)
		}
		g, q := w.calls("gemini"), w.calls("groq")
		if len(g) != 1 || g[0].outcome != "timeout_first_token" || g[0].status != 0 || len(q) != 1 {
			t.Fatalf("gemini %+v groq %+v", g, q)
		}
		if gap := q[0].ts.Sub(g[0].ts); gap >= 800*time.Millisecond+1500*time.Millisecond {
			t.Fatalf("groq called %s after gemini's start: other.wait ran", gap)
		}
	})
	t.Run("a call in flight at the deadline", func(t *testing.T) {
		t.Parallel()
		// No provider timeout at all: only the job deadline ends the hang.
		w := newWorld(t, spec{name: "gemini", flavor: sim.FlavorGemini, prof: sim.Profile{Script: []sim.Fault{sim.FaultHang}}})
		w.chain.Deadline = 500 * time.Millisecond
		res := w.run("a")
		if res.Status != chain.JobDeferred {
			t.Fatalf("status %s story %v", res.Status, res.Story)
		}
		g := w.calls("gemini")
		if len(g) != 1 || g[0].outcome != "timeout_total" || g[0].status != 0 {
			t.Fatalf("the attempt cut by the deadline is not recorded as timeout_total: %+v", g)
		}
		if ws := w.waits("gemini"); len(ws) != 0 {
			t.Fatalf("waited %v after the deadline", ws)
		}
	})
}

// TestHTTPDailyQuotaMovesOnAndLaterJobsSkip: each flavor's daily-quota 429
// moves on at once, marks the provider exhausted until its next reset in
// provider_state, and later jobs — also those of a later run with a fresh
// chain on the same file — skip it without a request.
func TestHTTPDailyQuotaMovesOnAndLaterJobsSkip(t *testing.T) {
	t.Parallel()
	for _, f := range sim.Flavors() {
		t.Run(string(f), func(t *testing.T) {
			t.Parallel()
			other := sim.FlavorGroq
			if f == sim.FlavorGroq {
				other = sim.FlavorGemini
			}
			w := newWorld(t,
				spec{name: "first", flavor: f, prof: sim.Profile{Script: []sim.Fault{sim.FaultRateDay}}},
				spec{name: "second", flavor: other})
			res := w.run("a")
			if res.Status != chain.JobPublished || res.Winner.Provider != "second" {
				t.Fatalf("status %s winner %+v story %v", res.Status, res.Winner, res.Story)
			}
			if ws := w.waits("first"); len(ws) != 0 {
				t.Fatalf("waited %v on a daily quota", ws)
			}
			cs := w.calls("first")
			if len(cs) != 1 || cs[0].outcome != "quota_exhausted" || cs[0].status != 429 {
				t.Fatalf("calls %+v", cs)
			}
			until, _ := w.state("first")
			reset, _ := chain.ParseCapReset("")
			if next := reset.Next(cs[0].ts); until.Before(next.Add(-time.Second)) || until.After(cs[0].ts.Add(25*time.Hour)) {
				t.Fatalf("exhausted until %s; want from the next reset %s to a day later", until, next)
			}
			w.run("b")
			// A later run: a new chain and a new store on the same file.
			w2 := newWorldAt(t, w.dbPath, spec{name: "second", flavor: other})
			w2.chain.Links = append([]*chain.Link{w.chain.Links[0]}, w2.chain.Links...)
			if res := w2.run("c"); res.Status != chain.JobPublished || res.Winner.Provider != "second" {
				t.Fatalf("later run: status %s winner %+v", res.Status, res.Winner)
			}
			if n := w.requests("first"); n != 1 {
				t.Fatalf("first link got %d requests, want 1 (later jobs skip it)", n)
			}
			if n := w.skips("first", chain.SkipExhausted); n != 2 {
				t.Fatalf("%d exhausted skips, want 2", n)
			}
			if n := w.count("SELECT COUNT(*) FROM calls WHERE provider = 'first'"); n != 1 {
				t.Fatalf("%d calls rows for skipped provider, want 1", n)
			}
		})
	}
}

// TestHTTPDailyCapSkips: our own daily cap skips the link without a request
// once it is used up; the reservations are settled as sent.
func TestHTTPDailyCapSkips(t *testing.T) {
	t.Parallel()
	w := newWorld(t, spec{name: "gemini", flavor: sim.FlavorGemini, dailyCap: 2}, spec{name: "groq", flavor: sim.FlavorGroq})
	for _, topic := range []string{"a", "b", "c", "d"} {
		if res := w.run(topic); res.Status != chain.JobPublished {
			t.Fatalf("%s: status %s story %v", topic, res.Status, res.Story)
		}
	}
	if n := w.requests("gemini"); n != 2 {
		t.Fatalf("gemini got %d requests, cap 2", n)
	}
	if n := w.skips("gemini", chain.SkipCap); n != 2 {
		t.Fatalf("%d cap skips, want 2", n)
	}
	if n := w.count("SELECT COUNT(*) FROM cap_reservations WHERE provider = 'gemini' AND settled = 1 AND sent = 1"); n != 2 {
		t.Fatalf("%d settled sent reservations, want 2", n)
	}
	if n := len(w.calls("groq")); n != 2 {
		t.Fatalf("groq calls %d, want 2", n)
	}
}

// TestHTTPBreakerOpensHalfOpensAndCloses: 503s open the circuit (later jobs
// skip with circuit_open), a probe goes through after the cooldown, a failed
// probe reopens it with the cooldown doubled, and successful probes close
// it. Every transition is in provider_events; the state in provider_state.
func TestHTTPBreakerOpensHalfOpensAndCloses(t *testing.T) {
	t.Parallel()
	const cooldown = 500 * time.Millisecond
	u := sim.FaultUnavailable
	w := newWorld(t, spec{name: "gemini", flavor: sim.FlavorGemini, prof: sim.Profile{Script: []sim.Fault{u, u, u, u}}})
	w.chain.Breaker = chain.BreakerSettings{Window: time.Minute, MinSamples: 3, FailureRate: 0.5, Cooldown: cooldown, MaxCooldown: 10 * time.Second, CloseAfter: 2}
	for _, topic := range []string{"a", "b", "c"} {
		if res := w.run(topic); res.Status != chain.JobDeferred {
			t.Fatalf("%s: status %s", topic, res.Status)
		}
	}
	if _, br := w.state("gemini"); br.Current() != chain.BreakerOpen {
		t.Fatalf("breaker %s after 3 of 3 failures", br.Current())
	}
	w.run("d")
	if n, s := w.requests("gemini"), w.skips("gemini", chain.SkipCircuitOpen); n != 3 || s != 1 {
		t.Fatalf("open circuit: %d requests, %d circuit_open skips", n, s)
	}
	time.Sleep(cooldown + 50*time.Millisecond)
	w.run("e") // the probe: the 4th 503 → open again, cooldown doubled
	if n := w.requests("gemini"); n != 4 {
		t.Fatalf("no half-open probe: %d requests", n)
	}
	if _, br := w.state("gemini"); br.Current() != chain.BreakerOpen || br.Cooldown != 2*cooldown {
		t.Fatalf("after a failed probe: %s cooldown %s", br.Current(), br.Cooldown)
	}
	w.run("f")
	if n := w.requests("gemini"); n != 4 {
		t.Fatalf("called within the doubled cooldown: %d requests", n)
	}
	time.Sleep(2*cooldown + 50*time.Millisecond)
	if res := w.run("g"); res.Status != chain.JobPublished {
		t.Fatalf("probe after recovery: status %s story %v", res.Status, res.Story)
	}
	if res := w.run("h"); res.Status != chain.JobPublished {
		t.Fatalf("second probe: status %s story %v", res.Status, res.Story)
	}
	if _, br := w.state("gemini"); br.Current() != chain.BreakerClosed {
		t.Fatalf("breaker %s after two good probes", br.Current())
	}
	var moves []string
	for _, r := range w.query("SELECT from_state, to_state FROM provider_events WHERE provider = 'gemini' AND kind = 'breaker' ORDER BY id") {
		moves = append(moves, r[0].(string)+"→"+r[1].(string))
	}
	want := "closed→open open→half_open half_open→open open→half_open half_open→closed"
	if got := strings.Join(moves, " "); got != want {
		t.Fatalf("transitions %q, want %q", got, want)
	}
	if n := w.skips("gemini", chain.SkipCircuitOpen); n != 2 {
		t.Fatalf("%d circuit_open skips, want 2", n)
	}
	if got := strings.Join(outcomes(w.calls("gemini")), " "); got != "server_error server_error server_error server_error ok ok" {
		t.Fatalf("outcomes %s", got)
	}
}

// TestHTTPTimeoutsRecordTheirOwnOutcome: each of the four timeouts, and a
// stream cut before its end event, is recorded with its own outcome (status
// 0 when no status line came), waits other.wait, counts toward the breaker
// and fails over; a broken stream's partial text is stored flagged partial.
func TestHTTPTimeoutsRecordTheirOwnOutcome(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	for _, tc := range []struct {
		name     string
		flavor   sim.Flavor
		prof     sim.Profile
		timeouts chain.Timeouts
		stream   bool
		dead     bool
		outcome  string
		status   int
		partial  bool
	}{
		{name: "connect/gemini", flavor: sim.FlavorGemini, dead: true, timeouts: chain.Timeouts{Connect: 200 * ms}, outcome: "timeout_connect"},
		{name: "connect/groq", flavor: sim.FlavorGroq, dead: true, timeouts: chain.Timeouts{Connect: 200 * ms}, outcome: "timeout_connect"},
		{name: "first_token hang/gemini", flavor: sim.FlavorGemini, prof: sim.Profile{Script: []sim.Fault{sim.FaultHang}}, timeouts: chain.Timeouts{FirstToken: 300 * ms}, outcome: "timeout_first_token"},
		{name: "first_token hang/cerebras", flavor: sim.FlavorCerebras, prof: sim.Profile{Script: []sim.Fault{sim.FaultHang}}, timeouts: chain.Timeouts{FirstToken: 300 * ms}, outcome: "timeout_first_token"},
		{name: "first_token slow stream/openrouter", flavor: sim.FlavorOpenRouter, stream: true,
			prof: sim.Profile{Script: []sim.Fault{sim.FaultSlowFirstToken}, FirstTokenDelay: 3 * time.Second}, timeouts: chain.Timeouts{FirstToken: 300 * ms}, outcome: "timeout_first_token", status: 200},
		{name: "first_token slow stream/gemini", flavor: sim.FlavorGemini, stream: true,
			prof: sim.Profile{Script: []sim.Fault{sim.FaultSlowFirstToken}, FirstTokenDelay: 3 * time.Second}, timeouts: chain.Timeouts{FirstToken: 300 * ms}, outcome: "timeout_first_token", status: 200},
		{name: "idle/groq", flavor: sim.FlavorGroq, stream: true, prof: sim.Profile{ChunkDelay: 2 * time.Second}, timeouts: chain.Timeouts{FirstToken: time.Second, Idle: 200 * ms}, outcome: "timeout_idle", status: 200, partial: true},
		{name: "idle/gemini", flavor: sim.FlavorGemini, stream: true, prof: sim.Profile{ChunkDelay: 2 * time.Second}, timeouts: chain.Timeouts{FirstToken: time.Second, Idle: 200 * ms}, outcome: "timeout_idle", status: 200, partial: true},
		{name: "total hang/groq", flavor: sim.FlavorGroq, prof: sim.Profile{Script: []sim.Fault{sim.FaultHang}}, timeouts: chain.Timeouts{Total: 300 * ms}, outcome: "timeout_total"},
		{name: "total slow stream/gemini", flavor: sim.FlavorGemini, stream: true, prof: sim.Profile{ChunkDelay: 150 * ms}, timeouts: chain.Timeouts{Idle: 5 * time.Second, Total: 400 * ms}, outcome: "timeout_total", status: 200, partial: true},
		{name: "stream cut/gemini", flavor: sim.FlavorGemini, stream: true, prof: sim.Profile{Script: []sim.Fault{sim.FaultStreamCut}}, outcome: "stream_broken", status: 200, partial: true},
		{name: "stream cut/groq", flavor: sim.FlavorGroq, stream: true, prof: sim.Profile{Script: []sim.Fault{sim.FaultStreamCut}}, outcome: "stream_broken", status: 200, partial: true},
		{name: "error chunk/openrouter", flavor: sim.FlavorOpenRouter, stream: true, prof: sim.Profile{Script: []sim.Fault{sim.FaultErrorChunk}}, outcome: "stream_broken", status: 200, partial: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := spec{name: "first", flavor: tc.flavor, prof: tc.prof, timeouts: tc.timeouts, stream: tc.stream}
			if tc.dead {
				s.baseURL = "http://" + transporttest.DeadAddr(t) + "/v1"
			}
			w := newWorld(t, s, spec{name: "second", flavor: sim.FlavorCerebras})
			res := w.run("a")
			if res.Status != chain.JobPublished || res.Winner.Provider != "second" {
				t.Fatalf("status %s winner %+v story %v", res.Status, res.Winner, res.Story)
			}
			cs := w.calls("first")
			if len(cs) != 1 || cs[0].outcome != tc.outcome || cs[0].status != tc.status || cs[0].score != nil {
				t.Fatalf("calls %+v, want one %s with http_status %d", cs, tc.outcome, tc.status)
			}
			if ws := w.waits("first"); len(ws) != 1 || ws[0] != 100*time.Millisecond {
				t.Fatalf("waits %v, want other.wait 100ms", ws)
			}
			if gap := w.calls("second")[0].ts.Sub(cs[0].ts); gap < cs[0].latency+100*time.Millisecond-2*time.Millisecond {
				t.Fatalf("next provider %s after the start, before latency %s + other.wait", gap, cs[0].latency)
			}
			if _, br := w.state("first"); len(br.Events) != 1 || !br.Events[0].Fail {
				t.Fatalf("breaker window %+v, want one failure", br.Events)
			}
			rows := w.query("SELECT o.text, o.partial FROM outputs o JOIN calls c ON c.id = o.call_id WHERE c.provider = 'first'")
			if !tc.partial {
				if len(rows) != 0 {
					t.Fatalf("outputs for a call that sent no text: %v", rows)
				}
				return
			}
			if len(rows) != 1 || rows[0][1].(int64) != 1 || len(rows[0][0].(string)) < 20 {
				t.Fatalf("partial output %v, want one row flagged partial with the text so far", rows)
			}
			if !strings.Contains(rows[0][0].(string), "title") {
				t.Fatalf("partial text does not look like the start of the article: %.80q", rows[0][0])
			}
		})
	}
}

// TestHTTPPacingSpacesCalls: a link's rpm spaces its calls. The Pacer
// allows a burst of one minute's allowance; the test spends that burst
// first, so that each call then waits its 60s/rpm slot.
func TestHTTPPacingSpacesCalls(t *testing.T) {
	t.Parallel()
	const rpm = 150 // one call per 400ms after the burst
	w := newWorld(t, spec{name: "groq", flavor: sim.FlavorGroq, rpm: rpm})
	p := w.chain.Links[0].Pacer
	now := time.Now()
	for range rpm {
		if d, _ := p.Reserve(now, 0); d > 0 {
			t.Fatalf("burst exhausted early: %s", d)
		}
	}
	const jobs = 3
	for i := range jobs {
		if res := w.run(fmt.Sprintf("p%d", i)); res.Status != chain.JobPublished {
			t.Fatalf("job %d: status %s story %v", i, res.Status, res.Story)
		}
	}
	cs := w.calls("groq")
	if len(cs) != jobs {
		t.Fatalf("%d calls, want %d", len(cs), jobs)
	}
	// The limiter keeps a schedule: call i may start no sooner than i+1
	// slots after the burst was spent (a late call does not let the next
	// one start early).
	slot := time.Minute / rpm
	for i, c := range cs {
		if at, want := c.ts.Sub(now), time.Duration(i+1)*slot; at < want-2*time.Millisecond {
			t.Fatalf("call %d started %s after the burst, rpm %d allows it at %s", i, at, rpm, want)
		}
	}
	// At least the first call waited (the burst was spent); whether the
	// later ones had to depends on how long a job took.
	if ws := w.waits("groq"); len(ws) == 0 || ws[0] < slot/2 {
		t.Fatalf("pacing waits %v, want the first about %s", ws, slot)
	}
}

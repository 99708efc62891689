package alerts

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// scenario records what a chain of providers did on a real SQLite store
// and evaluates the alert rules after each run, as `run` does.
type scenario struct {
	t     *testing.T
	store *telemetry.Store
	rules Rules
	seq   int
}

func newScenario(t *testing.T) *scenario {
	store, _ := tgStore(t)
	return &scenario{t: t, store: store, rules: Rules{Store: store, Notifier: NewOutbox(store, nil), ProviderDownAfter: time.Hour}}
}

// call records one call of provider for job at ts.
func (s *scenario) call(job, provider string, ts time.Time, o chain.Outcome, status int) {
	s.t.Helper()
	s.seq++
	purpose := chain.PurposeJob
	if job == "" {
		job, purpose = "health-"+fmt.Sprint(s.seq), chain.PurposeHealth
	}
	var score *float64
	if o == chain.OutcomeOK {
		v := 88.0
		score = &v
	}
	tgMust(s.t, s.store.RecordCall(context.Background(), chain.Call{Provider: provider, Model: "m", RequestID: job, Attempt: s.seq, TS: ts,
		Outcome: o, HTTPStatus: status, QualityScore: score, Purpose: purpose, Detail: string(o)}))
}

func (s *scenario) skip(job, provider string, ts time.Time, reason string) {
	s.t.Helper()
	tgMust(s.t, s.store.RecordSkip(context.Background(), chain.Skip{TS: ts, RequestID: job, Provider: provider, Reason: chain.SkipReason(reason)}))
}

// finish records the job's end at ts with status (and its provider when
// published).
func (s *scenario) finish(job, status, provider string, ts time.Time) {
	s.t.Helper()
	ctx := context.Background()
	rec := chain.JobRecord{ID: job, Topic: job, Slot: "2026-12-01"}
	if _, _, err := s.store.ClaimJob(ctx, rec, chain.Owner{Host: "h", PID: 1}, nil, time.Hour, ts); err != nil {
		s.t.Fatal(err)
	}
	rec.Status, rec.Provider = status, provider
	if status == chain.JobPublished {
		rec.PublishedAt = ts
	}
	tgMust(s.t, s.store.FinishJob(ctx, rec, chain.Owner{Host: "h", PID: 1}, ts))
}

func (s *scenario) evaluate(now time.Time) {
	s.t.Helper()
	tgMust(s.t, s.rules.Evaluate(context.Background(), now))
}

// keys returns the keys of the queued alerts of rule, in order.
func (s *scenario) keys(rule Rule) []string {
	s.t.Helper()
	_, rows, err := s.store.Query(context.Background(), "SELECT key FROM alerts WHERE rule = ? ORDER BY id", string(rule))
	tgMust(s.t, err)
	var out []string
	for _, r := range rows {
		out = append(out, fmt.Sprint(r[0]))
	}
	return out
}

func (s *scenario) texts(rule Rule) string {
	s.t.Helper()
	_, rows, err := s.store.Query(context.Background(), "SELECT text FROM alerts WHERE rule = ? ORDER BY id", string(rule))
	tgMust(s.t, err)
	var b strings.Builder
	for _, r := range rows {
		b.WriteString(fmt.Sprint(r[0]) + "\n")
	}
	return b.String()
}

var fourLinks = []string{"gemini", "groq", "cerebras", "openrouter"}

// TestChainDownSixHourOutage: every provider is down from 06:00 to 12:00;
// runs at 06:00, 08:00, 10:00 and 12:00 (four jobs each) defer every job,
// with 5xx, timeouts, broken streams and, later, open circuits; the run at
// 14:00 publishes. Exactly one chain-down message and one resolved message
// are queued, and no provider_down message (the providers' outages are the
// chain's).
func TestChainDownSixHourOutage(t *testing.T) {
	s := newScenario(t)
	day := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	fails := []struct {
		o      chain.Outcome
		status int
	}{{chain.OutcomeServerError, 503}, {chain.OutcomeTimeoutFirstToken, 0}, {chain.OutcomeStreamBroken, 200}, {chain.OutcomeServerError, 502}}
	for run, h := range []int{6, 8, 10, 12} {
		start := day.Add(time.Duration(h) * time.Hour)
		for j := 0; j < 4; j++ {
			job := fmt.Sprintf("topic-%d-%d", run, j)
			ts := start.Add(time.Duration(j) * 2 * time.Minute)
			for i, p := range fourLinks {
				if run > 0 && i%2 == 1 {
					s.skip(job, p, ts, string(chain.SkipCircuitOpen))
					continue
				}
				f := fails[i]
				s.call(job, p, ts.Add(time.Duration(i)*10*time.Second), f.o, f.status)
			}
			s.finish(job, chain.JobDeferred, "", ts.Add(time.Minute))
		}
		s.evaluate(start.Add(10 * time.Minute))
		if run == 0 {
			if k := s.keys(RuleChainDown); len(k) != 1 || !strings.HasSuffix(k[0], ":opened") {
				t.Fatalf("after the first run: %v", k)
			}
		}
	}
	recover := day.Add(14 * time.Hour)
	s.call("topic-9-0", "gemini", recover, chain.OutcomeOK, 200)
	s.finish("topic-9-0", chain.JobPublished, "gemini", recover.Add(time.Minute))
	s.evaluate(recover.Add(10 * time.Minute))
	s.evaluate(recover.Add(30 * time.Minute))

	got := s.keys(RuleChainDown)
	if len(got) != 2 || !strings.HasSuffix(got[0], ":opened") || !strings.HasSuffix(got[1], ":resolved") {
		t.Fatalf("chain_down messages %v, want one opened and one resolved", got)
	}
	if pd := s.keys(RuleProviderDown); len(pd) != 0 {
		t.Errorf("provider_down messages during a chain-down incident: %v", pd)
	}
	text := s.texts(RuleChainDown)
	for _, want := range []string{"Down: the whole chain — every provider failed", "Since: 2026-12-01 06:00 UTC", "Automation: ", "Run: `contentpipe health`",
		"gemini server_error (HTTP 503)", "Resolved: the chain publishes again", "down from 2026-12-01 06:00 UTC to 2026-12-01 14:01 UTC (8h1m)"} {
		if !strings.Contains(text, want) {
			t.Errorf("chain_down texts lack %q:\n%s", want, text)
		}
	}
	inc, err := s.store.Incidents(context.Background(), day, day.AddDate(0, 0, 2))
	tgMust(t, err)
	var open []string
	for _, in := range inc {
		if in.Open() {
			open = append(open, in.Key)
		}
	}
	sort.Strings(open)
	// Gemini answered again. Groq and openrouter were held by their open
	// circuits after the first run, so their failures lasted minutes, not
	// over an hour. Cerebras failed from 06:00 to 12:00 and was not called
	// since: its incident stays open, silent, until it answers (resolved,
	// silently) or fails again (announced).
	if fmt.Sprint(open) != "[provider_down:cerebras]" {
		t.Errorf("open incidents %v", open)
	}
}

// TestChainDownRemindsOncePerDay: an outage of 50 hours, with a run every
// two hours, gives the opening message and two reminders (one a day), then
// the resolved message.
func TestChainDownRemindsOncePerDay(t *testing.T) {
	s := newScenario(t)
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	for h := 0; h <= 50; h += 2 {
		ts := t0.Add(time.Duration(h) * time.Hour)
		job := fmt.Sprintf("job-%d", h)
		for _, p := range fourLinks {
			s.call(job, p, ts, chain.OutcomeServerError, 500)
		}
		s.finish(job, chain.JobDeferred, "", ts.Add(time.Second))
		s.evaluate(ts.Add(time.Minute))
	}
	end := t0.Add(52 * time.Hour)
	s.call("job-ok", "groq", end, chain.OutcomeOK, 200)
	s.finish("job-ok", chain.JobPublished, "groq", end)
	s.evaluate(end.Add(time.Minute))
	var kinds []string
	for _, k := range s.keys(RuleChainDown) {
		kinds = append(kinds, k[strings.LastIndex(k, "#"):])
	}
	if fmt.Sprint(kinds) != "[#1:opened #1:reminder:1 #1:reminder:2 #1:resolved]" {
		t.Fatalf("chain_down messages %v", kinds)
	}
	if !strings.Contains(s.texts(RuleChainDown), "Still down: the whole chain") {
		t.Errorf("reminder text:\n%s", s.texts(RuleChainDown))
	}
}

// TestRateLimitsAndQuotaAreNotProviderDown: two per-minute 429s, then a day
// of quota exhaustion (429 per day, then exhausted skips; health calls
// answering 429 too) on the first link while the second publishes every
// job: no provider_down and no chain_down alert.
func TestRateLimitsAndQuotaAreNotProviderDown(t *testing.T) {
	s := newScenario(t)
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	s.call("j-0", "gemini", t0, chain.OutcomeRateLimited, 429)
	s.call("j-0", "gemini", t0.Add(time.Minute), chain.OutcomeRateLimited, 429)
	s.call("j-0", "groq", t0.Add(2*time.Minute), chain.OutcomeOK, 200)
	s.finish("j-0", chain.JobPublished, "groq", t0.Add(3*time.Minute))
	s.evaluate(t0.Add(5 * time.Minute))
	for h := 1; h <= 24; h++ {
		ts := t0.Add(time.Duration(h) * time.Hour)
		job := fmt.Sprintf("j-%d", h)
		if h%6 == 1 {
			s.call(job, "gemini", ts, chain.OutcomeQuotaExhausted, 429)
		} else {
			s.skip(job, "gemini", ts, string(chain.SkipExhausted))
		}
		s.call("", "gemini", ts.Add(time.Second), chain.OutcomeRateLimited, 429) // a health call
		s.call(job, "groq", ts.Add(time.Minute), chain.OutcomeOK, 200)
		s.finish(job, chain.JobPublished, "groq", ts.Add(2*time.Minute))
		s.evaluate(ts.Add(5 * time.Minute))
	}
	if k := s.keys(RuleProviderDown); len(k) != 0 {
		t.Fatalf("provider_down for rate limits and quota: %v\n%s", k, s.texts(RuleProviderDown))
	}
	if k := s.keys(RuleChainDown); len(k) != 0 {
		t.Fatalf("chain_down: %v", k)
	}
}

// TestQuotaDeferralIsNotChainDown: every job deferred because the links are
// exhausted or capped (automation waits for the reset) opens no incident.
func TestQuotaDeferralIsNotChainDown(t *testing.T) {
	s := newScenario(t)
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	for h := 0; h < 6; h++ {
		ts := t0.Add(time.Duration(h) * time.Hour)
		job := fmt.Sprintf("j-%d", h)
		s.call(job, "gemini", ts, chain.OutcomeQuotaExhausted, 429)
		s.skip(job, "groq", ts, string(chain.SkipCap))
		s.call(job, "cerebras", ts, chain.OutcomeServerError, 503)
		s.skip(job, "openrouter", ts, "budget")
		s.finish(job, chain.JobDeferred, "", ts.Add(time.Second))
		s.evaluate(ts.Add(time.Minute))
	}
	if k := s.keys(RuleChainDown); len(k) != 0 {
		t.Fatalf("chain_down for a deferral automation handles: %v", k)
	}
}

// TestLinkDownTwoHours: the first link answers 503 for two hours, a job
// every 15 minutes falls back to the second and publishes: one
// provider_down message when the failures have lasted over an hour, one
// resolved message when it answers again, nothing else.
func TestLinkDownTwoHours(t *testing.T) {
	s := newScenario(t)
	t0 := time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC)
	s.call("j-prev", "gemini", t0.Add(-time.Hour), chain.OutcomeOK, 200)
	s.finish("j-prev", chain.JobPublished, "gemini", t0.Add(-time.Hour))
	for m := 0; m <= 120; m += 15 {
		ts := t0.Add(time.Duration(m) * time.Minute)
		job := fmt.Sprintf("j-%d", m)
		s.call(job, "gemini", ts, chain.OutcomeServerError, 503)
		s.call(job, "groq", ts.Add(time.Second), chain.OutcomeOK, 200)
		s.finish(job, chain.JobPublished, "groq", ts.Add(time.Minute))
		s.evaluate(ts.Add(2 * time.Minute))
		if k := s.keys(RuleProviderDown); m <= 60 && len(k) != 0 {
			t.Fatalf("provider_down after %d minutes of failures: %v", m, k)
		}
	}
	back := t0.Add(135 * time.Minute)
	s.call("j-back", "gemini", back, chain.OutcomeOK, 200)
	s.finish("j-back", chain.JobPublished, "gemini", back)
	s.evaluate(back.Add(time.Minute))
	got := s.keys(RuleProviderDown)
	if len(got) != 2 || got[0] != "provider_down:gemini#1:opened" || got[1] != "provider_down:gemini#1:resolved" {
		t.Fatalf("provider_down messages %v", got)
	}
	if k := s.keys(RuleChainDown); len(k) != 0 {
		t.Fatalf("chain_down: %v", k)
	}
	text := s.texts(RuleProviderDown)
	for _, want := range []string{"Down: provider gemini keeps failing", "latest server_error (HTTP 503)", "Since: 2026-12-01 06:00 UTC", "Resolved: provider gemini answers again"} {
		if !strings.Contains(text, want) {
			t.Errorf("texts lack %q:\n%s", want, text)
		}
	}
}

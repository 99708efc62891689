package telemetry

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// TestObserveIncidentLifecycle walks one incident through every change:
// opened (one message), updated without a message, a reminder a day
// later, resolved (one message); a second incident of the same key after
// that gets its own id.
func TestObserveIncidentLifecycle(t *testing.T) { forEachBackend(t, testObserveIncidentLifecycle) }

func testObserveIncidentLifecycle(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	msg := func(e IncidentEvent) Alert {
		return Alert{Key: fmt.Sprintf("%s#%d:%s:%d", e.Incident.Key, e.Incident.ID, e.Change, e.Incident.Reminders), Rule: e.Incident.Rule, Text: "x"}
	}
	observe := func(obs IncidentObservation, now time.Time) string {
		t.Helper()
		evs, err := s.ObserveIncident(ctx, obs, 24*time.Hour, now, msg)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range evs {
			out = append(out, string(e.Change))
		}
		return fmt.Sprint(out)
	}
	active := func(last time.Time) IncidentObservation {
		return IncidentObservation{Key: "chain_down", Rule: "chain_down", Active: true, Since: t0, LastSeen: last, Detail: "d"}
	}
	steps := []struct {
		obs  IncidentObservation
		now  time.Time
		want string
	}{
		{IncidentObservation{Key: "chain_down"}, t0, "[]"},
		{active(t0), t0.Add(time.Minute), "[opened]"},
		{active(t0.Add(2 * time.Hour)), t0.Add(2 * time.Hour), "[]"},
		{IncidentObservation{Key: "chain_down"}, t0.Add(3 * time.Hour), "[]"}, // no news: stays open
		{active(t0.Add(24 * time.Hour)), t0.Add(24*time.Hour + time.Minute), "[reminder]"},
		{active(t0.Add(25 * time.Hour)), t0.Add(25 * time.Hour), "[]"},
		{IncidentObservation{Key: "chain_down", ClearedAt: t0.Add(26 * time.Hour)}, t0.Add(26 * time.Hour), "[resolved]"},
		{IncidentObservation{Key: "chain_down", ClearedAt: t0.Add(26 * time.Hour)}, t0.Add(27 * time.Hour), "[]"},
		// Evidence older than the clearing publication opens nothing.
		{IncidentObservation{Key: "chain_down", Active: true, Since: t0, LastSeen: t0.Add(25 * time.Hour), ClearedAt: t0.Add(26 * time.Hour)}, t0.Add(28 * time.Hour), "[]"},
		{IncidentObservation{Key: "chain_down", Rule: "chain_down", Active: true, Since: t0.Add(30 * time.Hour), LastSeen: t0.Add(30 * time.Hour), ClearedAt: t0.Add(26 * time.Hour)}, t0.Add(30 * time.Hour), "[opened]"},
	}
	for i, st := range steps {
		if got := observe(st.obs, st.now); got != st.want {
			t.Fatalf("step %d: %s, want %s", i, got, st.want)
		}
	}
	if n := queryInt(t, s, "SELECT count(*) FROM alerts"); n != 4 {
		t.Errorf("%d messages queued, want 4", n)
	}
	if n := queryInt(t, s, "SELECT count(*) FROM incidents"); n != 2 {
		t.Errorf("%d incidents, want 2", n)
	}
	inc, err := s.Incidents(ctx, t0, t0.Add(48*time.Hour))
	if err != nil || len(inc) != 2 || inc[0].ResolvedAt != t0.Add(26*time.Hour) || inc[0].Reminders != 1 || !inc[1].Open() {
		t.Fatalf("incidents %+v %v", inc, err)
	}
	if r, err := s.LastResolved(ctx, "chain_down"); err != nil || r != t0.Add(26*time.Hour) {
		t.Fatalf("last resolved %v %v", r, err)
	}
}

// TestObserveIncidentSilentThenAnnounced: an incident opened silently is
// announced by the first observation that is not silent, and one resolved
// while still silent queues nothing.
func TestObserveIncidentSilentThenAnnounced(t *testing.T) {
	forEachBackend(t, testObserveIncidentSilentThenAnnounced)
}

func testObserveIncidentSilentThenAnnounced(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	obs := IncidentObservation{Key: "provider_down:groq", Rule: "provider_down", Provider: "groq", Active: true, Since: t0, LastSeen: t0.Add(2 * time.Hour), Silent: true}
	msg := func(e IncidentEvent) Alert {
		return Alert{Key: fmt.Sprintf("k#%d:%s", e.Incident.ID, e.Change), Text: "x"}
	}
	if evs, _ := s.ObserveIncident(ctx, obs, 24*time.Hour, t0.Add(2*time.Hour), msg); len(evs) != 0 {
		t.Fatalf("silent: %v", evs)
	}
	obs.Silent = false
	if evs, _ := s.ObserveIncident(ctx, obs, 24*time.Hour, t0.Add(3*time.Hour), msg); len(evs) != 1 || evs[0].Change != IncidentOpened {
		t.Fatalf("announce: %v", evs)
	}
	other := IncidentObservation{Key: "provider_down:cerebras", Active: true, Since: t0, LastSeen: t0.Add(2 * time.Hour), Silent: true}
	_, _ = s.ObserveIncident(ctx, other, 24*time.Hour, t0.Add(2*time.Hour), msg)
	other.Active, other.ClearedAt = false, t0.Add(4*time.Hour)
	if evs, err := s.ObserveIncident(ctx, other, 24*time.Hour, t0.Add(4*time.Hour), msg); err != nil || len(evs) != 0 {
		t.Fatalf("silent resolution: %v %v", evs, err)
	}
	if n := queryInt(t, s, "SELECT count(*) FROM alerts"); n != 1 {
		t.Errorf("%d messages, want 1", n)
	}
}

// TestObserveIncidentConcurrent: eight processes' worth of stores observe
// the same new condition at once: one incident, one message.
func TestObserveIncidentConcurrent(t *testing.T) { forEachBackend(t, testObserveIncidentConcurrent) }

func testObserveIncidentConcurrent(t *testing.T) {
	s, path := openTemp(t)
	obs := IncidentObservation{Key: "chain_down", Rule: "chain_down", Active: true, Since: t0, LastSeen: t0}
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		st, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := st.ObserveIncident(t.Context(), obs, time.Hour, t0, func(e IncidentEvent) Alert {
				return Alert{Key: fmt.Sprintf("chain_down#%d:%s", e.Incident.ID, e.Change), Text: "down"}
			})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := queryInt(t, s, "SELECT count(*) FROM incidents"); n != 1 {
		t.Errorf("%d incidents", n)
	}
	if n := queryInt(t, s, "SELECT count(*) FROM alerts"); n != 1 {
		t.Errorf("%d messages", n)
	}
}

// TestFailureStreaksCountOnlyTheGivenOutcomes: 429s neither count nor end
// a streak; an answer ends it; a provider without a streak is listed with
// its last answer.
func TestFailureStreaksCountOnlyTheGivenOutcomes(t *testing.T) {
	forEachBackend(t, testFailureStreaksCountOnlyTheGivenOutcomes)
}

func testFailureStreaksCountOnlyTheGivenOutcomes(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	call := func(p string, at time.Duration, o chain.Outcome, status int) {
		t.Helper()
		if err := s.RecordCall(ctx, chain.Call{Provider: p, RequestID: "r", Attempt: 1, TS: t0.Add(at), Outcome: o, HTTPStatus: status, Detail: "d-" + string(o)}); err != nil {
			t.Fatal(err)
		}
	}
	call("gemini", 0, chain.OutcomeOK, 200)
	call("gemini", time.Hour, chain.OutcomeServerError, 503)
	call("gemini", 2*time.Hour, chain.OutcomeRateLimited, 429)
	call("gemini", 3*time.Hour, chain.OutcomeTimeoutTotal, 0)
	call("gemini", 4*time.Hour, chain.OutcomeQuotaExhausted, 429)
	call("groq", 0, chain.OutcomeRateLimited, 429)
	call("groq", time.Hour, chain.OutcomeRateLimited, 429)
	call("cerebras", 0, chain.OutcomeServerError, 500)
	call("cerebras", time.Hour, chain.OutcomeRejected, 200)
	got, err := s.FailureStreaks(ctx, []chain.Outcome{chain.OutcomeServerError, chain.OutcomeTimeoutTotal})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]FailureStreak{}
	for _, f := range got {
		by[f.Provider] = f
	}
	g := by["gemini"]
	if len(got) != 3 || g.Failures != 2 || g.First != t0.Add(time.Hour) || g.Last != t0.Add(3*time.Hour) || g.LastOutcome != "timeout_total" || g.LastDetail != "d-timeout_total" || g.LastSuccess != t0 {
		t.Fatalf("gemini %+v (all %+v)", g, got)
	}
	if by["groq"].Failures != 0 || !by["groq"].LastSuccess.IsZero() {
		t.Errorf("groq %+v", by["groq"])
	}
	if c := by["cerebras"]; c.Failures != 0 || c.LastSuccess != t0.Add(time.Hour) {
		t.Errorf("cerebras %+v", c)
	}
}

// TestDeferredSinceLastPublication: only jobs deferred after the last
// publication, each with the latest call or skip of every provider.
func TestDeferredSinceLastPublication(t *testing.T) {
	forEachBackend(t, testDeferredSinceLastPublication)
}

func testDeferredSinceLastPublication(t *testing.T) {
	s, _ := openTemp(t)
	ctx := t.Context()
	job := func(id string, status chain.JobStatus, at time.Time) {
		t.Helper()
		rec := chain.JobRecord{ID: id, Topic: id, Slot: "s"}
		if _, _, err := s.ClaimJob(ctx, rec, chain.Owner{Host: "h", PID: 1}, nil, time.Hour, at); err != nil {
			t.Fatal(err)
		}
		rec.Status = status
		if status == chain.JobPublished {
			rec.PublishedAt = at
		}
		if err := s.FinishJob(ctx, rec, chain.Owner{Host: "h", PID: 1}, at); err != nil {
			t.Fatal(err)
		}
	}
	rec := func(id, p string, at time.Duration, o chain.Outcome) {
		t.Helper()
		if err := s.RecordCall(ctx, chain.Call{Provider: p, RequestID: id, Attempt: 1, TS: t0.Add(at), Outcome: o, Purpose: chain.PurposeJob}); err != nil {
			t.Fatal(err)
		}
	}
	rec("old", "gemini", 0, chain.OutcomeServerError)
	job("old", chain.JobDeferred, t0.Add(time.Minute))
	rec("pub", "gemini", time.Hour, chain.OutcomeOK)
	job("pub", chain.JobPublished, t0.Add(time.Hour))
	rec("a", "gemini", 2*time.Hour, chain.OutcomeRateLimited)
	rec("a", "gemini", 2*time.Hour+time.Second, chain.OutcomeServerError)
	if err := s.RecordSkip(ctx, chain.Skip{TS: t0.Add(2*time.Hour + 2*time.Second), RequestID: "a", Provider: "groq", Reason: chain.SkipCircuitOpen}); err != nil {
		t.Fatal(err)
	}
	job("a", chain.JobDeferred, t0.Add(2*time.Hour+time.Minute))
	last, walks, err := s.DeferredSinceLastPublication(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if last != t0.Add(time.Hour) || len(walks) != 1 || walks[0].JobID != "a" || len(walks[0].Events) != 2 {
		t.Fatalf("last %v, walks %+v", last, walks)
	}
	if e := walks[0].Events; e[0].Provider != "gemini" || e[0].What != "server_error" || e[1].What != "circuit_open" || !e[1].Skip {
		t.Fatalf("events %+v", e)
	}
}

// TestReportOnADatabaseWithoutIncidents: `report` opens the database
// read-only, without migrating; a database from before the incidents table
// still reports (with no incidents).
func TestReportOnADatabaseWithoutIncidents(t *testing.T) {
	forEachBackend(t, testReportOnADatabaseWithoutIncidents)
}

func testReportOnADatabaseWithoutIncidents(t *testing.T) {
	s, path := openTemp(t)
	if _, err := s.db.Exec("DROP TABLE incidents; DELETE FROM schema_migrations WHERE version = 4"); err != nil {
		t.Fatal(err)
	}
	if err := s.RecordCall(t.Context(), chain.Call{Provider: "gemini", RequestID: "r", Attempt: 1, TS: t0, Outcome: chain.OutcomeOK}); err != nil {
		t.Fatal(err)
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	d, err := ro.Report(t.Context(), t0.Add(-time.Hour), t0.Add(time.Hour), "gemini")
	if err != nil || d.Totals.Calls != 1 || len(d.Incidents) != 0 {
		t.Fatalf("report %+v, %v", d.Totals, err)
	}
}

func TestObserveIncidentRemindsOnlyOnNewEvidence(t *testing.T) {
	forEachBackend(t, testObserveIncidentRemindsOnlyOnNewEvidence)
}

// A provider nobody called since the last message (the chain answered
// before reaching it) is not reminded about as still down; a failure seen
// after the message is.
func testObserveIncidentRemindsOnlyOnNewEvidence(t *testing.T) {
	s, _ := openTemp(t)
	obs := func(last time.Time) IncidentObservation {
		return IncidentObservation{Key: "provider_down:groq", Rule: "provider_down", Provider: "groq", Active: true, Since: t0, LastSeen: last, Detail: "d"}
	}
	for i, st := range []struct {
		last, now time.Time
		want      int // messages queued by this observation
	}{
		{t0, t0.Add(time.Minute), 1},                        // opened
		{t0, t0.Add(25 * time.Hour), 0},                     // a day on, same evidence: quiet
		{t0, t0.Add(72 * time.Hour), 0},                     // still nothing new
		{t0.Add(73 * time.Hour), t0.Add(73 * time.Hour), 1}, // failed again: reminder
		{t0.Add(74 * time.Hour), t0.Add(80 * time.Hour), 0}, // new, but within the day
	} {
		evs, err := s.ObserveIncident(t.Context(), obs(st.last), 24*time.Hour, st.now, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(evs) != st.want {
			t.Fatalf("step %d: events %+v, want %d", i, evs, st.want)
		}
	}
}

package telemetry

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

func TestSimulatorTotals(t *testing.T) { forEachBackend(t, testSimulatorTotals) }

func testSimulatorTotals(t *testing.T) {
	path := seedReport(t)
	s, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	jobs, err := s.JobTotals(ctx, "gemini")
	if err != nil {
		t.Fatal(err)
	}
	// Seven jobs; j1, j2, j0 and j7 published, only j0 on its slot day
	// (2026-11-20); all but j1 by a fallback.
	if want := (JobTotals{Jobs: 7, Published: 4, PublishedOnSlotDay: 1, PublishedFallback: 3, MeanQuality: 78.75}); jobs != want {
		t.Errorf("job totals %+v, want %+v", jobs, want)
	}
	calls, err := s.JobCallTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Eight job calls (the shadow and health calls do not count); the
	// rejected groq answer is the only paid failure.
	if calls.Calls != 8 || !near(calls.CostUSD, 13.034) || !near(calls.WastedUSD, 0.004) {
		t.Errorf("job call totals %+v, want 8 calls, $13.034, $0.004 wasted", calls)
	}
	secs, err := s.PublishSeconds(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sort.Float64s(secs)
	// j7 has no calls or skips; j2 took from 06:00 to 08:00.
	if len(secs) != 3 || !near(secs[0], 0) || !near(secs[1], 0) || secs[2] < 7199.99 || secs[2] > 7200.01 {
		t.Errorf("publish seconds %v, want [0 0 7200]", secs)
	}
	evs, err := s.ProviderEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var skips []string
	health, shadow := false, false
	for _, e := range evs {
		if r, ok := strings.CutPrefix(e.Outcome, "skip:"); ok {
			skips = append(skips, e.Provider+":"+r)
		}
		if e.Provider == "cerebras" && e.TS.Equal(at(25, 5)) {
			health = true
		}
		if e.Provider == "groq" && e.TS.Equal(at(23, 6)) {
			shadow = true
		}
	}
	sort.Strings(skips)
	if want := []string{"gemini:exhausted", "gemini:exhausted", "groq:cap", "groq:circuit_open"}; !reflect.DeepEqual(skips, want) {
		t.Errorf("skips %v, want %v", skips, want)
	}
	if !health || shadow {
		t.Errorf("provider events: health call present %v (want true), shadow call present %v (want false)", health, shadow)
	}
}

func TestSimulatorFirstAlertAndSpend(t *testing.T) {
	forEachBackend(t, testSimulatorFirstAlertAndSpend)
}

func testSimulatorFirstAlertAndSpend(t *testing.T) {
	s, err := OpenReadOnly(seedReport(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	for _, tc := range []struct {
		prefix string
		since  time.Time
		want   time.Time
		ok     bool
	}{
		{"health:", at(1, 0), at(23, 5), true},
		{"health:", at(23, 5), at(23, 5), true},
		{"health:", at(23, 6), time.Time{}, false},
		{"old", at(1, 0), at(1, 5), true},
		{"trend:", at(1, 0), time.Time{}, false},
	} {
		got, ok, err := s.FirstAlertSince(ctx, tc.prefix, tc.since)
		if err != nil || ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("FirstAlertSince(%q, %s) = %s, %v, %v; want %s, %v", tc.prefix, tc.since, got, ok, err, tc.want, tc.ok)
		}
	}
	// Every call counts toward a budget: the job calls' $13.034, the shadow
	// call's $0.005 and the health call's $0.0001.
	if v, err := s.CallSpendUSD(ctx); err != nil || !near(v, 13.0391) {
		t.Errorf("call spend %v, %v; want $13.0391", v, err)
	}
}

// TestScratchIsWrittenOnClose: a scratch database lives in memory and Close
// writes it to its path as a normal SQLite file that the read-only store
// opens with the rows written; an existing file is refused, not replaced.
func TestScratchIsWrittenOnClose(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "chain.db")
	s, err := OpenScratch(path)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	ok, _, err := s.ClaimJob(ctx, chain.JobRecord{ID: "t1", Topic: "t1", Slot: "2026-03-02"}, chain.Owner{Host: "h", PID: 1}, nil, time.Hour, now)
	if err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	// A store transaction that fails is undone alone (its savepoint), and a
	// durable one commits like the others.
	errFail := errors.New("fail")
	if err := s.write(ctx, "fails", func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "DELETE FROM jobs"); err != nil {
			return err
		}
		return errFail
	}); !errors.Is(err, errFail) {
		t.Fatalf("a failing write: %v", err)
	}
	if err := s.writeMode(ctx, "durable", writeMode{durable: true}, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE jobs SET title = 'durable'")
		return err
	}); err != nil {
		t.Fatalf("a durable write: %v", err)
	}
	// The failed write left the job; the durable one set its title.
	var title string
	if err := s.db.QueryRowContext(ctx, "SELECT title FROM jobs").Scan(&title); err != nil || title != "durable" {
		t.Fatalf("before the publish times the job's title is %q (%v), want the durable write's", title, err)
	}
	// Reading the publish times ends the batching and sends temporary
	// storage to files; a write after it is a plain transaction that lands.
	if _, err := s.PublishSeconds(ctx); err != nil {
		t.Fatal(err)
	}
	var temp int
	if err := s.db.QueryRowContext(ctx, "PRAGMA temp_store").Scan(&temp); err != nil || temp != 1 {
		t.Errorf("temp_store after PublishSeconds = %d (%v), want 1 (FILE)", temp, err)
	}
	if err := s.write(ctx, "after", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "UPDATE jobs SET title = 'after'")
		return err
	}); err != nil {
		t.Fatalf("a write after the publish times: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if tot, err := r.JobTotals(ctx, "gemini"); err != nil || tot.Jobs != 1 {
		t.Fatalf("the written file has %+v (%v), want the one job", tot, err)
	}
	if err := r.db.QueryRowContext(ctx, "SELECT title FROM jobs").Scan(&title); err != nil || title != "after" {
		t.Fatalf("the job's title %q (%v), want the last write's", title, err)
	}
	if _, err := OpenScratch(path); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("a scratch database over an existing file: %v, want an error naming it", err)
	}
}

// TestReservationOutputsReadIndexOnly: the recent outputs every
// reservation's estimate reads come from an index alone (its use comes
// from cap_days and spend_days, TestSpendTotalsMatchRows).
func TestReservationOutputsReadIndexOnly(t *testing.T) {
	s, err := OpenScratch(filepath.Join(t.TempDir(), "chain.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rows, err := s.db.QueryContext(context.Background(), "EXPLAIN QUERY PLAN "+recentOutputsSQL, "gemini", recentOutputs)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if p := strings.Join(plan, "; "); !strings.Contains(p, "COVERING INDEX cap_reservations_outputs") {
		t.Errorf("plan of the recent outputs:\n%s\nwant the covering index cap_reservations_outputs", p)
	}
}

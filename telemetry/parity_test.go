package telemetry

import (
	"math"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// TestReadersAgreeAcrossBackends: the same rows (seeded on SQLite, copied
// to PostgreSQL) give the same answer from every reader of the store on
// both backends, and the same writes change them the same way.
func TestReadersAgreeAcrossBackends(t *testing.T) {
	ctx := t.Context()
	lite, err := Open(seedCopy(t))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	pg, err := Open(newPostgresDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if _, err := Copy(ctx, lite, pg); err != nil {
		t.Fatal(err)
	}
	day := utcMidnight(t0)
	readers := map[string]func(s *Store) (any, error){
		"Report":       func(s *Store) (any, error) { return s.Report(ctx, repSince, repUntil, "gemini") },
		"Jobs":         func(s *Store) (any, error) { return s.Jobs(ctx) },
		"JobsByStatus": func(s *Store) (any, error) { return s.JobsByStatus(ctx, chain.JobPublished) },
		"CandidateAt": func(s *Store) (any, error) {
			c, ok, err := s.CandidateAt(ctx, "j2", 3)
			return []any{c, ok}, err
		},
		"JobCalls":      func(s *Store) (any, error) { return s.JobCalls(ctx, "j2") },
		"PendingAlerts": func(s *Store) (any, error) { return s.PendingAlerts(ctx) },
		"CapUsed":       func(s *Store) (any, error) { return s.CapUsed(ctx, "groq", day) },
		"FailureStreaks": func(s *Store) (any, error) {
			return s.FailureStreaks(ctx, []chain.Outcome{chain.OutcomeRateLimited, chain.OutcomeQuotaExhausted, chain.OutcomeServerError})
		},
		"ReviewQueue": func(s *Store) (any, error) {
			n, oldest, err := s.ReviewQueue(ctx)
			return []any{n, oldest}, err
		},
		"LastPublished": func(s *Store) (any, error) { return s.LastPublished(ctx) },
		"CallTotals":    func(s *Store) (any, error) { return s.CallTotals(ctx) },
		"JobCallTotals": func(s *Store) (any, error) {
			// Sums of floats: equal to the last bits only in one order.
			v, err := s.JobCallTotals(ctx)
			v.CostUSD, v.WastedUSD = math.Round(v.CostUSD*1e9)/1e9, math.Round(v.WastedUSD*1e9)/1e9
			return v, err
		},
		"JobTotals": func(s *Store) (any, error) { return s.JobTotals(ctx, "gemini") },
		"PublishSeconds": func(s *Store) (any, error) {
			// In no particular order; julianday is exact to about 10 µs.
			v, err := s.PublishSeconds(ctx)
			for i := range v {
				v[i] = math.Round(v[i]*1000) / 1000
			}
			slices.Sort(v)
			return v, err
		},
		"ProviderEvents": func(s *Store) (any, error) { return s.ProviderEvents(ctx) },
		"AlertCounts":    func(s *Store) (any, error) { return s.AlertCounts(ctx) },
		"LinkSpend": func(s *Store) (any, error) {
			tok, usd, err := s.LinkSpend(ctx, "groq", day)
			return []any{tok, usd}, err
		},
		"ChainSpend": func(s *Store) (any, error) { return s.ChainSpend(ctx, day, day.AddDate(0, 1, 0)) },
		"SkipsSince": func(s *Store) (any, error) {
			return s.SkipsSince(ctx, chain.SkipExhausted, "", repSince, repSince.AddDate(1, 0, 0))
		},
		"SkipsSince1": func(s *Store) (any, error) {
			return s.SkipsSince(ctx, chain.SkipCap, "groq", repSince, repSince.AddDate(1, 0, 0))
		},
		"SpendErrors": func(s *Store) (any, error) { return s.SpendErrors(ctx, repSince) },
		"ArticleCosts": func(s *Store) (any, error) {
			return s.ArticleCosts(ctx, repSince)
		},
		"LatencyBaseline": func(s *Store) (any, error) { return s.LatencyBaseline(ctx, "groq", repSince) },
		"Incidents":       func(s *Store) (any, error) { return s.Incidents(ctx, repSince, repUntil) },
		"DeferredSinceLastPublication": func(s *Store) (any, error) {
			at, walks, err := s.DeferredSinceLastPublication(ctx)
			return []any{at, walks}, err
		},
		"LastResolved":  func(s *Store) (any, error) { return s.LastResolved(ctx, "chain_down") },
		"Notice":        func(s *Store) (any, error) { v, ok, err := s.Notice(ctx, "backlog"); return []any{v, ok}, err },
		"ProviderState": func(s *Store) (any, error) { return s.ProviderState(ctx, "groq") },
		"NextAttempt":   func(s *Store) (any, error) { return s.NextAttempt(ctx, "j2") },
		"QuickCheck":    func(s *Store) (any, error) { return nil, s.QuickCheck(ctx) },
		"Integrity":     func(s *Store) (any, error) { return nil, s.IntegrityCheck(ctx) },
	}
	compare := func(stage string) {
		t.Helper()
		for name, read := range readers {
			a, errA := read(lite)
			b, errB := read(pg)
			if errA != nil || errB != nil {
				t.Errorf("%s %s: sqlite %v, postgres %v", stage, name, errA, errB)
				continue
			}
			if !reflect.DeepEqual(a, b) {
				t.Errorf("%s %s differs:\n sqlite   %+v\n postgres %+v", stage, name, a, b)
			}
		}
	}
	compare("copied:")

	// The same writes on both.
	now := t0.Add(time.Hour)
	for _, s := range []*Store{lite, pg} {
		o := chain.Owner{Host: "h", PID: 3}
		if ok, _, err := s.ClaimReview(ctx, "j3", o, now); !ok || err != nil {
			t.Fatalf("%s claim review: %v %v", s.Backend(), ok, err)
		}
		if err := s.FinishJob(ctx, chain.JobRecord{ID: "j3", Status: chain.JobReview}, o, now); err != nil {
			t.Fatal(err)
		}
		if ok, _, err := s.RejectReview(ctx, "jold", now); !ok || err != nil {
			t.Fatalf("%s reject review: %v %v", s.Backend(), ok, err)
		}
		claimed, err := s.ClaimPendingAlerts(ctx, "sender", now, 10)
		if err != nil || len(claimed) == 0 {
			t.Fatalf("%s claim alerts: %v %v", s.Backend(), claimed, err)
		}
		if err := s.SetAlertText(ctx, claimed[0].ID, "changed"); err != nil {
			t.Fatal(err)
		}
		if err := s.MarkAlertSent(ctx, claimed[0].ID, now); err != nil {
			t.Fatal(err)
		}
		if _, err := s.PurgeOutputs(ctx, at(24, 0)); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ObserveIncident(ctx, IncidentObservation{Key: "chain_down", Rule: "chain_down", Active: true, Since: now, LastSeen: now},
			time.Hour, now, func(IncidentEvent) Alert { return Alert{Key: "chain_down", Rule: "chain_down", Text: "down"} }); err != nil {
			t.Fatal(err)
		}
	}
	compare("after the same writes:")
}

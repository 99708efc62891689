package runs_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/runs"
	"github.com/contentpipe/contentpipe/telemetry"
)

// notes records the alerts it is told.
type notes struct {
	mu  sync.Mutex
	got []chain.Alert
}

func (n *notes) Notify(_ context.Context, a chain.Alert) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.got = append(n.got, a)
	return nil
}

// TestDoIsTheWholeRun runs a run with nothing due on a real database and
// a virtual clock: the steps come in their order (plan, runner and
// shadows, rules and backlog alert, record), the run's chain is a fresh
// copy, and the backlog's runway raises backlog_low at the run's time.
func TestDoIsTheWholeRun(t *testing.T) {
	store, err := telemetry.OpenScratch(filepath.Join(t.TempDir(), "run.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	start := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	clock := sim.NewVirtualClock(start)
	out := &notes{}
	var steps []string
	r := &runs.Run{
		Chain: &chain.Chain{Links: []*chain.Link{{Name: "a", DailyCap: 5}}, Store: store, Clock: clock, Budget: chain.Budget{DailyUSD: 2}},
		Runner: &chain.Runner{Jobs: store, Publisher: sim.NopPublisher{}, Owner: chain.Owner{Host: "test", PID: 1},
			Alive: func(chain.Owner) bool { return true }, Parallel: 1},
		Store: store, PostsPerDay: 2,
		Rules:    &alerts.Rules{Store: store, Notifier: out},
		Notifier: out, BacklogLowDays: 3,
		Planned: func(plan chain.RunPlan, due []chain.Job) { steps = append(steps, "planned") },
		Ran:     func(runs.Result) { steps = append(steps, "ran") },
		Record: func(_ context.Context, res runs.Result) {
			steps = append(steps, "record")
			if len(out.got) == 0 {
				t.Error("the run was recorded before its alerts")
			}
		},
	}
	res, err := r.Do(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(steps, ","); got != "planned,ran,record" {
		t.Errorf("steps %s, want planned,ran,record", got)
	}
	if res.After != nil || len(res.Due) != 0 || res.Chain == r.Chain || !res.Start.Equal(start) {
		t.Errorf("result: after %v, due %d, own chain %v, start %s", res.After, len(res.Due), res.Chain != r.Chain, res.Start)
	}
	if len(out.got) != 1 || out.got[0].Rule != alerts.RuleBacklogLow || !strings.HasSuffix(out.got[0].Key, ":2026-03-02") {
		t.Errorf("alerts %+v, want one backlog_low of 2026-03-02", out.got)
	}
	caps, spend := runs.Limits(r.Chain.Links, r.Chain.Budget, start)
	if len(caps) != 1 || caps[0].Cap != 5 || len(spend) != 1 || spend[0].Limit != chain.LimitChainDay || spend[0].Max != 2 {
		t.Errorf("limits %+v %+v, want the cap of a and the chain's daily budget", caps, spend)
	}
}

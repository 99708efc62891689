package whatif

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"
)

// Row is one scenario's figures, read back from its database.
type Row struct {
	Scenario      string        `json:"scenario"`
	Order         []string      `json:"order"`
	Jobs          int           `json:"jobs"`
	Published     int           `json:"published_on_slot_day"`
	SuccessRate   float64       `json:"success_rate"`
	BlackoutHours float64       `json:"blackout_hours"`
	Blackouts     int           `json:"blackouts"`
	BlackoutDays  int           `json:"blackout_days"`
	Calls         int           `json:"calls"`
	CostUSD       float64       `json:"cost_usd"`
	WastedUSD     float64       `json:"wasted_usd"`
	MeanQuality   float64       `json:"mean_quality"`
	FallbackShare float64       `json:"fallback_share"`
	P50           time.Duration `json:"-"`
	P95           time.Duration `json:"-"`
	P50Seconds    float64       `json:"p50_time_to_publish_s"`
	P95Seconds    float64       `json:"p95_time_to_publish_s"`
	// Alerts30d is the alerts the product's rules raised, per 30 days, by
	// severity (critical, warning, info).
	Alerts30d map[string]float64 `json:"alerts_per_30_days"`
	// PublishedTwice is the backlog jobs (a topic in its period) delivered
	// more than once; anything but 0 is a bug.
	PublishedTwice int `json:"published_twice"`
	// DriftDays is the days from the start of the fault model's quality
	// drift to the first quality trend alert of the weekly report; -1 when
	// the model has no drift or it was never flagged.
	DriftDays float64 `json:"drift_flagged_after_days"`
	// SpendUSD is the cost of every call; BudgetUSD what the chain's
	// budget allows over the period (0 = no budget).
	SpendUSD  float64 `json:"spend_usd"`
	BudgetUSD float64 `json:"budget_usd"`
	DB        string  `json:"db"`
}

// Report is the result of Run: one row per scenario, in table order.
type Report struct {
	Seed        uint64    `json:"seed"`
	Days        int       `json:"days"`
	PostsPerDay int       `json:"posts_per_day"`
	Start       time.Time `json:"start"`
	// Drift reports whether the fault model has a quality drift.
	Drift bool `json:"drift"`
	// Mechanisms is what the fault model has that a strategy can lose to.
	Mechanisms Mechanisms `json:"mechanisms"`
	Rows       []Row      `json:"rows"`
}

// Row returns the row of scenario name, or nil.
func (r *Report) Row(name string) *Row {
	for i := range r.Rows {
		if r.Rows[i].Scenario == name {
			return &r.Rows[i]
		}
	}
	return nil
}

// BlackoutMin is the shortest gap between publications counted as a
// blackout.
const BlackoutMin = time.Hour

// BlackoutWalks is the fewest unanswered walks (jobs passes through the
// chain in which no provider answered) that make a blackout.
const BlackoutWalks = 2

// walk is one job's pass through the chain in one run.
type walk struct {
	start, end time.Time
	published  bool
	noAnswer   bool // deferred: no provider produced an answer
}

// blackouts measures the times no publication was possible: from the start
// of a walk in which no provider produced an answer (deferred; a job whose
// answers were all rejected had answers, so it does not open one) to the end
// of the next walk that published. A gap counts as a blackout when at least
// BlackoutWalks walks in it got no answer and it lasted BlackoutMin or more:
// one unlucky job before the next run's success is not a blackout. Days are
// the distinct UTC days blackouts touch; one still open at the end closes
// at end.
func blackouts(walks []walk, end time.Time) (hours float64, n, days int) {
	var m blackoutMeter
	for _, w := range walks {
		m.add(w)
	}
	return m.result(end)
}

// blackoutMeter is blackouts measured walk by walk, so that a simulated
// year keeps no list of its walks.
type blackoutMeter struct {
	touched map[string]bool // UTC days a blackout touched
	open    time.Time       // start of the gap being measured, zero when none
	failed  int             // unanswered walks in it
	hours   float64
	n       int
}

func (m *blackoutMeter) add(w walk) {
	switch {
	case w.noAnswer:
		if m.open.IsZero() {
			m.open = w.start
		}
		m.failed++
	case w.published && !m.open.IsZero():
		m.closeGap(w.end)
	}
}

func (m *blackoutMeter) closeGap(at time.Time) {
	if m.failed >= BlackoutWalks && at.Sub(m.open) >= BlackoutMin {
		m.hours += at.Sub(m.open).Hours()
		m.n++
		if m.touched == nil {
			m.touched = map[string]bool{}
		}
		for d := m.open.Truncate(24 * time.Hour); d.Before(at); d = d.Add(24 * time.Hour) {
			m.touched[d.Format("2006-01-02")] = true
		}
	}
	m.open, m.failed = time.Time{}, 0
}

// result closes a gap still open at end and returns the blackout hours,
// their number and the days they touched.
func (m *blackoutMeter) result(end time.Time) (hours float64, n, days int) {
	if !m.open.IsZero() {
		m.closeGap(end)
	}
	return m.hours, m.n, len(m.touched)
}

// readRow reads a scenario's figures back from its database: the
// product's own cost accounting and job statuses.
func readRow(ctx context.Context, s Store, name, first string) (Row, error) {
	row := Row{Scenario: name}
	jobs, err := s.JobTotals(ctx, first)
	if err != nil {
		return row, fmt.Errorf("read figures: %w", err)
	}
	row.Jobs, row.Published = jobs.Jobs, jobs.PublishedOnSlotDay
	row.MeanQuality = jobs.MeanQuality
	if jobs.Published > 0 {
		row.FallbackShare = float64(jobs.PublishedFallback) / float64(jobs.Published)
	}
	if row.Jobs > 0 {
		row.SuccessRate = float64(row.Published) / float64(row.Jobs)
	}
	calls, err := s.JobCallTotals(ctx)
	if err != nil {
		return row, fmt.Errorf("read figures: %w", err)
	}
	row.Calls, row.CostUSD, row.WastedUSD = calls.Calls, calls.CostUSD, calls.WastedUSD
	secs, err := s.PublishSeconds(ctx)
	if err != nil {
		return row, fmt.Errorf("read figures: %w", err)
	}
	counts, err := s.AlertCounts(ctx)
	if err != nil {
		return row, fmt.Errorf("read figures: %w", err)
	}
	row.Alerts30d = map[string]float64{}
	for sev, n := range counts {
		row.Alerts30d[sev] = float64(n)
	}
	sort.Float64s(secs)
	row.P50Seconds, row.P95Seconds = percentile(secs, 0.50), percentile(secs, 0.95)
	row.P50 = time.Duration(row.P50Seconds * float64(time.Second)).Round(time.Second)
	row.P95 = time.Duration(row.P95Seconds * float64(time.Second)).Round(time.Second)
	return row, nil
}

// percentile is the nearest-rank percentile of sorted values (0 if none).
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

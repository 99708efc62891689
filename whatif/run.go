package whatif

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/quality"
	"github.com/contentpipe/contentpipe/runs"
	"github.com/contentpipe/contentpipe/telemetry"
)

// Store is what a scenario needs from its database: the chain's and the
// runner's state, the totals the figures are read back from, and Close.
// telemetry.Store implements it.
type Store interface {
	chain.Store
	chain.JobStore
	JobTotals(ctx context.Context, firstLink string) (telemetry.JobTotals, error)
	JobCallTotals(ctx context.Context) (telemetry.JobCallTotals, error)
	PublishSeconds(ctx context.Context) ([]float64, error)
	AlertCounts(ctx context.Context) (map[string]int, error)
	FirstAlertSince(ctx context.Context, prefix string, since time.Time) (time.Time, bool, error)
	CallSpendUSD(ctx context.Context) (float64, error)
	Close() error
}

var _ Store = (*telemetry.Store)(nil)

// Config is one simulation. Chain, Specs, World, Dir and Open are
// required; the zero values of the others are documented defaults.
type Config struct {
	// Chain is the configured chain as a template: its Links (Provider and
	// Pacer are replaced), Policy, Breaker, Deadline, Gate, Prompt and
	// Schema are used; Store, Clock and Progress are not.
	Chain *chain.Chain
	Specs map[string]LinkSpec // per link name
	World *World
	// ProviderDownAfter and BudgetWarnAt are the provider_down and budget
	// alerts' thresholds (alerts.provider_down_after, alerts.budget_warn_at);
	// 0 = alerts.DefaultProviderDownAfter and alerts.DefaultBudgetWarnAt.
	ProviderDownAfter time.Duration
	BudgetWarnAt      float64
	// PostsPerDay is the ceiling of publications per UTC day
	// (job.posts_per_day), held in the claims as in run; 0 = none.
	PostsPerDay int
	// PostsPerRun is how many due jobs one run takes (job.posts_per_run);
	// 0 = the load (see load).
	PostsPerRun int
	// BacklogLowDays is the backlog_low alert's threshold
	// (alerts.backlog_low_days); 0 = no such alert.
	BacklogLowDays float64
	// RunTimes are the runs of a day as offsets from UTC midnight
	// (schedule.run); empty = spread evenly, one run per PostsPerRun jobs.
	RunTimes []time.Duration
	// Backlog is the topics file as run plans it (priority, not_before,
	// repeat): before each run the backlog is planned at the run's time by
	// chain.PlanRun, as run does, and the due jobs go to the runner. Empty
	// means DailyTopics of PostsPerDay (else 6) generated topics.
	Backlog []chain.BacklogTopic
	// Dir is where the scenario databases go, one file per scenario.
	Dir string
	// Open opens (creating) a scenario database.
	Open func(path string) (Store, error)
	// NaiveRetries is how many immediate retries the naive baseline makes
	// at each provider; 0 = 2.
	NaiveRetries int
	// Scenarios to run, by name; empty = all (see ScenarioNames).
	Scenarios []string
	// Progress, when set, is told when a scenario starts and ends.
	Progress func(scenario string, done bool)
	// DayDone, when set, is told each simulated day a scenario finished
	// (1 to the World's days). The scenarios run at once: it is called
	// from several goroutines.
	DayDone func(scenario string, day int)
	// ReportTimes returns the times of the weekly report on a day, as
	// offsets from its UTC midnight (schedule.report); nil = Mondays 09:00.
	// Each report runs the product's decay detectors over its week and
	// queues their trend alerts, as `contentpipe report` does.
	ReportTimes func(day time.Time) []time.Duration
}

// Run simulates every scenario of cfg in turn, each on its own virtual
// clock and its own database, and reads the figures back from the
// databases. It is deterministic for a World (same seed, same table).
func Run(ctx context.Context, cfg Config) (*Report, error) {
	if cfg.Chain == nil || len(cfg.Chain.Links) == 0 || cfg.World == nil || cfg.Open == nil || cfg.Dir == "" {
		return nil, errors.New("simulate: chain, world, dir and open are required")
	}
	names := cfg.Scenarios
	if len(names) == 0 {
		names = ScenarioNames()
	}
	w := cfg.World
	rep := &Report{Seed: w.seed, Days: w.days, PostsPerDay: cfg.load(), Start: w.start, Rows: make([]Row, len(names))}
	_, rep.Drift = w.DriftStart()
	rep.Mechanisms = w.model.mechanisms()
	gate := &memoGate{g: cfg.Chain.Gate}
	step := newLockstep(len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	var progress sync.Mutex
	for i, name := range names {
		links, naive, err := cfg.order(name)
		if err != nil {
			return nil, err
		}
		// Scenarios are independent worlds (own clock, own database, own
		// providers): they run at once, and each is deterministic.
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer step.leave(i)
			if cfg.Progress != nil {
				progress.Lock()
				cfg.Progress(name, false)
				progress.Unlock()
			}
			row, err := cfg.scenario(ctx, name, links, naive, gate, step, i)
			if err != nil {
				errs[i] = fmt.Errorf("scenario %s: %w", name, err)
				return
			}
			rep.Rows[i] = row
			if cfg.Progress != nil {
				progress.Lock()
				cfg.Progress(name, true)
				progress.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return rep, nil
}

// lockstep keeps the scenarios of a Run within lockstepDays simulated days
// of each other: a scenario that finished a day waits while another that
// still runs is more than that behind. The scenarios meet the same answers
// for the same jobs (common random numbers), so in step they meet them
// while memoGate still holds the verdict, and the memo can stay small:
// unpaced, the single-link scenario of a many-sites year ran months ahead
// of the others (BENCHMARKS.md §12). It changes no figure: each scenario
// is deterministic on its own clock.
type lockstep struct {
	mu   sync.Mutex
	cond *sync.Cond
	days []int // days each scenario finished; math.MaxInt once it left
	// readBack is held by a scenario reading its figures back.
	readBack sync.Mutex
}

// lockstepDays is how far ahead of the slowest running scenario another
// may be, in simulated days.
const lockstepDays = 1

func newLockstep(n int) *lockstep {
	l := &lockstep{days: make([]int, n)}
	l.cond = sync.NewCond(&l.mu)
	return l
}

// arrive records that scenario i finished day and waits while a running
// scenario is more than lockstepDays behind it, or until ctx ends (the
// scenario then finds ctx ended at its next run).
func (l *lockstep) arrive(ctx context.Context, i, day int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.days[i] = day
	l.cond.Broadcast()
	stop := context.AfterFunc(ctx, func() {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.cond.Broadcast()
	})
	defer stop()
	for ctx.Err() == nil && slices.Min(l.days) < day-lockstepDays {
		l.cond.Wait()
	}
}

// leave records that scenario i ended (finished, failed or cancelled):
// nobody waits for it any more.
func (l *lockstep) leave(i int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.days[i] = math.MaxInt
	l.cond.Broadcast()
}

// memoGate remembers the real gate's verdicts by answer text and spec. The
// gate is a pure function of those, and the scenarios meet the same answers
// for the same jobs, so each distinct answer is scored once. It keeps two
// generations of at most memoGateGen verdicts (the current one and the
// one before), so that its memory does not grow with the simulated days:
// the scenarios run at once, about the same jobs at about the same time.
// It is safe for concurrent use.
type memoGate struct {
	g        chain.Gate
	mu       sync.Mutex
	m, older map[gateKey]quality.Result
}

// memoGateGen is the size of one generation of memoGate.
const memoGateGen = 1024

type gateKey struct {
	sum  [32]byte
	spec quality.Spec
}

func (m *memoGate) Evaluate(text string, spec quality.Spec) quality.Result {
	k := gateKey{sum: sha256.Sum256([]byte(text)), spec: spec}
	m.mu.Lock()
	r, ok := m.m[k]
	if !ok {
		if r, ok = m.older[k]; ok {
			m.put(k, r)
		}
	}
	m.mu.Unlock()
	if ok {
		return r
	}
	r = m.g.Evaluate(text, spec)
	m.mu.Lock()
	m.put(k, r)
	m.mu.Unlock()
	return r
}

// put adds a verdict to the current generation, which becomes the older
// one when full. The caller holds mu.
func (m *memoGate) put(k gateKey, r quality.Result) {
	if m.m == nil || len(m.m) >= memoGateGen {
		m.older, m.m = m.m, make(map[gateKey]quality.Result, memoGateGen)
	}
	m.m[k] = r
}

// backlog is the simulated backlog: Backlog, else DailyTopics of
// PostsPerDay (else 6).
func (cfg *Config) backlog() []chain.BacklogTopic {
	if len(cfg.Backlog) > 0 {
		return cfg.Backlog
	}
	n := cfg.PostsPerDay
	if n <= 0 {
		n = 6
	}
	return DailyTopics(n, nil)
}

// load is the publications a day the simulation is sized for (the table's
// header, the default run times): PostsPerDay when set, else the number of
// daily series in the backlog, else PostsPerRun, else 6.
func (cfg *Config) load() int {
	if cfg.PostsPerDay > 0 {
		return cfg.PostsPerDay
	}
	n := 0
	for _, t := range cfg.backlog() {
		if t.Repeat == chain.RepeatDaily {
			n++
		}
	}
	switch {
	case n > 0:
		return n
	case cfg.PostsPerRun > 0:
		return cfg.PostsPerRun
	}
	return 6
}

// DailyTopics is a backlog of n topics that repeat daily, so that n jobs
// are due every day: the topics of from in turn (ids suffixed -1, -2, …
// from the second round on), else generated ones.
func DailyTopics(n int, from []chain.BacklogTopic) []chain.BacklogTopic {
	out := make([]chain.BacklogTopic, 0, n)
	for i := range n {
		var t chain.BacklogTopic
		if len(from) > 0 {
			t = from[i%len(from)]
			if i >= len(from) {
				t.Job.Topic = fmt.Sprintf("%s-%d", t.Job.Topic, i/len(from))
			}
		} else {
			t.Job = chain.Job{Topic: fmt.Sprintf("topic-%02d", i+1), Title: fmt.Sprintf("Practical guide %d to home energy savings", i+1),
				Category: "home", Keywords: []string{"insulation", "heat pump", "bills"}, Language: "en", TargetWords: 1500}
		}
		t.Job.ID = t.Job.Topic
		t.Repeat, t.Index, t.NotBefore, t.Priority = chain.RepeatDaily, i, time.Time{}, 0
		out = append(out, t)
	}
	return out
}

// scenario runs one scenario and reads its row back.
// It is scenario i of step's.
func (cfg *Config) scenario(ctx context.Context, name string, order []*chain.Link, naive bool, gate chain.Gate, step *lockstep, i int) (Row, error) {
	w := cfg.World
	path := filepath.Join(cfg.Dir, name+".db")
	store, err := cfg.Open(path)
	if err != nil {
		return Row{}, err
	}
	defer store.Close()
	clock := sim.NewVirtualClock(w.start)
	ch, err := cfg.scenarioChain(name, order, naive, gate, store, clock)
	if err != nil {
		return Row{}, err
	}
	pub := &countingPublisher{by: map[string]int{}}
	dayDone := func(day int) {
		if cfg.DayDone != nil {
			cfg.DayDone(name, day)
		}
		step.arrive(ctx, i, day)
	}
	meter, due, err := cfg.drive(ctx, ch, store, clock, pub, dayDone)
	if err != nil {
		return Row{}, err
	}
	// In step the scenarios end together: their figures are read one at
	// a time (a year's publish times group a million calls and skips in
	// SQLite's temporary memory).
	step.readBack.Lock()
	defer step.readBack.Unlock()
	row, err := readRow(ctx, store, name, order[0].Name)
	if err != nil {
		return Row{}, err
	}
	row.PublishedTwice = pub.twice()
	row.DriftDays = -1
	if from, ok := w.DriftStart(); ok {
		at, flagged, err := store.FirstAlertSince(ctx, "trend:quality:", from)
		if err != nil {
			return Row{}, err
		}
		if flagged {
			row.DriftDays = at.Sub(from).Hours() / 24
		}
	}
	if row.SpendUSD, err = store.CallSpendUSD(ctx); err != nil {
		return Row{}, err
	}
	row.BudgetUSD = budgetFor(cfg.Chain, w.days)
	for _, l := range order {
		row.Order = append(row.Order, l.Name)
	}
	row.DB = path
	// Every job due at some run counts, also one that no run ever claimed
	// (posts_per_run spent on retries of deferred jobs, or the day's
	// ceiling reached): it has no jobs row.
	row.Jobs = due
	if due > 0 {
		row.SuccessRate = float64(row.Published) / float64(row.Jobs)
	}
	end := w.start.AddDate(0, 0, w.days)
	row.BlackoutHours, row.Blackouts, row.BlackoutDays = meter.result(end)
	for sev, n := range row.Alerts30d {
		row.Alerts30d[sev] = n * 30 / float64(w.days)
	}
	return row, nil
}

// scenarioChain builds one scenario's chain from the template: the links
// of order with the World's in-process providers on clock, the scenario's
// own store and jitter, and for the naive baseline its policy, its
// forgetful store and each link repeated for the immediate retries. The
// template's shadow mode, progress, notifier and secrets are the
// command's, not the scenario's.
func (cfg *Config) scenarioChain(name string, order []*chain.Link, naive bool, gate chain.Gate, store Store, clock *sim.VirtualClock) (*chain.Chain, error) {
	w := cfg.World
	jit := rand.New(rand.NewPCG(w.seed, hash64("jitter/"+name)))
	ch := cfg.Chain.ForRun()
	ch.Links, ch.Gate, ch.Store, ch.Clock, ch.Jitter = nil, gate, store, clock, jit.Float64
	ch.Shadow, ch.Progress, ch.Notifier, ch.Secrets = chain.Shadow{}, nil, nil, nil
	if naive {
		ch.Store = forgetful{store}
		ch.Policy = naivePolicy(ch.Policy)
	}
	for _, l := range order {
		spec := cfg.Specs[l.Name]
		if spec.Model == "" {
			spec.Model = l.Model
		}
		if spec.Kind == "" {
			spec.Kind = familyKind(l.Family)
		}
		p, err := w.Provider(l.Name, spec.Kind, clock, spec)
		if err != nil {
			return nil, err
		}
		cl := *l
		cl.Provider, cl.Pacer = p, chain.NewPacer(spec.RPM, spec.TPM)
		n := 1
		if naive {
			n += cfg.naiveRetries() // an immediate retry is the same link again, no wait
		}
		for range n {
			ch.Links = append(ch.Links, &cl)
		}
	}
	return ch, nil
}

// drive runs every day of the World through ch: at each run time of the
// day it sets clock and does the run of the product (runs.Run) on the
// scenario's store. It returns the blackouts of every job's pass through
// the chain, measured in order, and the number of backlog jobs that were
// due at some run. dayDone is told each day it finished.
func (cfg *Config) drive(ctx context.Context, ch *chain.Chain, store Store, clock *sim.VirtualClock, pub chain.Publisher, dayDone func(day int)) (*blackoutMeter, int, error) {
	w := cfg.World
	meter := &blackoutMeter{}
	var last time.Time
	due := map[string]bool{}
	run := &runs.Run{
		Chain: ch, Store: store, Backlog: cfg.backlog(),
		PostsPerRun: cfg.postsPerRun(), PostsPerDay: cfg.PostsPerDay, BacklogLowDays: cfg.BacklogLowDays,
		Runner: &chain.Runner{
			Jobs: store, Publisher: pub,
			Owner: chain.Owner{Host: "simulate", PID: 1}, Alive: func(chain.Owner) bool { return true },
			Parallel: 1,
			// The ceiling is held in each claim, as in run.
			PostsPerDay: cfg.PostsPerDay,
			OnJob: func(r chain.JobReport) {
				now := clock.Now()
				meter.add(walk{start: last, end: now, published: r.Status == chain.JobPublished,
					noAnswer: r.Status == chain.JobDeferred || r.Status == chain.JobHalted})
				last = now
			},
		},
		Planned: func(_ chain.RunPlan, jobs []chain.Job) {
			for _, j := range jobs {
				due[j.ID] = true
			}
		},
	}
	out := cfg.alertRules(run, store, clock)
	runTimes := cfg.runTimes()
	for day := range w.days {
		dayStart := w.start.AddDate(0, 0, day)
		for _, ev := range cfg.dayEvents(dayStart, runTimes) {
			if err := ctx.Err(); err != nil {
				return nil, 0, err
			}
			clock.Set(dayStart.Add(ev.at))
			if ev.report {
				if err := weeklyReport(ctx, store, out, ch.Links[0].Name, clock.Now()); err != nil {
					return nil, 0, err
				}
				continue
			}
			last = clock.Now()
			res, err := run.Do(ctx)
			if err != nil {
				return nil, 0, err
			}
			for _, r := range res.Summary.Reports {
				if r.Status == chain.JobError && r.Err != nil {
					return nil, 0, r.Err
				}
			}
			if res.After != nil {
				return nil, 0, res.After
			}
		}
		dayDone(day + 1)
	}
	return meter, len(due), nil
}

// dayEvent is a run or a weekly report at an offset of a day.
type dayEvent struct {
	at     time.Duration
	report bool
}

// dayEvents returns the day's runs and reports in time order (a report
// at the time of a run comes after it).
func (cfg *Config) dayEvents(day time.Time, runs []time.Duration) []dayEvent {
	var evs []dayEvent
	for _, r := range runs {
		evs = append(evs, dayEvent{at: r})
	}
	var reps []time.Duration
	if cfg.ReportTimes != nil {
		reps = cfg.ReportTimes(day)
	} else if day.Weekday() == time.Monday {
		reps = []time.Duration{9 * time.Hour}
	}
	for _, r := range reps {
		evs = append(evs, dayEvent{at: r, report: true})
	}
	sort.SliceStable(evs, func(i, j int) bool { return evs[i].at < evs[j].at })
	return evs
}

// weeklyReport is the weekly `report` of a scenario: the product's decay
// detectors over the last seven days (and the seven before as the
// baseline), whose trend alerts go to the scenario's outbox.
func weeklyReport(ctx context.Context, store Store, out chain.Notifier, firstLink string, now time.Time) error {
	ts, ok := store.(*telemetry.Store)
	if !ok || out == nil {
		return nil
	}
	d, err := ts.Report(ctx, now.Add(-7*24*time.Hour), now, firstLink)
	if err != nil {
		return fmt.Errorf("weekly report: %w", err)
	}
	for _, a := range alerts.NewReport(d).Alerts() {
		if err := out.Notify(ctx, a); err != nil {
			return err
		}
	}
	return nil
}

// countingPublisher publishes nowhere and counts the deliveries of each
// backlog job (a topic in its period, chain.BacklogJobID): more than one
// is a topic published twice within its period.
type countingPublisher struct {
	sim.NopPublisher
	mu sync.Mutex
	by map[string]int // job id → deliveries
}

func (p *countingPublisher) Deliver(ctx context.Context, d chain.Delivery) (string, error) {
	p.mu.Lock()
	p.by[d.JobID]++
	p.mu.Unlock()
	return p.NopPublisher.Deliver(ctx, d)
}

// twice is the number of backlog jobs delivered more than once.
func (p *countingPublisher) twice() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, c := range p.by {
		if c > 1 {
			n++
		}
	}
	return n
}

// budgetFor is the money a chain's budget allows over days: its daily
// limit times the days, else its monthly limit per 30 days; 0 when it has
// none.
func budgetFor(ch *chain.Chain, days int) float64 {
	switch {
	case ch.Budget.DailyUSD > 0:
		return ch.Budget.DailyUSD * float64(days)
	case ch.Budget.MonthlyUSD > 0:
		return ch.Budget.MonthlyUSD * float64(days) / 30
	}
	return 0
}

// alertRules wires the product's alerts into a scenario's run: the outbox
// of the scenario's own store on the virtual clock takes the chain's and
// the runner's alerts (auth, clamped delays), the rules evaluated after
// each run (incidents, caps, review queue) and the backlog alert. None
// when the store is not the product's own.
func (cfg *Config) alertRules(run *runs.Run, store Store, clock *sim.VirtualClock) chain.Notifier {
	ts, ok := store.(*telemetry.Store)
	if !ok {
		return nil
	}
	out := &alerts.Outbox{Store: ts, Clock: clock}
	run.Chain.Notifier, run.Runner.Notifier, run.Notifier = out, out, out
	run.Rules = &alerts.Rules{Store: ts, Notifier: out, BudgetWarnAt: cfg.BudgetWarnAt, ProviderDownAfter: cfg.ProviderDownAfter}
	return out
}

// postsPerRun is how many due jobs one run takes.
func (cfg *Config) postsPerRun() int {
	if cfg.PostsPerRun > 0 {
		return cfg.PostsPerRun
	}
	return cfg.load()
}

// runTimes returns the runs of a day as offsets from UTC midnight: the
// configured ones, else one run per PostsPerRun jobs spread evenly.
func (cfg *Config) runTimes() []time.Duration {
	if len(cfg.RunTimes) > 0 {
		return cfg.RunTimes
	}
	var runs []time.Duration
	n := (cfg.load() + cfg.postsPerRun() - 1) / cfg.postsPerRun()
	for i := range n {
		runs = append(runs, time.Duration(i)*24*time.Hour/time.Duration(n))
	}
	return runs
}

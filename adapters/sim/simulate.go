package sim

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/quality"
)

// World is one simulated world drawn from a Model and a seed: the outage
// timelines and busy days are drawn once and shared by every scenario, so
// that the configured chain and its baselines face the same year.
// A World is read-only and safe to share.
type World struct {
	model   *Model
	seed    uint64
	start   time.Time
	days    int
	busy    []bool
	outages map[string][]window
}

// NewWorld validates m and draws its world for days days from m's start.
func NewWorld(m *Model, seed uint64, days int) (*World, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if days <= 0 {
		return nil, errors.New("new world: days must be at least 1")
	}
	w := &World{model: m, seed: seed, start: m.StartDay(), days: days, outages: map[string][]window{}}
	end := w.start.AddDate(0, 0, days+1)
	w.busy = m.busyDays(seed, days)
	groups := map[string][]window{}
	for _, g := range sortedKeys(m.Groups) {
		groups[g] = m.Groups[g].timeline(seed, "group/"+g, w.start, end)
	}
	for _, name := range sortedKeys(m.Providers) {
		p := m.Providers[name]
		ws := append([]window(nil), p.Outages.timeline(seed, "provider/"+name, w.start, end)...)
		ws = append(ws, groups[p.Group]...)
		sort.Slice(ws, func(i, j int) bool { return ws[i].from.Before(ws[j].from) })
		w.outages[name] = ws
	}
	return w, nil
}

// Start returns the first simulated day (UTC midnight).
func (w *World) Start() time.Time { return w.start }

// Busy reports whether the UTC day of t is a busy day.
func (w *World) Busy(t time.Time) bool {
	i := int(t.Sub(w.start) / (24 * time.Hour))
	return i >= 0 && i < len(w.busy) && w.busy[i]
}

// OutageHours returns the hours provider spends in outages (own and group).
func (w *World) OutageHours(provider string) float64 {
	var d time.Duration
	for _, o := range w.outages[provider] {
		d += o.to.Sub(o.from)
	}
	return d.Hours()
}

// Provider returns the in-process provider for link name on clock. kind is
// the link's config kind ("gemini" or "openai"), used to pick a flavor
// when the model names none.
func (w *World) Provider(name, kind string, clock chain.Clock, spec LinkSpec) (*InProc, error) {
	pm, ok := w.model.Providers[name]
	if !ok {
		return nil, fmt.Errorf("fault model: no provider %q (add providers.%s to the faults file)", name, name)
	}
	fl := pm.Flavor
	if fl == "" {
		switch {
		case Flavor(name).valid():
			fl = Flavor(name)
		case kind == "gemini":
			fl = FlavorGemini
		default:
			fl = FlavorGroq
		}
	}
	rs, _ := parseReset(pm.RateLimit.QuotaReset) // validated
	return &InProc{
		Name: name, Flavor: fl, Model: spec.Model, Clock: clock, Timeouts: spec.Timeouts, JSONMode: spec.JSONMode,
		beh: &behaviour{m: pm, seed: w.seed, outages: w.outages[name], reset: rs, busy: w.Busy, factor: w.model.busyFactor()},
	}, nil
}

// LinkSpec is what the simulator needs to know about a link beyond
// chain.Link: its model name, kind, timeouts, JSON mode and pacing.
type LinkSpec struct {
	Kind     string // "gemini" or "openai"
	Model    string
	Timeouts chain.Timeouts
	JSONMode bool
	RPM, TPM int
}

// Store is what a scenario needs from its database: the chain's and the
// runner's state, a read-only query to read the figures back, and Close.
// telemetry.Store implements it.
type Store interface {
	chain.Store
	chain.JobStore
	Query(ctx context.Context, q string, args ...any) (cols []string, rows [][]any, err error)
	Close() error
}

// Config is one simulation. Chain, Specs, World, Dir and Open are
// required; the zero values of the others are documented defaults.
type Config struct {
	// Chain is the configured chain as a template: its Links (Provider and
	// Pacer are replaced), Policy, Breaker, Deadline, Gate, Prompt and
	// Schema are used; Store, Clock and Progress are not.
	Chain *chain.Chain
	Specs map[string]LinkSpec // per link name
	World *World
	// PostsPerDay is the number of jobs due each day; 0 = 6.
	PostsPerDay int
	// PostsPerRun is how many due jobs one run takes; 0 = PostsPerDay.
	PostsPerRun int
	// RunTimes are the runs of a day as offsets from UTC midnight
	// (schedule.run); empty = spread evenly, one run per PostsPerRun jobs.
	RunTimes []time.Duration
	// Topics are the work list (ID is the topic id; Slot is filled in per
	// day). Empty means generated topics.
	Topics []chain.Job
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
}

// Scenario names.
const (
	ScenarioChain     = "chain"      // the configured chain
	ScenarioSingle    = "single"     // the first link alone
	ScenarioCostOrder = "cost-order" // the same links, cheapest first
	ScenarioNaive     = "naive"      // configured order, immediate retries, no waits, no memory
)

// ScenarioNames returns every scenario in table order.
func ScenarioNames() []string {
	return []string{ScenarioChain, ScenarioSingle, ScenarioCostOrder, ScenarioNaive}
}

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
	DB            string        `json:"db"`
}

// Report is the result of Run: one row per scenario, in table order.
type Report struct {
	Seed        uint64    `json:"seed"`
	Days        int       `json:"days"`
	PostsPerDay int       `json:"posts_per_day"`
	Start       time.Time `json:"start"`
	Rows        []Row     `json:"rows"`
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
	rep := &Report{Seed: w.seed, Days: w.days, PostsPerDay: cfg.postsPerDay(), Start: w.start, Rows: make([]Row, len(names))}
	gate := &memoGate{g: cfg.Chain.Gate, m: map[gateKey]quality.Result{}}
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
			if cfg.Progress != nil {
				progress.Lock()
				cfg.Progress(name, false)
				progress.Unlock()
			}
			row, err := cfg.scenario(ctx, name, links, naive, gate)
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

// memoGate remembers the real gate's verdicts by answer text and spec. The
// gate is a pure function of those, and the scenarios meet the same answers
// for the same jobs, so each distinct answer is scored once. It is safe for
// concurrent use.
type memoGate struct {
	g  chain.Gate
	mu sync.Mutex
	m  map[gateKey]quality.Result
}

type gateKey struct {
	sum  [32]byte
	spec quality.Spec
}

func (m *memoGate) Evaluate(text string, spec quality.Spec) quality.Result {
	k := gateKey{sum: sha256.Sum256([]byte(text)), spec: spec}
	m.mu.Lock()
	r, ok := m.m[k]
	m.mu.Unlock()
	if ok {
		return r
	}
	r = m.g.Evaluate(text, spec)
	m.mu.Lock()
	m.m[k] = r
	m.mu.Unlock()
	return r
}

func (cfg *Config) postsPerDay() int {
	if cfg.PostsPerDay > 0 {
		return cfg.PostsPerDay
	}
	return 6
}

// order returns the links of a scenario.
func (cfg *Config) order(name string) ([]*chain.Link, bool, error) {
	ls := cfg.Chain.Links
	switch name {
	case ScenarioChain:
		return ls, false, nil
	case ScenarioSingle:
		return ls[:1], false, nil
	case ScenarioCostOrder:
		return CostOrder(ls), false, nil
	case ScenarioNaive:
		return ls, true, nil
	}
	return nil, false, fmt.Errorf("simulate: unknown scenario %q (want one of %s)", name, strings.Join(ScenarioNames(), ", "))
}

// CostOrder returns the links sorted by the price of a typical article
// (1,000 input and 2,500 output tokens), cheapest first; equal prices keep
// their configured order.
func CostOrder(links []*chain.Link) []*chain.Link {
	out := append([]*chain.Link(nil), links...)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Price.Cost(1000, 2500) < out[j].Price.Cost(1000, 2500)
	})
	return out
}

// nopPublisher publishes nowhere: the simulator counts publications in the
// jobs table.
type nopPublisher struct{}

func (nopPublisher) Prepare(_ context.Context, a chain.Article) (chain.Delivery, error) {
	return chain.Delivery{JobID: a.JobID, Location: "sim://" + a.Slot + "/" + a.Topic}, nil
}
func (nopPublisher) Deliver(_ context.Context, d chain.Delivery) (string, error) {
	return d.Location, nil
}

// forgetful is the naive baseline's store: it remembers no provider state,
// so no exhaustion (quota memory) and no circuit breaker survive a call.
type forgetful struct{ Store }

func (forgetful) ProviderState(context.Context, string) (chain.ProviderState, error) {
	return chain.ProviderState{}, nil
}

func (forgetful) UpdateProviderState(_ context.Context, _ string, fn func(*chain.ProviderState) []chain.Transition) error {
	var st chain.ProviderState
	fn(&st)
	return nil
}

// walk is one job's pass through the chain in one run.
type walk struct {
	start, end time.Time
	published  bool
	noAnswer   bool // deferred: no provider produced an answer
}

// scenario runs one scenario and reads its row back.
func (cfg *Config) scenario(ctx context.Context, name string, order []*chain.Link, naive bool, gate chain.Gate) (Row, error) {
	w := cfg.World
	path := filepath.Join(cfg.Dir, name+".db")
	store, err := cfg.Open(path)
	if err != nil {
		return Row{}, err
	}
	defer store.Close()
	clock := NewVirtualClock(w.start)
	tpl := cfg.Chain
	jit := rand.New(rand.NewPCG(w.seed, hash64("jitter/"+name)))
	ch := &chain.Chain{
		Policy: tpl.Policy, Breaker: tpl.Breaker, Deadline: tpl.Deadline, Gate: gate,
		Prompt: tpl.Prompt, Schema: tpl.Schema, Store: store, Clock: clock, Jitter: jit.Float64,
	}
	if naive {
		ch.Store = forgetful{store}
		pol := tpl.Policy.WithDefaults()
		pol.RateLimitedMaxRetries = chain.NoRetries
		pol.OtherWait = chain.NoWait
		pol.ServerErrorWait = 0
		ch.Policy = pol
	}
	retries := cfg.NaiveRetries
	if retries <= 0 {
		retries = 2
	}
	for _, l := range order {
		spec := cfg.Specs[l.Name]
		if spec.Model == "" {
			spec.Model = l.Model
		}
		if spec.Kind == "" {
			spec.Kind = l.Family
		}
		p, err := w.Provider(l.Name, spec.Kind, clock, spec)
		if err != nil {
			return Row{}, err
		}
		cl := &chain.Link{
			Name: l.Name, Model: l.Model, Family: l.Family, Infra: l.Infra, Provider: p,
			DailyCap: l.DailyCap, CapReset: l.CapReset, Price: l.Price, MaxTokens: l.MaxTokens, Stream: l.Stream,
			Pacer: chain.NewPacer(spec.RPM, spec.TPM),
		}
		n := 1
		if naive {
			n += retries // an immediate retry is the same link again, no wait
		}
		for range n {
			ch.Links = append(ch.Links, cl)
		}
	}
	var walks []walk
	var last time.Time
	runner := &chain.Runner{
		Chain: ch, Jobs: store, Publisher: nopPublisher{},
		Owner: chain.Owner{Host: "simulate", PID: 1}, Alive: func(chain.Owner) bool { return true },
		Parallel: 1,
		OnJob: func(r chain.JobReport) {
			now := clock.Now()
			walks = append(walks, walk{start: last, end: now, published: r.Status == chain.JobPublished,
				noAnswer: r.Status == chain.JobDeferred || r.Status == chain.JobHalted})
			last = now
		},
	}
	perRun := cfg.PostsPerRun
	if perRun <= 0 {
		perRun = cfg.postsPerDay()
	}
	runs := cfg.RunTimes
	if len(runs) == 0 {
		n := (cfg.postsPerDay() + perRun - 1) / perRun
		for i := range n {
			runs = append(runs, time.Duration(i)*24*time.Hour/time.Duration(n))
		}
	}
	for day := range w.days {
		dayStart := w.start.AddDate(0, 0, day)
		slot := dayStart.Format("2006-01-02")
		jobs := cfg.jobs(slot)
		for _, off := range runs {
			if err := ctx.Err(); err != nil {
				return Row{}, err
			}
			clock.Set(dayStart.Add(off))
			last = clock.Now()
			sum := runner.Run(ctx, jobs, perRun)
			for _, r := range sum.Reports {
				if r.Status == "error" && r.Err != nil {
					return Row{}, r.Err
				}
			}
		}
	}
	row, err := readRow(ctx, store, name, order[0].Name)
	if err != nil {
		return Row{}, err
	}
	for _, l := range order {
		row.Order = append(row.Order, l.Name)
	}
	row.DB = path
	// Every due job counts, also one that no run ever claimed (posts_per_run
	// spent on retries of deferred jobs): it has no jobs row.
	row.Jobs = w.days * cfg.postsPerDay()
	row.SuccessRate = float64(row.Published) / float64(row.Jobs)
	end := w.start.AddDate(0, 0, w.days)
	row.BlackoutHours, row.Blackouts, row.BlackoutDays = blackouts(walks, end)
	return row, nil
}

// jobs returns the day's due jobs.
func (cfg *Config) jobs(slot string) []chain.Job {
	n := cfg.postsPerDay()
	out := make([]chain.Job, 0, n)
	for i := range n {
		var j chain.Job
		if len(cfg.Topics) > 0 {
			j = cfg.Topics[i%len(cfg.Topics)]
			if i >= len(cfg.Topics) {
				j.Topic = fmt.Sprintf("%s-%d", j.Topic, i/len(cfg.Topics))
			}
		} else {
			j = chain.Job{Topic: fmt.Sprintf("topic-%02d", i+1), Title: fmt.Sprintf("Practical guide %d to home energy savings", i+1),
				Category: "home", Keywords: []string{"insulation", "heat pump", "bills"}, Language: "en", TargetWords: 1500}
		}
		j.Slot = slot
		j.ID = chain.JobID(j.Topic, slot)
		out = append(out, j)
	}
	return out
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
	touched := map[string]bool{}
	var open time.Time
	failed := 0
	closeGap := func(at time.Time) {
		if failed >= BlackoutWalks && at.Sub(open) >= BlackoutMin {
			hours += at.Sub(open).Hours()
			n++
			for d := open.Truncate(24 * time.Hour); d.Before(at); d = d.Add(24 * time.Hour) {
				touched[d.Format("2006-01-02")] = true
			}
		}
		open, failed = time.Time{}, 0
	}
	for _, w := range walks {
		switch {
		case w.noAnswer:
			if open.IsZero() {
				open = w.start
			}
			failed++
		case w.published && !open.IsZero():
			closeGap(w.end)
		}
	}
	if !open.IsZero() {
		closeGap(end)
	}
	return hours, n, len(touched)
}

// readRow reads a scenario's figures from its database with SQL: the
// product's own cost accounting and job statuses.
func readRow(ctx context.Context, s Store, name, first string) (Row, error) {
	row := Row{Scenario: name}
	one := func(q string, args ...any) ([]any, error) {
		_, rows, err := s.Query(ctx, q, args...)
		if err != nil {
			return nil, fmt.Errorf("read figures: %w", err)
		}
		if len(rows) != 1 {
			return nil, fmt.Errorf("read figures: %d rows from %q", len(rows), q)
		}
		return rows[0], nil
	}
	r, err := one(`SELECT COUNT(*),
		COALESCE(SUM(status = 'published' AND substr(published_at, 1, 10) = slot), 0),
		COALESCE(AVG(CASE WHEN status = 'published' THEN quality_score END), 0),
		COALESCE(SUM(status = 'published' AND provider <> ?), 0),
		COALESCE(SUM(status = 'published'), 0)
		FROM jobs`, first)
	if err != nil {
		return row, err
	}
	row.Jobs, row.Published = toInt(r[0]), toInt(r[1])
	row.MeanQuality = toFloat(r[2])
	if pub := toInt(r[4]); pub > 0 {
		row.FallbackShare = float64(toInt(r[3])) / float64(pub)
	}
	if row.Jobs > 0 {
		row.SuccessRate = float64(row.Published) / float64(row.Jobs)
	}
	r, err = one(`SELECT COUNT(*), COALESCE(SUM(cost_estimate_usd), 0),
		COALESCE(SUM(CASE WHEN outcome <> 'ok' THEN cost_estimate_usd ELSE 0 END), 0)
		FROM calls WHERE purpose = 'job'`)
	if err != nil {
		return row, err
	}
	row.Calls, row.CostUSD, row.WastedUSD = toInt(r[0]), toFloat(r[1]), toFloat(r[2])
	_, rows, err := s.Query(ctx, `SELECT (julianday(j.published_at) - julianday(f.first)) * 86400.0
		FROM jobs j JOIN (
			SELECT request_id, MIN(ts) AS first FROM (
				SELECT request_id, ts FROM calls UNION ALL SELECT request_id, ts FROM skips)
			GROUP BY request_id) f ON f.request_id = j.id
		WHERE j.status = 'published'`)
	if err != nil {
		return row, fmt.Errorf("read figures: %w", err)
	}
	secs := make([]float64, 0, len(rows))
	for _, r := range rows {
		secs = append(secs, toFloat(r[0]))
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

func toInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case float64:
		return int(x)
	}
	return 0
}

func toFloat(v any) float64 {
	switch x := v.(type) {
	case int64:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

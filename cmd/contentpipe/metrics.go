package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// metricSet is a registry of metric families whose samples are set from
// figures already counted (a run's summary, a health walk, the database),
// not counted by the registry: each family is a collector of constant
// metrics. Gather sorts the families by name and their samples by label
// values; the text format (version 0.0.4) is what the textfiles, the
// database's last run and serve's /metrics carry. Its labels keep the
// order each family names them in (a registry sorts them by name), so the
// samples read as they always have: {provider="groq",outcome="ok"}.
type metricSet struct {
	reg    *prometheus.Registry
	labels map[string][]string // family name → its label names in order
}

func newMetricSet() metricSet {
	return metricSet{reg: prometheus.NewRegistry(), labels: map[string][]string{}}
}

// family registers the family name of value type typ with the given label
// names.
func (m metricSet) family(name string, typ prometheus.ValueType, help string, labels ...string) *constFamily {
	f := &constFamily{desc: prometheus.NewDesc(name, help, labels, nil), typ: typ}
	m.reg.MustRegister(f)
	m.labels[name] = labels
	return f
}

// Gather implements prometheus.Gatherer: the registry's families, each
// sample's labels in the family's order.
func (m metricSet) Gather() ([]*dto.MetricFamily, error) {
	fams, err := m.reg.Gather()
	for _, f := range fams {
		order := m.labels[f.GetName()]
		for _, s := range f.GetMetric() {
			slices.SortStableFunc(s.Label, func(a, b *dto.LabelPair) int {
				return slices.Index(order, a.GetName()) - slices.Index(order, b.GetName())
			})
		}
	}
	return fams, err
}

// families gathers the set by name.
func (m metricSet) families() (map[string]*dto.MetricFamily, error) {
	fams, err := m.Gather()
	out := make(map[string]*dto.MetricFamily, len(fams))
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out, err
}

// text is the set in the Prometheus text format.
func (m metricSet) text() (string, error) {
	fams, err := m.Gather()
	var b strings.Builder
	for _, f := range fams {
		if _, werr := expfmt.MetricFamilyToText(&b, f); werr != nil {
			return b.String(), werr
		}
	}
	return b.String(), err
}

// constFamily is one family of a metricSet: the samples set on it.
type constFamily struct {
	desc    *prometheus.Desc
	typ     prometheus.ValueType
	samples []prometheus.Metric
}

func (f *constFamily) Describe(ch chan<- *prometheus.Desc) { ch <- f.desc }

func (f *constFamily) Collect(ch chan<- prometheus.Metric) {
	for _, m := range f.samples {
		ch <- m
	}
}

// set adds the sample of the label values (in the family's label order).
func (f *constFamily) set(v float64, labelValues ...string) {
	f.samples = append(f.samples, prometheus.MustNewConstMetric(f.desc, f.typ, v, labelValues...))
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// runSummary is a run's own figures: jobs by outcome, its calls and cost
// by provider and outcome, its wall time and end, whether it halted. The
// database keeps the last one as text (telemetry.Store.SaveLastRun) for
// `serve --metrics-addr`; the run's metrics file is it with the database
// figures (addStoreMetrics).
func runSummary(links []*chain.Link, sum chain.Summary, start, end time.Time) metricSet {
	m := newMetricSet()
	jobs := m.family("contentpipe_run_jobs", prometheus.GaugeValue, "Jobs of the last run by outcome.", "outcome")
	for k, v := range map[string]int{string(chain.JobPublished): sum.Published, string(chain.JobReview): sum.Review, string(chain.JobDeferred): sum.Deferred,
		string(chain.JobHalted): sum.Halted, "active_elsewhere": sum.Active, string(chain.JobError): sum.Errors} {
		jobs.set(float64(v), k)
	}
	type pk struct{ provider, outcome string }
	calls, cost := map[pk]int{}, map[string]float64{}
	for _, r := range sum.Reports {
		if r.Result == nil {
			continue
		}
		for _, at := range r.Result.Attempts {
			calls[pk{at.Provider, string(at.Outcome)}]++
			cost[at.Provider] += at.CostUSD
		}
	}
	callsF := m.family("contentpipe_run_calls", prometheus.GaugeValue, "Provider calls of the last run by provider and outcome.", "provider", "outcome")
	for k, n := range calls {
		callsF.set(float64(n), k.provider, k.outcome)
	}
	costF := m.family("contentpipe_run_cost_usd", prometheus.GaugeValue, "Estimated cost of the last run's calls in USD by provider.", "provider")
	for _, l := range links {
		costF.set(cost[l.Name], l.Name)
	}
	m.family("contentpipe_run_duration_seconds", prometheus.GaugeValue, "Wall time of the last run.").set(end.Sub(start).Seconds())
	m.family("contentpipe_run_last_timestamp_seconds", prometheus.GaugeValue, "When the last run ended (Unix time).").set(unix(end))
	m.family("contentpipe_run_halted", prometheus.GaugeValue, "1 when the last run halted on an auth failure.").set(b2f(sum.Halt != nil))
	return m
}

// addStoreMetrics adds to m the figures read from the database: all-time
// call counters, cap use, last publication, pending alerts. A failed query
// leaves its families out.
func addStoreMetrics(ctx context.Context, m metricSet, store *telemetry.Store, links []*chain.Link, now time.Time) {
	if totals, err := store.CallTotals(ctx); err == nil {
		callsF := m.family("contentpipe_calls_total", prometheus.CounterValue, "All provider calls recorded in the database by provider and outcome.", "provider", "outcome")
		byProv := map[string]float64{}
		for _, c := range totals {
			callsF.set(float64(c.Calls), c.Provider, c.Outcome)
			byProv[c.Provider] += c.CostUSD
		}
		costF := m.family("contentpipe_cost_usd_total", prometheus.CounterValue, "Estimated cost of all recorded calls in USD by provider.", "provider")
		for k, v := range byProv {
			costF.set(v, k)
		}
	}
	used := m.family("contentpipe_cap_used", prometheus.GaugeValue, "Requests taken from the provider's daily cap today.", "provider")
	limit := m.family("contentpipe_cap_limit", prometheus.GaugeValue, "The provider's daily cap (daily_cap).", "provider")
	ratio := m.family("contentpipe_cap_use_ratio", prometheus.GaugeValue, "Share of the daily cap used today (0..1).", "provider")
	for _, l := range links {
		if l.DailyCap <= 0 {
			continue
		}
		if n, err := store.CapUsed(ctx, l.Name, l.CapReset.DayStart(now)); err == nil {
			used.set(float64(n), l.Name)
			limit.set(float64(l.DailyCap), l.Name)
			ratio.set(float64(n)/float64(l.DailyCap), l.Name)
		}
	}
	if t, err := store.LastPublished(ctx); err == nil {
		m.family("contentpipe_last_success_timestamp_seconds", prometheus.GaugeValue, "When an article was last published (Unix time; 0 = never).").set(unix(t))
	}
	if n, err := store.PendingAlerts(ctx); err == nil {
		m.family("contentpipe_alerts_pending", prometheus.GaugeValue, "Alerts in the outbox not yet delivered.").set(float64(n))
	}
}

// healthMetrics is a health walk: per provider up (1 answered correctly:
// healthy or cold), its state in the words of chain.HealthState (a state
// set: 1 for the link's state, 0 for the others), latency, first-token
// time, and whether it was called at all.
func healthMetrics(checks []chain.HealthCheck, end time.Time) metricSet {
	m := newMetricSet()
	up := m.family("contentpipe_health_up", prometheus.GaugeValue, "1 when the provider answered the health check correctly (healthy or cold), else 0.", "provider")
	state := m.family("contentpipe_health_state", prometheus.GaugeValue, "1 for the provider's state in the last health walk (healthy, cold, rate_limited, capped, over_budget, exhausted, unhealthy), 0 for the others.", "provider", "state")
	checked := m.family("contentpipe_health_checked", prometheus.GaugeValue, "1 when the provider was called; 0 when not (capped, over_budget, exhausted, circuit open).", "provider")
	latency := m.family("contentpipe_health_latency_seconds", prometheus.GaugeValue, "Total latency of the health call.", "provider")
	first := m.family("contentpipe_health_first_token_seconds", prometheus.GaugeValue, "Time to the first answer byte of the health call (0 unknown).", "provider")
	for _, h := range checks {
		up.set(b2f(h.OK), h.Provider)
		for _, st := range chain.HealthStates() {
			state.set(b2f(h.State == st), h.Provider, string(st))
		}
		checked.set(b2f(h.Skip == ""), h.Provider)
		if h.Skip == "" {
			latency.set(h.Latency.Seconds(), h.Provider)
			first.set(h.FirstToken.Seconds(), h.Provider)
		}
	}
	m.family("contentpipe_health_last_timestamp_seconds", prometheus.GaugeValue, "When the last health walk ended (Unix time).").set(unix(end))
	return m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// writeMetrics writes the families of g to a metrics file atomically
// (prometheus.WriteToTextfile: a temporary file in the same directory, then
// rename), so node_exporter's textfile collector never reads half a file.
// The file is world-readable (0644) for the collector; a missing directory
// is created (0755).
func writeMetrics(path string, g prometheus.Gatherer) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	if err := prometheus.WriteToTextfile(path, g); err != nil {
		return fmt.Errorf("write metrics %s: %w", path, err)
	}
	return nil
}

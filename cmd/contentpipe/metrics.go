package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// promText builds a Prometheus text-format exposition (version 0.0.4), one
// metric family at a time.
type promText struct {
	b strings.Builder
}

// family starts a metric family with its HELP and TYPE lines.
func (p *promText) family(name, typ, help string) {
	fmt.Fprintf(&p.b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
}

// sample writes one sample; labels are name, value pairs.
func (p *promText) sample(name string, v float64, labels ...string) {
	p.b.WriteString(name)
	if len(labels) > 0 {
		p.b.WriteByte('{')
		for i := 0; i+1 < len(labels); i += 2 {
			if i > 0 {
				p.b.WriteByte(',')
			}
			fmt.Fprintf(&p.b, "%s=\"%s\"", labels[i], promEscape(labels[i+1]))
		}
		p.b.WriteByte('}')
	}
	p.b.WriteByte(' ')
	p.b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	p.b.WriteByte('\n')
}

func promEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

func unix(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}

// runMetrics renders a run's metrics file: its summary (runSummary), then
// the figures of the database (writeStoreMetrics) at end.
func runMetrics(ctx context.Context, store *telemetry.Store, links []*chain.Link, summary string, end time.Time) []byte {
	p := promText{}
	p.b.WriteString(summary)
	writeStoreMetrics(ctx, &p, store, links, end)
	return []byte(p.b.String())
}

// runSummary renders a run's own figures: jobs by outcome, its calls and
// cost by provider and outcome, its wall time and end, whether it halted.
// The database keeps the last one (telemetry.Store.SaveLastRun) for
// `serve --metrics-addr`.
func runSummary(links []*chain.Link, sum chain.Summary, start, end time.Time) string {
	var p promText
	p.family("contentpipe_run_jobs", "gauge", "Jobs of the last run by outcome.")
	jobs := map[string]int{string(chain.JobPublished): sum.Published, string(chain.JobReview): sum.Review, string(chain.JobDeferred): sum.Deferred,
		string(chain.JobHalted): sum.Halted, "active_elsewhere": sum.Active, string(chain.JobError): sum.Errors}
	for _, k := range sortedKeys(jobs) {
		p.sample("contentpipe_run_jobs", float64(jobs[k]), "outcome", k)
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
	keys := make([]pk, 0, len(calls))
	for k := range calls {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].provider != keys[j].provider {
			return keys[i].provider < keys[j].provider
		}
		return keys[i].outcome < keys[j].outcome
	})
	p.family("contentpipe_run_calls", "gauge", "Provider calls of the last run by provider and outcome.")
	for _, k := range keys {
		p.sample("contentpipe_run_calls", float64(calls[k]), "provider", k.provider, "outcome", k.outcome)
	}
	p.family("contentpipe_run_cost_usd", "gauge", "Estimated cost of the last run's calls in USD by provider.")
	for _, l := range links {
		p.sample("contentpipe_run_cost_usd", cost[l.Name], "provider", l.Name)
	}
	p.family("contentpipe_run_duration_seconds", "gauge", "Wall time of the last run.")
	p.sample("contentpipe_run_duration_seconds", end.Sub(start).Seconds())
	p.family("contentpipe_run_last_timestamp_seconds", "gauge", "When the last run ended (Unix time).")
	p.sample("contentpipe_run_last_timestamp_seconds", unix(end))
	halted := 0.0
	if sum.Halt != nil {
		halted = 1
	}
	p.family("contentpipe_run_halted", "gauge", "1 when the last run halted on an auth failure.")
	p.sample("contentpipe_run_halted", halted)
	return p.b.String()
}

// writeStoreMetrics adds the figures read from the database: all-time call
// counters, cap use, last publication, pending alerts. A failed query
// leaves its family out.
func writeStoreMetrics(ctx context.Context, p *promText, store *telemetry.Store, links []*chain.Link, now time.Time) {
	if totals, err := store.CallTotals(ctx); err == nil {
		p.family("contentpipe_calls_total", "counter", "All provider calls recorded in the database by provider and outcome.")
		for _, c := range totals {
			p.sample("contentpipe_calls_total", float64(c.Calls), "provider", c.Provider, "outcome", c.Outcome)
		}
		byProv := map[string]float64{}
		for _, c := range totals {
			byProv[c.Provider] += c.CostUSD
		}
		p.family("contentpipe_cost_usd_total", "counter", "Estimated cost of all recorded calls in USD by provider.")
		for _, k := range sortedKeys(byProv) {
			p.sample("contentpipe_cost_usd_total", byProv[k], "provider", k)
		}
	}
	var capped []*chain.Link
	for _, l := range links {
		if l.DailyCap > 0 {
			capped = append(capped, l)
		}
	}
	if len(capped) > 0 {
		type use struct {
			name      string
			used, cap int
		}
		var uses []use
		for _, l := range capped {
			n, err := store.CapUsed(ctx, l.Name, l.CapReset.DayStart(now))
			if err == nil {
				uses = append(uses, use{l.Name, n, l.DailyCap})
			}
		}
		p.family("contentpipe_cap_used", "gauge", "Requests taken from the provider's daily cap today.")
		for _, u := range uses {
			p.sample("contentpipe_cap_used", float64(u.used), "provider", u.name)
		}
		p.family("contentpipe_cap_limit", "gauge", "The provider's daily cap (daily_cap).")
		for _, u := range uses {
			p.sample("contentpipe_cap_limit", float64(u.cap), "provider", u.name)
		}
		p.family("contentpipe_cap_use_ratio", "gauge", "Share of the daily cap used today (0..1).")
		for _, u := range uses {
			p.sample("contentpipe_cap_use_ratio", float64(u.used)/float64(u.cap), "provider", u.name)
		}
	}
	if t, err := store.LastPublished(ctx); err == nil {
		p.family("contentpipe_last_success_timestamp_seconds", "gauge", "When an article was last published (Unix time; 0 = never).")
		p.sample("contentpipe_last_success_timestamp_seconds", unix(t))
	}
	if n, err := store.PendingAlerts(ctx); err == nil {
		p.family("contentpipe_alerts_pending", "gauge", "Alerts in the outbox not yet delivered.")
		p.sample("contentpipe_alerts_pending", float64(n))
	}
}

// healthMetrics renders a health walk: per provider up (1 answered
// correctly: healthy or cold), its state in the words of chain.HealthState
// (a state set: 1 for the link's state, 0 for the others), latency,
// first-token time, and whether it was called at all.
func healthMetrics(checks []chain.HealthCheck, end time.Time) []byte {
	var p promText
	p.family("contentpipe_health_up", "gauge", "1 when the provider answered the health check correctly (healthy or cold), else 0.")
	for _, h := range checks {
		p.sample("contentpipe_health_up", b2f(h.OK), "provider", h.Provider)
	}
	p.family("contentpipe_health_state", "gauge", "1 for the provider's state in the last health walk (healthy, cold, rate_limited, capped, over_budget, exhausted, unhealthy), 0 for the others.")
	for _, h := range checks {
		for _, st := range chain.HealthStates() {
			p.sample("contentpipe_health_state", b2f(h.State == st), "provider", h.Provider, "state", string(st))
		}
	}
	p.family("contentpipe_health_checked", "gauge", "1 when the provider was called; 0 when not (capped, over_budget, exhausted, circuit open).")
	for _, h := range checks {
		p.sample("contentpipe_health_checked", b2f(h.Skip == ""), "provider", h.Provider)
	}
	p.family("contentpipe_health_latency_seconds", "gauge", "Total latency of the health call.")
	for _, h := range checks {
		if h.Skip == "" {
			p.sample("contentpipe_health_latency_seconds", h.Latency.Seconds(), "provider", h.Provider)
		}
	}
	p.family("contentpipe_health_first_token_seconds", "gauge", "Time to the first answer byte of the health call (0 unknown).")
	for _, h := range checks {
		if h.Skip == "" {
			p.sample("contentpipe_health_first_token_seconds", h.FirstToken.Seconds(), "provider", h.Provider)
		}
	}
	p.family("contentpipe_health_last_timestamp_seconds", "gauge", "When the last health walk ended (Unix time).")
	p.sample("contentpipe_health_last_timestamp_seconds", unix(end))
	return []byte(p.b.String())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// writeMetrics writes a metrics file atomically (a temporary file in the
// same directory, then rename), so node_exporter's textfile collector never
// reads half a file. The file is world-readable (0644) for the collector;
// a missing directory is created (0755).
func writeMetrics(path string, content []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp) // no-op after the rename
	if _, err := f.Write(content); err != nil {
		f.Close()
		return fmt.Errorf("write metrics %s: %w", tmp, err)
	}
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return fmt.Errorf("write metrics %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("write metrics %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write metrics %s: %w", tmp, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// liveMetrics is the prometheus.Gatherer behind `serve --metrics-addr`.
// It exposes the very families of the textfiles, so the names cannot
// drift apart: the run and health families of the last run and health
// walk, and the database families (call counters, cap use, last
// publication, pending alerts) rendered afresh on every scrape. The last
// run and walk are the newer of the textfile serve wrote into dir and the
// database's record (the run summary every run keeps, each link's newest
// health_checks row), so a restarted serve, or one whose runs another
// worker or cron did, shows them before its own first run or walk. It is
// safe for concurrent use.
type liveMetrics struct {
	dir      string        // serve's metrics directory
	database string        // the config's database, opened read-only per scrape
	links    []*chain.Link // name, daily cap and cap reset of each link
}

// newLiveMetrics returns the gatherer of a config whose textfiles are in dir.
func newLiveMetrics(cfg *config.Config, dir string) (*liveMetrics, error) {
	m := &liveMetrics{dir: dir, database: cfg.Database}
	for _, l := range cfg.Chain {
		reset, err := chain.ParseCapReset(l.CapReset)
		if err != nil {
			return nil, fmt.Errorf("link %s: cap_reset: %w", l.Name, err)
		}
		m.links = append(m.links, &chain.Link{Name: l.Name, DailyCap: l.DailyCap, CapReset: reset})
	}
	return m, nil
}

// lastValues are the run or health families of one source.
type lastValues struct {
	file  string // the textfile in dir
	stamp string // the family whose value says when they were made
}

var (
	lastRunValues    = lastValues{"run.prom", "contentpipe_run_last_timestamp_seconds"}
	lastHealthValues = lastValues{"health.prom", "contentpipe_health_last_timestamp_seconds"}
)

// Gather implements prometheus.Gatherer.
func (m *liveMetrics) Gather() ([]*dto.MetricFamily, error) {
	fams := map[string]*dto.MetricFamily{}
	var errs []error
	files := map[lastValues]map[string]*dto.MetricFamily{}
	for _, lv := range []lastValues{lastRunValues, lastHealthValues} {
		b, err := os.ReadFile(filepath.Join(m.dir, lv.file))
		if errors.Is(err, fs.ErrNotExist) {
			continue // no run or health walk of this serve yet
		}
		f := map[string]*dto.MetricFamily{}
		if err == nil {
			err = parseFamilies(string(b), f)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", lv.file, err))
			continue
		}
		files[lv] = f
	}
	stored, err := m.storeFamilies()
	if err != nil {
		errs = append(errs, err)
	}
	for _, lv := range []lastValues{lastRunValues, lastHealthValues} {
		f, db := files[lv], stored[lv]
		if f == nil || db != nil && stampOf(db, lv.stamp) > stampOf(f, lv.stamp) {
			f = db
		}
		for name, fam := range f {
			fams[name] = fam
		}
	}
	for name, fam := range stored[lastValues{}] {
		fams[name] = fam
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, f := range fams {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, errors.Join(errs...)
}

// stampOf is the value of the one-sample gauge name in fams (0 = none).
func stampOf(fams map[string]*dto.MetricFamily, name string) float64 {
	if f := fams[name]; f != nil && len(f.GetMetric()) > 0 {
		return f.GetMetric()[0].GetGauge().GetValue()
	}
	return 0
}

// storeFamilies reads the database: the last run's and health walk's
// families (under lastRunValues and lastHealthValues; absent when the
// database has none) and the database families rendered now (under the
// zero lastValues).
func (m *liveMetrics) storeFamilies() (map[lastValues]map[string]*dto.MetricFamily, error) {
	out := map[lastValues]map[string]*dto.MetricFamily{}
	if !dbExists(m.database) {
		return out, nil // no database yet: the textfile figures stand
	}
	store, err := telemetry.OpenReadOnly(m.database)
	if err != nil {
		return out, err
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var errs []error
	add := func(lv lastValues, set metricSet) {
		f, err := set.families()
		if err != nil {
			errs = append(errs, fmt.Errorf("%s from the database: %w", lv.file, err))
		}
		out[lv] = f
	}
	if summary, ok, err := store.LastRun(ctx); err != nil {
		errs = append(errs, err)
	} else if ok {
		// The run kept its summary as text (SaveLastRun).
		f := map[string]*dto.MetricFamily{}
		if err := parseFamilies(summary, f); err != nil {
			errs = append(errs, fmt.Errorf("%s from the database: %w", lastRunValues.file, err))
		} else {
			out[lastRunValues] = f
		}
	}
	if checks, end, err := m.lastHealth(ctx, store); err != nil {
		errs = append(errs, err)
	} else if len(checks) > 0 {
		add(lastHealthValues, healthMetrics(checks, end))
	}
	db := newMetricSet()
	addStoreMetrics(ctx, db, store, m.links, time.Now())
	add(lastValues{}, db)
	return out, errors.Join(errs...)
}

// lastHealth is the last health walk of the configured links as the
// database recorded it (each link's newest health_checks row, in chain
// order) and when its newest row was written.
func (m *liveMetrics) lastHealth(ctx context.Context, store *telemetry.Store) ([]chain.HealthCheck, time.Time, error) {
	rows, err := store.LastHealth(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	byName := map[string]telemetry.HealthCheck{}
	for _, r := range rows {
		byName[r.Provider] = r
	}
	var (
		checks []chain.HealthCheck
		end    time.Time
	)
	for _, l := range m.links {
		r, ok := byName[l.Name]
		if !ok {
			continue
		}
		h := chain.HealthCheck{TS: r.TS, Provider: r.Provider, Model: r.Model, OK: r.OK, HTTPStatus: r.HTTPStatus,
			Latency: r.Latency, FirstToken: r.FirstToken, Outcome: r.Outcome, Detail: r.Detail,
			State: chain.RecordedHealthState(string(r.Outcome), r.OK)}
		switch sk := chain.SkipReason(r.Outcome); sk {
		case chain.SkipCap, chain.SkipExhausted, chain.SkipCircuitOpen, chain.SkipHalted, chain.SkipTokens, chain.SkipBudget:
			h.Skip, h.Outcome = sk, "" // recorded in place of the outcome: not called
		}
		checks = append(checks, h)
		if r.TS.After(end) {
			end = r.TS
		}
	}
	return checks, end, nil
}

// parseFamilies parses the Prometheus text format into fams, replacing
// families of the same name.
func parseFamilies(text string, fams map[string]*dto.MetricFamily) error {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	parsed, err := parser.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		return err
	}
	for name, f := range parsed {
		fams[name] = f
	}
	return nil
}

// serveMetrics listens on addr and serves /metrics (with the Go runtime
// and process collectors beside the contentpipe families) until ctx ends.
// It returns the address it listens on, useful with port 0.
func (a *app) serveMetrics(ctx context.Context, addr string, live prometheus.Gatherer) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", fmt.Errorf("--metrics-addr %s: %w", addr, err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(prometheus.Gatherers{reg, live}, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Warn("metrics server", "err", err)
		}
	}()
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	return ln.Addr().String(), nil
}

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
// drift apart: the run and health families of the last run.prom and
// health.prom that serve wrote into dir, and the database families
// (call counters, cap use, last publication, pending alerts) rendered
// afresh on every scrape. It is safe for concurrent use.
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

// Gather implements prometheus.Gatherer.
func (m *liveMetrics) Gather() ([]*dto.MetricFamily, error) {
	fams := map[string]*dto.MetricFamily{}
	var errs []error
	for _, name := range []string{"run.prom", "health.prom"} {
		b, err := os.ReadFile(filepath.Join(m.dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue // no run or health walk yet
		}
		if err == nil {
			err = parseFamilies(string(b), fams)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", name, err))
		}
	}
	if err := m.storeFamilies(fams); err != nil {
		errs = append(errs, err)
	}
	out := make([]*dto.MetricFamily, 0, len(fams))
	for _, f := range fams {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].GetName() < out[j].GetName() })
	return out, errors.Join(errs...)
}

// storeFamilies replaces the database families in fams with fresh ones.
func (m *liveMetrics) storeFamilies(fams map[string]*dto.MetricFamily) error {
	if !dbExists(m.database) {
		return nil // no database yet: the textfile figures stand
	}
	store, err := telemetry.OpenReadOnly(m.database)
	if err != nil {
		return err
	}
	defer store.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var p promText
	writeStoreMetrics(ctx, &p, store, m.links, time.Now())
	return parseFamilies(p.b.String(), fams)
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

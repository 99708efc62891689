package main

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/contentpipe/contentpipe/chain"
)

// familyNames parses the Prometheus text format and returns its family
// names.
func familyNames(t *testing.T, what, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("%s does not parse as the Prometheus text format: %v\n%s", what, err, text)
	}
	return fams
}

// TestServeMetricsAddr starts the real binary's `serve --metrics-addr`
// with a run and a health walk every second and --metrics-dir in a
// directory that does not exist yet, waits for both textfiles, scrapes
// /metrics, parses both with the Prometheus text parser and expects the
// same contentpipe families in both.
func TestServeMetricsAddr(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 2, nil, `schedule: {run: "@every 1s", health: "@every 1s", report: ""}
`)
	metricsDir := filepath.Join(w.dir, "var", "metrics") // created by serve
	cmd := exec.Command(binary(t), "serve", "--metrics-dir", metricsDir, "--metrics-addr", "127.0.0.1:0")
	cmd.Dir = w.dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + w.dir, "TZ=UTC"}, w.env...)
	var so, se syncBuffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(60 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("serve did not stop on SIGTERM")
		}
	}()
	addrRE := regexp.MustCompile(`metrics on (http://127\.0\.0\.1:\d+/metrics)`)
	var url string
	deadline := time.Now().Add(90 * time.Second)
	for {
		if m := addrRE.FindStringSubmatch(so.String()); m != nil && url == "" {
			url = m[1]
		}
		_, e1 := os.Stat(filepath.Join(metricsDir, "run.prom"))
		_, e2 := os.Stat(filepath.Join(metricsDir, "health.prom"))
		if url != "" && e1 == nil && e2 == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no metrics address or textfiles within 90s\nstdout:\n%s\nstderr:\n%s", so.String(), se.String())
		}
		select {
		case err := <-exited:
			t.Fatalf("serve exited: %v\n%s\n%s", err, so.String(), se.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	live := familyNames(t, "/metrics", string(body))
	files := map[string]*dto.MetricFamily{}
	for _, name := range []string{"run.prom", "health.prom"} {
		b, err := os.ReadFile(filepath.Join(metricsDir, name))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range familyNames(t, name, string(b)) {
			files[k] = v
		}
	}
	var missing, extra []string
	for name, f := range files {
		lf, ok := live[name]
		if !ok {
			missing = append(missing, name)
		} else if lf.GetType() != f.GetType() {
			t.Errorf("%s: type %v live, %v in the textfile", name, lf.GetType(), f.GetType())
		}
	}
	for name := range live {
		if _, ok := files[name]; strings.HasPrefix(name, "contentpipe_") && !ok {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	if len(missing) > 0 || len(extra) > 0 {
		t.Fatalf("family names differ: in the textfiles only %v; on /metrics only %v", missing, extra)
	}
	for _, want := range []string{"contentpipe_run_jobs", "contentpipe_calls_total", "contentpipe_health_up", "contentpipe_health_state", "go_goroutines"} {
		if _, ok := live[want]; !ok {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	// The health states live carry the words of health (one per state and link).
	if st, up := live["contentpipe_health_state"], live["contentpipe_health_up"]; st != nil && up != nil &&
		len(st.GetMetric()) != len(up.GetMetric())*len(chain.HealthStates()) {
		t.Errorf("contentpipe_health_state has %d samples, want %d (every link × every state)", len(st.GetMetric()), len(up.GetMetric())*len(chain.HealthStates()))
	}
	if len(live["contentpipe_calls_total"].GetMetric()) == 0 {
		t.Errorf("contentpipe_calls_total has no samples:\n%s", body)
	}
}

// syncBuffer is a bytes.Buffer safe for the writer goroutine of exec and
// the polling test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// samples flattens metric families into "name{label=value,…}" → value.
func samples(fams map[string]*dto.MetricFamily) map[string]float64 {
	out := map[string]float64{}
	for name, f := range fams {
		for _, m := range f.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue() + m.GetUntyped().GetValue()
			out[name+"{"+strings.Join(labels, ",")+"}"] = v
		}
	}
	return out
}

// TestServeMetricsAfterRestart: a database with a run and a health walk
// (the real binary's `run` and `health`, each writing its textfile), then
// the real `serve --metrics-addr` started on it as after a restart, its
// schedule not due for months: the very first scrape of /metrics carries
// every family of both textfiles with their values, read from the
// database (the database families, rendered afresh at each scrape, count
// the health walk's calls too). Latencies are stored in milliseconds and the walk's time is
// its newest row's, so those agree to a millisecond and a few seconds.
func TestServeMetricsAfterRestart(t *testing.T) {
	t.Parallel()
	w := newSimWorld(t, 2, nil, `schedule: {run: "0 0 1 1 *", health: "0 0 1 1 *", report: ""}
`)
	files := map[string]*dto.MetricFamily{}
	for _, c := range [][]string{{"run", "--metrics-file", "m/run.prom"}, {"health", "--metrics-file", "m/health.prom"}} {
		if out, err := w.command(t, c...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", c, err, out)
		}
		b, err := os.ReadFile(filepath.Join(w.dir, c[2]))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range familyNames(t, c[2], string(b)) {
			files[k] = v
		}
	}
	cmd := w.command(t, "serve", "--metrics-addr", "127.0.0.1:0")
	var so, se syncBuffer
	cmd.Stdout, cmd.Stderr = &so, &se
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}()
	addrRE := regexp.MustCompile(`metrics on (http://127\.0\.0\.1:\d+/metrics)`)
	deadline := time.Now().Add(30 * time.Second)
	var url string
	for url == "" {
		if m := addrRE.FindStringSubmatch(so.String()); m != nil {
			url = m[1]
		} else if time.Now().After(deadline) {
			t.Fatalf("no metrics address within 30s\nstdout:\n%s\nstderr:\n%s", so.String(), se.String())
		} else {
			time.Sleep(20 * time.Millisecond)
		}
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	live := samples(familyNames(t, "/metrics", string(body)))
	want := samples(files)
	for _, fam := range []string{"contentpipe_run_jobs", "contentpipe_run_calls", "contentpipe_run_last_timestamp_seconds",
		"contentpipe_health_up", "contentpipe_health_state", "contentpipe_health_last_timestamp_seconds"} {
		if files[fam] == nil || len(files[fam].GetMetric()) == 0 {
			t.Fatalf("the textfiles lack %s: the test's world is wrong", fam)
		}
	}
	for _, k := range sortedKeys(want) {
		if !strings.HasPrefix(k, "contentpipe_run_") && !strings.HasPrefix(k, "contentpipe_health_") {
			continue // the database families are rendered at each scrape
		}
		got, ok := live[k]
		tol := 0.0
		switch {
		case strings.HasPrefix(k, "contentpipe_health_latency_seconds"), strings.HasPrefix(k, "contentpipe_health_first_token_seconds"):
			tol = 0.001
		case strings.HasPrefix(k, "contentpipe_health_last_timestamp_seconds"):
			tol = 5
		}
		if !ok {
			t.Errorf("/metrics right after the start lacks %s (%g in the textfile)", k, want[k])
		} else if d := got - want[k]; d > tol || d < -tol {
			t.Errorf("%s = %g on /metrics, %g in the textfile", k, got, want[k])
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", body)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

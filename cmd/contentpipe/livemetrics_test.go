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

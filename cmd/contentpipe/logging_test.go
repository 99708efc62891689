package main

import (
	"github.com/contentpipe/contentpipe/adapters/sim"

	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLineStamper(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 1, 6, 0, 0, 123e6, time.UTC)
	var b bytes.Buffer
	s := newLineStamper(&b, "text", "INFO", "stdout")
	s.now = func() time.Time { return at }
	for _, chunk := range []string{"one\ntw", "o\n\n", "\r\n", "three"} {
		if n, err := s.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("write %q: %d %v", chunk, n, err)
		}
	}
	if got, want := b.String(), "2026-12-01T06:00:00.123Z one\n2026-12-01T06:00:00.123Z two\n"; got != want {
		t.Fatalf("before flush %q, want %q", got, want)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(b.String(), "2026-12-01T06:00:00.123Z three\n") {
		t.Fatalf("flush: %q", b.String())
	}

	b.Reset()
	j := newLineStamper(&b, "json", "WARN", "stderr")
	j.now = func() time.Time { return at }
	if _, err := j.Write([]byte("ALERT [CRITICAL] \"quoted\"\n")); err != nil {
		t.Fatal(err)
	}
	var rec map[string]string
	if err := json.Unmarshal(b.Bytes(), &rec); err != nil {
		t.Fatalf("%q: %v", b.String(), err)
	}
	if rec["time"] != "2026-12-01T06:00:00.123Z" || rec["level"] != "WARN" || rec["msg"] != `ALERT [CRITICAL] "quoted"` || rec["stream"] != "stderr" {
		t.Fatalf("record %v", rec)
	}
}

func TestLogFlagsRejectUnknownValues(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"--log-level", "loud", "version"}, {"--log-format", "xml", "version"}} {
		r := run(t, t.TempDir(), nil, args...)
		if r.code != 2 || !strings.Contains(r.stderr, args[0]) {
			t.Errorf("%v: exit %d stderr %q", args, r.code, r.stderr)
		}
	}
	// The final error of a command is JSON records of level ERROR, one a line.
	r := run(t, t.TempDir(), nil, "--log-format", "json", "--config", "missing.yaml", "run")
	var rec map[string]string
	if err := json.Unmarshal([]byte(strings.SplitN(r.stderr, "\n", 2)[0]), &rec); r.code != 2 || err != nil ||
		rec["level"] != "ERROR" || !strings.Contains(rec["msg"], "missing.yaml") {
		t.Errorf("missing config with --log-format json: exit %d, stderr %q (%v)", r.code, r.stderr, err)
	}
}

// stampRE matches a line that starts with a timestamp: the stamp of plain
// lines, slog's text time= attribute, or a JSON record's time.
var stampRE = regexp.MustCompile(`^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d|time=\d{4}-\d\d-\d\dT|\{"time":"\d{4}-)`)

// TestCronRunEveryLineTimestamped runs the real binary as cron does
// (stdout and stderr pipes, no terminal) on a chain whose first link fails
// and with Telegram unset, so that progress lines, the summary, slog
// warnings and the plain ALERT lines all appear; every line must carry a
// timestamp. A second run the same day must not repeat the Telegram
// notice, and --log-format json must give one JSON object per line.
func TestCronRunEveryLineTimestamped(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{topics: 2, baseURL: map[string]string{"gemini": "http://127.0.0.1:9"},
		extra: "alerts: {provider_down_after: 1ms}\n"})
	r := run(t, w.dir, w.env, "run")
	if r.code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			if !stampRE.MatchString(line) {
				t.Errorf("%s line without a timestamp: %q", name, line)
			}
		}
	}
	for _, want := range []string{"trying gemini", "published"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
	if !strings.Contains(strings.ToLower(r.stderr), "telegram") {
		t.Errorf("first run of the day does not say Telegram is not configured:\n%s", r.stderr)
	}

	w.addTopics(t, 1)
	r2 := run(t, w.dir, w.env, "--log-format", "json", "run")
	if r2.code != 0 {
		t.Fatalf("second run exit %d\n%s\n%s", r2.code, r2.stdout, r2.stderr)
	}
	if strings.Contains(strings.ToLower(r2.stderr), "telegram") {
		t.Errorf("the Telegram notice repeated on the same day:\n%s", r2.stderr)
	}
	for _, out := range []string{r2.stdout, r2.stderr} {
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			var rec map[string]any
			if line == "" {
				continue
			}
			if err := json.Unmarshal([]byte(line), &rec); err != nil || rec["time"] == nil {
				t.Errorf("--log-format json: not a JSON record with a time: %q", line)
			}
		}
	}
}

// TestJSONLogRecords: with --log-format json every line of stdout and
// stderr is one JSON record with one timestamp format (RFC 3339, UTC,
// milliseconds); a chain event carries its fields (event, job, topic,
// provider, attempt, outcome, wait), and a four-line alert (the backlog of
// one topic runs low) is one record carrying alert_rule, never four.
func TestJSONLogRecords(t *testing.T) {
	t.Parallel()
	w := newWorld(t, worldOptions{topics: 1, baseURL: map[string]string{"gemini": "http://127.0.0.1:9"},
		profiles: map[sim.Flavor]sim.Profile{sim.FlavorGroq: {Script: []sim.Fault{sim.FaultRateMinute}}}})
	r := run(t, w.dir, w.env, "--log-format", "json", "run")
	if r.code != 0 {
		t.Fatalf("run exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	timeRE := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	var recs []map[string]any
	for name, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
		for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Errorf("%s: not one JSON record: %q", name, line)
				continue
			}
			if ts, _ := rec["time"].(string); !timeRE.MatchString(ts) {
				t.Errorf("%s: time %q is not RFC 3339 UTC with milliseconds: %q", name, ts, line)
			}
			if msg, _ := rec["msg"].(string); regexp.MustCompile(`^(Since|Automation|Run): `).MatchString(msg) {
				t.Errorf("%s: a line of an alert as a record of its own: %q", name, line)
			}
			recs = append(recs, rec)
		}
	}
	find := func(what string, match func(map[string]any) bool) map[string]any {
		for _, rec := range recs {
			if match(rec) {
				return rec
			}
		}
		t.Errorf("no %s record among:\n%s\n%s", what, r.stdout, r.stderr)
		return nil
	}
	find("try gemini, attempt 1", func(m map[string]any) bool {
		return m["event"] == "try" && m["provider"] == "gemini" && m["attempt"] == 1.0 && m["job"] != "" && m["topic"] != nil && m["jobs"] == 1.0
	})
	find("gemini's failed outcome", func(m map[string]any) bool {
		return m["event"] == "outcome" && m["provider"] == "gemini" && m["outcome"] == "connect_failed"
	})
	find("groq's rate limit", func(m map[string]any) bool {
		return m["event"] == "outcome" && m["provider"] == "groq" && m["outcome"] == "rate_limited"
	})
	find("a wait", func(m map[string]any) bool {
		_, ms := m["wait_ms"].(float64)
		w, _ := m["wait"].(string)
		return m["event"] == "wait" && ms && w != ""
	})
	find("groq accepted with its score", func(m map[string]any) bool {
		return m["event"] == "outcome" && m["provider"] == "groq" && m["outcome"] == "ok" && m["score"] != nil
	})
	alert := find("the backlog_low alert as one record", func(m map[string]any) bool {
		return m["alert_rule"] == "backlog_low" && m["severity"] == "warning" && m["stream"] == "stderr" && m["alert_key"] != nil
	})
	if msg, _ := alert["msg"].(string); alert != nil && (!strings.HasPrefix(msg, "ALERT [WARNING] ") || !strings.Contains(msg, "\nSince: ") ||
		!strings.Contains(msg, "\nAutomation: ") || !strings.Contains(msg, "\nRun: ")) {
		t.Errorf("the alert record does not hold the whole message: %q", msg)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/contentpipe/contentpipe/cmd/contentpipe/internal/config"
	"github.com/contentpipe/contentpipe/telemetry"
)

// stampTime is the layout of the timestamp on plain output lines: the one
// slog's handlers write, so that a log file reads in one format.
const stampTime = "2006-01-02T15:04:05.000Z07:00"

// stampsStdout reports whether a command's stdout is a log of what it did
// (started from cron or a timer): when stdout is not a terminal, each of
// its lines carries a timestamp. The other commands print data (sql,
// simulate, report, completion, ...) and stay untouched.
func stampsStdout(command string) bool {
	switch command {
	case "run", "health", "serve", "alerts":
		return true
	}
	return false
}

// newLogger returns the slog logger of --log-format and --log-level on w.
func newLogger(w io.Writer, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	switch strings.ToLower(level) {
	case "debug":
		lv = slog.LevelDebug
	case "info":
		lv = slog.LevelInfo
	case "warn":
		lv = slog.LevelWarn
	case "error":
		lv = slog.LevelError
	default:
		return nil, fmt.Errorf("--log-level %q: want one of debug, info, warn, error", level)
	}
	// One timestamp format across the log: slog's JSON handler would write
	// nanoseconds, the plain lines and the text handler milliseconds.
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && a.Key == slog.TimeKey && a.Value.Kind() == slog.KindTime {
			return slog.String(slog.TimeKey, a.Value.Time().UTC().Format(stampTime))
		}
		return a
	}}
	switch strings.ToLower(format) {
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want text or json", format)
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// lineStamper is an io.Writer that writes every complete line to w with
// the time it was written: "<time> <line>" in the text format, or one JSON
// object {"time", "level", "msg", "stream"} in the json format, so plain
// output and slog lines interleave into one readable log. Empty lines are
// dropped; a partial line waits for its newline or for Flush. It is safe
// for concurrent use.
type lineStamper struct {
	w      io.Writer
	json   bool
	level  string // level of the JSON records
	stream string // "stdout" or "stderr" in the JSON records
	now    func() time.Time

	mu  sync.Mutex
	buf []byte
}

func newLineStamper(w io.Writer, format, level, stream string) *lineStamper {
	return &lineStamper{w: w, json: format == "json", level: level, stream: stream, now: time.Now}
}

// Write stamps and writes every complete line of p; it never reports a
// short write for a partial line it keeps.
func (s *lineStamper) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf = append(s.buf, p...)
	var err error
	for {
		i := bytes.IndexByte(s.buf, '\n')
		if i < 0 {
			break
		}
		if e := s.emit(s.buf[:i]); e != nil && err == nil {
			err = e
		}
		s.buf = s.buf[i+1:]
	}
	s.buf = append([]byte(nil), s.buf...) // do not pin the written lines
	return len(p), err
}

// Flush writes a pending partial line.
func (s *lineStamper) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	line := s.buf
	s.buf = nil
	return s.emit(line)
}

func (s *lineStamper) emit(line []byte) error {
	line = bytes.TrimRight(line, "\r")
	if len(bytes.TrimSpace(line)) == 0 {
		return nil
	}
	ts := s.now().Format(stampTime)
	if !s.json {
		_, err := fmt.Fprintf(s.w, "%s %s\n", ts, line)
		return err
	}
	b, err := json.Marshal(struct {
		Time   string `json:"time"`
		Level  string `json:"level"`
		Msg    string `json:"msg"`
		Stream string `json:"stream"`
	}{ts, s.level, string(line), s.stream})
	if err != nil {
		return err
	}
	_, err = s.w.Write(append(b, '\n'))
	return err
}

// Record writes one event: in the json format one object whose msg holds
// every line of msg and which carries fields (key, value pairs: strings,
// numbers, durations as Go strings) after the standard keys; in the text
// format msg's lines, each stamped. A pending partial line goes first.
func (s *lineStamper) Record(level, msg string, fields ...any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.buf) > 0 {
		line := s.buf
		s.buf = nil
		if err := s.emit(line); err != nil {
			return err
		}
	}
	msg = strings.TrimRight(msg, "\n")
	if !s.json {
		for _, l := range strings.Split(msg, "\n") {
			if err := s.emit([]byte(l)); err != nil {
				return err
			}
		}
		return nil
	}
	b := []byte("{")
	add := func(k string, v any) {
		if d, ok := v.(time.Duration); ok {
			v = d.String()
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			vb, _ = json.Marshal(fmt.Sprint(v))
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(append(append(b, kb...), ':'), vb...)
	}
	add("time", s.now().UTC().Format(stampTime))
	add("level", level)
	add("msg", msg)
	add("stream", s.stream)
	for i := 0; i+1 < len(fields); i += 2 {
		if k, ok := fields[i].(string); ok {
			add(k, fields[i+1])
		}
	}
	_, err := s.w.Write(append(b, '}', '\n'))
	return err
}

// WriteAlert is how the alerts package echoes an alert on the console
// (alerts.RecordWriter): one record carrying its rule, severity and key,
// however many lines its text has.
func (s *lineStamper) WriteAlert(rule, severity, key, text string) error {
	return s.Record(s.level, text, "alert_rule", rule, "severity", severity, "alert_key", key)
}

// setupOutput applies --log-format and --log-level before a command runs:
// the logger on the process's stderr, and timestamps on the plain lines of
// stderr (alerts on the console, the final error) and of a stamped
// command's stdout whenever they are not a terminal. Writers stamped
// already (a command that serve runs in-process) are kept.
func (a *app) setupOutput(command string) error {
	lg, err := newLogger(a.logOut, a.logFormat, a.logLevel)
	if err != nil {
		return exitWith(exitConfig, err)
	}
	a.log = lg
	format := strings.ToLower(a.logFormat)
	if _, done := a.stderr.(*lineStamper); !done && !isTerminal(a.stderr) {
		a.stderr = newLineStamper(a.stderr, format, "WARN", "stderr")
	}
	if _, done := a.stdout.(*lineStamper); !done && stampsStdout(command) && !isTerminal(a.stdout) {
		a.stdout = newLineStamper(a.stdout, format, "INFO", "stdout")
	}
	return nil
}

// errorOut is where the final error of a command goes: stderr, stamped
// with level ERROR when stderr is stamped.
func (a *app) errorOut() io.Writer {
	if s, ok := a.stderr.(*lineStamper); ok {
		format := "text"
		if s.json {
			format = "json"
		}
		return newLineStamper(s.w, format, "ERROR", s.stream)
	}
	return a.stderr
}

// printError writes a command's final error: one record of level ERROR
// when stderr is stamped (a config error with all its problems is one
// event), else its lines.
func (a *app) printError(err error) {
	if s, ok := a.errorOut().(*lineStamper); ok {
		_ = s.Record("ERROR", "contentpipe: "+err.Error())
		return
	}
	fmt.Fprintln(a.errorOut(), "contentpipe:", err)
}

// flushOutput writes the partial lines the stampers still hold.
func (a *app) flushOutput() {
	for _, w := range []io.Writer{a.stdout, a.stderr} {
		if s, ok := w.(*lineStamper); ok {
			_ = s.Flush()
		}
	}
}

// telegramNotice is the notices key of the "Telegram not configured"
// warning, shown at most once per UTC day per database.
const telegramNotice = "telegram_not_configured"

// logConfigWarnings logs the config's warnings; the one saying Telegram is
// not configured only when this database has not shown it today, so that a
// job started four times a day by cron does not repeat it four times.
// Nothing is logged for the embedded demo config, which has no file to
// point at.
func (a *app) logConfigWarnings(ctx context.Context, cfg *config.Config, store *telemetry.Store, demo bool) {
	if demo {
		return
	}
	for _, w := range cfg.Warnings {
		if !cfg.Alerts.Telegram.Enabled() && strings.Contains(strings.ToLower(w), "telegram") {
			now := time.Now()
			first, err := store.ClaimNotice(context.WithoutCancel(ctx), telegramNotice, now.UTC().Format("2006-01-02"), now)
			if err != nil {
				a.log.Warn("notices", "err", err)
			}
			if !first && err == nil {
				a.log.Debug(w, "shown", "once a day")
				continue
			}
		}
		a.log.Warn(w)
	}
}

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSystemdUnitsShipped checks the shipped units for what the README
// promises of them: the seven units (run, health and the weekly report,
// each a service and its timer, and serve), services that run as the dedicated
// user with their state directory, keys from an EnvironmentFile, and the
// hardening; timers that start their service. `systemd-analyze verify`
// (in .ci/run) checks the syntax.
func TestSystemdUnitsShipped(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "deploy", "systemd")
	want := map[string][]string{
		"contentpipe-run.service":    {"ExecStart=/usr/local/bin/contentpipe run "},
		"contentpipe-health.service": {"ExecStart=/usr/local/bin/contentpipe health "},
		"contentpipe-report.service": {"ExecStart=/usr/local/bin/contentpipe report\n"},
		"contentpipe.service":        {"ExecStart=/usr/local/bin/contentpipe serve ", "--metrics-addr ", "[Unit]", "[Install]", "Conflicts=contentpipe-run.timer contentpipe-health.timer contentpipe-report.timer"},
		"contentpipe-run.timer":      {"OnCalendar=", "[Install]"},
		"contentpipe-health.timer":   {"OnCalendar=Mon ", "[Install]"},
		"contentpipe-report.timer":   {"OnCalendar=Mon *-*-* 09:00:00", "[Install]"},
	}
	hardening := []string{"User=contentpipe", "StateDirectory=contentpipe", "WorkingDirectory=/var/lib/contentpipe",
		"EnvironmentFile=/etc/contentpipe/contentpipe.env", "ProtectSystem=strict", "NoNewPrivileges=yes", "ProtectHome=yes",
		"PrivateTmp=yes", "CapabilityBoundingSet=\n", "SystemCallFilter=@system-service", "TimeoutStopSec="}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != len(want) {
		t.Errorf("%d files in %s, want the %d units only (systemd-analyze verify reads every file there)", len(entries), dir, len(want))
	}
	for name, lines := range want {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Error(err)
			continue
		}
		s := string(b)
		if strings.HasSuffix(name, ".service") {
			lines = append(lines, hardening...)
		}
		for _, l := range lines {
			if !strings.Contains(s, l) {
				t.Errorf("%s lacks %q", name, strings.TrimSpace(l))
			}
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "deploy/systemd/") || strings.Contains(string(readme), "```ini") {
		t.Error("README.md should point at deploy/systemd/ instead of inline unit copies")
	}
	// The README lists every unit and enables every timer.
	for name := range want {
		if !strings.Contains(string(readme), "`"+name+"`") {
			t.Errorf("README.md does not list %s", name)
		}
	}
	if !strings.Contains(string(readme), "enable --now contentpipe-run.timer contentpipe-health.timer contentpipe-report.timer") {
		t.Error("README.md's systemctl enable line does not enable all three timers")
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestVersionString(t *testing.T) {
	t.Parallel()
	stamp := []debug.BuildSetting{{Key: "vcs.revision", Value: "273b5d7f0123456789abcdef0123456789abcdef"}, {Key: "vcs.modified", Value: "false"}}
	cases := []struct {
		name, ldflags string
		bi            *debug.BuildInfo
		want          string
	}{
		{"ldflags win", "v9.9.9", &debug.BuildInfo{Main: debug.Module{Version: "v1.0.0"}}, "v9.9.9"},
		{"go install @version", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v1.2.0"}}, "v1.2.0"},
		{"clone with VCS stamp", "dev", &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201124252-273b5d7f0123"}, Settings: stamp},
			"v0.0.0-20261201124252-273b5d7f0123 (commit 273b5d7f0123)"},
		{"modified tree", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: []debug.BuildSetting{stamp[0], {Key: "vcs.modified", Value: "true"}}},
			"dev (commit 273b5d7f0123, modified)"},
		{"nothing known", "dev", &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, "dev"},
		{"no build info", "dev", nil, "dev"},
	}
	for _, c := range cases {
		if got := versionString(c.ldflags, c.bi); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestVersionNamesCommit builds the binary with the VCS stamp (as go
// install does in a clone) and expects `version` to name HEAD's commit.
func TestVersionNamesCommit(t *testing.T) {
	t.Parallel()
	head, err := exec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Skipf("not a git checkout: %v", err)
	}
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(filepath.Join(strings.TrimSpace(string(top)), ".git")); err == nil && !fi.IsDir() {
		t.Skip("this checkout is a git worktree (.git is a file), which go build does not VCS-stamp; a clone is")
	}
	bin := filepath.Join(t.TempDir(), "contentpipe")
	cmd := exec.Command("go", "build", "-buildvcs=true", "-o", bin, ".")
	cmd.Env = append(os.Environ(), "GOFLAGS=-buildvcs=true")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build -buildvcs=true: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "commit "+strings.TrimSpace(string(head))[:12]) || strings.Contains(string(out), "contentpipe dev\n") {
		t.Fatalf("version does not name commit %s:\n%s", head[:12], out)
	}
}

// TestBuildWithoutCgoSaysWhy builds with CGO_ENABLED=0 and expects the
// failure to say that cgo and a C compiler are needed.
func TestBuildWithoutCgoSaysWhy(t *testing.T) {
	t.Parallel()
	cmd := exec.Command("go", "build", "-o", filepath.Join(t.TempDir(), "contentpipe"), ".")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatal("CGO_ENABLED=0 go build succeeded; the binary would have no SQLite")
	}
	if !strings.Contains(string(out), "contentpipe_needs_cgo__install_a_C_compiler_and_build_with_CGO_ENABLED_1") {
		t.Fatalf("the failure does not say what is needed:\n%s", out)
	}
}

func TestCompletionScripts(t *testing.T) {
	t.Parallel()
	for shell, want := range map[string]string{"bash": "__start_contentpipe", "zsh": "#compdef contentpipe", "fish": "complete -c contentpipe"} {
		r := run(t, t.TempDir(), nil, "completion", shell)
		if r.code != 0 || !strings.Contains(r.stdout, want) {
			t.Errorf("completion %s: exit %d, no %q in %d bytes\n%s", shell, r.code, want, len(r.stdout), r.stderr)
		}
	}
}

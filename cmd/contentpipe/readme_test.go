package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// readmeBlock returns the lines of the fenced block that follows the
// marker line in README.md.
func readmeBlock(t *testing.T, readme, marker string) []string {
	t.Helper()
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	for i, l := range lines {
		if !strings.Contains(l, marker) {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("README.md: the line after %q does not open a fenced block", marker)
		}
		for j := i + 2; j < len(lines); j++ {
			if strings.HasPrefix(lines[j], "```") {
				return lines[i+2 : j]
			}
		}
		t.Fatalf("README.md: the block after %q is not closed", marker)
	}
	t.Fatalf("README.md has no %q block", marker)
	return nil
}

// loopbackHook is a shell command that points each link's base_url in
// contentpipe.yaml at the simulator of the same name: the one step the
// README's set-up leaves to a test, inserted before the first command that
// starts contentpipe.
func loopbackHook(sims *sim.Set) string {
	var b strings.Builder
	b.WriteString("sed -i")
	for _, f := range []sim.Flavor{sim.FlavorGemini, sim.FlavorGroq, sim.FlavorCerebras, sim.FlavorOpenRouter} {
		fmt.Fprintf(&b, ` -e '/^  - name: %s *\(#.*\)\{0,1\}$/,/base_url:/ s#base_url: *[^ ]*#base_url: "%s"#'`, f, sims.Server(f).BaseURL())
	}
	b.WriteString(" contentpipe.yaml")
	return b.String()
}

// goEnv is the Go build environment of this process (cache, module cache,
// flags), so that the README's `go build` under a temporary HOME reuses the
// caches instead of rebuilding everything.
func goEnv(t *testing.T) []string {
	t.Helper()
	vars := []string{"GOCACHE", "GOMODCACHE", "GOPATH", "GOFLAGS", "GOTOOLCHAIN", "GOPROXY", "CGO_ENABLED"}
	out, err := exec.Command("go", append([]string{"env"}, vars...)...).Output()
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for i := 0; sc.Scan() && i < len(vars); i++ {
		env = append(env, vars[i]+"="+sc.Text())
	}
	return env
}

// TestReadmeRealProviderSetup follows README.md's real-provider set-up as
// written, from the repository root into a fresh HOME: build, copy, the
// fake keys the README shows ("..."), then (the one added step) every
// link's base_url pointed at loopback simulators in the real wire
// formats, and the README's own `./contentpipe run`, which must publish.
func TestReadmeRealProviderSetup(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, filepath.Join(root, "README.md"), "readme-test: real-providers")
	sims, err := sim.StartAll(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sims.Close()
	var script []string
	hooked := false
	for _, l := range block {
		if !hooked && strings.HasPrefix(strings.TrimSpace(l), "./contentpipe") {
			script = append(script, loopbackHook(sims))
			hooked = true
		}
		script = append(script, l)
	}
	if !hooked {
		t.Fatalf("the README block never starts ./contentpipe:\n%s", strings.Join(block, "\n"))
	}
	home := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", strings.Join(script, "\n"))
	cmd.Dir = root
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "TZ=UTC"}, goEnv(t)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the README steps failed: %v\n%s", err, out)
	}
	work := filepath.Join(home, "contentpipe")
	cfg, err := os.ReadFile(filepath.Join(work, "contentpipe.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	links := 0
	for _, m := range regexp.MustCompile(`(?m)^\s+base_url:\s*(\S*)`).FindAllStringSubmatch(string(cfg), -1) {
		links++
		if !strings.HasPrefix(m[1], `"http://127.0.0.1:`) {
			t.Errorf("base_url %s is not a loopback simulator: a link of the example escaped the test", m[1])
		}
	}
	if links != 4 {
		t.Errorf("%d base_url lines rewritten, want one per link (4)", links)
	}
	if !regexp.MustCompile(`run for slot \S+: [1-9]\d* published`).Match(out) {
		t.Errorf("the README's run published nothing:\n%s", out)
	}
	if files, _ := filepath.Glob(filepath.Join(work, "out", "*", "*.md")); len(files) == 0 {
		t.Errorf("no article under %s/out:\n%s", work, out)
	}
}

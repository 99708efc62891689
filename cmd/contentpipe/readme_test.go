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

// readmeSetup runs README.md's real-provider set-up as written, from the
// repository root into a fresh HOME, with every link's base_url pointed
// at sims before the first ./contentpipe (the one added step), followed by
// the lines of extra (more README blocks, run in the same shell). It
// returns the HOME and the output.
func readmeSetup(t *testing.T, sims *sim.Set, extra ...string) (string, []byte) {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	block := readmeBlock(t, filepath.Join(root, "README.md"), "readme-test: real-providers")
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
	script = append(script, extra...)
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
	return home, out
}

// TestReadmeRealProviderSetup follows README.md's real-provider set-up as
// written, from the repository root into a fresh HOME: build, copy, the
// fake keys the README shows ("..."), then (the one added step) every
// link's base_url pointed at loopback simulators in the real wire
// formats, and the README's own `./contentpipe run`, which must publish.
func TestReadmeRealProviderSetup(t *testing.T) {
	t.Parallel()
	sims, err := sim.StartAll(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sims.Close()
	home, out := readmeSetup(t, sims)
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

// TestReadmeCron follows README.md's cron set-up as written: the
// real-provider set-up (links on loopback simulators), the env-file block
// (the keys in contentpipe.env, mode 0600, named by env_file:), then each
// crontab line's command the way cron starts it — `sh -c` with nothing in
// the environment but HOME. Every line must exit 0, the run and health
// lines must write their metrics files, and the keys must have reached
// the simulators from the file (the process environment has none).
func TestReadmeCron(t *testing.T) {
	t.Parallel()
	sims, err := sim.StartAll(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sims.Close()
	readme := filepath.Join("..", "..", "README.md")
	home, out := readmeSetup(t, sims, readmeBlock(t, readme, "readme-test: cron-env")...)
	if !regexp.MustCompile(`(?m)^ok\b`).Match(out) {
		t.Fatalf("`env -i … config check` of the README did not say ok:\n%s", out)
	}
	before := 0
	for _, f := range []sim.Flavor{sim.FlavorGemini, sim.FlavorGroq, sim.FlavorCerebras, sim.FlavorOpenRouter} {
		before += sims.Server(f).Requests()
	}
	work := filepath.Join(home, "contentpipe")
	lines := 0
	for _, l := range readmeBlock(t, readme, "readme-test: crontab") {
		if strings.HasPrefix(strings.TrimSpace(l), "#") || strings.TrimSpace(l) == "" {
			continue
		}
		fields := strings.Fields(l)
		if len(fields) < 6 {
			t.Fatalf("crontab line %q has no command after the five time fields", l)
		}
		command := strings.TrimSpace(l)
		for _, f := range fields[:5] {
			command = strings.TrimSpace(strings.TrimPrefix(command, f))
		}
		lines++
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "env", "-i", "HOME="+home, "sh", "-c", command)
		cmd.Dir = "/"
		b, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			logs, _ := filepath.Glob(filepath.Join(work, "*.log"))
			var all strings.Builder
			for _, f := range logs {
				c, _ := os.ReadFile(f)
				fmt.Fprintf(&all, "== %s\n%s", filepath.Base(f), c)
			}
			t.Fatalf("cron line %q: %v\n%s\n%s", command, err, b, all.String())
		}
	}
	if lines != 3 {
		t.Errorf("%d crontab lines run, want run, health and report", lines)
	}
	for _, f := range []string{"metrics/run.prom", "metrics/health.prom"} {
		b, err := os.ReadFile(filepath.Join(work, f))
		if err != nil || !strings.Contains(string(b), "contentpipe_") {
			t.Errorf("%s after the cron lines: %v\n%s", f, err, b)
		}
	}
	after := 0
	for _, f := range []sim.Flavor{sim.FlavorGemini, sim.FlavorGroq, sim.FlavorCerebras, sim.FlavorOpenRouter} {
		after += sims.Server(f).Requests()
	}
	if after == before {
		t.Error("the cron lines called no simulator: the keys from env_file never reached a provider")
	}
	if b, _ := os.ReadFile(filepath.Join(work, "report.log")); len(strings.TrimSpace(string(b))) == 0 {
		t.Error("report.log is empty after the report line")
	}
}

// TestReadmeDemo runs README.md's first two blocks as printed, in a fresh
// directory: `go run ./cmd/contentpipe` is the built binary (README says
// the two are the same), `go test` is left out (it is the test run
// itself), and the prompts test of README's Prompts section follows, in
// README's order. Every line must exit 0; the sql line must show the
// recorded calls.
func TestReadmeDemo(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sqlite3"); err != nil {
		t.Skip("sqlite3 (the CLI the README uses) is not installed")
	}
	readme := filepath.Join("..", "..", "README.md")
	lines := append(readmeBlock(t, readme, "readme-test: demo "), readmeBlock(t, readme, "readme-test: demo-look")...)
	lines = append(lines, "go run ./cmd/contentpipe prompts test --demo")
	bin := binary(t)
	var script []string
	for _, l := range lines {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") || strings.HasPrefix(l, "go test") {
			continue
		}
		script = append(script, strings.Replace(l, "go run ./cmd/contentpipe", bin, 1))
	}
	if len(script) < 4 {
		t.Fatalf("README's demo blocks have %d commands:\n%s", len(script), strings.Join(lines, "\n"))
	}
	dir := t.TempDir()
	for _, l := range script {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		cmd := exec.CommandContext(ctx, "sh", "-c", l)
		cmd.Dir = dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TZ=UTC"}
		out, err := cmd.CombinedOutput()
		cancel()
		if err != nil {
			t.Fatalf("README line %q: %v\n%s", l, err, out)
		}
		if strings.Contains(l, " sql ") && !strings.Contains(string(out), "gemini") {
			t.Errorf("README's sql line shows no gemini calls:\n%s", out)
		}
	}
}

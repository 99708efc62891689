package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestPowerCut kills a run inside each step of its first publication and
// then does what a power cut would: everything the process wrote to the
// database's WAL after the WAL's last fsync is dropped (the file is cut to
// its last synced length, the shared-memory index goes), before the next
// run. What the process fsynced stays — the markdown file, or the webhook
// delivery the receiver got. One file per job and one body per
// Idempotency-Key must survive that: the publishing mark has to reach the
// disk before the side effect (with synchronous=NORMAL it did not, and the
// job was regenerated under a new title). The synced lengths come from
// strace's record of the run's pwrite64/fdatasync/fsync calls.
func TestPowerCut(t *testing.T) {
	if testing.Short() {
		t.Skip("power cut: skipped with -short")
	}
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("power cut: strace is not installed (apt-get install strace); .ci/run installs it")
	}
	points := []string{"markdown: temp file synced@1", "markdown: renamed@1", "markdown: directories synced@1",
		"before commit: finish job@1", "committed: finish job@1", "webhook: sending@1", "webhook: answered@1"}
	cuts := 0
	for _, p := range points {
		kind := "markdown"
		if strings.HasPrefix(p, "webhook") {
			kind = "webhook"
		}
		w, recv := crashPointWorld(t, kind)
		trace := filepath.Join(t.TempDir(), "trace")
		env := append(append([]string{}, w.env...), "CONTENTPIPE_CRASH_AT="+p)
		args := []string{"-f", "-qq", "-s", "0", "-y", "-e", "trace=pwrite64,pwritev,fsync,fdatasync", "-e", "signal=none", "-o", trace, binary(t), "run"}
		if r := runProgram(t, w.dir, env, strace, args...); r.code == 0 {
			t.Fatalf("%s: the run was not killed at %s:\n%s", kind, p, r.stdout)
		}
		db := filepath.Join(w.dir, "data", "pipeline.db")
		synced, written := walSynced(t, trace, db+"-wal")
		if synced == 0 {
			t.Fatalf("%s at %s: no fsync of the WAL in the trace: the trace was not read", kind, p)
		}
		if err := os.Truncate(db+"-wal", synced); err != nil {
			t.Fatal(err)
		}
		os.Remove(db + "-shm")
		t.Logf("%s killed at %s: WAL cut from %d to its synced %d bytes", kind, p, written, synced)
		cuts++
		checkAtMostOnce(t, w, recv, fmt.Sprintf("power cut at %s", p))
	}
	t.Logf("%d power cuts: 0 doubles, 0 lost", cuts)
}

// runProgram runs prog with args in dir, like run does for the binary.
func runProgram(t *testing.T, dir string, env []string, prog string, args ...string) result {
	t.Helper()
	cmd := exec.Command(prog, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "TZ=UTC"}, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("%s: %v", prog, err)
	}
	return result{code: code, stdout: string(out)}
}

var (
	traceCall   = regexp.MustCompile(`^(?:\[pid\s+)?(\d+)\]?\s+(pwrite64|pwritev|write|fsync|fdatasync)\(\d+<([^>]*)>(.*)$`)
	traceResume = regexp.MustCompile(`^(?:\[pid\s+)?(\d+)\]?\s+<\.\.\. (fsync|fdatasync|pwrite64|pwritev|write) resumed>.*= (-?\d+)`)
	traceArgs   = regexp.MustCompile(`, (\d+), (\d+)\)?(?: <unfinished \.\.\.>)?(?:\s*=\s*(-?\d+))?`)
)

// walSynced reads an strace record and returns, for the file at path, the
// length it had reached at its last completed fsync/fdatasync (synced) and
// the furthest byte written at all (written).
func walSynced(t *testing.T, trace, path string) (synced, written int64) {
	t.Helper()
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	abs, _ := filepath.EvalSymlinks(filepath.Dir(path))
	want := filepath.Join(abs, filepath.Base(path))
	pendingSync := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if m := traceResume.FindStringSubmatch(line); m != nil {
			if (m[2] == "fsync" || m[2] == "fdatasync") && pendingSync[m[1]] && m[3] == "0" {
				synced = written
			}
			delete(pendingSync, m[1])
			continue
		}
		m := traceCall.FindStringSubmatch(line)
		if m == nil || (m[3] != want && m[3] != path) {
			continue
		}
		switch m[2] {
		case "fsync", "fdatasync":
			if strings.Contains(m[4], "<unfinished") {
				pendingSync[m[1]] = true
			} else if strings.HasSuffix(strings.TrimSpace(m[4]), "= 0") {
				synced = written
			}
		case "pwrite64", "pwritev":
			a := traceArgs.FindStringSubmatch(m[4])
			if a == nil {
				t.Fatalf("cannot read the write in %q", line)
			}
			n, _ := strconv.ParseInt(a[1], 10, 64)
			off, _ := strconv.ParseInt(a[2], 10, 64)
			if m[2] == "pwritev" {
				n = 0 // pwritev's length is in its iovec; SQLite does not use it
			}
			written = max(written, off+n)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return synced, written
}

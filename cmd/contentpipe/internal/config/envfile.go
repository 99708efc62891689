package config

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// envFile reads the file env_file: names (relative to the config's
// directory) and makes the loader's lookups fall back to it: a variable
// set (non-empty) in the process environment wins over the file, so that
// a one-off `GEMINI_API_KEY=… contentpipe health` or systemd's
// EnvironmentFile= still decide. The file must be mode 0600 or stricter
// (it holds the keys); its values are never printed, not even in the
// message about a malformed line.
func (p *loader) envFile() {
	raw := p.cfg.EnvFile
	p.cfg.EnvFile = ""
	if strings.TrimSpace(raw) == "" {
		p.fail("env_file", "remove the key, or name the file holding KEY=VALUE lines, e.g. env_file: contentpipe.env", "env_file: must not be empty")
		return
	}
	abs := resolvePath(p.cfg.Dir, raw)
	shown := raw // as the caller would type it: relative to the config file as named
	if !filepath.IsAbs(raw) {
		shown = filepath.Join(filepath.Dir(p.t.file), raw)
	}
	p.cfg.EnvFile = abs
	st, err := os.Stat(abs)
	if err != nil {
		fix := "check the file's permissions (the user running contentpipe must read it)"
		if errors.Is(err, fs.ErrNotExist) {
			fix = fmt.Sprintf("create it, mode 0600, and put one KEY=VALUE a line in it: install -m 0600 /dev/null %s (relative paths are relative to %s)", shown, p.cfg.Dir)
		}
		p.fail("env_file", fix, "env_file: %s: %v", shown, unwrapPathErr(err))
		return
	}
	if !st.Mode().IsRegular() {
		p.fail("env_file", "name a file of KEY=VALUE lines", "env_file: %s is not a regular file", shown)
		return
	}
	if perm := st.Mode().Perm(); perm&0o077 != 0 {
		p.fail("env_file", fmt.Sprintf("chmod 600 %s (only its owner may read the keys)", shown),
			"env_file: %s is mode %04o: readable by others; it holds secrets", shown, perm)
		return
	}
	data, err := os.ReadFile(abs)
	if err != nil {
		p.fail("env_file", "check the file's permissions (the user running contentpipe must read it)", "env_file: %s: %v", shown, unwrapPathErr(err))
		return
	}
	vars, errs := parseEnvFile(shown, data)
	p.t.errs = append(p.t.errs, errs...)
	outer := p.opt.getenv
	p.opt.Getenv = func(name string) string {
		if v := outer(name); v != "" {
			return v
		}
		return vars[name]
	}
}

// parseEnvFile reads KEY=VALUE lines: blank lines and lines starting with
// # are skipped, an optional leading `export ` is allowed, and a value in
// matching single or double quotes loses them (the subset of shell and of
// systemd's EnvironmentFile= both read the same way). A # inside a value
// is part of it. A malformed line is an *Error naming file:line, never its
// content.
func parseEnvFile(file string, data []byte) (map[string]string, Errors) {
	vars := map[string]string{}
	var errs Errors
	seen := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(strings.TrimSuffix(sc.Text(), "\r"))
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		name, value, ok := strings.Cut(line, "=")
		name = strings.TrimSpace(name)
		switch {
		case !ok:
			errs = append(errs, &Error{File: file, Line: n, Msg: "not a KEY=VALUE line (the line is not shown: it may hold a secret)",
				Fix: "write NAME=value, e.g. GEMINI_API_KEY=your-key, or start the line with # for a comment"})
			continue
		case !envNameRE.MatchString(name):
			errs = append(errs, &Error{File: file, Line: n, Msg: "the name before = is not an environment variable name (upper-case letters, digits and _; not shown: it may be a key)",
				Fix: "write NAME=value with the variable the config names, e.g. GEMINI_API_KEY=your-key"})
			continue
		}
		if first, dup := seen[name]; dup {
			errs = append(errs, &Error{File: file, Line: n, Msg: fmt.Sprintf("%s is set twice (first at line %d)", name, first),
				Fix: "keep one line per variable"})
			continue
		}
		seen[name] = n
		value = strings.TrimSpace(value)
		if len(value) >= 2 && (value[0] == '"' || value[0] == '\'') && value[len(value)-1] == value[0] {
			value = value[1 : len(value)-1]
		}
		vars[name] = value
	}
	if err := sc.Err(); err != nil {
		errs = append(errs, &Error{File: file, Msg: fmt.Sprintf("read: %v", err), Fix: "keep each line under 1 MiB"})
	}
	return vars, errs
}

// envFileHint is the part of a "variable not set" fix that names the
// env file, when the config has one: ", or add NAME=... to FILE,".
func (p *loader) envFileHint(name string) string {
	if p.cfg.EnvFile == "" {
		return ""
	}
	return fmt.Sprintf(", or add %s=... to %s,", name, p.cfg.EnvFile)
}

package publish

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"

	"github.com/goccy/go-yaml"

	"github.com/contentpipe/contentpipe/chain"
)

// files is the delivery that every file-writing target (Markdown, Hugo,
// Jekyll) shares, so the at-most-once rules are written once:
//
//   - Prepare renders the article and chooses its path: the plain path
//     when it is free or already holds this job's file, else the suffixed
//     path (the plain name with the job's hash); the plain name is reserved
//     for the first job that prepares it (a hidden ".<name>.reserved"
//     file), so two jobs of one slug never both choose it.
//   - Deliver writes exactly the prepared bytes to exactly the prepared
//     path, atomically (temporary file in the same directory, write, fsync,
//     rename, fsync of the directories), and never overwrites a file of
//     another job; a file there that names this job (job_id in its front
//     matter) is this job's earlier delivery and is left as it is.
//
// kind names the target in errors and in the crash tests' step names.
type files struct {
	kind     Kind
	plain    func(a chain.Article) string              // the path named by the slug alone
	suffixed func(a chain.Article) string              // the same with the job's hash
	render   func(a chain.Article, path string) []byte // path: the one chosen
	step     func(name string)
}

// filesMu serialises resolving a path and writing it, so two jobs with
// the same slug published concurrently in one process cannot clobber each
// other.
var filesMu sync.Mutex

// frontMatterLimit bounds how much of an existing file is read to find its
// front matter.
const frontMatterLimit = 64 << 10

func (f files) stepped(name string) {
	if f.step != nil {
		f.step(string(f.kind) + ": " + name)
	}
}

func (f files) location(a chain.Article) string {
	p, _, _ := f.resolve(a)
	return p
}

func (f files) exists(ctx context.Context, a chain.Article) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	_, ok, err := f.resolve(a)
	if err != nil {
		return false, fmt.Errorf("%s exists: %w", f.kind, err)
	}
	return ok, nil
}

func (f files) prepare(ctx context.Context, a chain.Article) (chain.Delivery, error) {
	if a.JobID == "" {
		return chain.Delivery{}, fmt.Errorf("publish %s: article has no job id", f.kind)
	}
	if err := ctx.Err(); err != nil {
		return chain.Delivery{}, fmt.Errorf("publish %s %s: %w", f.kind, a.JobID, err)
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	path, found, err := f.resolve(a)
	if err != nil {
		return chain.Delivery{}, fmt.Errorf("publish %s %s: %w", f.kind, a.JobID, err)
	}
	if !found && path == f.plain(a) {
		// Two jobs with one slug may both find the plain name free before
		// either has delivered (other processes, or job.parallel), and the
		// path is final once the job is marked: the plain name goes to the
		// job that reserves it first, the other takes its suffixed name.
		won, err := reserve(path, a.JobID)
		if err != nil {
			return chain.Delivery{}, fmt.Errorf("publish %s %s: %w", f.kind, a.JobID, err)
		}
		if !won {
			path = f.suffixed(a)
		}
	}
	return chain.Delivery{JobID: a.JobID, Location: path, Body: f.render(a, path)}, nil
}

// publish is prepare, then deliver: a file target's Publish.
func (f files) publish(ctx context.Context, a chain.Article) (string, error) {
	d, err := f.prepare(ctx, a)
	if err != nil {
		return "", err
	}
	return f.deliver(ctx, d)
}

func (f files) deliver(ctx context.Context, d chain.Delivery) (string, error) {
	if d.JobID == "" || d.Location == "" {
		return "", fmt.Errorf("publish %s: delivery has no job id or location", f.kind)
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("publish %s %s: %w", f.kind, d.JobID, err)
	}
	filesMu.Lock()
	defer filesMu.Unlock()
	owner, taken, err := fileJobID(d.Location)
	if err != nil {
		return "", fmt.Errorf("publish %s %s: %w", f.kind, d.JobID, err)
	}
	if taken {
		if owner == d.JobID {
			return d.Location, nil
		}
		return "", fmt.Errorf("publish %s %s: %s already holds another article (job %q); move it away, then rerun", f.kind, d.JobID, d.Location, owner)
	}
	if err := writeAtomic(d.Location, d.Body, f.stepped); err != nil {
		return "", fmt.Errorf("publish %s %s: %w", f.kind, d.JobID, err)
	}
	// The file names its job now: the reservation, if any, has done its
	// work (a leftover one only sends a later job of that slug to its
	// suffixed name).
	os.Remove(reservationOf(d.Location))
	return d.Location, nil
}

// resolve finds where a goes: the plain path when it is free or already
// holds a's job, else the hash-suffixed path. found reports whether the
// returned path already holds a's job. On error path is the plain path.
func (f files) resolve(a chain.Article) (path string, found bool, err error) {
	plain, suffixed := f.plain(a), f.suffixed(a)

	plainOwner, plainTaken, err := fileJobID(plain)
	if err != nil {
		return plain, false, err
	}
	if plainTaken && plainOwner == a.JobID && a.JobID != "" {
		return plain, true, nil
	}
	sufOwner, sufTaken, err := fileJobID(suffixed)
	if err != nil {
		return plain, false, err
	}
	if sufTaken && sufOwner == a.JobID && a.JobID != "" {
		return suffixed, true, nil
	}
	switch {
	case !plainTaken:
		return plain, false, nil
	case !sufTaken:
		return suffixed, false, nil
	}
	return plain, false, fmt.Errorf("%s and %s both hold other articles", plain, suffixed)
}

// articleSlug is the slug of a: Article.Slug, else its title's (as text:
// without the tags a hostile title may carry), else its
// topic id's (a title in a script without transliteration), else
// "article-<hash of the job id>".
func articleSlug(a chain.Article) string {
	for _, s := range []string{a.Slug, plainText(a.Title), a.Topic} {
		if v := slugify(s, a.Language); v != "" {
			return v
		}
	}
	return "article-" + jobHash(a.JobID)
}

// jobHash is the first 8 hex digits of sha256(jobID).
func jobHash(jobID string) string {
	sum := sha256.Sum256([]byte(jobID))
	return hex.EncodeToString(sum[:4])
}

// bundleIndex is the file name of a page bundle's content.
const bundleIndex = "index.md"

// frontMatter writes YAML front matter, one key a line, values quoted.
type frontMatter struct{ b bytes.Buffer }

func newFrontMatter() *frontMatter {
	f := &frontMatter{}
	f.b.WriteString("---\n")
	return f
}

// str writes key: "v".
func (f *frontMatter) str(key, v string) { f.b.WriteString(key + ": " + yamlQuote(v) + "\n") }

// raw writes key: v as it is (a number, a boolean, a timestamp).
func (f *frontMatter) raw(key, v string) { f.b.WriteString(key + ": " + v + "\n") }

// list writes key: ["a", "b"].
func (f *frontMatter) list(key string, vs []string) {
	q := make([]string, len(vs))
	for i, v := range vs {
		q[i] = yamlQuote(v)
	}
	f.b.WriteString(key + ": [" + strings.Join(q, ", ") + "]\n")
}

// origin writes the keys that say where the article came from: provider,
// model, quality_score and job_id (which Deliver reads back).
func (f *frontMatter) origin(a chain.Article) {
	f.str("provider", oneLine(a.Provider))
	f.str("model", oneLine(a.Model))
	f.raw("quality_score", formatScore(a.QualityScore))
	f.str("job_id", a.JobID)
}

// end closes the front matter and appends body.
func (f *frontMatter) end(body string) []byte {
	f.b.WriteString("---\n")
	f.b.WriteString(body)
	return f.b.Bytes()
}

// terms are a list of taxonomy terms as plain text, blanks and repeats
// (ignoring case) dropped, in their order.
func terms(vs ...string) []string {
	out := []string{}
	seen := map[string]bool{}
	for _, v := range vs {
		v = plainText(v)
		if k := strings.ToLower(v); v != "" && !seen[k] {
			seen[k] = true
			out = append(out, v)
		}
	}
	return out
}

// slugOfPath is the slug a chosen path names: its base name without ".md"
// (for a bundle, its directory's), without the Jekyll date prefix.
func slugOfPath(path string, datePrefix bool) string {
	name := strings.TrimSuffix(filepath.Base(path), ".md")
	if filepath.Base(path) == bundleIndex {
		name = filepath.Base(filepath.Dir(path))
	}
	if datePrefix && len(name) > len("2006-01-02-") {
		name = name[len("2006-01-02-"):]
	}
	return name
}

// reservationOf is the hidden file that reserves path's name for one job
// between Prepare and the delivery.
func reservationOf(path string) string {
	if filepath.Base(path) == bundleIndex {
		// A page bundle: the name reserved is its directory's.
		dir := filepath.Dir(path)
		return filepath.Join(filepath.Dir(dir), "."+filepath.Base(dir)+".reserved")
	}
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".reserved")
}

// reserve takes path's name for job (creating the reservation file
// exclusively, which is atomic across processes on one file system) and
// reports whether job holds it: true when it was free or is already job's.
func reserve(path, job string) (bool, error) {
	res := reservationOf(path)
	if err := os.MkdirAll(filepath.Dir(res), 0o755); err != nil {
		return false, fmt.Errorf("create dir: %w", err)
	}
	f, err := os.OpenFile(res, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		_, werr := f.WriteString(job)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(res)
			return false, fmt.Errorf("reserve %s: %w", path, werr)
		}
		return true, nil
	}
	if !errors.Is(err, fs.ErrExist) {
		return false, fmt.Errorf("reserve %s: %w", path, err)
	}
	b, err := os.ReadFile(res)
	if err != nil {
		return false, fmt.Errorf("reserve %s: %w", path, err)
	}
	return string(b) == job, nil
}

// fileJobID reads the job_id from the front matter of the file at path.
// taken is false when no file is there; a file without front matter or
// job_id is taken with an empty id.
func fileJobID(path string) (id string, taken bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	fm, err := readFrontMatter(io.LimitReader(f, frontMatterLimit))
	if err != nil {
		return "", true, nil // not ours to interpret: treat as a foreign file
	}
	var v struct {
		JobID string `yaml:"job_id"`
	}
	if err := yaml.Unmarshal(fm, &v); err != nil {
		return "", true, nil
	}
	return v.JobID, true, nil
}

// readFrontMatter returns the YAML between the opening and closing "---"
// lines at the start of r.
func readFrontMatter(r io.Reader) ([]byte, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), frontMatterLimit)
	if !sc.Scan() || strings.TrimRight(sc.Text(), "\r") != "---" {
		return nil, errors.New("no front matter")
	}
	var buf bytes.Buffer
	for sc.Scan() {
		line := strings.TrimRight(sc.Text(), "\r")
		if line == "---" {
			return buf.Bytes(), nil
		}
		buf.WriteString(line)
		buf.WriteByte('\n')
	}
	return nil, errors.New("unterminated front matter")
}

// yamlQuote returns s as a YAML double-quoted scalar: '"' and '\' are
// escaped, and so is every character YAML does not allow unescaped
// (control characters, DEL, C1 controls, U+2028/2029, invalid UTF-8).
func yamlQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range strings.ToValidUTF8(s, "\uFFFD") {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x20, r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029, r == 0xfeff:
			fmt.Fprintf(&b, `\u%04X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// writeAtomic writes data to path through a temporary file in the same
// directory: write, fsync, chmod 0644, rename, fsync the directory. The
// temporary file is removed on every error.
func writeAtomic(path string, data []byte, step func(string)) (err error) {
	dir := filepath.Dir(path)
	// The directories created here (a new slot, section or bundle) need
	// their own entries made durable, up to the first one that existed.
	top := dir
	for {
		if _, err := os.Stat(top); err == nil || filepath.Dir(top) == top {
			break
		}
		top = filepath.Dir(top)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create dir: %w", err)
	}
	// A writer killed before its rename leaves its temp file behind. Only
	// the job that owns path writes it (the job is claimed by one run), so
	// any temp file of this path is such a leftover: remove it.
	if old, _ := filepath.Glob(filepath.Join(dir, "."+globEscape(filepath.Base(path))+".tmp-*")); len(old) > 0 {
		for _, o := range old {
			os.Remove(o)
		}
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("create temp file: %w", err)
	}
	tmp := f.Name()
	closed := false
	defer func() {
		if err != nil {
			if !closed {
				f.Close()
			}
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", tmp, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("chmod %s: %w", tmp, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", tmp, err)
	}
	closed = true
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %s: %w", tmp, err)
	}
	step("temp file synced")
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename to %s: %w", path, err)
	}
	step("renamed")
	// The file's directory, its parent (Prepare may have created the
	// directory for a reservation) and each new one's entry in its parent.
	for d := dir; ; d = filepath.Dir(d) {
		if err := syncDir(d); err != nil {
			// The file is in place; a retry will find it by its job_id.
			return fmt.Errorf("sync dir %s: %w", d, err)
		}
		if d != dir && len(d) <= len(top) || filepath.Dir(d) == d {
			break
		}
	}
	step("directories synced")
	return nil
}

// syncDir fsyncs a directory so that a rename in it is durable. File systems
// that cannot sync directories (EINVAL, ENOTSUP) are accepted.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOTSUP) {
		return err
	}
	return nil
}

// globEscape escapes the pattern characters of filepath.Match in s.
func globEscape(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`)
	return r.Replace(s)
}

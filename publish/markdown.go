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
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/goccy/go-yaml"

	"github.com/contentpipe/contentpipe/chain"
)

// Markdown publishes each article as one Markdown file,
// <Dir>/<slot>/<slug>.md, with YAML front matter (title, date, category,
// provider, model, quality_score, job_id) followed by "# Title" and one
// "## h2" block per section.
//
// The slug is Article.Slug when set, else Slug(Article.Title), else the
// topic id. When the path already holds a file of a different job (or a file
// without a job_id), the article goes to <slug>-<8 hex of sha256(job id)>.md
// instead; Location and Exists apply the same rule, so all three agree. The
// location that Publish returns is the authoritative one.
//
// Files are written atomically (temporary file in the same directory, write,
// fsync, rename, fsync of the directory) with mode 0644; directories are
// created with mode 0755. The zero Dir is the working directory. Publishing
// is serialised inside one process; across processes contentpipe's run lock
// keeps two runs from publishing at once.
type Markdown struct {
	Dir string
	// Step, when set, is called at each durable step of a delivery (temp
	// file synced, renamed): the crash tests kill the process there.
	Step func(step string)
}

func (m *Markdown) step(name string) {
	if m.Step != nil {
		m.Step(name)
	}
}

var _ chain.Publisher = (*Markdown)(nil)

// markdownMu serialises resolving a path and writing it, so two jobs with
// the same slug published concurrently in one process cannot clobber each
// other.
var markdownMu sync.Mutex

// frontMatterLimit bounds how much of an existing file is read to find its
// front matter.
const frontMatterLimit = 64 << 10

// Location returns the path the article is (or will be) published at.
func (m *Markdown) Location(a chain.Article) string {
	p, _, _ := m.resolve(a)
	return p
}

// Exists reports whether the file at Location holds this job's article
// (its front matter job_id equals a.JobID).
func (m *Markdown) Exists(ctx context.Context, a chain.Article) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	_, ok, err := m.resolve(a)
	if err != nil {
		return false, fmt.Errorf("markdown exists: %w", err)
	}
	return ok, nil
}

// Publish writes the article and returns its path: Prepare, then Deliver.
// When the job's file is already there it returns its path without
// rewriting it. No temporary file is left behind on error.
func (m *Markdown) Publish(ctx context.Context, a chain.Article) (string, error) {
	d, err := m.Prepare(ctx, a)
	if err != nil {
		return "", err
	}
	return m.Deliver(ctx, d)
}

// Prepare renders a (Document) and chooses its path (Location).
func (m *Markdown) Prepare(ctx context.Context, a chain.Article) (chain.Delivery, error) {
	if a.JobID == "" {
		return chain.Delivery{}, errors.New("publish markdown: article has no job id")
	}
	if err := ctx.Err(); err != nil {
		return chain.Delivery{}, fmt.Errorf("publish markdown %s: %w", a.JobID, err)
	}
	markdownMu.Lock()
	defer markdownMu.Unlock()
	path, found, err := m.resolve(a)
	if err != nil {
		return chain.Delivery{}, fmt.Errorf("publish markdown %s: %w", a.JobID, err)
	}
	if !found && path == m.plainPath(a) {
		// Two jobs with one slug may both find the plain name free before
		// either has delivered (other processes, or job.parallel), and the
		// path is final once the job is marked: the plain name goes to the
		// job that reserves it first, the other takes its suffixed name.
		won, err := reserve(path, a.JobID)
		if err != nil {
			return chain.Delivery{}, fmt.Errorf("publish markdown %s: %w", a.JobID, err)
		}
		if !won {
			path = m.suffixedPath(a)
		}
	}
	return chain.Delivery{JobID: a.JobID, Location: path, Body: Document(a)}, nil
}

// reservationOf is the hidden file that reserves path's name for one job
// between Prepare and the delivery.
func reservationOf(path string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".reserved")
}

// reserve takes path's name for job (creating the reservation file
// exclusively, which is atomic across processes on one file system) and
// reports whether job holds it: true when it was free or is already job's.
func reserve(path, job string) (bool, error) {
	res := reservationOf(path)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
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

// Deliver writes d.Body to exactly d.Location, atomically, and returns the
// path. A file already there that carries d's job id is d's own earlier
// delivery and is left as it is; a file of another job (or without a job
// id) is never overwritten: that is an error.
func (m *Markdown) Deliver(ctx context.Context, d chain.Delivery) (string, error) {
	if d.JobID == "" || d.Location == "" {
		return "", errors.New("publish markdown: delivery has no job id or location")
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("publish markdown %s: %w", d.JobID, err)
	}
	markdownMu.Lock()
	defer markdownMu.Unlock()
	owner, taken, err := fileJobID(d.Location)
	if err != nil {
		return "", fmt.Errorf("publish markdown %s: %w", d.JobID, err)
	}
	if taken {
		if owner == d.JobID {
			return d.Location, nil
		}
		return "", fmt.Errorf("publish markdown %s: %s already holds another article (job %q); move it away, then rerun", d.JobID, d.Location, owner)
	}
	if err := writeAtomic(d.Location, d.Body, m.step); err != nil {
		return "", fmt.Errorf("publish markdown %s: %w", d.JobID, err)
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
func (m *Markdown) resolve(a chain.Article) (path string, found bool, err error) {
	plain, suffixed := m.plainPath(a), m.suffixedPath(a)

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

// plainPath is a's file named by its slug alone; suffixedPath the same
// name with the job's hash, for when another job holds the plain one.
func (m *Markdown) plainPath(a chain.Article) string {
	return filepath.Join(m.Dir, slotDir(a), articleSlug(a)+".md")
}

func (m *Markdown) suffixedPath(a chain.Article) string {
	return filepath.Join(m.Dir, slotDir(a), articleSlug(a)+"-"+jobHash(a.JobID)+".md")
}

// articleSlug is the file name (without .md) for a.
func articleSlug(a chain.Article) string {
	for _, s := range []string{a.Slug, a.Title, a.Topic} {
		if v := slugify(s); v != "" {
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

// slotDir is the directory name for a's slot: Article.Slot restricted to
// [A-Za-z0-9_-], else the UTC date of Article.Date, else "undated".
func slotDir(a chain.Article) string {
	s := strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || (r < utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return r
		}
		return '-'
	}, a.Slot)
	if strings.Trim(s, "-") != "" {
		return s
	}
	if !a.Date.IsZero() {
		return a.Date.UTC().Format("2006-01-02")
	}
	return "undated"
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

// Document renders the whole Markdown file for a: front matter and body.
// The same Article always gives the same bytes.
func Document(a chain.Article) []byte {
	var b bytes.Buffer
	b.WriteString("---\n")
	b.WriteString("title: " + yamlQuote(oneLine(a.Title)) + "\n")
	b.WriteString("date: " + a.Date.UTC().Format(time.RFC3339) + "\n")
	b.WriteString("category: " + yamlQuote(oneLine(a.Category)) + "\n")
	b.WriteString("provider: " + yamlQuote(oneLine(a.Provider)) + "\n")
	b.WriteString("model: " + yamlQuote(oneLine(a.Model)) + "\n")
	b.WriteString("quality_score: " + formatScore(a.QualityScore) + "\n")
	b.WriteString("job_id: " + yamlQuote(a.JobID) + "\n")
	b.WriteString("---\n\n")
	b.WriteString(Body(a))
	return b.Bytes()
}

// Body renders the article without front matter: "# Title", then for each
// section "## h2" and its paragraphs separated by blank lines. It ends with
// one newline.
func Body(a chain.Article) string {
	var b strings.Builder
	if t := oneLine(a.Title); t != "" {
		b.WriteString("# " + t + "\n")
	}
	for _, s := range a.Sections {
		if h := oneLine(strings.TrimLeft(strings.TrimSpace(s.H2), "#")); h != "" {
			b.WriteString("\n## " + h + "\n")
		}
		for _, p := range paragraphs(s.Body) {
			b.WriteString("\n" + p + "\n")
		}
	}
	return b.String()
}

var blankLines = regexp.MustCompile(`\n[ \t]*\n`)

// paragraphs splits a section body on blank lines, trimming each paragraph
// and dropping empty ones.
func paragraphs(body string) []string {
	body = strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\r", "\n")
	var out []string
	for _, p := range blankLines.Split(body, -1) {
		lines := strings.Split(strings.TrimSpace(p), "\n")
		for i, l := range lines {
			lines[i] = strings.TrimRight(l, " \t")
		}
		if p := strings.Join(lines, "\n"); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// oneLine collapses all whitespace runs (newlines included) to one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// formatScore writes a quality score as a YAML number (NaN/Inf as 0).
func formatScore(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', -1, 64)
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
	step("markdown: temp file synced")
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename to %s: %w", path, err)
	}
	step("markdown: renamed")
	// The slot directory may be new: its own entry must be durable too.
	for _, d := range []string{dir, filepath.Dir(dir)} {
		if err := syncDir(d); err != nil {
			// The file is in place; a retry will find it by its job_id.
			return fmt.Errorf("sync dir %s: %w", d, err)
		}
	}
	step("markdown: directories synced")
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

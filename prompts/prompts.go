// Package prompts renders contentpipe's versioned prompt templates. The
// templates are embedded in the binary (templates/<family>/<name>.tmpl) and
// can be overridden file by file from a directory with the same layout.
//
// Templates are named by their directory. There is one default per provider
// family, "gemini" and "openai", because the models need different wording:
// the gemini adapter enforces the article shape with responseJsonSchema,
// while OpenAI-compatible providers may only offer json_object mode, which
// needs the word JSON in the prompt and enforces no shape. A link may name
// another template for its model (config `prompt:`): "llama" for a small
// instruction model (Llama 3.3 70B), "gpt-oss" for a reasoning model
// (gpt-oss-120b). A family template has article.tmpl and health.tmpl; a
// named template needs article.tmpl and borrows its link's family health
// prompt when it has no health.tmpl. Each file defines a "system" and a
// "user" block.
//
// Versions: the first line of every template file is
//
//	{{/* version: article@1 */}}
//
// (health@N for health.tmpl). Rendered.Version is that version plus the
// template name, e.g. "article@1/gemini" or "article@1/llama", and is
// recorded on every call. Editing a template means bumping its number; Load
// refuses an override whose text differs from the embedded file of the same
// version. An override directory may also add templates of its own
// (dir/<name>/article.tmpl).
//
// Article templates receive Vars (after defaults and sanitising) and may use
// the functions join (strings.Join) and language (LanguageName). The
// rendered user prompt must contain the contract lines "Title:",
// "Category:", "Keywords:", "Language:", "Target words:", "Min sections:"
// and "Min section words:", each at a line start; Load checks this. Health
// templates get no data and must render a line starting "Health check:"
// that asks for exactly {"ok":true}.
package prompts

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"text/template"
)

//go:embed templates
var embedded embed.FS

// familyNames are the prompt families, one per provider kind; each is also
// the name of that kind's default template.
func familyNames() []string { return []string{"gemini", "openai"} }

// nameRE is what a template name (its directory) looks like.
var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,39}$`)

// Template kinds; each is one file per family, <kind>.tmpl.
const (
	kindArticle = "article"
	kindHealth  = "health"
)

// Defaults applied by Set.ArticleFor to zero fields of Vars (the config's
// documented defaults).
const (
	DefaultLanguage        = "en"
	DefaultTargetWords     = 1500
	DefaultMinSections     = 5
	DefaultMinSectionWords = 200
)

// Vars are the inputs of an article prompt. Zero fields take the defaults
// above; Keywords may be empty. Line breaks and control characters in the
// strings are replaced by spaces so a title cannot forge prompt lines.
type Vars struct {
	Title           string
	Category        string
	Keywords        []string
	Language        string // ISO 639-1 code: en, tr, de, ...
	TargetWords     int
	MinSections     int
	MinSectionWords int
}

// Rendered is a prompt ready for chain.Request: the system instruction, the
// user message and the version to record (e.g. "article@1/gemini").
type Rendered struct {
	System  string
	User    string
	Version string
}

// Set is a loaded, validated set of templates: the family defaults and the
// named ones. A Set is immutable and safe for concurrent use.
type Set struct {
	templates map[string]*family
}

// family is one template: its article template, the version of that, and
// its health prompt (nil: its link's family's).
type family struct {
	article        *template.Template
	articleVersion string
	health         *Rendered
}

// Default returns the embedded templates. It panics only if the embedded
// files are broken, which the package tests rule out.
func Default() *Set {
	s, err := load("")
	if err != nil {
		panic("prompts: embedded templates: " + err.Error())
	}
	return s
}

// Load returns the embedded templates with the files found in dir
// replacing their embedded counterparts (dir/gemini/article.tmpl, ...).
// Files missing from dir fall back to the embedded ones; an empty dir means
// Default. Errors name the offending file: a parse error, a missing or
// malformed version line, a version that was not bumped after an edit, a
// missing contract line, or a .tmpl file with an unknown name.
func Load(dir string) (*Set, error) {
	return load(dir)
}

// Names returns every template name a link may give as `prompt:`, sorted:
// the family defaults and the named templates.
func (s *Set) Names() []string {
	return slices.Sorted(maps.Keys(s.templates))
}

// ArticleFor renders the article prompt of the template a link names for v;
// an empty name means the default of the link's family. An unknown name is
// an error listing the known ones.
func (s *Set) ArticleFor(name, family string, v Vars) (Rendered, error) {
	if name == "" {
		name = family
	}
	f, ok := s.templates[name]
	if !ok {
		return Rendered{}, fmt.Errorf("article prompt: unknown template %q (known: %s)", name, strings.Join(s.Names(), ", "))
	}
	v = v.normalized()
	if v.Title == "" {
		return Rendered{}, errors.New("article prompt: empty title")
	}
	r, err := execute(f.article, v)
	if err != nil {
		return Rendered{}, fmt.Errorf("article prompt %s: %w", name, err)
	}
	r.Version = f.articleVersion + "/" + name
	return r, nil
}

// Health renders the health-check prompt of family. An unknown family gets
// the openai family's prompt (the generic OpenAI-compatible wording).
func (s *Set) Health(family string) Rendered {
	return s.HealthFor("", family)
}

// HealthFor renders the health-check prompt of the template a link names: its
// own health.tmpl when it has one, else its family's (an unknown family gets
// the openai family's).
func (s *Set) HealthFor(name, family string) Rendered {
	if f, ok := s.templates[name]; ok && f.health != nil {
		return *f.health
	}
	if f, ok := s.templates[family]; ok && f.health != nil && slices.Contains(familyNames(), family) {
		return *f.health
	}
	return *s.templates["openai"].health
}

// normalized applies the defaults and strips line breaks and control
// characters from the string fields.
func (v Vars) normalized() Vars {
	v.Title = clean(v.Title)
	v.Category = clean(v.Category)
	v.Language = clean(v.Language)
	kw := make([]string, 0, len(v.Keywords))
	for _, k := range v.Keywords {
		if k = clean(k); k != "" {
			kw = append(kw, k)
		}
	}
	v.Keywords = kw
	if v.Language == "" {
		v.Language = DefaultLanguage
	}
	if v.TargetWords <= 0 {
		v.TargetWords = DefaultTargetWords
	}
	if v.MinSections <= 0 {
		v.MinSections = DefaultMinSections
	}
	if v.MinSectionWords <= 0 {
		v.MinSectionWords = DefaultMinSectionWords
	}
	return v
}

// clean turns every whitespace or control run into one space and trims.
func clean(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f) || r == 0x2028 || r == 0x2029 {
			return ' '
		}
		return r
	}, s)
	return strings.Join(strings.Fields(s), " ")
}

var funcs = template.FuncMap{
	"join":     strings.Join,
	"language": LanguageName,
}

// versionLine matches the first line of a template file.
var versionLine = regexp.MustCompile(`^\{\{-?\s*/\*\s*version:\s*([a-z]+)@([0-9]+)\s*\*/\s*-?\}\}\s*$`)

// sampleVars exercise an article template at load time.
var sampleVars = Vars{
	Title: "Sample title", Category: "sample", Keywords: []string{"one", "two"},
	Language: "en", TargetWords: 1000, MinSections: 4, MinSectionWords: 150,
}

func load(dir string) (*Set, error) {
	overrides, err := overrideFiles(dir)
	if err != nil {
		return nil, fmt.Errorf("load prompts: %w", err)
	}
	names := map[string]bool{}
	entries, err := embedded.ReadDir("templates")
	if err != nil {
		return nil, fmt.Errorf("load prompts: embedded templates: %w", err)
	}
	for _, e := range entries {
		if e.IsDir() {
			names[e.Name()] = true
		}
	}
	for rel := range overrides {
		name, _, _ := strings.Cut(rel, "/")
		names[name] = true
	}
	s := &Set{templates: map[string]*family{}}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		f, err := loadTemplate(name, overrides)
		if err != nil {
			return nil, fmt.Errorf("load prompts: %w", err)
		}
		s.templates[name] = f
	}
	return s, nil
}

// overrideFiles finds the template files of an override directory by their
// path below it ("gemini/article.tmpl" → its path); nil for dir "".
func overrideFiles(dir string) (map[string]string, error) {
	overrides := map[string]string{}
	if dir == "" {
		return overrides, nil
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("prompt dir: %w", err)
	}
	if !st.IsDir() {
		return nil, fmt.Errorf("prompt dir %s: not a directory", dir)
	}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() || filepath.Ext(p) != ".tmpl" {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		name, file, ok := strings.Cut(rel, "/")
		if !ok || strings.Contains(file, "/") || !nameRE.MatchString(name) || file != kindArticle+".tmpl" && file != kindHealth+".tmpl" {
			return fmt.Errorf("prompt file %s: unknown template (expected <name>/article.tmpl or <name>/health.tmpl, name of lower-case letters, digits, '.', '_', '-')", p)
		}
		overrides[rel] = p
		return nil
	})
	return overrides, err
}

// loadTemplate loads and checks the article and health files of one
// template, each from the override directory when it has one, else
// embedded.
func loadTemplate(name string, overrides map[string]string) (*family, error) {
	f := &family{}
	isFamily := slices.Contains(familyNames(), name)
	for _, kind := range []string{kindArticle, kindHealth} {
		rel := name + "/" + kind + ".tmpl"
		base, baseErr := embedded.ReadFile("templates/" + rel)
		p, overridden := overrides[rel]
		if baseErr != nil && !overridden {
			if kind == kindHealth && !isFamily {
				continue // a named template may borrow its family's health prompt
			}
			return nil, fmt.Errorf("template %s: no %s.tmpl", name, kind)
		}
		src, text := "embedded prompts/templates/"+rel, base
		if overridden {
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, err
			}
			src, text = p, bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
		}
		t, version, err := parse(src, kind, text)
		if err != nil {
			return nil, err
		}
		if overridden && baseErr == nil {
			_, baseVersion, err := parse("embedded "+rel, kind, base)
			if err != nil {
				return nil, err
			}
			if version == baseVersion && normalize(text) != normalize(base) {
				return nil, fmt.Errorf("%s: text differs from the built-in template but its version is still %s; bump the number in the first line", src, version)
			}
		}
		switch kind {
		case kindArticle:
			if err := checkArticle(src, t); err != nil {
				return nil, err
			}
			f.article, f.articleVersion = t, version
		case kindHealth:
			r, err := execute(t, nil)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", src, err)
			}
			if !hasLinePrefix(r.User, "Health check:") || !strings.Contains(r.User, `{"ok":true}`) {
				return nil, fmt.Errorf(`%s: user prompt needs a line starting "Health check:" asking for {"ok":true}`, src)
			}
			r.Version = version + "/" + name
			f.health = &r
		}
	}
	return f, nil
}

// parse checks the version line and parses a template file that must define
// "system" and "user".
func parse(name, kind string, text []byte) (*template.Template, string, error) {
	first, _, _ := strings.Cut(string(text), "\n")
	m := versionLine.FindStringSubmatch(strings.TrimRight(first, "\r"))
	if m == nil {
		return nil, "", fmt.Errorf("%s: first line must be {{/* version: %s@N */}}", name, kind)
	}
	if m[1] != kind {
		return nil, "", fmt.Errorf("%s: version %s@%s names the wrong template (want %s@N)", name, m[1], m[2], kind)
	}
	if n, err := strconv.Atoi(m[2]); err != nil || n < 1 {
		return nil, "", fmt.Errorf("%s: version number must be 1 or more", name)
	}
	t, err := template.New(name).Funcs(funcs).Option("missingkey=error").Parse(string(text))
	if err != nil {
		return nil, "", fmt.Errorf("parse %s: %w", name, err)
	}
	for _, block := range []string{"system", "user"} {
		if t.Lookup(block) == nil {
			return nil, "", fmt.Errorf("%s: no {{define %q}} block", name, block)
		}
	}
	return t, m[1] + "@" + m[2], nil
}

// checkArticle renders an article template with sample data and checks the
// contract lines.
func checkArticle(name string, t *template.Template) error {
	r, err := execute(t, sampleVars)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	want := []string{
		"Title: " + sampleVars.Title,
		"Category: " + sampleVars.Category,
		"Keywords: " + strings.Join(sampleVars.Keywords, ", "),
		"Language: " + sampleVars.Language,
		"Target words: " + strconv.Itoa(sampleVars.TargetWords),
		"Min sections: " + strconv.Itoa(sampleVars.MinSections),
		"Min section words: " + strconv.Itoa(sampleVars.MinSectionWords),
	}
	for _, line := range want {
		if !hasLine(r.User, line) {
			return fmt.Errorf("%s: user prompt lacks the contract line %q", name, line)
		}
	}
	return nil
}

// execute runs the "system" and "user" blocks of t.
func execute(t *template.Template, data any) (Rendered, error) {
	var sys, user bytes.Buffer
	if err := t.ExecuteTemplate(&sys, "system", data); err != nil {
		return Rendered{}, fmt.Errorf("render system: %w", err)
	}
	if err := t.ExecuteTemplate(&user, "user", data); err != nil {
		return Rendered{}, fmt.Errorf("render user: %w", err)
	}
	return Rendered{System: strings.TrimSpace(sys.String()), User: strings.TrimSpace(user.String())}, nil
}

func hasLine(text, line string) bool {
	return slices.Contains(strings.Split(text, "\n"), line)
}

func hasLinePrefix(text, prefix string) bool {
	for _, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// normalize makes template texts comparable across editors (line endings,
// trailing blank space).
func normalize(b []byte) string {
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\r\n", "\n"))
}

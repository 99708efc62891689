package prompts

import (
	"slices"
	"strings"
	"testing"
)

func TestNames(t *testing.T) {
	s := Default()
	if got, want := s.Names(), []string{"gemini", "gpt-oss", "llama", "openai"}; !slices.Equal(got, want) {
		t.Errorf("Names() = %q, want %q", got, want)
	}
	for _, n := range []string{"gemini", "openai", "llama", "gpt-oss"} {
		if !s.Has(n) {
			t.Errorf("Has(%q) = false", n)
		}
	}
	if s.Has("") || s.Has("mistral") {
		t.Error("Has accepts a name that is not a template")
	}
}

// TestArticleFor renders by template name: an empty name is the family
// default, a named template carries its own version, an unknown one is an
// error naming the known ones.
func TestArticleFor(t *testing.T) {
	s := Default()
	for _, fam := range []string{"gemini", "openai"} {
		got, err := s.ArticleFor("", fam, trVars)
		if err != nil {
			t.Fatal(err)
		}
		want, _ := s.ArticleFor(fam, fam, trVars)
		if got != want {
			t.Errorf("%s: ArticleFor with no name differs from the family default", fam)
		}
	}
	for _, name := range []string{"llama", "gpt-oss"} {
		r, err := s.ArticleFor(name, "openai", trVars)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := "article@1/" + name; r.Version != want {
			t.Errorf("%s: version %q, want %q", name, r.Version, want)
		}
		got := lines(r.User)
		for _, want := range []string{"Title: Evde ekmek mayası nasıl yapılır", "Language: tr", "Target words: 600", "Min sections: 4", "Min section words: 120"} {
			if !got[want] {
				t.Errorf("%s: lacks contract line %q", name, want)
			}
		}
		all := r.System + "\n" + r.User
		for _, want := range []string{"JSON", "at least 4", "at least 120 words", "about 600 words", "Turkish (Türkçe)", `{"h2": `} {
			if !strings.Contains(all, want) {
				t.Errorf("%s: prompt lacks %q", name, want)
			}
		}
		openai, _ := s.ArticleFor("", "openai", trVars)
		if r.System == openai.System || r.User == openai.User {
			t.Errorf("%s: wording is the openai default's", name)
		}
	}
	if _, err := s.ArticleFor("mistral", "openai", trVars); err == nil || !strings.Contains(err.Error(), "mistral") || !strings.Contains(err.Error(), "llama") {
		t.Errorf("unknown template: err = %v", err)
	}
}

// TestNamedTemplatesSayWhatTheirModelsNeed pins the differences the named
// templates exist for.
func TestNamedTemplatesSayWhatTheirModelsNeed(t *testing.T) {
	s := Default()
	llama, _ := s.ArticleFor("llama", "openai", trVars)
	for _, want := range []string{"Follow these steps exactly", "Not fewer than 4", "three or four full paragraphs", "Reply with exactly this shape", `"Here is the article"`} {
		if !strings.Contains(llama.User, want) {
			t.Errorf("llama prompt lacks %q", want)
		}
	}
	oss, _ := s.ArticleFor("gpt-oss", "openai", trVars)
	all := oss.System + "\n" + oss.User
	for _, want := range []string{"check each before you answer", "Keep your reasoning out of the final answer", "no reasoning or plan in it", "complete shorter article is better than a cut-off"} {
		if !strings.Contains(all, want) {
			t.Errorf("gpt-oss prompt lacks %q", want)
		}
	}
}

func TestHealthFor(t *testing.T) {
	s := Default()
	if h := s.HealthFor("llama", "openai"); h != s.Health("openai") {
		t.Errorf("llama borrows %q, want the openai family's", h.Version)
	}
	if h := s.HealthFor("gpt-oss", "gemini"); h.Version != "health@1/gemini" {
		t.Errorf("gpt-oss on a gemini link: %q", h.Version)
	}
	if h := s.HealthFor("", "gemini"); h.Version != "health@1/gemini" {
		t.Errorf("no name: %q", h.Version)
	}
	if h := s.HealthFor("nope", "nope"); h.Version != "health@1/openai" {
		t.Errorf("unknown: %q", h.Version)
	}
}

func TestLoadNamedTemplates(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, dir, "mistral/article.tmpl", overrideArticle)
	s, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Has("mistral") || !slices.Contains(s.Names(), "mistral") {
		t.Fatalf("added template missing: %q", s.Names())
	}
	r, err := s.ArticleFor("mistral", "openai", trVars)
	if err != nil || r.Version != "article@7/mistral" {
		t.Errorf("mistral: %q %v", r.Version, err)
	}
	if h := s.HealthFor("mistral", "openai"); h != Default().Health("openai") {
		t.Errorf("mistral health %q", h.Version)
	}

	llama, _ := embedded.ReadFile("templates/llama/article.tmpl")
	bad := []struct{ name, rel, text, want string }{
		{"named template edited without bump", "llama/article.tmpl", strings.Replace(string(llama), "magazine", "newspaper", 1), "bump"},
		{"new template without article", "mistral/health.tmpl", "{{/* version: health@1 */}}\n{{define \"system\"}}x{{end}}{{define \"user\"}}Health check: reply with exactly {\"ok\":true}{{end}}", "no article.tmpl"},
		{"bad name", "Mis tral/article.tmpl", overrideArticle, "unknown template"},
		{"nested too deep", "a/b/article.tmpl", overrideArticle, "unknown template"},
	}
	for _, b := range bad {
		dir := t.TempDir()
		writeFile(t, dir, b.rel, b.text)
		if _, err := Load(dir); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: err = %v, want it to say %q", b.name, err, b.want)
		}
	}
}

// Has reports whether name is a template of the set.
func (s *Set) Has(name string) bool {
	_, ok := s.templates[name]
	return ok
}

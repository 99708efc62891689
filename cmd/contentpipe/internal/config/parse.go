package config

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/publish"
	"github.com/contentpipe/contentpipe/telemetry"
)

var (
	linkKinds     = words(profile.Kinds())
	jsonModes     = []string{"json_schema", "json_object", "none"}
	envNameRE     = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	linkNameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	languageRE    = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
	channelRE     = regexp.MustCompile(`^@[A-Za-z][A-Za-z0-9_]{3,}$`)
	exampleConfig = "see data/contentpipe.example.yaml"
)

// loader carries the state of one Parse call: the decoded file, the config
// being built and the checks the caller asked for.
type loader struct {
	opt     Loader
	t       *tree
	cfg     *Config
	prompts []string // template names a link may name; nil = not checked
}

func (p *loader) fail(path, fix, format string, args ...any) {
	p.t.errs = append(p.t.errs, &Error{File: p.t.file, Line: p.t.line(path), Msg: fmt.Sprintf(format, args...), Fix: fix})
}

// check fails at path's line when ok is false, unless path already failed
// to decode (one problem, one message).
func (p *loader) check(ok bool, path, fix, format string, args ...any) {
	if !ok && !p.t.isBad(path) {
		p.fail(path, fix, format, args...)
	}
}

func (p *loader) warn(path, format string, args ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s:%d: %s", p.t.file, p.t.line(path), fmt.Sprintf(format, args...)))
}

func (p *loader) nonNegative(path string, v int) {
	p.check(v >= 0, path, "use 0 or a positive number", "%s: must not be negative, got %d", path, v)
}

func (p *loader) positive(path string, v int) {
	p.check(v >= 1, path, "use a whole number of 1 or more", "%s: must be at least 1, got %d", path, v)
}

// language checks a language code: its form, and with the caller's hook,
// that the quality gate supports it.
func (p *loader) language(path, what, code, fix string) {
	if !languageRE.MatchString(code) {
		p.check(false, path, fix, "%s: bad language code %q", what, code)
		return
	}
	if p.opt.LanguageSupported != nil && !p.opt.LanguageSupported(code) {
		msg := fmt.Sprintf("%s: language %q is not supported", what, code)
		if len(p.opt.Languages) > 0 {
			msg += "; supported: " + strings.Join(p.opt.Languages, ", ")
		}
		p.check(false, path, "use a language the quality gate can identify, or remove it for the default", "%s", msg)
	}
}

func (l Loader) parse(path string, data []byte) (*Config, Errors) {
	t, perr := parseTree(path, "", data)
	if perr != nil {
		return nil, Errors{perr}
	}
	if t.body == nil {
		return nil, Errors{{File: path, Line: 1, Msg: "the config file is empty",
			Fix: "create one from data/contentpipe.example.yaml or run `contentpipe run --demo`"}}
	}
	cfg := Default(filepath.Dir(path))
	cfg.Path = path
	if !t.decodeInto(cfg) {
		return nil, t.errs
	}
	p := &loader{opt: l, t: t, cfg: cfg}
	if t.given["env_file"] {
		p.envFile() // before anything reads a variable
	}
	for _, section := range []func(){p.paths, p.database, p.publish, p.job, p.links, p.retry, p.quality, p.shadow, p.alerts, p.schedule, p.health, p.budget} {
		section()
	}
	return cfg, t.errs
}

func (p *loader) paths() {
	c := p.cfg
	if p.t.given["topics"] {
		p.check(strings.TrimSpace(c.Topics) != "", "topics", "remove the key for the default, or give a path", "topics: must not be empty")
		c.Topics = resolvePath(c.Dir, c.Topics)
	}
	if c.PromptsDir != "" {
		c.PromptsDir = resolvePath(c.Dir, c.PromptsDir)
		st, err := os.Stat(c.PromptsDir)
		if !(err == nil && st.IsDir()) {
			p.fail("prompts_dir", "create the directory (relative paths are relative to "+c.Dir+") or remove prompts_dir to use the embedded templates",
				"prompts_dir: %s is not a directory", c.PromptsDir)
			return
		}
	}
	if p.opt.PromptNames != nil {
		names, err := p.opt.PromptNames(c.PromptsDir)
		if err != nil {
			p.fail("prompts_dir", "fix the template file it names, or remove prompts_dir to use the embedded templates", "prompts: %v", err)
			return
		}
		p.prompts = names
	}
}

func (p *loader) publish() {
	pub := &p.cfg.Publish
	target, known := publish.Lookup(pub.Kind)
	p.check(known, "publish.kind", suggest(string(pub.Kind), words(publish.Kinds()), "publish kinds"), "publish.kind: unknown kind %q", pub.Kind)
	if p.t.given["publish.dir"] {
		p.check(pub.Dir != "", "publish.dir", "remove the key for the default \"out\", or give a directory", "publish.dir: must not be empty")
		pub.Dir = resolvePath(p.cfg.Dir, pub.Dir)
	}
	if !known {
		return
	}
	for _, key := range []string{"dir", "url", "secret_env", "section", "bundle", "user", "password_env", "status", "delay"} {
		if p.t.given["publish."+key] && !slices.Contains(target.Keys, key) {
			p.warn("publish."+key, "publish.%s is ignored for kind %s", key, pub.Kind)
		}
	}
	// The secrets a kind reads come from the environment variables named.
	for _, s := range []struct {
		key, name string
		into      func(string)
	}{{"secret_env", pub.SecretEnv, func(v string) { pub.Secret = []byte(v) }}, {"password_env", pub.PasswordEnv, func(v string) { pub.Password = v }}} {
		if s.name == "" || !slices.Contains(target.Keys, s.key) {
			continue
		}
		v := p.opt.getenv(s.name)
		p.check(v != "", "publish."+s.key, fmt.Sprintf("set %s in the environment (export %s=...) or remove %s", s.name, s.name, s.key),
			"publish.%s: %s is not set", s.key, s.name)
		s.into(v)
	}
	for _, pr := range target.Check(pub.Options()) {
		if pr.Key == "password_env" && pub.PasswordEnv != "" {
			continue // named but unset: said above
		}
		if pr.Problem == "missing" {
			p.check(false, "publish", pr.Fix, "publish: kind %s needs %s", pub.Kind, pr.Key)
			continue
		}
		p.check(false, "publish."+pr.Key, pr.Fix, "publish.%s: %s", pr.Key, pr.Problem)
	}
}

func (p *loader) job() {
	j, given := p.cfg.Job, p.t.given
	p.positive("job.posts_per_run", j.PostsPerRun)
	p.nonNegative("job.posts_per_day", j.PostsPerDay)
	p.check(j.Deadline > 0, "job.deadline", "give the whole budget of one job, e.g. deadline: 15m", "job.deadline: must be longer than 0")
	p.language("job.language", "job.language", j.Language, "use a lower-case language code such as en, tr, de, pt-BR")
	p.positive("job.target_words", j.TargetWords)
	p.positive("job.parallel", j.Parallel)
	p.check(!given["job.worker_lease"] || j.WorkerLease >= time.Second, "job.worker_lease", "use a lease of 1s or more (the heartbeat renews it every quarter), or remove the key for the default 2m", "job.worker_lease: %s is too short", j.WorkerLease)
	p.check(!given["job.delivery_window"] || j.DeliveryWindow >= time.Second, "job.delivery_window", "use 1s or more (longer than one webhook call), or remove the key for the default 45s", "job.delivery_window: %s is too short", j.DeliveryWindow)
	if wl, dw := cmp.Or(j.WorkerLease, telemetry.DefaultOwnerLease), cmp.Or(j.DeliveryWindow, telemetry.DefaultDeliveryWindow); wl < 2*dw && !p.t.isBad("job.worker_lease") && !p.t.isBad("job.delivery_window") {
		at := "job.worker_lease"
		if !given["job.worker_lease"] {
			at = "job.delivery_window"
		}
		p.fail(at, fmt.Sprintf("make job.worker_lease at least %s or job.delivery_window at most %s", 2*dw, wl/2),
			"job.worker_lease (%s) must be at least twice job.delivery_window (%s): a worker must still hold its lease when a delivery it started ends", wl, dw)
	}
	p.nonNegative("retention_days", p.cfg.RetentionDays)
	if j.Lease > 0 && j.Lease < j.Deadline {
		p.warn("job.lease", "job.lease (%s) is shorter than job.deadline (%s): a job still running when its lease ends may be taken over by another run and generated twice (it is still published once)", j.Lease, j.Deadline)
	}
}

func (p *loader) links() {
	c := p.cfg
	if _, given := p.t.paths["chain"]; !given || len(c.Chain) == 0 {
		fix, msg := "add a chain: list with at least one provider link ("+exampleConfig+")", "missing required key \"chain\""
		if given {
			fix, msg = "add at least one provider link under chain: ("+exampleConfig+")", "chain is empty"
		}
		p.check(false, "chain", fix, "%s", msg)
		c.Candidates = nil // not checked without a chain
		return
	}
	seen := map[string]int{}
	for i := range c.Chain {
		p.link(&c.Chain[i], fmt.Sprintf("chain[%d]", i), seen)
	}
	for i := range c.Candidates {
		p.link(&c.Candidates[i], fmt.Sprintf("candidates[%d]", i), seen)
	}
	for i := 1; i < len(c.Chain); i++ {
		a, b := c.Chain[i-1], c.Chain[i]
		if a.Infra != "" && a.Infra == b.Infra {
			p.warn(fmt.Sprintf("chain[%d].infra", i), "adjacent links %q and %q share infra %q: one outage takes out both in a row; put a link on other infrastructure between them",
				a.Name, b.Name, a.Infra)
		}
	}
}

// nameOf is the link's name as a hint in messages: "chain[1] (groq)".
func nameOf(path, name string) string {
	if name == "" {
		return path
	}
	return fmt.Sprintf("%s (%s)", path, name)
}

func (p *loader) link(l *Link, path string, seen map[string]int) {
	given := func(key string) bool { return p.t.given[path+"."+key] }
	req := func(key string, example string) bool {
		p.check(given(key), path+"."+key, "add "+key+": "+example+" to this link", "%s: missing required key %q", path, key)
		return given(key)
	}
	if req("name", "gemini (a unique name of your choice)") {
		p.check(linkNameRE.MatchString(l.Name), path+".name", "use letters, digits, '-', '_' or '.', starting with a letter or digit", "%s.name: bad link name %q", path, l.Name)
		if first, dup := seen[l.Name]; dup {
			p.check(false, path+".name", "give each link a unique name (chain and candidates share one namespace)",
				"%s: duplicate link name %q (first defined at line %d)", path, l.Name, first)
		} else {
			seen[l.Name] = p.t.line(path + ".name") // of its name key (or of the list item)
		}
	}
	where := nameOf(path, l.Name)
	if req("kind", "gemini or kind: openai") {
		p.check(slices.Contains(profile.Kinds(), l.Kind), path+".kind", suggest(string(l.Kind), linkKinds, "link kinds")+" (openai = any OpenAI-compatible API)", "%s: unknown kind %q", where, l.Kind)
	}
	if req("model", "the provider's model id") {
		p.check(l.Model != "", path+".model", "give the provider's model id, e.g. model: gemini-flash-latest", "%s: model must not be empty", where)
	}
	if l.Kind == profile.KindOpenAI {
		p.check(l.BaseURL != "", path+".base_url",
			"kind openai talks to any OpenAI-compatible API, so it needs that API's base URL, e.g. base_url: https://api.groq.com/openai/v1",
			"%s: kind openai needs base_url", where)
	}
	p.check(l.BaseURL == "" || isHTTPURL(l.BaseURL), path+".base_url", "give an absolute http:// or https:// URL, or \"\" for the provider's default", "%s: base_url is not an http(s) URL", where)
	p.provider(l, path, where)
	p.apiKey(l, path, where)
	p.nonNegative(path+".daily_cap", l.DailyCap)
	p.nonNegative(path+".rpm", l.RPM)
	p.nonNegative(path+".tpm", l.TPM)
	p.nonNegative(path+".max_tokens", l.MaxTokens)
	if strings.TrimSpace(l.CapReset) == "" {
		l.CapReset = DefaultCapReset
	}
	norm, err := checkCapReset(l.CapReset)
	p.check(err == nil, path+".cap_reset", `write "HH:MM Zone" with an IANA zone, e.g. "00:00 America/Los_Angeles" (default "00:00 UTC")`,
		"%s: bad %v", where, err)
	l.CapReset = norm
	p.nonNegative(path+".daily_tokens", l.DailyTokens)
	p.check(l.DailyBudgetUSD >= 0, path+".daily_budget_usd", "use 0 (none) or a positive amount in USD", "%s: daily_budget_usd must not be negative", where)
	p.price(l, path)
	p.jsonMode(l, given("json_mode"), path, where)
	if l.Prompt != "" && p.prompts != nil {
		fix := suggest(l.Prompt, p.prompts, "available prompts")
		if closest(l.Prompt, p.prompts) == "" {
			fix = "use one of " + strings.Join(p.prompts, ", ") + ", or remove prompt: to use the " + string(l.Kind) + " family's template"
		}
		p.check(slices.Contains(p.prompts, l.Prompt), path+".prompt", fix, "%s: unknown prompt %q", where, l.Prompt)
	}
}

// price is the link's price: the built-in one of its model, with what the
// link's price: gives over it.
func (p *loader) price(l *Link, path string) {
	in, out := p.t.given[path+".price.input_per_mtok"], p.t.given[path+".price.output_per_mtok"]
	builtin, known := builtinPrice(l.Model)
	if !in {
		l.Price.InputPerMTok = builtin.InputPerMTok
	}
	if !out {
		l.Price.OutputPerMTok = builtin.OutputPerMTok
	}
	l.PriceKnown = known || in || out
	for i, v := range []float64{l.Price.InputPerMTok, l.Price.OutputPerMTok} {
		key := []string{"input_per_mtok", "output_per_mtok"}[i]
		p.check(v >= 0, path+".price."+key, "use 0 or a positive price in USD per million tokens", "%s.price.%s: must not be negative", path, key)
	}
}

func (p *loader) apiKey(l *Link, path, where string) {
	if l.Kind == profile.KindGemini && l.BaseURL == "" {
		p.check(l.APIKeyEnv != "", path+".api_key_env", "name the variable holding the key, e.g. api_key_env: GEMINI_API_KEY", "%s: the Gemini API needs a key but api_key_env is not set", where)
	}
	if l.APIKeyEnv == "" {
		return
	}
	l.APIKey = strings.TrimSpace(p.opt.getenv(l.APIKeyEnv))
	p.check(l.APIKey != "" || p.opt.KeysOptional, path+".api_key_env",
		fmt.Sprintf("set %s in the environment (export %s=...)%s or remove the link", l.APIKeyEnv, l.APIKeyEnv, p.envFileHint(l.APIKeyEnv)),
		"%s: %s is not set", where, l.APIKeyEnv)
}

func (p *loader) jsonMode(l *Link, given bool, path, where string) {
	mode := l.JSONMode
	l.JSONMode = ""
	switch {
	case l.Kind == profile.KindGemini:
		p.check(mode == "", path+".json_mode", "remove json_mode: Gemini links always send responseJsonSchema", "%s: json_mode applies to kind openai only", where)
	case !given:
		l.JSONMode = "json_object"
	case mode == "none" || mode == "":
	default:
		p.check(slices.Contains(jsonModes, mode), path+".json_mode", suggest(mode, jsonModes, "json modes"), "%s: unknown json_mode %q", where, mode)
		l.JSONMode = mode
	}
}

// checkCapReset validates "HH:MM [Zone]" with the chain's own parser and
// returns it with the zone made explicit ("00:00" → "00:00 UTC").
func checkCapReset(s string) (string, error) {
	if strings.TrimSpace(s) == "" {
		return s, errors.New("empty cap_reset: want HH:MM and an optional time zone")
	}
	r, err := chain.ParseCapReset(s)
	if err != nil {
		return s, err
	}
	return fmt.Sprintf("%02d:%02d %s", r.Hour, r.Minute, r.Loc), nil
}

// words are kinds as the words a fix suggests.
func words[K ~string](kinds []K) []string {
	out := make([]string, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, string(k))
	}
	return out
}

// budget reads the chain-wide money limits and checks that every link has
// a known price when any money limit is set (an unknown price would make
// its spend invisible to the budget).
func (p *loader) budget() {
	b := p.cfg.Budget
	for _, k := range []struct {
		key string
		v   float64
	}{{"budget.daily_usd", b.DailyUSD}, {"budget.monthly_usd", b.MonthlyUSD}} {
		p.check(k.v >= 0, k.key, "use 0 (none) or a positive amount in USD", "%s: must not be negative", k.key)
	}
	for _, g := range []struct {
		kind  string
		links []Link
	}{{"chain", p.cfg.Chain}, {"candidates", p.cfg.Candidates}} {
		for i, l := range g.links {
			if l.PriceKnown || (!b.Set() && l.DailyBudgetUSD == 0) {
				continue
			}
			path := fmt.Sprintf("%s[%d]", g.kind, i)
			p.check(false, path+".model", "add price: {input_per_mtok: …, output_per_mtok: …} to this link (USD per million tokens from the provider's price list), or remove the money budget",
				"%s: no known price for model %q while a money budget is set (the built-in table of %s does not list it)", nameOf(path, l.Name), l.Model, PricesAsOf)
		}
	}
}

// provider resolves `provider:`: one of the profiles, matching the link's
// kind; empty picks it from base_url and name (profile.Detect).
func (p *loader) provider(l *Link, path, where string) {
	if l.Provider == "" || !slices.Contains(profile.Kinds(), l.Kind) {
		return
	}
	var names []string
	for _, id := range profile.IDs() {
		if profile.Must(id).Kind == l.Kind {
			names = append(names, string(id))
		}
	}
	_, err := profile.Resolve(l.Kind, profile.ID(l.Provider), l.Name, l.BaseURL)
	p.check(err == nil, path+".provider", suggest(l.Provider, names, "providers of kind "+string(l.Kind)),
		"%s: provider: %v", where, err)
}

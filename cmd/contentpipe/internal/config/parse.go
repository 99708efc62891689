package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

var (
	topKeys       = []string{"database", "topics", "prompts_dir", "publish", "job", "retention_days", "chain", "candidates", "retry", "quality", "shadow", "alerts", "schedule"}
	publishKeys   = []string{"kind", "dir", "url", "secret_env"}
	jobKeys       = []string{"posts_per_run", "deadline", "language", "target_words", "parallel"}
	linkKeys      = []string{"name", "kind", "model", "api_key_env", "base_url", "infra", "daily_cap", "rpm", "tpm", "cap_reset", "price", "timeouts", "json_mode", "stream", "max_tokens"}
	priceKeys     = []string{"input_per_mtok", "output_per_mtok"}
	timeoutKeys   = []string{"connect", "first_token", "total", "idle"}
	retryKeys     = []string{"rate_limited", "server_error", "auth_error", "other", "circuit"}
	rateKeys      = []string{"wait", "max_retries", "max_wait"}
	waitKeys      = []string{"wait"}
	authKeys      = []string{"halt"}
	circuitKeys   = []string{"window", "min_samples", "failure_rate", "cooldown", "max_cooldown", "close_after"}
	qualityKeys   = []string{"schema", "threshold", "min_sections", "min_section_words", "banned_phrases_file"}
	shadowKeys    = []string{"providers", "sample_rate"}
	alertsKeys    = []string{"telegram", "budget_warn_at", "provider_down_after"}
	telegramKeys  = []string{"token_env", "chat_id_env", "api_endpoint"}
	scheduleKeys  = []string{"run", "health", "report"}
	linkKinds     = []string{"gemini", "openai"}
	publishKinds  = []string{"markdown", "webhook"}
	jsonModes     = []string{"json_schema", "json_object", "none"}
	envNameRE     = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	linkNameRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)
	languageRE    = regexp.MustCompile(`^[a-z]{2,3}(-[A-Za-z0-9]{2,8})*$`)
	channelRE     = regexp.MustCompile(`^@[A-Za-z][A-Za-z0-9_]{3,}$`)
	capResetRE    = regexp.MustCompile(`^([01]?[0-9]|2[0-3]):([0-5][0-9])$`)
	exampleConfig = "see data/contentpipe.example.yaml"
)

// loader carries the state of one Parse call.
type loader struct {
	*decoder
	cfg          *Config
	getenv       func(string) string
	keysOptional bool  // an unset api_key_env variable is not an error (read-only commands)
	candLines    []int // line of each candidate's name, for warnings
}

func (p *loader) warn(line int, format string, args ...any) {
	p.cfg.Warnings = append(p.cfg.Warnings, fmt.Sprintf("%s:%d: %s", p.file, max(line, 1), fmt.Sprintf(format, args...)))
}

// check fails at key's line (or the mapping's) when ok is false.
func (o *object) check(ok bool, key, fix, format string, args ...any) {
	if !ok && !o.d.failed() {
		o.d.fail(o.lineOf(key), fix, format, args...)
	}
}

func (o *object) nonNegative(key string, v int) {
	o.check(v >= 0, key, "use 0 or a positive number", "%s: must not be negative, got %d", o.name(key), v)
}

func (o *object) positive(key string, v int) {
	o.check(v >= 1, key, "use a whole number of 1 or more", "%s: must be at least 1, got %d", o.name(key), v)
}

// Parse parses data as the config file at path (path names the file in
// messages and its directory anchors relative paths; the file itself is not
// read). getenv looks up the variables the file names (nil means os.Getenv).
// Schema, banned-phrases and prompts paths are checked on disk.
func Parse(path string, data []byte, getenv func(string) string) (*Config, error) {
	return parse(path, data, getenv, false)
}

func parse(path string, data []byte, getenv func(string) string, keysOptional bool) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	cfg := Default(filepath.Dir(path))
	cfg.Path = path
	d, root := parseRoot(path, data)
	if d.err != nil {
		return nil, d.err
	}
	if root == nil {
		return nil, &Error{File: path, Line: 1, Msg: "the config file is empty",
			Fix: "create one from data/contentpipe.example.yaml or run `contentpipe run --demo`"}
	}
	p := &loader{decoder: d, cfg: cfg, getenv: getenv, keysOptional: keysOptional}
	top := d.object(root, "", 1, topKeys)
	p.paths(top)
	p.publish(top.sub("publish", publishKeys))
	p.job(top.sub("job", jobKeys))
	top.integer("retention_days", &cfg.RetentionDays)
	top.nonNegative("retention_days", cfg.RetentionDays)
	p.links(top)
	p.retry(top.sub("retry", retryKeys))
	p.quality(top.sub("quality", qualityKeys))
	p.shadow(top.sub("shadow", shadowKeys))
	p.alerts(top.sub("alerts", alertsKeys))
	p.schedule(top.sub("schedule", scheduleKeys))
	if d.err != nil {
		return nil, d.err
	}
	return cfg, nil
}

func (p *loader) paths(top *object) {
	c := p.cfg
	for _, k := range []struct {
		key string
		dst *string
	}{{"database", &c.Database}, {"topics", &c.Topics}} {
		raw := ""
		if top.has(k.key) {
			top.str(k.key, &raw)
			top.check(strings.TrimSpace(raw) != "", k.key, "remove the key for the default, or give a path", "%s: must not be empty", k.key)
			*k.dst = resolvePath(c.Dir, raw)
		}
	}
	raw := ""
	top.str("prompts_dir", &raw)
	if raw != "" && !p.failed() {
		c.PromptsDir = resolvePath(c.Dir, raw)
		st, err := os.Stat(c.PromptsDir)
		top.check(err == nil && st.IsDir(), "prompts_dir",
			"create the directory (relative paths are relative to "+c.Dir+") or remove prompts_dir to use the embedded templates",
			"prompts_dir: %s is not a directory", c.PromptsDir)
	}
}

func (p *loader) publish(o *object) {
	pub := &p.cfg.Publish
	o.str("kind", &pub.Kind)
	o.check(contains(publishKinds, pub.Kind), "kind", suggest(pub.Kind, publishKinds, "publish kinds"), "publish.kind: unknown kind %q", pub.Kind)
	if o.has("dir") {
		raw := ""
		o.str("dir", &raw)
		o.check(raw != "", "dir", "remove the key for the default \"out\", or give a directory", "publish.dir: must not be empty")
		pub.Dir = resolvePath(p.cfg.Dir, raw)
	}
	o.str("url", &pub.URL)
	o.str("secret_env", &pub.SecretEnv)
	if p.failed() {
		return
	}
	switch pub.Kind {
	case "webhook":
		o.check(o.has("url") && pub.URL != "", "url", "add url: https://… (the endpoint that receives the article JSON)", "publish: kind webhook needs url")
		o.check(pub.URL == "" || isHTTPURL(pub.URL), "url", "give an absolute http:// or https:// URL", "publish.url: not an http(s) URL")
		if pub.SecretEnv != "" {
			p.envName(o, "secret_env", pub.SecretEnv)
			v := p.getenv(pub.SecretEnv)
			o.check(v != "", "secret_env", fmt.Sprintf("set %s in the environment (export %s=...) or remove secret_env", pub.SecretEnv, pub.SecretEnv),
				"publish.secret_env: %s is not set", pub.SecretEnv)
			pub.Secret = []byte(v)
		}
	case "markdown":
		if o.has("url") {
			p.warn(o.lineOf("url"), "publish.url is ignored for kind markdown")
		}
		if o.has("secret_env") {
			p.warn(o.lineOf("secret_env"), "publish.secret_env is ignored for kind markdown")
		}
	}
}

func (p *loader) job(o *object) {
	j := &p.cfg.Job
	o.integer("posts_per_run", &j.PostsPerRun)
	o.positive("posts_per_run", j.PostsPerRun)
	o.duration("deadline", &j.Deadline)
	o.check(j.Deadline > 0, "deadline", "give the whole budget of one job, e.g. deadline: 15m", "job.deadline: must be longer than 0")
	o.str("language", &j.Language)
	o.check(languageRE.MatchString(j.Language), "language", "use a lower-case language code such as en, tr, de, pt-BR", "job.language: bad language code %q", j.Language)
	o.integer("target_words", &j.TargetWords)
	o.positive("target_words", j.TargetWords)
	o.integer("parallel", &j.Parallel)
	o.positive("parallel", j.Parallel)
}

// linkPos remembers where a link was defined.
type linkPos struct {
	line  int // line of its name key (or of the list item)
	infra int // line of its infra key
}

func (p *loader) links(top *object) {
	c := p.cfg
	items, present := top.list("chain")
	if p.failed() {
		return
	}
	if !present {
		p.fail(1, "add a chain: list with at least one provider link ("+exampleConfig+")", "missing required key \"chain\"")
		return
	}
	if len(items) == 0 {
		p.fail(top.lineOf("chain"), "add at least one provider link under chain: ("+exampleConfig+")", "chain is empty")
		return
	}
	seen := map[string]int{}
	var chainPos []linkPos
	for i, it := range items {
		l, pos := p.link(it, fmt.Sprintf("chain[%d]", i), seen)
		if p.failed() {
			return
		}
		c.Chain = append(c.Chain, l)
		chainPos = append(chainPos, pos)
	}
	cands, _ := top.list("candidates")
	for i, it := range cands {
		l, pos := p.link(it, fmt.Sprintf("candidates[%d]", i), seen)
		if p.failed() {
			return
		}
		c.Candidates = append(c.Candidates, l)
		p.candLines = append(p.candLines, pos.line)
	}
	for i := 1; i < len(c.Chain); i++ {
		a, b := c.Chain[i-1], c.Chain[i]
		if a.Infra != "" && a.Infra == b.Infra {
			p.warn(chainPos[i].infra, "adjacent links %q and %q share infra %q: one outage takes out both in a row; put a link on other infrastructure between them",
				a.Name, b.Name, a.Infra)
		}
	}
}

func (p *loader) link(it item, path string, seen map[string]int) (Link, linkPos) {
	l := DefaultLink()
	o := p.object(it.node, path, it.line, linkKeys)
	if p.failed() {
		return l, linkPos{}
	}
	o.line = it.line
	pos := linkPos{line: it.line}
	req := func(key, example string) {
		o.check(o.has(key), key, "add "+key+": "+example+" to this link", "%s: missing required key %q", path, key)
	}
	req("name", "gemini (a unique name of your choice)")
	o.str("name", &l.Name)
	pos.line = o.lineOf("name")
	pos.infra = o.lineOf("infra")
	o.check(linkNameRE.MatchString(l.Name), "name", "use letters, digits, '-', '_' or '.', starting with a letter or digit", "%s.name: bad link name %q", path, l.Name)
	if first, dup := seen[l.Name]; dup && !p.failed() {
		p.fail(pos.line, "give each link a unique name (chain and candidates share one namespace)",
			"%s: duplicate link name %q (first defined at line %d)", path, l.Name, first)
	}
	seen[l.Name] = pos.line
	where := fmt.Sprintf("%s (%s)", path, l.Name)

	req("kind", "gemini or kind: openai")
	o.str("kind", &l.Kind)
	o.check(contains(linkKinds, l.Kind), "kind", suggest(l.Kind, linkKinds, "link kinds")+" (openai = any OpenAI-compatible API)", "%s: unknown kind %q", where, l.Kind)
	req("model", "the provider's model id")
	o.str("model", &l.Model)
	o.check(l.Model != "", "model", "give the provider's model id, e.g. model: gemini-flash-latest", "%s: model must not be empty", where)

	o.str("base_url", &l.BaseURL)
	if l.Kind == "openai" {
		o.check(l.BaseURL != "", "base_url",
			"kind openai talks to any OpenAI-compatible API, so it needs that API's base URL, e.g. base_url: https://api.groq.com/openai/v1",
			"%s: kind openai needs base_url", where)
	}
	o.check(l.BaseURL == "" || isHTTPURL(l.BaseURL), "base_url", "give an absolute http:// or https:// URL, or \"\" for the provider's default", "%s: base_url is not an http(s) URL", where)

	o.str("api_key_env", &l.APIKeyEnv)
	if l.Kind == "gemini" && l.BaseURL == "" {
		o.check(l.APIKeyEnv != "", "api_key_env", "name the variable holding the key, e.g. api_key_env: GEMINI_API_KEY", "%s: the Gemini API needs a key but api_key_env is not set", where)
	}
	if l.APIKeyEnv != "" && !p.failed() {
		p.envName(o, "api_key_env", l.APIKeyEnv)
		l.APIKey = strings.TrimSpace(p.getenv(l.APIKeyEnv))
		o.check(l.APIKey != "" || p.keysOptional, "api_key_env",
			fmt.Sprintf("set %s in the environment (export %s=...) or remove the link", l.APIKeyEnv, l.APIKeyEnv),
			"%s: %s is not set", where, l.APIKeyEnv)
	}

	o.str("infra", &l.Infra)
	o.integer("daily_cap", &l.DailyCap)
	o.nonNegative("daily_cap", l.DailyCap)
	o.integer("rpm", &l.RPM)
	o.nonNegative("rpm", l.RPM)
	o.integer("tpm", &l.TPM)
	o.nonNegative("tpm", l.TPM)

	if o.has("cap_reset") {
		o.str("cap_reset", &l.CapReset)
		if strings.TrimSpace(l.CapReset) == "" {
			l.CapReset = DefaultCapReset
		} else if !p.failed() {
			norm, err := checkCapReset(l.CapReset)
			o.check(err == nil, "cap_reset", `write "HH:MM Zone" with an IANA zone, e.g. "00:00 America/Los_Angeles" (default "00:00 UTC")`,
				"%s: bad cap_reset %q: %v", where, l.CapReset, err)
			l.CapReset = norm
		}
	}

	pr := o.sub("price", priceKeys)
	pr.float("input_per_mtok", &l.Price.InputPerMTok)
	pr.check(l.Price.InputPerMTok >= 0, "input_per_mtok", "use 0 or a positive price in USD per million tokens", "%s.price.input_per_mtok: must not be negative", path)
	pr.float("output_per_mtok", &l.Price.OutputPerMTok)
	pr.check(l.Price.OutputPerMTok >= 0, "output_per_mtok", "use 0 or a positive price in USD per million tokens", "%s.price.output_per_mtok: must not be negative", path)

	to := o.sub("timeouts", timeoutKeys)
	to.duration("connect", &l.Timeouts.Connect)
	to.duration("first_token", &l.Timeouts.FirstToken)
	to.duration("idle", &l.Timeouts.Idle)
	to.duration("total", &l.Timeouts.Total)

	mode := ""
	present := o.has("json_mode")
	o.str("json_mode", &mode)
	switch {
	case l.Kind == "gemini":
		o.check(mode == "", "json_mode", "remove json_mode: Gemini links always send responseJsonSchema", "%s: json_mode applies to kind openai only", where)
	case !present:
		l.JSONMode = "json_object"
	case mode == "none" || mode == "":
		l.JSONMode = ""
	default:
		o.check(contains(jsonModes, mode), "json_mode", suggest(mode, jsonModes, "json modes"), "%s: unknown json_mode %q", where, mode)
		l.JSONMode = mode
	}
	o.boolean("stream", &l.Stream)
	o.integer("max_tokens", &l.MaxTokens)
	o.nonNegative("max_tokens", l.MaxTokens)
	return l, pos
}

// checkCapReset validates "HH:MM [Zone]" and returns it with the zone made
// explicit ("00:00" → "00:00 UTC").
func checkCapReset(s string) (string, error) {
	f := strings.Fields(s)
	if len(f) == 0 || len(f) > 2 {
		return s, fmt.Errorf("want HH:MM and an optional time zone")
	}
	m := capResetRE.FindStringSubmatch(f[0])
	if m == nil {
		return s, fmt.Errorf("%q is not a 24-hour HH:MM time", f[0])
	}
	h, _ := strconv.Atoi(m[1])
	zone := "UTC"
	if len(f) == 2 {
		zone = f[1]
	}
	if zone == "Local" {
		return s, fmt.Errorf("zone Local depends on the machine; name the zone")
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return s, fmt.Errorf("unknown time zone %q", zone)
	}
	return fmt.Sprintf("%02d:%s %s", h, m[2], zone), nil
}

// envName checks that an *_env value names a variable (and is not, say, the
// secret itself pasted in: the value is never echoed).
func (p *loader) envName(o *object, key, v string) {
	o.check(envNameRE.MatchString(v), key,
		"give the NAME of an environment variable (letters, digits, _), e.g. "+key+": MY_VAR, and put the secret in that variable",
		"%s: not an environment variable name (value not shown, it may be a secret)", o.name(key))
}

func (p *loader) retry(o *object) {
	r := &p.cfg.Retry
	rl := o.sub("rate_limited", rateKeys)
	rl.duration("wait", &r.RateLimited.Wait)
	rl.integer("max_retries", &r.RateLimited.MaxRetries)
	rl.nonNegative("max_retries", r.RateLimited.MaxRetries)
	rl.duration("max_wait", &r.RateLimited.MaxWait)
	rl.check(r.RateLimited.Wait > 0, "wait", "give a base wait such as wait: 30s (retrying a 429 at once only earns another 429; use max_retries: 0 to never retry)",
		"retry.rate_limited.wait: must be longer than 0")
	rl.check(r.RateLimited.MaxWait >= r.RateLimited.Wait, "max_wait", "make max_wait at least rate_limited.wait",
		"retry.rate_limited.max_wait (%s) is shorter than wait (%s)", r.RateLimited.MaxWait, r.RateLimited.Wait)
	se := o.sub("server_error", waitKeys)
	se.duration("wait", &r.ServerError.Wait)
	ae := o.sub("auth_error", authKeys)
	ae.boolean("halt", &r.AuthError.Halt)
	ot := o.sub("other", waitKeys)
	ot.duration("wait", &r.Other.Wait)

	ci := o.sub("circuit", circuitKeys)
	cb := &r.Circuit
	ci.duration("window", &cb.Window)
	ci.check(cb.Window > 0, "window", "give the sliding window, e.g. window: 10m", "retry.circuit.window: must be longer than 0")
	ci.integer("min_samples", &cb.MinSamples)
	ci.positive("min_samples", cb.MinSamples)
	ci.float("failure_rate", &cb.FailureRate)
	ci.check(cb.FailureRate > 0 && cb.FailureRate <= 1, "failure_rate", "use a share above 0 and at most 1, e.g. failure_rate: 0.5", "retry.circuit.failure_rate: %g is outside (0, 1]", cb.FailureRate)
	ci.duration("cooldown", &cb.Cooldown)
	ci.check(cb.Cooldown > 0, "cooldown", "give the open time before a probe, e.g. cooldown: 2m", "retry.circuit.cooldown: must be longer than 0")
	ci.duration("max_cooldown", &cb.MaxCooldown)
	ci.check(cb.MaxCooldown >= cb.Cooldown, "max_cooldown", "make max_cooldown at least cooldown", "retry.circuit.max_cooldown (%s) is shorter than cooldown (%s)", cb.MaxCooldown, cb.Cooldown)
	ci.integer("close_after", &cb.CloseAfter)
	ci.positive("close_after", cb.CloseAfter)
}

func (p *loader) quality(o *object) {
	q := &p.cfg.Quality
	if o.has("schema") {
		raw := ""
		o.str("schema", &raw)
		o.check(raw != "", "schema", "remove the key for the default "+DefaultSchema+", or give a path", "quality.schema: must not be empty")
		q.Schema = resolvePath(p.cfg.Dir, raw)
	}
	o.float("threshold", &q.Threshold)
	o.check(q.Threshold >= 0 && q.Threshold <= 100, "threshold", "use a score from 0 to 100, e.g. threshold: 70", "quality.threshold: %g is outside 0..100", q.Threshold)
	o.integer("min_sections", &q.MinSections)
	o.positive("min_sections", q.MinSections)
	o.integer("min_section_words", &q.MinSectionWords)
	o.nonNegative("min_section_words", q.MinSectionWords)
	raw := ""
	o.str("banned_phrases_file", &raw)
	if raw != "" && !p.failed() {
		q.BannedPhrasesFile = resolvePath(p.cfg.Dir, raw)
		st, err := os.Stat(q.BannedPhrasesFile)
		o.check(err == nil && st.Mode().IsRegular(), "banned_phrases_file",
			"create the file (one phrase a line; relative paths are relative to "+p.cfg.Dir+") or set banned_phrases_file: \"\"",
			"quality.banned_phrases_file: %s not found", q.BannedPhrasesFile)
	}
	if p.failed() {
		return
	}
	data, err := os.ReadFile(q.Schema)
	if err != nil && !o.has("schema") && errors.Is(err, fs.ErrNotExist) {
		q.Schema = "" // the default file is absent: the built-in schema applies
		return
	}
	if err != nil {
		o.check(false, "schema", "put the article schema there (relative paths are relative to "+p.cfg.Dir+"; the repository ships data/article.schema.json), or point quality.schema at it",
			"quality.schema: cannot read %s: %v", q.Schema, unwrapPathErr(err))
		return
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		o.check(false, "schema", "fix the JSON in the schema file (or restore data/article.schema.json)", "quality.schema: %s is not a JSON object: %v", q.Schema, err)
		return
	}
	q.SchemaJSON = data
}

func unwrapPathErr(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func (p *loader) shadow(o *object) {
	s := &p.cfg.Shadow
	items, _ := o.list("providers")
	known := map[string]bool{}
	var names []string
	for _, l := range append(append([]Link(nil), p.cfg.Chain...), p.cfg.Candidates...) {
		known[l.Name] = true
		names = append(names, l.Name)
	}
	seen := map[string]bool{}
	for i, it := range items {
		if p.failed() {
			return
		}
		n := p.resolve(it.node)
		name, ok := scalarString(n)
		if !ok || n == nil {
			p.fail(it.line, "list link names, e.g. providers: [groq]", "shadow.providers[%d]: want a link name, got %s", i, describe(n))
			return
		}
		if !known[name] {
			p.fail(it.line, suggest(name, names, "links in chain and candidates")+"; a shadow provider must be a link of chain or candidates",
				"shadow.providers[%d]: unknown link %q", i, name)
			return
		}
		if seen[name] {
			p.fail(it.line, "list each link once", "shadow.providers[%d]: %q is listed twice", i, name)
			return
		}
		seen[name] = true
		s.Providers = append(s.Providers, name)
	}
	if !p.failed() {
		for i, l := range p.cfg.Candidates {
			if !seen[l.Name] {
				p.warn(p.candLines[i], "candidate %q is not in shadow.providers: it is never called", l.Name)
			}
		}
	}
	o.float("sample_rate", &s.SampleRate)
	o.check(s.SampleRate >= 0 && s.SampleRate <= 1, "sample_rate", "use a share from 0 to 1, e.g. sample_rate: 0.25", "shadow.sample_rate: %g is outside 0..1", s.SampleRate)
}

func (p *loader) alerts(o *object) {
	a := &p.cfg.Alerts
	tg := o.sub("telegram", telegramKeys)
	t := &a.Telegram
	tg.str("token_env", &t.TokenEnv)
	tg.str("chat_id_env", &t.ChatIDEnv)
	tg.str("api_endpoint", &t.APIEndpoint)
	if t.TokenEnv != "" {
		p.envName(tg, "token_env", t.TokenEnv)
	}
	if t.ChatIDEnv != "" {
		p.envName(tg, "chat_id_env", t.ChatIDEnv)
	}
	if t.APIEndpoint != "" {
		tg.check(isHTTPURL(strings.ReplaceAll(t.APIEndpoint, "%s", "x")) && strings.Count(t.APIEndpoint, "%s") == 2, "api_endpoint",
			`use the telegram-bot-api format with two %s (token, method), e.g. "http://127.0.0.1:8081/bot%s/%s", or "" for Telegram's`,
			"alerts.telegram.api_endpoint: not an http(s) URL with two %%s")
	}
	if !p.failed() {
		token, chat := "", ""
		if t.TokenEnv != "" {
			token = strings.TrimSpace(p.getenv(t.TokenEnv))
		}
		if t.ChatIDEnv != "" {
			chat = strings.TrimSpace(p.getenv(t.ChatIDEnv))
		}
		var missing []string
		if token == "" {
			missing = append(missing, orName(t.TokenEnv, "token_env"))
		}
		if chat == "" {
			missing = append(missing, orName(t.ChatIDEnv, "chat_id_env"))
		}
		if len(missing) > 0 {
			p.warn(tg.line, "telegram alerts disabled (%s not set): alerts go to stderr and the alerts table", strings.Join(missing, " and "))
		} else {
			_, err := strconv.ParseInt(chat, 10, 64)
			tg.check(err == nil || channelRE.MatchString(chat), "chat_id_env",
				fmt.Sprintf("set %s to a numeric chat id (e.g. -1001234567890) or a public @channelname", t.ChatIDEnv),
				"alerts.telegram.chat_id_env: %s is not a chat id or @channel (value not shown)", t.ChatIDEnv)
			t.Token, t.ChatID = token, chat
		}
	}
	o.float("budget_warn_at", &a.BudgetWarnAt)
	o.check(a.BudgetWarnAt > 0 && a.BudgetWarnAt <= 1, "budget_warn_at", "use a share of the daily cap above 0 and at most 1, e.g. budget_warn_at: 0.8", "alerts.budget_warn_at: %g is outside (0, 1]", a.BudgetWarnAt)
	o.duration("provider_down_after", &a.ProviderDownAfter)
	o.check(a.ProviderDownAfter > 0, "provider_down_after", "give a duration, e.g. provider_down_after: 1h", "alerts.provider_down_after: must be longer than 0")
}

func orName(env, key string) string {
	if env == "" {
		return "alerts.telegram." + key + " empty"
	}
	return env
}

func (p *loader) schedule(o *object) {
	s := &p.cfg.Schedule
	for _, e := range []struct {
		key string
		dst *string
	}{{"run", &s.Run}, {"health", &s.Health}, {"report", &s.Report}} {
		o.str(e.key, e.dst)
		if *e.dst == "" || p.failed() {
			continue
		}
		_, err := cron.ParseStandard(*e.dst)
		o.check(err == nil, e.key, `use the standard 5 fields "minute hour day-of-month month day-of-week", e.g. "0 6,10,14,18 * * *", or "" to not schedule it`,
			"schedule.%s: bad cron expression %q: %v", e.key, *e.dst, err)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

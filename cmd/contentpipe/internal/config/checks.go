package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/robfig/cron/v3"
)

func (p *loader) retry() {
	rl, cb := p.cfg.Retry.RateLimited, p.cfg.Retry.Circuit
	p.nonNegative("retry.rate_limited.max_retries", rl.MaxRetries)
	p.check(rl.Wait > 0, "retry.rate_limited.wait", "give a base wait such as wait: 30s (retrying a 429 at once only earns another 429; use max_retries: 0 to never retry)",
		"retry.rate_limited.wait: must be longer than 0")
	p.check(rl.MaxWait >= rl.Wait, "retry.rate_limited.max_wait", "make max_wait at least rate_limited.wait",
		"retry.rate_limited.max_wait (%s) is shorter than wait (%s)", rl.MaxWait, rl.Wait)
	p.check(cb.Window > 0, "retry.circuit.window", "give the sliding window, e.g. window: 10m", "retry.circuit.window: must be longer than 0")
	p.positive("retry.circuit.min_samples", cb.MinSamples)
	p.check(cb.FailureRate > 0 && cb.FailureRate <= 1, "retry.circuit.failure_rate", "use a share above 0 and at most 1, e.g. failure_rate: 0.5",
		"retry.circuit.failure_rate: %g is outside (0, 1]", cb.FailureRate)
	p.check(cb.Cooldown > 0, "retry.circuit.cooldown", "give the open time before a probe, e.g. cooldown: 2m", "retry.circuit.cooldown: must be longer than 0")
	p.check(cb.MaxCooldown >= cb.Cooldown, "retry.circuit.max_cooldown", "make max_cooldown at least cooldown",
		"retry.circuit.max_cooldown (%s) is shorter than cooldown (%s)", cb.MaxCooldown, cb.Cooldown)
	p.positive("retry.circuit.close_after", cb.CloseAfter)
}

func (p *loader) quality() {
	q, given := &p.cfg.Quality, p.t.given["quality.schema"]
	if given {
		p.check(q.Schema != "", "quality.schema", "remove the key for the default "+DefaultSchema+", or give a path", "quality.schema: must not be empty")
		q.Schema = resolvePath(p.cfg.Dir, q.Schema)
	}
	p.check(q.Threshold >= 0 && q.Threshold <= 100, "quality.threshold", "use a score from 0 to 100, e.g. threshold: 70", "quality.threshold: %g is outside 0..100", q.Threshold)
	p.positive("quality.min_sections", q.MinSections)
	p.nonNegative("quality.min_section_words", q.MinSectionWords)
	if q.BannedPhrasesFile != "" {
		q.BannedPhrasesFile = resolvePath(p.cfg.Dir, q.BannedPhrasesFile)
		st, err := os.Stat(q.BannedPhrasesFile)
		p.check(err == nil && st.Mode().IsRegular(), "quality.banned_phrases_file",
			"create the file (one phrase a line; relative paths are relative to "+p.cfg.Dir+") or set banned_phrases_file: \"\"",
			"quality.banned_phrases_file: %s not found", q.BannedPhrasesFile)
	}
	if q.Schema == "" || p.t.isBad("quality.schema") {
		return
	}
	data, err := os.ReadFile(q.Schema)
	if err != nil && !given && errors.Is(err, fs.ErrNotExist) {
		q.Schema = "" // the default file is absent: the built-in schema applies
		return
	}
	if err != nil {
		p.fail("quality.schema", "put the article schema there (relative paths are relative to "+p.cfg.Dir+"; the repository ships data/article.schema.json), or point quality.schema at it",
			"quality.schema: cannot read %s: %v", q.Schema, unwrapPathErr(err))
		return
	}
	var v map[string]any
	if err := json.Unmarshal(data, &v); err != nil {
		p.fail("quality.schema", "fix the JSON in the schema file (or restore data/article.schema.json)", "quality.schema: %s is not a JSON object: %v", q.Schema, err)
		return
	}
	if p.opt.CheckSchema != nil {
		if err := p.opt.CheckSchema(data); err != nil {
			p.fail("quality.schema", "fix the schema file (or restore data/article.schema.json)", "quality.schema: %s: %v", q.Schema, err)
			return
		}
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

func (p *loader) shadow() {
	s := &p.cfg.Shadow
	providers := s.Providers
	s.Providers = nil
	var names []string
	for _, l := range append(append([]Link(nil), p.cfg.Chain...), p.cfg.Candidates...) {
		names = append(names, l.Name)
	}
	seen := map[string]bool{}
	for i, name := range providers {
		path := fmt.Sprintf("shadow.providers[%d]", i)
		switch {
		case p.t.isBad(path):
		case !slices.Contains(names, name):
			p.fail(path, suggest(name, names, "links in chain and candidates")+"; a shadow provider must be a link of chain or candidates",
				"shadow.providers[%d]: unknown link %q", i, name)
		case seen[name]:
			p.fail(path, "list each link once", "shadow.providers[%d]: %q is listed twice", i, name)
		default:
			seen[name] = true
			s.Providers = append(s.Providers, name)
		}
	}
	for i, l := range p.cfg.Candidates {
		if !seen[l.Name] {
			p.warn(fmt.Sprintf("candidates[%d].name", i), "candidate %q is not in shadow.providers: it is never called", l.Name)
		}
	}
	p.check(s.SampleRate >= 0 && s.SampleRate <= 1, "shadow.sample_rate", "use a share from 0 to 1, e.g. sample_rate: 0.25", "shadow.sample_rate: %g is outside 0..1", s.SampleRate)
}

func (p *loader) alerts() {
	a := &p.cfg.Alerts
	t := &a.Telegram
	if t.APIEndpoint != "" {
		p.check(isHTTPURL(strings.ReplaceAll(t.APIEndpoint, "%s", "x")) && strings.Count(t.APIEndpoint, "%s") == 2, "alerts.telegram.api_endpoint",
			`use the telegram-bot-api format with two %s (token, method), e.g. "http://127.0.0.1:8081/bot%s/%s", or "" for Telegram's`,
			"alerts.telegram.api_endpoint: not an http(s) URL with two %%s")
	}
	if !p.t.isBad("alerts.telegram.token_env") && !p.t.isBad("alerts.telegram.chat_id_env") {
		p.telegram(t)
	}
	p.check(a.BudgetWarnAt > 0 && a.BudgetWarnAt <= 1, "alerts.budget_warn_at", "use a share of the daily cap above 0 and at most 1, e.g. budget_warn_at: 0.8",
		"alerts.budget_warn_at: %g is outside (0, 1]", a.BudgetWarnAt)
	p.check(a.ProviderDownAfter > 0, "alerts.provider_down_after", "give a duration, e.g. provider_down_after: 1h", "alerts.provider_down_after: must be longer than 0")
	p.check(a.BacklogLowDays >= 0, "alerts.backlog_low_days", "give a number of days, e.g. backlog_low_days: 3, or 0 for no alert",
		"alerts.backlog_low_days: %g is negative", a.BacklogLowDays)
}

// telegram resolves the bot token and chat id; without both, alerts go to
// stderr and the alerts table, with a warning.
func (p *loader) telegram(t *Telegram) {
	token, chat := "", ""
	if t.TokenEnv != "" {
		token = strings.TrimSpace(p.opt.getenv(t.TokenEnv))
	}
	if t.ChatIDEnv != "" {
		chat = strings.TrimSpace(p.opt.getenv(t.ChatIDEnv))
	}
	var missing []string
	if token == "" {
		missing = append(missing, orName(t.TokenEnv, "token_env"))
	}
	if chat == "" {
		missing = append(missing, orName(t.ChatIDEnv, "chat_id_env"))
	}
	if len(missing) > 0 {
		p.warn("alerts.telegram", "telegram alerts disabled (%s not set): alerts go to stderr and the alerts table", strings.Join(missing, " and "))
		return
	}
	_, err := strconv.ParseInt(chat, 10, 64)
	p.check(err == nil || channelRE.MatchString(chat), "alerts.telegram.chat_id_env",
		fmt.Sprintf("set %s to a numeric chat id (e.g. -1001234567890) or a public @channelname", t.ChatIDEnv),
		"alerts.telegram.chat_id_env: %s is not a chat id or @channel (value not shown)", t.ChatIDEnv)
	t.Token, t.ChatID = token, chat
}

func orName(env, key string) string {
	if env == "" {
		return "alerts.telegram." + key + " empty"
	}
	return env
}

func (p *loader) schedule() {
	s := p.cfg.Schedule
	for i, expr := range []string{s.Run, s.Health, s.Report} {
		if expr == "" {
			continue
		}
		key := []string{"run", "health", "report"}[i]
		_, err := cron.ParseStandard(expr)
		p.check(err == nil, "schedule."+key, `use the standard 5 fields "minute hour day-of-month month day-of-week", e.g. "0 6,10,14,18 * * *", or "" to not schedule it`,
			"schedule.%s: bad cron expression %q: %v", key, expr, err)
	}
}

func (p *loader) health() {
	h := p.cfg.Health
	p.check(h.ColdFactor == 0 || h.ColdFactor > 1, "health.cold_factor",
		"give how many times slower than usual counts as cold, e.g. cold_factor: 3",
		"health.cold_factor: %g must be more than 1", h.ColdFactor)
}

func isHTTPURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

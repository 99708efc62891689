// Package config loads and validates contentpipe's configuration file
// (contentpipe.yaml, see README "Configuration") and its topics file.
//
// The files are decoded by github.com/goccy/go-yaml into the yaml-tagged
// structs below, over their defaults (through their raw form, raw.go), then
// checked (parse.go). Every problem of a file is reported, each as an
// *Error naming the file, the line and a fix, together as an Errors, so
// that the command can print them all and exit with status 2. Secrets (API keys,
// the Telegram token, the webhook secret) are read only from the environment
// variables the file names, are kept in the returned structs, and never
// appear in an error, a warning or the String form of a struct.
package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"time"
	_ "time/tzdata" // cap_reset zones must resolve on hosts without a zoneinfo database

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/alerts"
	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/publish"
)

// Config is a loaded, validated contentpipe.yaml with defaults applied,
// relative paths resolved against Dir and secrets resolved from the
// environment. It is a plain value: safe to read from many goroutines.
type Config struct {
	Path string // the file as the caller named it (used in messages)
	Dir  string // absolute directory of the file; relative paths resolve against it

	// EnvFile is the absolute path of env_file: ("" = none): KEY=VALUE
	// lines the named variables are read from when the process
	// environment does not set them (envfile.go).
	EnvFile string `yaml:"env_file"`

	// Database is what telemetry.Open takes: the absolute path of the
	// SQLite file (default <Dir>/data/pipeline.db), or a postgres:// URL
	// from database: or from the variable DatabaseURLEnv names. A URL may
	// carry a password: messages show DatabaseName, never Database.
	Database       string `yaml:"database"`
	DatabaseURLEnv string `yaml:"database_url_env"` // variable holding the database URL; "" = none
	Topics         string `yaml:"topics"`           // absolute path of the topics file; default <Dir>/data/topics.yaml
	PromptsDir     string `yaml:"prompts_dir"`      // absolute path of override templates; "" = the embedded ones

	Publish       Publish `yaml:"publish"`
	Job           Job     `yaml:"job"`
	RetentionDays int     `yaml:"retention_days"` // days prompt/answer text stays in outputs; default 30; 0 = keep forever

	Chain      []Link `yaml:"chain"`      // the failover order; never empty
	Candidates []Link `yaml:"candidates"` // links outside the failover order, usable only as shadow providers

	Retry    Retry    `yaml:"retry"`
	Quality  Quality  `yaml:"quality"`
	Shadow   Shadow   `yaml:"shadow"`
	Alerts   Alerts   `yaml:"alerts"`
	Schedule Schedule `yaml:"schedule"`
	Health   Health   `yaml:"health"`
	Budget   Budget   `yaml:"budget"`

	// Warnings are non-fatal findings, each "file:line: text", to be logged
	// once: adjacent links sharing one infra, Telegram disabled, ignored keys.
	Warnings []string
}

// Budget is the chain-wide money limit: every call counts (job, shadow,
// health). Days and months are UTC; 0 means none.
type Budget struct {
	DailyUSD   float64 `yaml:"daily_usd"`
	MonthlyUSD float64 `yaml:"monthly_usd"`
}

// Set reports whether a money limit is configured.
func (b Budget) Set() bool { return b.DailyUSD > 0 || b.MonthlyUSD > 0 }

// Publish is the publishing target: a kind of publish.Kinds and the keys
// its publish.Target reads.
type Publish struct {
	Kind        publish.Kind  `yaml:"kind"`       // one of publish.Kinds; KindMarkdown by default
	Dir         string        `yaml:"dir"`        // markdown: absolute output directory, default <Dir>/out; hugo, jekyll: the site's root
	URL         string        `yaml:"url"`        // webhook: endpoint; wordpress: the site's address (required for both)
	SecretEnv   string        `yaml:"secret_env"` // webhook: variable holding the HMAC key; "" = unsigned
	Secret      []byte        // resolved value of SecretEnv; never printed
	Section     string        `yaml:"section"`      // hugo: content section; "" = posts
	Bundle      bool          `yaml:"bundle"`       // hugo: page bundles
	User        string        `yaml:"user"`         // wordpress: user name
	PasswordEnv string        `yaml:"password_env"` // wordpress: variable holding the application password
	Password    string        // resolved value of PasswordEnv; never printed
	Status      string        `yaml:"status"` // wordpress: publish (""), draft, future
	Delay       time.Duration `yaml:"delay"`  // wordpress, status future: 0 = 24h
}

// Options are the target's settings for publish.New.
func (p Publish) Options() publish.Options {
	return publish.Options{Dir: p.Dir, Section: p.Section, Bundle: p.Bundle, URL: p.URL, Secret: p.Secret,
		User: p.User, Password: p.Password, Status: p.Status, Delay: p.Delay}
}

// Job holds the per-run and per-job limits.
type Job struct {
	PostsPerRun int           `yaml:"posts_per_run"` // default 4
	PostsPerDay int           `yaml:"posts_per_day"` // ceiling of publications per UTC day across runs; 0 (default) = none
	Deadline    time.Duration `yaml:"deadline"`      // whole budget of one job; default 15m
	Language    string        `yaml:"language"`      // default "en"
	TargetWords int           `yaml:"target_words"`  // default 1500
	Parallel    int           `yaml:"parallel"`      // jobs generated at once; default 1
	// Lease is how long a job's claim holds without its run finishing it
	// before another run (another worker) may take the job over; 0
	// (default) means Deadline + 5m.
	Lease time.Duration `yaml:"lease"`
	// WorkerLease is, on PostgreSQL, how long a worker counts as alive
	// after its last heartbeat (renewed every quarter of it): a machine
	// that died or lost its network loses its claims this long after. 0
	// (default) means telemetry.DefaultOwnerLease (2m).
	WorkerLease time.Duration `yaml:"worker_lease"`
	// DeliveryWindow bounds one delivery (a webhook call, a file write) a
	// worker starts under its claim; another worker reconciles a job left
	// publishing only this long after the holder's lease ran out. 0
	// (default) means telemetry.DefaultDeliveryWindow (45s).
	DeliveryWindow time.Duration `yaml:"delivery_window"`
}

// Link is one provider of the chain (or a shadow-only candidate).
type Link struct {
	Name      string       `yaml:"name"` // unique among chain and candidates
	Kind      profile.Kind `yaml:"kind"` // one of profile.Kinds: gemini or openai (any OpenAI-compatible API)
	Model     string       `yaml:"model"`
	APIKeyEnv string       `yaml:"api_key_env"` // variable holding the key; "" only for keyless servers
	APIKey    string       // resolved value of APIKeyEnv; never printed
	BaseURL   string       `yaml:"base_url"`  // required for kind openai; optional for gemini
	Provider  string       `yaml:"provider"`  // profile its answers are read with (README "Real provider answers"); "" = from base_url and name
	Infra     string       `yaml:"infra"`     // failure domain, for the adjacency warning
	DailyCap  int          `yaml:"daily_cap"` // our requests/day limit; 0 = none
	// DailyTokens is our input+output tokens/day limit; 0 = none.
	DailyTokens int `yaml:"daily_tokens"`
	// DailyBudgetUSD is our USD/day limit (estimated before each call,
	// settled with the real cost); 0 = none.
	DailyBudgetUSD float64 `yaml:"daily_budget_usd"`
	// PriceKnown is true when Price came from the link's price: or the
	// built-in table (see PricesAsOf); false means the price is unknown.
	PriceKnown bool
	// Prompt names the template this link is prompted with; "" (the
	// default) means its kind's family ("gemini" or "openai").
	Prompt   string   `yaml:"prompt"`
	RPM      int      `yaml:"rpm"`       // requests per minute pacing; 0 = none
	TPM      int      `yaml:"tpm"`       // tokens per minute pacing; 0 = none
	CapReset string   `yaml:"cap_reset"` // "HH:MM Zone" the provider's day starts; default "00:00 UTC"
	Price    Price    `yaml:"price"`
	Timeouts Timeouts `yaml:"timeouts"`
	// JSONMode is how an openai-kind link asks for JSON: "json_schema",
	// "json_object" (default) or "" (prompt only; config value "none").
	// Always "" for kind gemini, which uses responseJsonSchema.
	JSONMode  string `yaml:"json_mode"`
	Stream    bool   `yaml:"stream"`     // use the streaming endpoint; default true
	MaxTokens int    `yaml:"max_tokens"` // output token limit sent with each request; default 8192; 0 = provider default
}

// String describes the link without its key.
func (l Link) String() string {
	return fmt.Sprintf("%s (%s %s)", l.Name, l.Kind, l.Model)
}

// GoString is String: the key must not leak through %#v either.
func (l Link) GoString() string { return "config.Link{" + l.String() + "}" }

// Price is USD per million tokens.
type Price struct {
	InputPerMTok  float64 `yaml:"input_per_mtok"`
	OutputPerMTok float64 `yaml:"output_per_mtok"`
}

// Timeouts are a link's time limits; 0 means none. The fields are in the
// order of chain.Timeouts, so chain.Timeouts(l.Timeouts) converts.
type Timeouts struct {
	Connect    time.Duration `yaml:"connect"`     // default 10s
	FirstToken time.Duration `yaml:"first_token"` // default 60s
	Idle       time.Duration `yaml:"idle"`        // default 30s
	Total      time.Duration `yaml:"total"`       // default 5m
}

// Retry is the outcome policy (README "How a job walks the chain") plus the circuit breaker settings
// (extension key retry.circuit).
type Retry struct {
	RateLimited RateLimitPolicy `yaml:"rate_limited"`
	ServerError WaitPolicy      `yaml:"server_error"` // default wait 0s
	AuthError   AuthPolicy      `yaml:"auth_error"`
	Other       WaitPolicy      `yaml:"other"` // default wait 10s
	Circuit     Circuit         `yaml:"circuit"`
}

// RateLimitPolicy governs 429s with a short window.
type RateLimitPolicy struct {
	Wait       time.Duration `yaml:"wait"`        // default 30s (full jitter)
	MaxRetries int           `yaml:"max_retries"` // default 2
	MaxWait    time.Duration `yaml:"max_wait"`    // default 60s
}

// WaitPolicy is a wait before moving to the next provider.
type WaitPolicy struct {
	Wait time.Duration `yaml:"wait"`
}

// AuthPolicy governs 401/403.
type AuthPolicy struct {
	Halt bool `yaml:"halt"` // default true: stop the run (exit 3)
}

// Circuit is the per-provider circuit breaker (config key retry.circuit).
type Circuit struct {
	Window      time.Duration `yaml:"window"`       // sliding window; default 10m
	MinSamples  int           `yaml:"min_samples"`  // calls in the window before it can open; default 4
	FailureRate float64       `yaml:"failure_rate"` // (0,1]; default 0.5
	Cooldown    time.Duration `yaml:"cooldown"`     // open → half-open; default 2m, doubled per failed probe
	MaxCooldown time.Duration `yaml:"max_cooldown"` // default 1h
	CloseAfter  int           `yaml:"close_after"`  // consecutive successes to close; default 2
}

// Quality is the quality gate.
type Quality struct {
	// Schema is the absolute path of the article schema; default
	// <Dir>/data/article.schema.json. When the key is absent and that file
	// does not exist, Schema is "" and SchemaJSON nil: use the built-in
	// schema (data.ArticleSchema). A schema named in the file must exist.
	Schema            string  `yaml:"schema"`
	SchemaJSON        []byte  // the schema file's content (a JSON object); nil with Schema ""
	Threshold         float64 `yaml:"threshold"`           // 0..100; default 70
	MinSections       int     `yaml:"min_sections"`        // default 5
	MinSectionWords   int     `yaml:"min_section_words"`   // default 200
	BannedPhrasesFile string  `yaml:"banned_phrases_file"` // absolute path, "" = none
}

// Shadow configures shadow calls.
type Shadow struct {
	Providers  []string `yaml:"providers"`   // names from Chain or Candidates
	SampleRate float64  `yaml:"sample_rate"` // 0..1; default 1.0
}

// Alerts configures alerting.
type Alerts struct {
	Telegram          Telegram      `yaml:"telegram"`
	BudgetWarnAt      float64       `yaml:"budget_warn_at"`      // (0,1]; default 0.8
	ProviderDownAfter time.Duration `yaml:"provider_down_after"` // default 1h
	BacklogLowDays    float64       `yaml:"backlog_low_days"`    // warn when the backlog lasts fewer days; default 3, 0 = never
}

// Telegram is the Telegram notifier. It is enabled only when both
// variables are set; otherwise Token and ChatID are "" and Config.Warnings
// says so.
type Telegram struct {
	TokenEnv    string `yaml:"token_env"`    // default TELEGRAM_BOT_TOKEN
	ChatIDEnv   string `yaml:"chat_id_env"`  // default TELEGRAM_CHAT_ID
	APIEndpoint string `yaml:"api_endpoint"` // "" = Telegram's; else "http://host:port/bot%s/%s"
	Token       string // never printed
	ChatID      string // a decimal int64 or "@channelname"
}

// Enabled reports whether Telegram alerts can be sent.
func (t Telegram) Enabled() bool { return t.Token != "" && t.ChatID != "" }

// String describes the notifier without its token.
func (t Telegram) String() string {
	if !t.Enabled() {
		return "telegram (disabled)"
	}
	return "telegram (chat from " + t.ChatIDEnv + ")"
}

// GoString is String: the token must not leak through %#v either.
func (t Telegram) GoString() string { return "config.Telegram{" + t.String() + "}" }

// String describes the target without its secret.
func (p Publish) String() string {
	if t, ok := publish.Lookup(p.Kind); ok && slices.Contains(t.Keys, "url") {
		return string(p.Kind) + " " + p.URL
	}
	return string(p.Kind) + " " + p.Dir
}

// GoString is String: the secret must not leak through %#v either.
func (p Publish) GoString() string { return "config.Publish{" + p.String() + "}" }

// Health configures the health walk's cold-start detection: a link whose
// health call is slower than ColdFactor times its baseline (the median of
// its job calls of the last 14 days) and slower than ColdFloor is cold.
// Zero fields take the chain's defaults (factor 3, floor 2s).
type Health struct {
	ColdFactor float64       `yaml:"cold_factor"` // > 1; 0 = default 3
	ColdFloor  time.Duration `yaml:"cold_floor"`  // 0 = default 2s
}

// Schedule holds the cron expressions `serve` uses (standard 5 fields or a
// descriptor such as @daily). "" means not scheduled.
type Schedule struct {
	Run    string `yaml:"run"`    // default "0 6,10,14,18 * * *"
	Health string `yaml:"health"` // default "0 5 * * 1"
	Report string `yaml:"report"` // default "0 9 * * 1"
}

// Defaults of the file format.
const (
	DefaultDatabase = "data/pipeline.db"
	DefaultTopics   = "data/topics.yaml"
	DefaultSchema   = "data/article.schema.json"
	DefaultOutDir   = "out"
	DefaultCapReset = "00:00 UTC"
)

// Default returns a Config holding every default, with paths resolved
// against dir, an empty chain, no secrets and no validation. `run --demo`
// without a config file starts from it.
func Default(dir string) *Config {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	return &Config{
		Dir:           dir,
		Database:      resolvePath(dir, DefaultDatabase),
		Topics:        resolvePath(dir, DefaultTopics),
		Publish:       Publish{Kind: publish.KindMarkdown, Dir: resolvePath(dir, DefaultOutDir)},
		Job:           Job{PostsPerRun: 4, Deadline: chain.DefaultDeadline, Language: "en", TargetWords: 1500, Parallel: 1},
		RetentionDays: 30,
		Retry:         defaultRetry(),
		Quality:       Quality{Schema: resolvePath(dir, DefaultSchema), Threshold: 70, MinSections: 5, MinSectionWords: 200},
		Shadow:        Shadow{SampleRate: 1.0},
		Alerts: Alerts{
			Telegram:          Telegram{TokenEnv: "TELEGRAM_BOT_TOKEN", ChatIDEnv: "TELEGRAM_CHAT_ID"},
			BudgetWarnAt:      alerts.DefaultBudgetWarnAt,
			BacklogLowDays:    3,
			ProviderDownAfter: alerts.DefaultProviderDownAfter,
		},
		Schedule: Schedule{Run: "0 6,10,14,18 * * *", Health: "0 5 * * 1", Report: "0 9 * * 1"},
	}
}

// defaultRetry is the `retry:` section the file starts from: the chain's
// own defaults (DefaultRetryPolicy, the zero BreakerSettings), which are
// written there and nowhere else.
func defaultRetry() Retry {
	p, b := chain.DefaultRetryPolicy(), chain.BreakerSettings{}.WithDefaults()
	return Retry{
		RateLimited: RateLimitPolicy{Wait: p.RateLimitedWait, MaxRetries: p.RateLimitedMaxRetries, MaxWait: p.RateLimitedMaxWait},
		ServerError: WaitPolicy{Wait: p.ServerErrorWait},
		AuthError:   AuthPolicy{Halt: p.AuthHalt},
		Other:       WaitPolicy{Wait: p.OtherWait},
		Circuit: Circuit{Window: b.Window, MinSamples: b.MinSamples, FailureRate: b.FailureRate,
			Cooldown: b.Cooldown, MaxCooldown: b.MaxCooldown, CloseAfter: b.CloseAfter},
	}
}

// DefaultLink returns a link holding the per-link defaults (kind-specific
// JSONMode is applied by Parse).
func DefaultLink() Link {
	return Link{
		CapReset:  DefaultCapReset,
		Timeouts:  Timeouts{Connect: 10 * time.Second, FirstToken: 60 * time.Second, Idle: 30 * time.Second, Total: 5 * time.Minute},
		Stream:    true,
		MaxTokens: chain.DefaultMaxTokens,
	}
}

// Loader loads config and topics files with the checks that need
// knowledge from outside this package. The zero value reads the
// environment with os.Getenv, requires every named key variable to be set,
// and checks neither prompt names nor language support. A Loader is a
// plain value, safe for concurrent use if its functions are.
type Loader struct {
	// Getenv looks up the variables the file names; nil means os.Getenv.
	Getenv func(string) string
	// KeysOptional makes an unset provider key variable fine (the link's
	// APIKey stays empty): for the commands that call no provider.
	KeysOptional bool
	// PromptNames lists the template names a link's prompt: may name, given
	// the resolved prompts_dir ("" = the embedded templates); its error is
	// reported at prompts_dir. nil: prompt names are not checked.
	PromptNames func(promptsDir string) ([]string, error)
	// LanguageSupported reports whether the quality gate can check text in
	// a language code (job.language and each topic's language); nil accepts
	// every well-formed code. Languages, if set, is listed in the message.
	LanguageSupported func(code string) bool
	Languages         []string
	// CheckSchema compiles the article schema file; its error is reported
	// at quality.schema. nil: the file need only be a JSON object.
	CheckSchema func(schemaJSON []byte) error
}

func (l Loader) getenv(name string) string {
	if l.Getenv == nil {
		return os.Getenv(name)
	}
	return l.Getenv(name)
}

// Load reads and parses the config file at path. A missing file is an
// *Error whose fix points at the example config and `run --demo`; any other
// problem is an Errors with every problem of the file.
func (l Loader) Load(path string) (*Config, error) {
	cfg, err := l.Check(path)
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// Check is Load for `config check`: when the file was read and is YAML, it
// also returns the config as far as it could be built next to the error,
// so that the caller can go on to check the topics file it names.
func (l Loader) Check(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, &Error{File: path, Msg: "config file not found",
				Fix: "create one from data/contentpipe.example.yaml or run `contentpipe run --demo`", cause: err}
		}
		return nil, &Error{File: path, Msg: fmt.Sprintf("read config: %v", unwrapPathErr(err)),
			Fix: "check the path given with --config and its permissions", cause: err}
	}
	cfg, errs := l.parse(path, data)
	return cfg, errs.orNil()
}

// Parse parses data as the config file at path (path names the file in
// messages and its directory anchors relative paths; the file itself is not
// read). Schema, banned-phrases and prompts paths are checked on disk.
func (l Loader) Parse(path string, data []byte) (*Config, error) {
	cfg, errs := l.parse(path, data)
	if len(errs) > 0 {
		return nil, errs.orNil()
	}
	return cfg, nil
}

// Load is Loader{Getenv: getenv}.Load.
func Load(path string, getenv func(string) string) (*Config, error) {
	return Loader{Getenv: getenv}.Load(path)
}

// LoadForReading is Load for the commands that call no provider (`sql`,
// `report`, `review`, `simulate`): a provider key variable that is unset is
// not an error there (the link's APIKey stays empty). Everything else is
// checked as by Load.
func LoadForReading(path string, getenv func(string) string) (*Config, error) {
	return Loader{Getenv: getenv, KeysOptional: true}.Load(path)
}

// Parse is Loader{Getenv: getenv}.Parse.
func Parse(path string, data []byte, getenv func(string) string) (*Config, error) {
	return Loader{Getenv: getenv}.Parse(path, data)
}

func resolvePath(dir, p string) string {
	if p == "" {
		return ""
	}
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(dir, p)
}

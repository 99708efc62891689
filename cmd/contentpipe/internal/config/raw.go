package config

import (
	"math"
	"reflect"
	"strconv"
	"strings"
	"time"

	yaml "github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
)

// The raw* structs are the files as written: one tagged field per key, which
// the decoder fills (refusing any key that is not here), and a nil pointer
// for a key that is absent or null, so that an explicit 0 or "" is not
// mistaken for "use the default". The defaults live in Default and
// DefaultLink only; Parse copies every non-nil field over them.

type rawConfig struct {
	EnvFile        *string      `yaml:"env_file"`
	Database       *string      `yaml:"database"`
	DatabaseURLEnv *envVar      `yaml:"database_url_env"`
	Topics         *string      `yaml:"topics"`
	PromptsDir     *string      `yaml:"prompts_dir"`
	Publish        rawPublish   `yaml:"publish"`
	Job            rawJob       `yaml:"job"`
	RetentionDays  *wholeNumber `yaml:"retention_days"`
	Chain          []rawLink    `yaml:"chain"`
	Candidates     []rawLink    `yaml:"candidates"`
	Retry          rawRetry     `yaml:"retry"`
	Quality        rawQuality   `yaml:"quality"`
	Shadow         rawShadow    `yaml:"shadow"`
	Alerts         rawAlerts    `yaml:"alerts"`
	Schedule       rawSchedule  `yaml:"schedule"`
	Health         rawHealth    `yaml:"health"`
	Budget         rawBudget    `yaml:"budget"`
}

type rawBudget struct {
	DailyUSD   *number `yaml:"daily_usd"`
	MonthlyUSD *number `yaml:"monthly_usd"`
}

type rawPublish struct {
	Kind        *string   `yaml:"kind"`
	Dir         *string   `yaml:"dir"`
	URL         *string   `yaml:"url"`
	SecretEnv   *envVar   `yaml:"secret_env"`
	Section     *string   `yaml:"section"`
	Bundle      *bool     `yaml:"bundle"`
	User        *string   `yaml:"user"`
	PasswordEnv *envVar   `yaml:"password_env"`
	Status      *string   `yaml:"status"`
	Delay       *duration `yaml:"delay"`
}

type rawJob struct {
	PostsPerRun *wholeNumber `yaml:"posts_per_run"`
	PostsPerDay *wholeNumber `yaml:"posts_per_day"`
	Deadline    *duration    `yaml:"deadline"`
	Language    *string      `yaml:"language"`
	TargetWords *wholeNumber `yaml:"target_words"`
	Parallel    *wholeNumber `yaml:"parallel"`
	Lease       *duration    `yaml:"lease"`
	WorkerLease *duration    `yaml:"worker_lease"`
	Delivery    *duration    `yaml:"delivery_window"`
}

type rawLink struct {
	Name      *string      `yaml:"name"`
	Kind      *string      `yaml:"kind"`
	Model     *string      `yaml:"model"`
	APIKeyEnv *envVar      `yaml:"api_key_env"`
	BaseURL   *string      `yaml:"base_url"`
	Provider  *string      `yaml:"provider"`
	Infra     *string      `yaml:"infra"`
	DailyCap  *wholeNumber `yaml:"daily_cap"`
	DailyTok  *wholeNumber `yaml:"daily_tokens"`
	DailyUSD  *number      `yaml:"daily_budget_usd"`
	Prompt    *string      `yaml:"prompt"`
	RPM       *wholeNumber `yaml:"rpm"`
	TPM       *wholeNumber `yaml:"tpm"`
	CapReset  *string      `yaml:"cap_reset"`
	Price     rawPrice     `yaml:"price"`
	Timeouts  rawTimeouts  `yaml:"timeouts"`
	JSONMode  *string      `yaml:"json_mode"`
	Stream    *bool        `yaml:"stream"`
	MaxTokens *wholeNumber `yaml:"max_tokens"`
}

type rawPrice struct {
	InputPerMTok  *number `yaml:"input_per_mtok"`
	OutputPerMTok *number `yaml:"output_per_mtok"`
}

type rawTimeouts struct {
	Connect    *duration `yaml:"connect"`
	FirstToken *duration `yaml:"first_token"`
	Total      *duration `yaml:"total"`
	Idle       *duration `yaml:"idle"`
}

type rawRetry struct {
	RateLimited struct {
		Wait       *duration    `yaml:"wait"`
		MaxRetries *wholeNumber `yaml:"max_retries"`
		MaxWait    *duration    `yaml:"max_wait"`
	} `yaml:"rate_limited"`
	ServerError rawWait `yaml:"server_error"`
	AuthError   struct {
		Halt *bool `yaml:"halt"`
	} `yaml:"auth_error"`
	Other   rawWait    `yaml:"other"`
	Circuit rawCircuit `yaml:"circuit"`
}

type rawWait struct {
	Wait *duration `yaml:"wait"`
}

type rawCircuit struct {
	Window      *duration    `yaml:"window"`
	MinSamples  *wholeNumber `yaml:"min_samples"`
	FailureRate *number      `yaml:"failure_rate"`
	Cooldown    *duration    `yaml:"cooldown"`
	MaxCooldown *duration    `yaml:"max_cooldown"`
	CloseAfter  *wholeNumber `yaml:"close_after"`
}

type rawQuality struct {
	Schema            *string      `yaml:"schema"`
	Threshold         *number      `yaml:"threshold"`
	MinSections       *wholeNumber `yaml:"min_sections"`
	MinSectionWords   *wholeNumber `yaml:"min_section_words"`
	BannedPhrasesFile *string      `yaml:"banned_phrases_file"`
}

type rawShadow struct {
	Providers  []string `yaml:"providers"`
	SampleRate *number  `yaml:"sample_rate"`
}

type rawAlerts struct {
	Telegram struct {
		TokenEnv    *envVar `yaml:"token_env"`
		ChatIDEnv   *envVar `yaml:"chat_id_env"`
		APIEndpoint *string `yaml:"api_endpoint"`
	} `yaml:"telegram"`
	BudgetWarnAt      *number   `yaml:"budget_warn_at"`
	ProviderDownAfter *duration `yaml:"provider_down_after"`
	BacklogLowDays    *number   `yaml:"backlog_low_days"`
}

type rawSchedule struct {
	Run    *string `yaml:"run"`
	Health *string `yaml:"health"`
	Report *string `yaml:"report"`
}

type rawTopic struct {
	ID          *string      `yaml:"id"`
	Title       *string      `yaml:"title"`
	Category    *string      `yaml:"category"`
	Keywords    []string     `yaml:"keywords"`
	Language    *string      `yaml:"language"`
	TargetWords *wholeNumber `yaml:"target_words"`
	Priority    *wholeNumber `yaml:"priority"`
	NotBefore   *string      `yaml:"not_before"`
	Repeat      *string      `yaml:"repeat"`
}

// valueError is a value of the right YAML shape that a field type refuses
// while decoding, with the node it is about; decodeAll reports it at that
// node's path and line.
type valueError struct {
	node ast.Node
	want string // what the value should have been ("an integer"), or "" with msg
	msg  string // follows "<path>: "
	fix  string
	env  bool // an *_env value that is not a variable name: the fix is built from the path
}

func (e *valueError) Error() string { return e.msg }

// wholeNumber is a count. goccy alone would truncate 4.5 to 4 and take "4"
// for 4; here a count is written as a whole number, or it is an error.
type wholeNumber int

// UnmarshalYAML takes an integer, or a float with no fractional part.
func (w *wholeNumber) UnmarshalYAML(node ast.Node) error {
	switch node.Type() {
	case ast.IntegerType:
		var n int
		if err := yaml.NodeToValue(node, &n); err != nil {
			return err
		}
		*w = wholeNumber(n)
		return nil
	case ast.FloatType:
		var f float64
		if err := yaml.NodeToValue(node, &f); err == nil && f == math.Trunc(f) && math.Abs(f) < 1<<53 {
			*w = wholeNumber(f)
			return nil
		}
	}
	return &valueError{node: node, want: "an integer"}
}

// maxNumber bounds every number of the config that takes a fraction
// (prices, budgets, shares, factors): nothing it sets means anything above
// a billion, and a cost computed from a larger price can overflow to +Inf.
const maxNumber = 1e9

// number is a finite number of sensible size: .inf, .nan and anything past
// maxNumber are refused, each with its own message, before any range check
// of the key could call them negative or out of range.
type number float64

// UnmarshalYAML takes an integer or a float that is finite and at most
// maxNumber in size; anything else keeps goccy's own type error.
func (x *number) UnmarshalYAML(node ast.Node) error {
	var f float64
	text := strings.TrimSpace(node.GetToken().Value)
	err := yaml.NodeToValue(node, &f)
	if err != nil {
		// 1e400 does not fit a float64: goccy gives up on it.
		if v, perr := strconv.ParseFloat(text, 64); perr != nil && math.IsInf(v, 0) {
			return &valueError{node: node, msg: text + " is infinite (too large for a number)", fix: numberFix}
		}
		return err
	}
	switch {
	case math.IsNaN(f):
		return &valueError{node: node, msg: text + " is not a number", fix: numberFix}
	case math.IsInf(f, 0):
		return &valueError{node: node, msg: text + " is infinite", fix: numberFix}
	case math.Abs(f) > maxNumber:
		return &valueError{node: node, msg: text + " is too large (at most 1e9)", fix: numberFix}
	}
	*x = number(f)
	return nil
}

const numberFix = "write a finite number of sensible size, e.g. 0.5 (USD, shares and factors are never infinite or above 1e9)"

// duration is a Go duration ("30s", "10m"); a bare 0 means none.
type duration time.Duration

const durationFix = "use Go syntax like 30s, 10m, 1h30m (units ns, us, ms, s, m, h)"

// UnmarshalYAML parses a duration string, refusing a negative one and a
// number without a unit.
func (d *duration) UnmarshalYAML(node ast.Node) error {
	switch n := node.(type) {
	case *ast.IntegerNode:
		var v int64
		if err := yaml.NodeToValue(n, &v); err == nil && v == 0 {
			*d = 0
			return nil
		}
		return &valueError{node: node, msg: "bad duration " + describe(node) + ": a number needs a unit", fix: durationFix}
	case *ast.StringNode:
		v, err := time.ParseDuration(strings.TrimSpace(n.Value))
		if err != nil {
			return &valueError{node: node, msg: "bad duration " + describe(node), fix: durationFix}
		}
		if v < 0 {
			return &valueError{node: node, msg: "duration " + describe(node) + " must not be negative", fix: "use a positive duration, or 0s for none"}
		}
		*d = duration(v)
		return nil
	}
	return &valueError{node: node, want: "a duration"}
}

// envVar is the value of an *_env key: the name of an environment variable,
// upper-case letters, digits and '_', not starting with a digit. Anything
// else is refused without being echoed, because what is there instead is
// often the secret itself (a Groq key, gsk_…, even looks like a lower-case
// variable name). Every *_env field of the raw structs has this type.
type envVar string

// UnmarshalYAML takes a string that is a conventional variable name, or "".
func (e *envVar) UnmarshalYAML(node ast.Node) error {
	var s string
	if err := yaml.NodeToValue(node, &s); err != nil {
		return err
	}
	if s != "" && !envNameRE.MatchString(s) {
		return &valueError{node: node, env: true,
			msg: "not an environment variable name (upper-case letters, digits and _; the value is not shown: it looks like a key was pasted here)"}
	}
	*e = envVar(s)
	return nil
}

// keysOf lists the yaml keys of the struct type that the raw path (relative
// to the file's root, e.g. "chain[1].price") decodes into, for did-you-mean
// hints; nil when the path is not a mapping.
func keysOf(root reflect.Type, path string) []string {
	t := root
	for _, seg := range splitPath(path) {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		switch {
		case strings.HasPrefix(seg, "["):
			if t.Kind() != reflect.Slice {
				return nil
			}
			t = t.Elem()
		case t.Kind() == reflect.Struct:
			f, ok := fieldByKey(t, seg)
			if !ok {
				return nil
			}
			t = f.Type
		default:
			return nil
		}
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	keys := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		keys = append(keys, yamlKey(t.Field(i)))
	}
	return keys
}

func fieldByKey(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if yamlKey(t.Field(i)) == key {
			return t.Field(i), true
		}
	}
	return reflect.StructField{}, false
}

func yamlKey(f reflect.StructField) string {
	k, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	return k
}

// splitPath splits "chain[1].price.input_per_mtok" into "chain", "[1]",
// "price", "input_per_mtok".
func splitPath(path string) []string {
	var segs []string
	for _, part := range strings.Split(path, ".") {
		for part != "" {
			i := strings.IndexByte(part[1:], '[') + 1
			if i == 0 {
				segs = append(segs, part)
				break
			}
			segs = append(segs, part[:i])
			part = part[i:]
		}
	}
	return segs
}

package whatif

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// Model is a fault model for `contentpipe simulate`: how each simulated
// provider behaves, day by day, over a simulated period. It is plain data
// (the command decodes it from YAML; this package imports no YAML parser);
// the zero value of every field is documented and means "no such fault".
// A Model is read-only once validated and safe to share between scenarios.
type Model struct {
	// Seed is the default seed of the world (outage timelines, busy days,
	// per-call draws); a --seed flag overrides it.
	Seed uint64 `yaml:"seed"`
	// Start is the first simulated UTC day, "YYYY-MM-DD"; "" means 2026-01-05.
	Start string `yaml:"start"`
	// BusyDays is the share of days on which global traffic peaks: free-tier
	// daily quotas shrink to each provider's BusyDayQuota and per-minute 429
	// bursts are BusyRateFactor times as likely. 0 = never busy.
	BusyDays float64 `yaml:"busy_days"`
	// BusyRateFactor multiplies per-minute 429 probabilities on busy days;
	// 0 means 2.
	BusyRateFactor float64 `yaml:"busy_rate_factor"`
	// Groups are correlation groups (shared infrastructure): an outage of a
	// group hits every provider whose Group names it, at the same time.
	Groups map[string]Outages `yaml:"groups"`
	// Providers maps a chain link name to its behaviour. Every link of the
	// simulated chain must have an entry.
	Providers map[string]ProviderModel `yaml:"providers"`
}

// ProviderModel is one provider's behaviour.
type ProviderModel struct {
	// Flavor selects the wire shapes of its errors (what the real adapter
	// would report: Retry-After, reset times, scopes): gemini, groq,
	// cerebras or openrouter. "" means the link's name when that is a
	// flavor, else gemini for a gemini-kind link and groq otherwise.
	Flavor sim.Flavor `yaml:"flavor"`
	// Group is the correlation group whose outages this provider shares.
	Group string `yaml:"group"`
	// Outages are this provider's own outages, independent of its group.
	Outages Outages `yaml:"outages"`
	// Latency is how long an answer takes.
	Latency Latency `yaml:"latency"`
	// RateLimit is the provider's rate-limit behaviour.
	RateLimit RateLimit `yaml:"rate_limit"`
	// Errors are per-call failures outside outages.
	Errors Errors `yaml:"errors"`
	// Quality is the distribution of its answers.
	Quality Quality `yaml:"quality"`
	// Drift is a slow slide of its answers' quality over weeks.
	Drift Drift `yaml:"drift"`
	// Auth is a revoked key.
	Auth Auth `yaml:"auth"`
}

// Drift is a silent decay of a provider's answers: from After (counted
// from the first simulated day) the length its model aims at slides
// linearly, over Over, from its Quality.Length (or 1) to Length, and stays
// there. The gate's words check costs 100·(1 − words/(0.8·target)) points
// below 80 % of the target, so a Length of 0.72 is a slide of about ten
// points in the mean score. The zero value drifts nothing.
type Drift struct {
	After  time.Duration `yaml:"after"`
	Over   time.Duration `yaml:"over"`
	Length float64       `yaml:"length"`
}

// Auth is a revoked key: from RevokedAfter (counted from the first
// simulated day) every call gets a 401, until the operator has put a new
// key in place RestoredAfter later (0 = never). The zero value revokes
// nothing.
type Auth struct {
	RevokedAfter  time.Duration `yaml:"revoked_after"`
	RestoredAfter time.Duration `yaml:"restored_after"`
}

// Outages is a stream of outages: starts are a Poisson process with mean
// gap Every; each lasts between Length/2 and 3·Length/2 (uniform). The
// zero value has none.
type Outages struct {
	Every  time.Duration `yaml:"every"`
	Length time.Duration `yaml:"length"`
	// Fault is how calls fail during an outage: unavailable (503 within
	// the error latency, the default), server_error (500), hang (no first
	// token until the link's first-token timeout), stall (the answer starts,
	// then stalls mid-stream until the link's total timeout) or rate_day
	// (every call gets the daily-quota 429: the provider day's share is
	// gone, "an hour later still 429").
	Fault sim.Fault `yaml:"fault"`
}

// Latency is a log-normal answer time given by its median and 95th
// percentile; FirstToken is the share of it before the first token.
// The zero value is a median of 12s, p95 30s, first token at 15%.
type Latency struct {
	Median     time.Duration `yaml:"median"`
	P95        time.Duration `yaml:"p95"`
	FirstToken float64       `yaml:"first_token"`
	// Error is how long a refused call (429, 5xx) takes; 0 means 300ms.
	Error time.Duration `yaml:"error"`
}

// RateLimit is a provider's rate limiting.
type RateLimit struct {
	// PerMinute is the probability that a call starts a per-minute 429
	// burst (all hours); ByHour overrides it for UTC hours "0".."23".
	PerMinute float64            `yaml:"per_minute"`
	ByHour    map[string]float64 `yaml:"by_hour"`
	// Burst is the mean length of a burst (exponential, at least 1s); every
	// call inside it gets a 429 advertising the rest of the burst as its
	// Retry-After. 0 means 20s.
	Burst time.Duration `yaml:"burst"`
	// DailyQuota is the number of answered requests per provider day; the
	// next request gets a daily-quota 429. 0 = unlimited.
	DailyQuota int `yaml:"daily_quota"`
	// DailyTokens is the input and output tokens of the answers delivered
	// per provider day (a free tier's TPD); once used up, the next request
	// gets a daily-quota 429. 0 = unlimited.
	DailyTokens int `yaml:"daily_tokens"`
	// RPM is the per-minute request allowance: a request is refused with a
	// per-minute 429 when RPM requests arrived in the minute before it.
	// Every request counts, the refused ones too, so retrying into a full
	// bucket keeps it full. 0 = none.
	RPM int `yaml:"rpm"`
	// TPM is the per-minute token allowance: each admitted request counts
	// the tokens it asks for (its prompt, about four characters a token, and
	// the answer its "Target words" line asks for, 1.35 tokens a word);
	// a request that does not fit the minute is refused. 0 = none.
	TPM int `yaml:"tpm"`
	// Penalty lengthens a throttle for those who do not wait: a request
	// refused while throttled (inside a burst, or into a full RPM or TPM
	// bucket) pushes the throttle's end to at least Penalty after it.
	// 0 = none.
	Penalty time.Duration `yaml:"penalty"`
	// BanAfter refused requests within one minute earn a temporary ban of
	// Ban: every request in it is refused with the rest of the ban as its
	// Retry-After, and counts as refused, so a client that goes on
	// hammering re-arms it. 0 = no ban.
	BanAfter int           `yaml:"ban_after"`
	Ban      time.Duration `yaml:"ban"`
	// BusyDayQuota is the daily quota on busy days (see Model.BusyDays);
	// 0 means DailyQuota.
	BusyDayQuota int `yaml:"busy_day_quota"`
	// QuotaReset is when the provider's own day starts, "HH:MM" or
	// "HH:MM Zone"; "" means 00:00 UTC. It may differ from the link's
	// cap_reset: that is what the chain believes.
	QuotaReset string `yaml:"quota_reset"`
}

// Errors are per-call failure probabilities outside outages.
type Errors struct {
	ServerError float64 `yaml:"server_error"` // 500
	Unavailable float64 `yaml:"unavailable"`  // 503
	Timeout     float64 `yaml:"timeout"`      // no answer until the link's timeout
	StreamCut   float64 `yaml:"stream_cut"`   // the answer breaks off mid-stream
}

// Quality is the distribution of a provider's answers: the probability of
// each kind of bad answer, and whether its normal answers are thin (a
// smaller model: about 85% of the target words).
type Quality struct {
	Thin bool `yaml:"thin"`
	// Length is the share of the asked length (the prompt's Target words)
	// the model aims at; 0 means 1. A smaller model that writes thinner
	// articles than asked has, say, 0.85: the gate's words check then costs
	// it points.
	Length     float64 `yaml:"length"`
	LowQuality float64 `yaml:"low_quality"` // schema-valid but far too short
	MetaPhrase float64 `yaml:"meta_phrase"` // chat framing left in the article
	BadJSON    float64 `yaml:"bad_json"`    // not the article schema
	Truncate   float64 `yaml:"truncate"`    // cut at the token limit
}

// StartDay returns the first simulated day (UTC midnight).
func (m *Model) StartDay() time.Time {
	if t, err := time.Parse("2006-01-02", m.Start); err == nil && m.Start != "" {
		return t.UTC()
	}
	return time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// reset is a provider's own day start (a wall clock time in a zone).
type reset struct {
	hour, min int
	loc       *time.Location
}

// parseReset reads "HH:MM" or "HH:MM Zone"; "" is 00:00 UTC.
func parseReset(s string) (reset, error) {
	f := strings.Fields(s)
	r := reset{loc: time.UTC}
	if len(f) == 0 {
		return r, nil
	}
	if len(f) > 2 {
		return r, fmt.Errorf("want \"HH:MM\" or \"HH:MM Zone\", got %q", s)
	}
	hs, ms, ok := strings.Cut(f[0], ":")
	h, err1 := strconv.Atoi(hs)
	mi, err2 := strconv.Atoi(ms)
	if !ok || err1 != nil || err2 != nil || h < 0 || h > 23 || mi < 0 || mi > 59 {
		return r, fmt.Errorf("want \"HH:MM\" or \"HH:MM Zone\", got %q", s)
	}
	r.hour, r.min = h, mi
	if len(f) == 2 {
		loc, err := time.LoadLocation(f[1])
		if err != nil || f[1] == "Local" {
			return r, fmt.Errorf("unknown time zone %q", f[1])
		}
		r.loc = loc
	}
	return r, nil
}

// dayStart returns the start of the provider day that now falls in.
func (r reset) dayStart(now time.Time) time.Time {
	l := now.In(r.loc)
	t := time.Date(l.Year(), l.Month(), l.Day(), r.hour, r.min, 0, 0, r.loc)
	if t.After(now) {
		t = time.Date(l.Year(), l.Month(), l.Day()-1, r.hour, r.min, 0, 0, r.loc)
	}
	return t.UTC()
}

// next returns the first reset after now.
func (r reset) next(now time.Time) time.Time {
	l := now.In(r.loc)
	t := time.Date(l.Year(), l.Month(), l.Day(), r.hour, r.min, 0, 0, r.loc)
	if !t.After(now) {
		t = time.Date(l.Year(), l.Month(), l.Day()+1, r.hour, r.min, 0, 0, r.loc)
	}
	return t.UTC()
}

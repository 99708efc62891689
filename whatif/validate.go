package whatif

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/contentpipe/contentpipe/adapters/sim"
)

// FieldError is a validation failure of one field of a Model. Path is the
// YAML path of the field ("providers.gemini.rate_limit.burst") so that the
// command can point at its line.
type FieldError struct {
	Path string
	Msg  string
}

func (e *FieldError) Error() string { return e.Path + ": " + e.Msg }

// Validate checks the model and returns every problem as a *FieldError
// (joined). Probabilities must lie in [0,1] and each group of per-call
// probabilities sum to at most 1; durations must not be negative; groups
// named by providers must exist.
func (m *Model) Validate() error {
	var c checker
	if m.Start != "" {
		if _, err := time.Parse("2006-01-02", m.Start); err != nil {
			c.bad("start", "want a date YYYY-MM-DD, got %q", m.Start)
		}
	}
	c.prob("busy_days", m.BusyDays)
	if m.BusyRateFactor < 0 {
		c.bad("busy_rate_factor", "must not be negative")
	}
	for _, g := range sortedKeys(m.Groups) {
		c.outages("groups."+g+".outages", m.Groups[g])
	}
	if len(m.Providers) == 0 {
		c.bad("providers", "no providers: name each chain link with its behaviour")
	}
	for _, name := range sortedKeys(m.Providers) {
		p := m.Providers[name]
		base := "providers." + name
		if p.Flavor != "" && !slices.Contains(sim.Flavors(), p.Flavor) {
			c.bad(base+".flavor", "want gemini, groq, cerebras or openrouter, got %q", p.Flavor)
		}
		if p.Group != "" {
			if _, ok := m.Groups[p.Group]; !ok {
				c.bad(base+".group", "unknown group %q (define it under groups:)", p.Group)
			}
		}
		c.outages(base+".outages", p.Outages)
		c.latency(base+".latency", p.Latency)
		c.rateLimit(base+".rate_limit", p.RateLimit)
		c.errors(base+".errors", p.Errors)
		c.quality(base+".quality", p.Quality)
		c.dur(base+".drift.after", p.Drift.After)
		c.dur(base+".drift.over", p.Drift.Over)
		if p.Drift.Length != 0 && !(p.Drift.Length > 0 && p.Drift.Length <= 2) {
			c.bad(base+".drift.length", "share %v outside (0,2]", p.Drift.Length)
		}
		if p.Drift.Length == 0 && (p.Drift.After > 0 || p.Drift.Over > 0) {
			c.bad(base+".drift.length", "a drift needs the share of the asked length it slides to (e.g. 0.72 for about -10 points)")
		}
		c.dur(base+".auth.revoked_after", p.Auth.RevokedAfter)
		c.dur(base+".auth.restored_after", p.Auth.RestoredAfter)
		if p.Auth.RestoredAfter > 0 && p.Auth.RevokedAfter <= 0 {
			c.bad(base+".auth.revoked_after", "restored_after needs revoked_after: when the key is revoked")
		}
	}
	sort.SliceStable(c.errs, func(i, j int) bool { return c.errs[i].Error() < c.errs[j].Error() })
	return errors.Join(c.errs...)
}

// checker collects the field errors of a Model. The zero value has none.
type checker struct{ errs []error }

func (c *checker) bad(path, format string, args ...any) {
	c.errs = append(c.errs, &FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) prob(path string, p float64) {
	if !(p >= 0 && p <= 1) {
		c.bad(path, "probability %v outside 0..1", p)
	}
}

func (c *checker) dur(path string, d time.Duration) {
	if d < 0 {
		c.bad(path, "duration %s is negative", d)
	}
}

func (c *checker) outages(path string, o Outages) {
	c.dur(path+".every", o.Every)
	c.dur(path+".length", o.Length)
	if o.Every > 0 && o.Length <= 0 {
		c.bad(path+".length", "an outage stream needs a length")
	}
	switch o.Fault {
	case "", sim.FaultUnavailable, sim.FaultServerError, sim.FaultHang, sim.FaultStall, sim.FaultRateDay:
	default:
		c.bad(path+".fault", "want unavailable, server_error, hang, stall or rate_day, got %q", o.Fault)
	}
}

func (c *checker) latency(path string, l Latency) {
	c.dur(path+".median", l.Median)
	c.dur(path+".p95", l.P95)
	c.dur(path+".error", l.Error)
	if l.P95 > 0 && l.Median > 0 && l.P95 < l.Median {
		c.bad(path+".p95", "p95 %s is below the median %s", l.P95, l.Median)
	}
	if !(l.FirstToken >= 0 && l.FirstToken < 1) {
		c.bad(path+".first_token", "share %v outside [0,1)", l.FirstToken)
	}
}

func (c *checker) rateLimit(path string, rl RateLimit) {
	c.prob(path+".per_minute", rl.PerMinute)
	for _, h := range sortedKeys(rl.ByHour) {
		n, err := strconv.Atoi(h)
		if err != nil || n < 0 || n > 23 {
			c.bad(path+".by_hour."+h, "want an hour 0..23")
			continue
		}
		c.prob(path+".by_hour."+h, rl.ByHour[h])
	}
	c.dur(path+".burst", rl.Burst)
	if rl.DailyQuota < 0 {
		c.bad(path+".daily_quota", "must not be negative")
	}
	for k, v := range map[string]int{"daily_tokens": rl.DailyTokens, "rpm": rl.RPM, "tpm": rl.TPM, "ban_after": rl.BanAfter} {
		if v < 0 {
			c.bad(path+"."+k, "must not be negative")
		}
	}
	c.dur(path+".penalty", rl.Penalty)
	c.dur(path+".ban", rl.Ban)
	if rl.BanAfter > 0 && rl.Ban <= 0 {
		c.bad(path+".ban", "ban_after needs the ban's length (e.g. 1h)")
	}
	if rl.BusyDayQuota < 0 {
		c.bad(path+".busy_day_quota", "must not be negative")
	}
	if _, err := parseReset(rl.QuotaReset); err != nil {
		c.bad(path+".quota_reset", "%v", err)
	}
}

func (c *checker) errors(path string, e Errors) {
	for k, v := range map[string]float64{"server_error": e.ServerError, "unavailable": e.Unavailable, "timeout": e.Timeout, "stream_cut": e.StreamCut} {
		c.prob(path+"."+k, v)
	}
	if s := e.ServerError + e.Unavailable + e.Timeout + e.StreamCut; s > 1 {
		c.bad(path, "probabilities sum to %v, more than 1", s)
	}
}

func (c *checker) quality(path string, q Quality) {
	for k, v := range map[string]float64{"low_quality": q.LowQuality, "meta_phrase": q.MetaPhrase, "bad_json": q.BadJSON, "truncate": q.Truncate} {
		c.prob(path+"."+k, v)
	}
	if !(q.Length >= 0 && q.Length <= 2) {
		c.bad(path+".length", "share %v outside 0..2", q.Length)
	}
	if s := q.LowQuality + q.MetaPhrase + q.BadJSON + q.Truncate; s > 1 {
		c.bad(path, "probabilities sum to %v, more than 1", s)
	}
}

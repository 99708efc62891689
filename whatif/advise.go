package whatif

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/telemetry"
)

// Observation is one row of history: a call (calls table) or a skip
// (skips table) of one provider at one time. Source separates histories
// whose clocks must not be mixed (one database per simulated scenario);
// rows of one real database share one Source.
type Observation struct {
	Source   string
	Provider string
	TS       time.Time
	Outcome  string // calls.outcome, or "skip:" + skips.reason
}

// failed reports whether an observation says the provider could not answer
// then: a 5xx, timeout, broken stream, 429 or a skip for exhaustion or an
// open circuit. Answers (ok or rejected), auth failures, bad requests and
// cap skips (our own budget) say nothing about the provider's health.
func (o Observation) failed() (failed, known bool) {
	switch {
	case o.Outcome == "ok" || o.Outcome == "rejected":
		return false, true
	case o.Outcome == "skip:exhausted" || o.Outcome == "skip:circuit_open":
		return true, true
	case strings.HasPrefix(o.Outcome, "timeout_"), o.Outcome == "server_error", o.Outcome == "stream_broken",
		o.Outcome == "rate_limited", o.Outcome == "quota_exhausted", o.Outcome == "error":
		return true, true
	}
	return false, false
}

// Pair is the estimated failure correlation of two providers over the
// hour buckets in which both were observed.
type Pair struct {
	A string `json:"a"`
	B string `json:"b"`
	// Hours is the number of buckets in which both were observed; Both the
	// buckets in which both failed; OnlyA and OnlyB the buckets in which one
	// failed and the other answered.
	Hours int `json:"hours"`
	Both  int `json:"both_failed"`
	OnlyA int `json:"only_a_failed"`
	OnlyB int `json:"only_b_failed"`
	// Phi is the correlation of the two failure indicators (NaN when one of
	// them never varies in the shared buckets).
	Phi float64 `json:"-"`
	// PhiValue is Phi for JSON: nil when Phi is NaN.
	PhiValue *float64 `json:"phi"`
	// CoFail is the share of buckets with a failure of either in which both
	// failed: Both / (Both+OnlyA+OnlyB). It is what a failover from one to
	// the other meets.
	CoFail float64 `json:"co_fail"`
}

// Correlated reports whether the history shows the two failing together:
// at least MinCoFailures shared failing hours and a CoFail of at least
// CoFailThreshold (or a Phi of at least that much).
func (p Pair) Correlated() bool {
	if p.Both < MinCoFailures {
		return false
	}
	return p.CoFail >= CoFailThreshold || (!math.IsNaN(p.Phi) && p.Phi >= CoFailThreshold)
}

// Thresholds of Pair.Correlated.
const (
	MinCoFailures   = 3
	CoFailThreshold = 0.3
)

// Advice is the order advice of `simulate --advise`.
type Advice struct {
	Bucket     time.Duration `json:"-"`
	Configured []string      `json:"configured"`
	Pairs      []Pair        `json:"pairs"`
	// Adjacent are the correlated pairs that sit next to each other in
	// the configured order.
	Adjacent []Pair `json:"adjacent_correlated"`
	// Suggested is the order the history supports: the configured primary
	// first, then the order that keeps correlated providers furthest apart
	// (ties keep the configured order). Meaningful only when Enough.
	Suggested []string `json:"suggested"`
	// History is how much history the advice had.
	History HistorySize `json:"history"`
	// Enough reports whether the history reaches MinHistoryHours and
	// MinHistoryIncidents; without it the advice judges no order.
	Enough bool `json:"enough_history"`
}

// HistorySize is how much history an advice rests on.
type HistorySize struct {
	// Hours is the time the history spans: first to last observation of
	// the longest source (the sources of a simulation cover the same days).
	Hours float64 `json:"hours"`
	// Calls is the calls and skips that say something about a provider's
	// health.
	Calls int `json:"calls"`
	// Incidents is the failure episodes: runs of consecutive failing buckets
	// of one provider.
	Incidents int `json:"incidents"`
}

// The least history an order is judged from: two weeks, so that a quiet
// day or a single bad morning does not decide, and enough failure episodes
// for a pair to show MinCoFailures shared ones.
const (
	MinHistoryHours     = 14 * 24
	MinHistoryIncidents = 2 * MinCoFailures
)

type bucketKey struct {
	source string
	hour   int64
}

// bucketState is what one provider did in one bucket.
type bucketState struct{ failed, answered bool }

// fails reports whether the bucket counts as failing: the provider failed
// there and never answered.
func (st *bucketState) fails() bool { return st.failed && !st.answered }

// Advise estimates each pair of providers' failure correlation from obs,
// per bucket (0 = one hour), and checks the configured order against it.
// A bucket counts as failing for a provider when it failed there and never
// answered.
func Advise(obs []Observation, configured []string, bucket time.Duration) Advice {
	if bucket <= 0 {
		bucket = time.Hour
	}
	per := buckets(obs, bucket)
	names := append([]string(nil), configured...)
	for p := range per {
		if !contains(names, p) {
			names = append(names, p)
		}
	}
	adv := Advice{Bucket: bucket, Configured: configured}
	idx := map[[2]string]Pair{}
	for i := 0; i < len(names); i++ {
		for j := i + 1; j < len(names); j++ {
			a, b := names[i], names[j]
			p := pairOf(a, b, per[a], per[b])
			adv.Pairs = append(adv.Pairs, p)
			idx[[2]string{a, b}], idx[[2]string{b, a}] = p, p
		}
	}
	for i := 0; i+1 < len(configured); i++ {
		if p, ok := idx[[2]string{configured[i], configured[i+1]}]; ok && p.Correlated() {
			adv.Adjacent = append(adv.Adjacent, p)
		}
	}
	adv.History = historySize(obs, per)
	adv.Enough = adv.History.Hours >= MinHistoryHours && adv.History.Incidents >= MinHistoryIncidents
	adv.Suggested = suggest(configured, func(a, b string) float64 {
		p, ok := idx[[2]string{a, b}]
		if !ok || p.Both < MinCoFailures {
			return 0
		}
		return p.CoFail
	})
	return adv
}

// historySize measures the history: its longest span, the calls that
// count, and the failure episodes per provider.
func historySize(obs []Observation, per map[string]map[bucketKey]*bucketState) HistorySize {
	var h HistorySize
	first, last := map[string]time.Time{}, map[string]time.Time{}
	for _, o := range obs {
		if _, known := o.failed(); !known {
			continue
		}
		h.Calls++
		if f, ok := first[o.Source]; !ok || o.TS.Before(f) {
			first[o.Source] = o.TS
		}
		if l, ok := last[o.Source]; !ok || o.TS.After(l) {
			last[o.Source] = o.TS
		}
	}
	for src, f := range first {
		// Sources are parallel histories of the same days (one per
		// simulated scenario): the longest is the time covered.
		h.Hours = math.Max(h.Hours, last[src].Sub(f).Hours())
	}
	for _, m := range per {
		keys := make([]bucketKey, 0, len(m))
		for k, st := range m {
			if st.fails() {
				keys = append(keys, k)
			}
		}
		sort.Slice(keys, func(i, j int) bool {
			if keys[i].source != keys[j].source {
				return keys[i].source < keys[j].source
			}
			return keys[i].hour < keys[j].hour
		})
		for i, k := range keys {
			// A new episode unless the previous failing bucket is the one
			// before it (of the same source) or the provider was not seen
			// in between.
			if i == 0 || keys[i-1].source != k.source || !quietBetween(m, keys[i-1], k) {
				h.Incidents++
			}
		}
	}
	return h
}

// quietBetween reports whether the provider was not seen answering between
// two failing buckets of one source: they belong to one episode.
func quietBetween(m map[bucketKey]*bucketState, a, b bucketKey) bool {
	if b.hour-a.hour > 24*7 {
		return false // a week apart: two episodes whatever happened between
	}
	for hr := a.hour + 1; hr < b.hour; hr++ {
		if st, ok := m[bucketKey{a.source, hr}]; ok && !st.fails() {
			return false
		}
	}
	return true
}

// buckets sorts the observations whose outcome says something about a
// provider's health into its buckets.
func buckets(obs []Observation, bucket time.Duration) map[string]map[bucketKey]*bucketState {
	per := map[string]map[bucketKey]*bucketState{}
	for _, o := range obs {
		f, known := o.failed()
		if !known {
			continue
		}
		m := per[o.Provider]
		if m == nil {
			m = map[bucketKey]*bucketState{}
			per[o.Provider] = m
		}
		k := bucketKey{o.Source, o.TS.UnixNano() / int64(bucket)}
		st := m[k]
		if st == nil {
			st = &bucketState{}
			m[k] = st
		}
		if f {
			st.failed = true
		} else {
			st.answered = true
		}
	}
	return per
}

// pairOf counts the buckets in which both a and b were observed.
func pairOf(a, b string, ba, bb map[bucketKey]*bucketState) Pair {
	p := Pair{A: a, B: b}
	var n00 int
	for k, sa := range ba {
		sb, ok := bb[k]
		if !ok {
			continue
		}
		p.Hours++
		fa, fb := sa.fails(), sb.fails()
		switch {
		case fa && fb:
			p.Both++
		case fa:
			p.OnlyA++
		case fb:
			p.OnlyB++
		default:
			n00++
		}
	}
	if d := p.Both + p.OnlyA + p.OnlyB; d > 0 {
		p.CoFail = float64(p.Both) / float64(d)
	}
	p.Phi = phi(p.Both, p.OnlyA, p.OnlyB, n00)
	if !math.IsNaN(p.Phi) {
		v := p.Phi
		p.PhiValue = &v
	}
	return p
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

// phi is the correlation coefficient of a 2×2 table.
func phi(n11, n10, n01, n00 int) float64 {
	a, b, c, d := float64(n11), float64(n10), float64(n01), float64(n00)
	den := math.Sqrt((a + b) * (c + d) * (a + c) * (b + d))
	if den == 0 {
		return math.NaN()
	}
	return (a*d - b*c) / den
}

// suggest keeps the first provider and orders the rest to minimise the
// co-failure of neighbours, weighted by closeness (a pair k places apart
// counts 1/k). Up to eight providers are searched exhaustively; ties keep
// the configured order.
func suggest(configured []string, risk func(a, b string) float64) []string {
	n := len(configured)
	if n <= 2 || n > 8 {
		return append([]string(nil), configured...)
	}
	cost := func(order []string) float64 {
		c := 0.0
		for i := 0; i < len(order); i++ {
			for j := i + 1; j < len(order); j++ {
				c += risk(order[i], order[j]) / float64(j-i)
			}
		}
		return c
	}
	best := append([]string(nil), configured...)
	bestCost := cost(best)
	rest := append([]string(nil), configured[1:]...)
	var perm func(k int)
	perm = func(k int) {
		if k == len(rest) {
			order := append([]string{configured[0]}, rest...)
			if c := cost(order); c < bestCost-1e-12 {
				best, bestCost = order, c
			}
			return
		}
		for i := k; i < len(rest); i++ {
			rest[k], rest[i] = rest[i], rest[k]
			perm(k + 1)
			rest[k], rest[i] = rest[i], rest[k]
		}
	}
	perm(0)
	return best
}

// Text renders the advice for a terminal.
func (a Advice) Text() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "order advice (failure correlation per %s bucket; a bucket fails for a provider when it failed there and never answered):\n", a.Bucket)
	pairs := append([]Pair(nil), a.Pairs...)
	sort.SliceStable(pairs, func(i, j int) bool { return pairs[i].CoFail > pairs[j].CoFail })
	fmt.Fprintf(&sb, "  %-24s %7s %6s %7s %7s %6s  %s\n", "pair", "hours", "both", "only A", "only B", "phi", "co-fail")
	for _, p := range pairs {
		ph := "   n/a"
		if !math.IsNaN(p.Phi) {
			ph = fmt.Sprintf("%6.2f", p.Phi)
		}
		mark := ""
		if p.Correlated() {
			mark = "  correlated"
		}
		fmt.Fprintf(&sb, "  %-24s %7d %6d %7d %7d %s  %5.1f%%%s\n", p.A+" / "+p.B, p.Hours, p.Both, p.OnlyA, p.OnlyB, ph, 100*p.CoFail, mark)
	}
	if len(a.Adjacent) == 0 {
		fmt.Fprintf(&sb, "  the configured order %s puts no correlated providers next to each other\n", strings.Join(a.Configured, " → "))
	} else {
		for _, p := range a.Adjacent {
			fmt.Fprintf(&sb, "  the configured order puts %s and %s next to each other: they failed together in %d of %d hours one of them failed (%.0f%%)\n",
				p.A, p.B, p.Both, p.Both+p.OnlyA+p.OnlyB, 100*p.CoFail)
		}
	}
	h := a.History
	fmt.Fprintf(&sb, "  history: %.0f hours (%.1f days), %d calls and skips, %d failure episodes\n", h.Hours, h.Hours/24, h.Calls, h.Incidents)
	switch {
	case !a.Enough:
		fmt.Fprintf(&sb, "  not enough history to judge the order: it needs at least %d hours (%d days) and %d failure episodes; keep the configured order and ask again later\n",
			MinHistoryHours, MinHistoryHours/24, MinHistoryIncidents)
	case strings.Join(a.Suggested, ",") == strings.Join(a.Configured, ","):
		fmt.Fprintf(&sb, "  the history supports the configured order %s\n", strings.Join(a.Configured, " → "))
	default:
		fmt.Fprintf(&sb, "  the history supports the order %s\n", strings.Join(a.Suggested, " → "))
	}
	return sb.String()
}

// History is a database whose calls and skips the advice reads.
// telemetry.Store implements it.
type History interface {
	ProviderEvents(ctx context.Context) ([]telemetry.ProviderEvent, error)
}

var _ History = (*telemetry.Store)(nil)

// Observations reads the history of a database: every job and health call
// and every skip. source labels the rows (see Observation).
func Observations(ctx context.Context, h History, source string) ([]Observation, error) {
	evs, err := h.ProviderEvents(ctx)
	if err != nil {
		return nil, fmt.Errorf("read history: %w", err)
	}
	out := make([]Observation, 0, len(evs))
	for _, e := range evs {
		out = append(out, Observation{Source: source, Provider: e.Provider, TS: e.TS, Outcome: e.Outcome})
	}
	return out, nil
}

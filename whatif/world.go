package whatif

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"time"

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/adapters/sim"
	"github.com/contentpipe/contentpipe/chain"
)

// World is one simulated world drawn from a Model and a seed: the outage
// timelines and busy days are drawn once and shared by every scenario, so
// that the configured chain and its baselines face the same year.
// A World is read-only and safe to share.
type World struct {
	model   *Model
	seed    uint64
	start   time.Time
	days    int
	busy    []bool
	outages map[string][]window
}

// NewWorld validates m and draws its world for days days from m's start.
func NewWorld(m *Model, seed uint64, days int) (*World, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if days <= 0 {
		return nil, errors.New("new world: days must be at least 1")
	}
	w := &World{model: m, seed: seed, start: m.StartDay(), days: days, outages: map[string][]window{}}
	end := w.start.AddDate(0, 0, days+1)
	w.busy = m.busyDays(seed, days)
	groups := map[string][]window{}
	for _, g := range sortedKeys(m.Groups) {
		groups[g] = m.Groups[g].timeline(seed, "group/"+g, w.start, end)
	}
	for _, name := range sortedKeys(m.Providers) {
		p := m.Providers[name]
		ws := append([]window(nil), p.Outages.timeline(seed, "provider/"+name, w.start, end)...)
		ws = append(ws, groups[p.Group]...)
		sort.Slice(ws, func(i, j int) bool { return ws[i].from.Before(ws[j].from) })
		w.outages[name] = ws
	}
	return w, nil
}

// Start returns the first simulated day (UTC midnight).
func (w *World) Start() time.Time { return w.start }

// Busy reports whether the UTC day of t is a busy day.
func (w *World) Busy(t time.Time) bool {
	i := int(t.Sub(w.start) / (24 * time.Hour))
	return i >= 0 && i < len(w.busy) && w.busy[i]
}

// DriftStart returns the first time a provider's quality starts to drift
// (ok false when none drifts within the simulated days).
func (w *World) DriftStart() (time.Time, bool) {
	var at time.Time
	for _, name := range sortedKeys(w.model.Providers) {
		dr := w.model.Providers[name].Drift
		if dr.Length <= 0 {
			continue
		}
		if t := w.start.Add(dr.After); at.IsZero() || t.Before(at) {
			at = t
		}
	}
	return at, !at.IsZero() && at.Before(w.start.AddDate(0, 0, w.days))
}

// Provider returns the in-process provider for link name on clock. kind is
// the link's config kind, used to pick a flavor when the model names none.
func (w *World) Provider(name string, kind profile.Kind, clock chain.Clock, spec LinkSpec) (*sim.InProc, error) {
	pm, ok := w.model.Providers[name]
	if !ok {
		return nil, fmt.Errorf("fault model: no provider %q (add providers.%s to the faults file)", name, name)
	}
	fl := pm.Flavor
	if fl == "" {
		switch {
		case slices.Contains(sim.Flavors(), sim.Flavor(name)):
			fl = sim.Flavor(name)
		case kind == profile.KindGemini:
			fl = sim.FlavorGemini
		default:
			fl = sim.FlavorGroq
		}
	}
	rs, _ := parseReset(pm.RateLimit.QuotaReset) // validated
	return &sim.InProc{
		Name: name, Flavor: fl, Model: spec.Model, Clock: clock, Timeouts: spec.Timeouts, JSONMode: spec.JSONMode,
		Behaviour: &behaviour{name: name, m: pm, seed: w.seed, outages: w.outages[name], reset: rs, busy: w.Busy, factor: w.model.busyFactor(), start: w.start},
	}, nil
}

// familyKind is the config kind of a link whose jobs are worded in prompt
// family f: the families are named after the kinds.
func familyKind(f chain.Family) profile.Kind { return profile.Kind(f) }

// LinkSpec is what the simulator needs to know about a link beyond
// chain.Link: its model name, kind, timeouts, JSON mode and pacing.
type LinkSpec struct {
	Kind     profile.Kind // one of profile.Kinds
	Model    string
	Timeouts chain.Timeouts
	JSONMode bool
	RPM, TPM int
}

// window is one outage: [from, to) and how calls fail in it.
type window struct {
	from, to time.Time
	fault    sim.Fault
}

// timeline draws the outages of o between from and to, deterministically
// for seed and the stream's name.
func (o Outages) timeline(seed uint64, name string, from, to time.Time) []window {
	if o.Every <= 0 || o.Length <= 0 {
		return nil
	}
	rng := rand.New(rand.NewPCG(seed, hash64("outages/"+name)))
	fault := o.Fault
	if fault == "" {
		fault = sim.FaultUnavailable
	}
	var out []window
	t := from
	for {
		gap := time.Duration(rng.ExpFloat64() * float64(o.Every))
		t = t.Add(gap)
		if !t.Before(to) {
			return out
		}
		length := time.Duration((0.5 + rng.Float64()) * float64(o.Length))
		out = append(out, window{from: t, to: t.Add(length), fault: fault})
		t = t.Add(length)
	}
}

// busyDays draws which simulated days are busy.
func (m *Model) busyDays(seed uint64, days int) []bool {
	rng := rand.New(rand.NewPCG(seed, hash64("busy-days")))
	out := make([]bool, days+2)
	for i := range out {
		out[i] = rng.Float64() < m.BusyDays
	}
	return out
}

func (m *Model) busyFactor() float64 {
	if m.BusyRateFactor > 0 {
		return m.BusyRateFactor
	}
	return 2
}

// hash64 is FNV-1a, for deriving stream seeds from names.
func hash64(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

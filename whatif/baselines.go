package whatif

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/contentpipe/contentpipe/chain"
)

// Scenario names.
const (
	ScenarioChain     = "chain"      // the configured chain
	ScenarioSingle    = "single"     // the first link alone
	ScenarioCostOrder = "cost-order" // the same links, cheapest first
	ScenarioNaive     = "naive"      // configured order, immediate retries, no waits, no memory
)

// ScenarioNames returns every scenario in table order.
func ScenarioNames() []string {
	return []string{ScenarioChain, ScenarioSingle, ScenarioCostOrder, ScenarioNaive}
}

// order returns the links of a scenario.
func (cfg *Config) order(name string) ([]*chain.Link, bool, error) {
	ls := cfg.Chain.Links
	switch name {
	case ScenarioChain:
		return ls, false, nil
	case ScenarioSingle:
		return ls[:1], false, nil
	case ScenarioCostOrder:
		return CostOrder(ls), false, nil
	case ScenarioNaive:
		return ls, true, nil
	}
	return nil, false, fmt.Errorf("simulate: unknown scenario %q (want one of %s)", name, strings.Join(ScenarioNames(), ", "))
}

// CostOrder returns the links sorted by the price of a typical article
// (1,000 input and 2,500 output tokens), cheapest first; equal prices keep
// their configured order.
func CostOrder(links []*chain.Link) []*chain.Link {
	out := append([]*chain.Link(nil), links...)
	sort.SliceStable(out, func(i, j int) bool {
		return out[i].Price.Cost(1000, 2500) < out[j].Price.Cost(1000, 2500)
	})
	return out
}

// forgetful is the naive baseline's store: it remembers no provider state,
// so no exhaustion (quota memory) and no circuit breaker survive a call.
type forgetful struct{ Store }

func (forgetful) ProviderState(context.Context, string) (chain.ProviderState, error) {
	return chain.ProviderState{}, nil
}

func (forgetful) UpdateProviderState(_ context.Context, _ string, fn func(*chain.ProviderState) []chain.Transition) error {
	var st chain.ProviderState
	fn(&st)
	return nil
}

// RecordAttempt records the attempt's call and cap rows and forgets what it
// taught.
func (f forgetful) RecordAttempt(ctx context.Context, r chain.AttemptRecord) error {
	r.Learn = nil
	return f.Store.RecordAttempt(ctx, r)
}

// naiveRetries is how many immediate retries the naive baseline makes at
// each provider.
func (cfg *Config) naiveRetries() int {
	if cfg.NaiveRetries > 0 {
		return cfg.NaiveRetries
	}
	return 2
}

// naivePolicy is the naive baseline's retry policy: p without any wait,
// neither for a 429 nor after another failure.
func naivePolicy(p chain.RetryPolicy) chain.RetryPolicy {
	pol := p.WithDefaults()
	pol.RateLimitedMaxRetries = 0
	pol.OtherWait = 0
	pol.ServerErrorWait = 0
	return pol
}

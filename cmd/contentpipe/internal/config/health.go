package config

import "time"

// Health configures the health walk's cold-start detection: a link whose
// health call is slower than ColdFactor times its baseline (the median of
// its job calls of the last 14 days) and slower than ColdFloor is cold.
// Zero fields take the chain's defaults (factor 3, floor 2s).
type Health struct {
	ColdFactor float64       `yaml:"cold_factor"` // > 1; 0 = default 3
	ColdFloor  time.Duration `yaml:"cold_floor"`  // 0 = default 2s
}

func (p *loader) health() {
	h := p.cfg.Health
	p.check(h.ColdFactor == 0 || h.ColdFactor > 1, "health.cold_factor",
		"give how many times slower than usual counts as cold, e.g. cold_factor: 3",
		"health.cold_factor: %g must be more than 1", h.ColdFactor)
}

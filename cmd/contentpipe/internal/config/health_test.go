package config

import (
	"strings"
	"testing"
	"time"
)

func TestHealthColdKeys(t *testing.T) {
	cfg, err := parseIn(t, twoLinks, fullEnv())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Health != (Health{}) {
		t.Errorf("no health key: %+v, want the zero value (the chain's defaults)", cfg.Health)
	}
	cfg, err = parseIn(t, twoLinks+"health: {cold_factor: 4.5, cold_floor: 1500ms}\n", fullEnv())
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Health != (Health{ColdFactor: 4.5, ColdFloor: 1500 * time.Millisecond}) {
		t.Errorf("health %+v", cfg.Health)
	}
	for body, want := range map[string]string{
		"health: {cold_factor: 0.5}\n":   "health.cold_factor: 0.5 must be more than 1",
		"health: {cold_floor: -2s}\n":    "negative",
		"health: {cold_factr: 3}\n":      "cold_factr",
		"health: {cold_floor: banana}\n": "cold_floor",
	} {
		_, err := parseIn(t, twoLinks+body, fullEnv())
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want an error containing %q", body, err, want)
		}
	}
}

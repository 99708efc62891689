package telemetry

import (
	"context"
	"database/sql"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// HealthCheck is one row of health_checks: one provider's answer to the
// tiny health request.
type HealthCheck struct {
	TS         time.Time
	Provider   string
	Model      string
	OK         bool
	HTTPStatus int // 0 when no HTTP answer came
	Latency    time.Duration
	FirstToken time.Duration
	Outcome    chain.Outcome
	Detail     string // error message, scrubbed
}

// RecordHealth stores one health check result.
func (s *Store) RecordHealth(ctx context.Context, h HealthCheck) error {
	return s.write(ctx, "record health check "+h.Provider, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO health_checks (ts, provider, model, ok, http_status, latency_ms, first_token_ms, outcome, detail)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, FormatTime(h.TS), h.Provider, h.Model, boolInt(h.OK), h.HTTPStatus,
			h.Latency.Milliseconds(), h.FirstToken.Milliseconds(), string(h.Outcome), h.Detail)
		return err
	})
}

// ShadowComparison is one row of shadow_comparisons: the chain's
// comparison of a shadow answer with the primary one. quality_delta
// (shadow − primary) is stored when both scores are known.
type ShadowComparison = chain.ShadowComparison

// RecordShadowComparison stores one shadow comparison.
func (s *Store) RecordShadowComparison(ctx context.Context, c ShadowComparison) error {
	var delta any
	if c.PrimaryScore != nil && c.ShadowScore != nil {
		delta = *c.ShadowScore - *c.PrimaryScore
	}
	return s.write(ctx, "record shadow comparison", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO shadow_comparisons (ts, request_id, primary_provider, shadow_provider,
	primary_score, shadow_score, quality_delta, shadow_pass, word_ratio, primary_latency_ms, shadow_latency_ms,
	primary_cost_usd, shadow_cost_usd) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			FormatTime(c.TS), c.RequestID, c.PrimaryProvider, c.ShadowProvider, nullFloat(c.PrimaryScore),
			nullFloat(c.ShadowScore), delta, boolInt(c.ShadowPass), nullFloat(c.WordRatio),
			c.PrimaryLatency.Milliseconds(), c.ShadowLatency.Milliseconds(), c.PrimaryCostUSD, c.ShadowCostUSD)
		return err
	})
}

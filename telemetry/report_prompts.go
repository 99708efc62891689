package telemetry

import (
	"context"
	"database/sql"
)

// PromptVersionQuality is how the answers of one prompt version fared at
// the quality gate: job calls with a score (an answer) in the window.
type PromptVersionQuality struct {
	Version   string // calls.prompt_version, e.g. article@1/llama; "" = not recorded
	Calls     int    // answered job calls (a quality score)
	Passed    int    // of them, outcome ok
	MeanScore float64
}

// PassRate is Passed / Calls (0 without calls).
func (p PromptVersionQuality) PassRate() float64 {
	if p.Calls == 0 {
		return 0
	}
	return float64(p.Passed) / float64(p.Calls)
}

// reportPromptVersions breaks the window's answered job calls down by
// prompt version, most calls first. Shadow, health and prompts-test calls
// are left out, as in the quality trend.
func (s *Store) reportPromptVersions(ctx context.Context, d *ReportData, from, to string) error {
	return s.each(ctx, `SELECT prompt_version, COUNT(*), SUM(CASE WHEN outcome = 'ok' THEN 1 ELSE 0 END), AVG(quality_score)
FROM calls WHERE purpose = 'job' AND quality_score IS NOT NULL AND ts >= ? AND ts < ?
GROUP BY prompt_version ORDER BY COUNT(*) DESC, prompt_version`, []any{from, to}, func(r *sql.Rows) error {
		var p PromptVersionQuality
		if err := r.Scan(&p.Version, &p.Calls, &p.Passed, &p.MeanScore); err != nil {
			return err
		}
		d.PromptVersions = append(d.PromptVersions, p)
		return nil
	})
}

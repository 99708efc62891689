package whatif

import (
	"testing"
)

// BenchmarkYearChain simulates the configured chain alone for 365 days of
// 6 posts on the small test model: the cost of one scenario-year.
func BenchmarkYearChain(b *testing.B) {
	for range b.N {
		runSim(b, smallModel(), 3, 365, ScenarioChain)
	}
}

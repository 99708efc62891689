package sim

import "time"

// DemoProfiles returns the mild fault profile of `contentpipe run --demo`,
// chosen so that a newcomer sees every kind of failover in the first job
// while the whole run waits only about one second:
//
//   - Gemini: the first request gets a per-minute 429 advertising a 1s
//     RetryInfo delay (the chain waits once, briefly, and retries); the
//     retry gets a daily-quota 429 (quotaId ...PerDay...), so Gemini is
//     marked exhausted and later jobs skip it without a call.
//   - Groq: the first answer is schema-valid but low quality (rejected by
//     the quality gate: next provider at once); later answers pass but are
//     thinner (Thin: a smaller model, about 85% of the target words).
//   - Cerebras: the first request gets a 503 (next provider at once, counted
//     by the circuit breaker).
//   - OpenRouter: answers normally, so the first job is published there.
//
// From the second job on, Groq publishes. Streams pace their chunks a few
// milliseconds apart so that progress is visible.
func DemoProfiles() map[Flavor]Profile {
	chunk := 4 * time.Millisecond
	return map[Flavor]Profile{
		FlavorGemini: {
			Script:     []Fault{FaultRateMinute, FaultRateDay},
			RetryAfter: time.Second, Seed: 1, ChunkDelay: chunk,
		},
		FlavorGroq: {
			Script: []Fault{FaultLowQuality},
			Thin:   true, Seed: 2, ChunkDelay: chunk,
		},
		FlavorCerebras: {
			Script: []Fault{FaultUnavailable},
			Seed:   3, ChunkDelay: chunk,
		},
		FlavorOpenRouter: {Seed: 4, ChunkDelay: chunk},
	}
}

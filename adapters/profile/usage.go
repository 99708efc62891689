package profile

import "fmt"

// SuspectUsage says why the usage an answer reports cannot be true — a
// negative token count or cost, or output tokens more than twice the
// max_tokens the request allowed (maxTokens 0: none sent) — or "" when it
// is plausible. The figures stay as reported; the chain must not let them
// lower the spend.
func SuspectUsage(inputTokens, outputTokens, maxTokens int, costUSD float64) string {
	switch {
	case inputTokens < 0 || outputTokens < 0:
		return fmt.Sprintf("negative token counts reported (%d in, %d out)", inputTokens, outputTokens)
	case costUSD < 0:
		return fmt.Sprintf("a negative cost reported ($%g)", costUSD)
	case maxTokens > 0 && outputTokens > 2*maxTokens:
		return fmt.Sprintf("%d output tokens reported for a request allowing %d", outputTokens, maxTokens)
	}
	return ""
}

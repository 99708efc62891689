package chain

import "strings"

// Redacted replaces a configured secret found in a provider's text.
const Redacted = "[redacted]"

// minSecretLen is the shortest secret value that is scrubbed: a shorter
// one (a placeholder such as "x") would turn ordinary words of an article
// into Redacted while protecting nothing a real key would.
const minSecretLen = 8

// scrub replaces every secret of secrets found in s with Redacted and
// reports whether it replaced any.
func scrub(secrets []string, s string) (string, bool) {
	found := false
	for _, k := range secrets {
		if len(k) >= minSecretLen && strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, Redacted)
			found = true
		}
	}
	return s, found
}

// scrubAnswer removes the chain's secrets from everything of a call that is
// stored, gated or published: an answer's text, a failure's message and
// partial text. It returns copies and whether a secret was found.
func (c *Chain) scrubAnswer(resp Response, pe *ProviderError) (Response, *ProviderError, bool) {
	if len(c.Secrets) == 0 {
		return resp, pe, false
	}
	var a, b, d bool
	resp.Text, a = scrub(c.Secrets, resp.Text)
	if pe != nil {
		cp := *pe
		cp.Message, b = scrub(c.Secrets, cp.Message)
		cp.Partial, d = scrub(c.Secrets, cp.Partial)
		pe = &cp
	}
	return resp, pe, a || b || d
}

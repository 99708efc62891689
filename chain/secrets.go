package chain

import (
	"regexp"
	"strings"
)

// Redacted replaces a secret found in any text the program keeps or shows:
// a provider's answer, partial text or error, an error message of an
// adapter or a publisher.
const Redacted = "[redacted]"

// minSecretLen is the shortest configured secret scrubbed from an answer's
// text: a shorter one (a placeholder such as "x") would turn ordinary words
// of an article into Redacted while protecting nothing a real key would.
const minSecretLen = 8

var (
	keyParam   = regexp.MustCompile(`(?i)([?&](?:key|api_key|apikey|api-key|access_token|token)=)[^&\s"'#]+`)
	bearerText = regexp.MustCompile(`(?i)(bearer\s+)[A-Za-z0-9._~+/=\-]{8,}`)
)

// Scrub removes secrets from an error message or a provider's words: every
// occurrence of each non-empty secret, the values of key-like URL query
// parameters (key=, api_key=, token=…) and bearer tokens are replaced with
// Redacted. It is the one scrubber of the program; Chain.Secrets are
// scrubbed from answers with the same replacement.
func Scrub(s string, secrets ...string) string {
	s, _ = replaceSecrets(s, secrets, 1)
	s = keyParam.ReplaceAllString(s, "${1}"+Redacted)
	return bearerText.ReplaceAllString(s, "${1}"+Redacted)
}

// replaceSecrets replaces every secret of at least minLen bytes found in s
// with Redacted and reports whether it replaced any.
func replaceSecrets(s string, secrets []string, minLen int) (string, bool) {
	found := false
	for _, k := range secrets {
		if len(k) >= minLen && strings.Contains(s, k) {
			s = strings.ReplaceAll(s, k, Redacted)
			found = true
		}
	}
	return s, found
}

// scrub replaces every configured secret (at least minSecretLen bytes)
// found in s with Redacted and reports whether it replaced any.
func scrub(secrets []string, s string) (string, bool) {
	return replaceSecrets(s, secrets, minSecretLen)
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

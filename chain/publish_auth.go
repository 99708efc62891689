package chain

import (
	"context"
	"errors"
	"fmt"
	"net/http"
)

// PublishAuthError is a publishing target refusing our credentials (HTTP
// 401 or 403: a wrong or revoked password, a user without the rights it
// needs). No later job can be delivered until a person fixes them, so the
// run halts as on a provider's auth failure: it takes no further job,
// exits with the halted status, and raises one critical auth_error alert.
// The job whose delivery was refused stays publishing; the next run
// delivers it (the same bytes to the same place).
type PublishAuthError struct {
	Target  string // the target's kind and place, e.g. "wordpress https://example.org"
	Status  int    // HTTP status
	Message string // the target's words, without secrets
	Fix     string // what a person must change
}

func (e *PublishAuthError) Error() string {
	s := fmt.Sprintf("%s refused our credentials (%d %s)", e.Target, e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

// AsPublishAuthError returns the *PublishAuthError in err's chain, or nil.
func AsPublishAuthError(err error) *PublishAuthError {
	var pa *PublishAuthError
	if errors.As(err, &pa) {
		return pa
	}
	return nil
}

// haltOnPublishAuth halts the run when a delivery's err is a
// PublishAuthError, and alerts once per target (the alert's key).
func (r *Runner) haltOnPublishAuth(ctx context.Context, err error) {
	pa := AsPublishAuthError(err)
	if pa == nil {
		return
	}
	r.Chain.halt(&ProviderError{Provider: pa.Target, Status: pa.Status, Outcome: OutcomeAuthError, Message: pa.Message, Cause: pa})
	r.notify(ctx, Alert{Key: "auth:publish", Rule: RuleAuthError, Severity: SeverityCritical,
		Text: fmt.Sprintf("The publishing target %s. The run stopped; the job waits, marked, and is delivered by the next run. %s, then rerun.", pa.Error(), pa.Fix)})
}

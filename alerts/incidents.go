package alerts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/contentpipe/contentpipe/chain"
	"github.com/contentpipe/contentpipe/telemetry"
)

// RemindEvery is the longest an open incident goes without a message: one
// reminder a day while it lasts.
const RemindEvery = 24 * time.Hour

// chainDownKey is the incident key of the whole chain being down.
const chainDownKey = string(RuleChainDown)

// providerDownKey is the incident key of one provider being down.
func providerDownKey(provider string) string { return string(RuleProviderDown) + ":" + provider }

// DownOutcomes returns the outcomes that say a provider is down, the ones
// provider_down counts: server errors, failed or timed-out connections,
// timeouts and broken streams. Rate
// limits and quota exhaustion are not (the provider answered, and
// automation waits or moves on), nor are auth errors (their own alert) or
// refusals of one request.
func DownOutcomes() []chain.Outcome {
	return []chain.Outcome{
		chain.OutcomeServerError, chain.OutcomeTimeoutConnect, chain.OutcomeConnectFailed, chain.OutcomeTimeoutFirstToken,
		chain.OutcomeTimeoutIdle, chain.OutcomeTimeoutTotal, chain.OutcomeStreamBroken,
	}
}

// AnswerFailure reports whether a provider's latest event in a job's walk
// is a failure of its answer — an error status, a timeout, a broken
// stream, an auth refusal, or a circuit held open by such failures — as
// opposed to what automation handles by waiting or moving on: rate limits,
// quota exhaustion, daily caps, token limits and budgets. An answer (ok or
// rejected) is no failure.
func AnswerFailure(e telemetry.WalkEvent) bool {
	if e.Skip {
		return e.What == string(chain.SkipCircuitOpen) || e.What == string(chain.SkipHalted) || e.What == string(chain.SkipMisconfigured)
	}
	switch chain.Outcome(e.What) {
	case chain.OutcomeOK, chain.OutcomeRejected, chain.OutcomeRateLimited, chain.OutcomeQuotaExhausted:
		return false
	}
	return true
}

// ChainDown is the evidence of the whole chain being down: the jobs left
// deferred since the last publication for which every provider failed with
// an answer-level failure (AnswerFailure).
type ChainDown struct {
	LastPublished time.Time // zero when nothing was ever published
	Jobs          []telemetry.DeferredWalk
}

// ChainDownFrom selects the walks where every provider's latest event was
// an answer failure.
func ChainDownFrom(last time.Time, walks []telemetry.DeferredWalk) ChainDown {
	cd := ChainDown{LastPublished: last}
	for _, w := range walks {
		if len(w.Events) == 0 {
			continue
		}
		all := true
		for _, e := range w.Events {
			all = all && AnswerFailure(e)
		}
		if all {
			cd.Jobs = append(cd.Jobs, w)
		}
	}
	return cd
}

// Observation turns the evidence into the chain-down incident's
// observation: active from the first failed call of the first such job to
// the end of the last; cleared by the last publication.
func (cd ChainDown) Observation() telemetry.IncidentObservation {
	obs := telemetry.IncidentObservation{Key: chainDownKey, Rule: string(RuleChainDown), ClearedAt: cd.LastPublished}
	if len(cd.Jobs) == 0 {
		return obs
	}
	first, last := cd.Jobs[0], cd.Jobs[len(cd.Jobs)-1]
	obs.Active, obs.Since, obs.LastSeen = true, first.At, last.At
	for _, e := range first.Events {
		if e.TS.Before(obs.Since) {
			obs.Since = e.TS
		}
	}
	obs.Detail = fmt.Sprintf("%d job(s) deferred with every provider failing; latest %s: %s", len(cd.Jobs), last.JobID, walkStory(last))
	return obs
}

// walkStory says what each provider did in a walk and why, e.g. "gemini
// server_error (HTTP 503): overloaded; groq circuit_open (skipped)".
func walkStory(w telemetry.DeferredWalk) string {
	parts := make([]string, 0, len(w.Events))
	for _, e := range w.Events {
		s := e.Provider + " " + e.What
		switch {
		case e.Skip:
			s += " (skipped)"
		case e.HTTPStatus != 0:
			s += fmt.Sprintf(" (HTTP %d)", e.HTTPStatus)
		}
		if e.Detail != "" {
			s += ": " + clip(e.Detail, 120)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// ProviderDownObservation turns a provider's failure streak (of
// DownOutcomes) into its provider_down observation: active when the
// streak has at least two failures spread over more than after; cleared
// by the provider's last answer.
func ProviderDownObservation(s telemetry.FailureStreak, after time.Duration, silent bool) telemetry.IncidentObservation {
	obs := telemetry.IncidentObservation{Key: providerDownKey(s.Provider), Rule: string(RuleProviderDown), Provider: s.Provider,
		ClearedAt: s.LastSuccess, Silent: silent}
	if s.Failures < 2 || s.Last.Sub(s.First) <= after {
		return obs
	}
	detail := s.LastOutcome
	if s.LastStatus != 0 {
		detail += fmt.Sprintf(" (HTTP %d)", s.LastStatus)
	}
	if s.LastDetail != "" {
		detail += ": " + clip(s.LastDetail, 300)
	}
	obs.Active, obs.Since, obs.LastSeen = true, s.First, s.Last
	obs.Detail = fmt.Sprintf("%d failed calls; latest %s", s.Failures, detail)
	return obs
}

// evaluateIncidents observes the chain-down incident, then each provider's
// provider_down incident. While the chain is down the providers' incidents
// are recorded but not announced (the chain-down message names them), and
// after it resolves a provider's stays silent until the provider fails
// again: its failures during the outage were told already.
func (r Rules) evaluateIncidents(ctx context.Context, now time.Time) error {
	last, walks, err := r.Store.DeferredSinceLastPublication(ctx)
	if err != nil {
		return err
	}
	cd := ChainDownFrom(last, walks)
	obs := cd.Observation()
	msg := incidentMessage(now)

	evs, err := r.Store.ObserveIncident(ctx, obs, RemindEvery, now, msg)
	if err != nil {
		return err
	}
	r.echo(evs, msg)
	chainDown := obs.Active && obs.LastSeen.After(obs.ClearedAt)
	resolved, err := r.Store.LastResolved(ctx, chainDownKey)
	if err != nil {
		return err
	}
	streaks, err := r.Store.FailureStreaks(ctx, DownOutcomes())
	if err != nil {
		return err
	}
	after := r.ProviderDownAfter
	if after <= 0 {
		after = DefaultProviderDownAfter
	}
	var errs []error
	for _, s := range streaks {
		o := ProviderDownObservation(s, after, chainDown || !s.Last.After(resolved))
		evs, err := r.Store.ObserveIncident(ctx, o, RemindEvery, now, msg)
		if err != nil {
			errs = append(errs, err)
		}
		r.echo(evs, msg)
	}
	if len(errs) > 0 {
		return fmt.Errorf("provider_down: %w", errs[0])
	}
	return nil
}

// echo prints the messages of the events on r.Console.
func (r Rules) echo(evs []telemetry.IncidentEvent, msg func(telemetry.IncidentEvent) telemetry.Alert) {
	if r.Console == nil {
		return
	}
	for _, e := range evs {
		a := msg(e)
		EchoAlert(r.Console, a.Rule, a.Severity, a.Key, fmt.Sprintf("ALERT [%s] %s", strings.ToUpper(a.Severity), a.Text))
	}
}

// incidentMessage returns the builder of the outbox alert of one incident
// change at now: its key names the incident and the change (and the
// reminder's number), so each is queued once.
func incidentMessage(now time.Time) func(telemetry.IncidentEvent) telemetry.Alert {
	return func(e telemetry.IncidentEvent) telemetry.Alert {
		in := e.Incident
		key := fmt.Sprintf("%s#%d:%s", in.Key, in.ID, e.Change)
		if e.Change == telemetry.IncidentReminder {
			key += fmt.Sprintf(":%d", in.Reminders)
		}
		m := incidentText(e, now)
		return telemetry.Alert{Key: key, Rule: in.Rule, Severity: string(m.severity), Text: m.text()}
	}
}

// incidentText words one incident change.
func incidentText(e telemetry.IncidentEvent, now time.Time) message {
	in := e.Incident
	span := fmt.Sprintf("%s (%s ago)", stamp(in.OpenedAt), roundDur(now.Sub(in.OpenedAt)))
	if e.Change == telemetry.IncidentResolved {
		span = fmt.Sprintf("down from %s to %s (%s)", stamp(in.OpenedAt), stamp(in.ResolvedAt), roundDur(in.ResolvedAt.Sub(in.OpenedAt)))
	}
	down := "Down"
	if e.Change == telemetry.IncidentReminder {
		down = "Still down"
	}
	if in.Rule == string(RuleChainDown) {
		switch e.Change {
		case telemetry.IncidentResolved:
			return message{severity: SeverityInfo, what: fmt.Sprintf("Resolved: the chain publishes again (a job was published at %s).", stamp(in.ResolvedAt)),
				since: span, done: "The deferred jobs are due again and go out with the next runs.", run: "contentpipe topics"}
		default:
			return message{severity: SeverityCritical, what: fmt.Sprintf("%s: the whole chain — every provider failed (%s).", down, in.Detail),
				since: span, done: "The jobs stay due and every run tries the chain again; circuit breakers hold failing providers to probe calls. " +
					"A message follows when a job publishes again, and at most one reminder a day until then.",
				run: "contentpipe health"}
		}
	}
	switch e.Change {
	case telemetry.IncidentResolved:
		return message{severity: SeverityInfo, what: fmt.Sprintf("Resolved: provider %s answers again (at %s).", in.Provider, stamp(in.ResolvedAt)),
			since: span, done: "It takes its place in the chain again.", run: "contentpipe report --days 1"}
	default:
		return message{severity: SeverityWarning, what: fmt.Sprintf("%s: provider %s keeps failing with server errors, timeouts or broken streams (%s).", down, in.Provider, in.Detail),
			since: span, done: fmt.Sprintf("The chain falls back to the next providers and %s's circuit breaker holds it to probe calls; rate limits and quotas are not counted here. "+
				"A message follows when it answers again.", in.Provider),
			run: "contentpipe health"}
	}
}

func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

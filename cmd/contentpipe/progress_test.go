package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/contentpipe/contentpipe/chain"
)

// TestProgressWaitReasonOnce feeds the events of a 429 retry and of a
// pacing wait and expects each reason printed once.
func TestProgressWaitReasonOnce(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := newProgress(&b, 1)
	j := chain.Job{ID: "2026-12-01/t", Topic: "t"}
	reason := "429 per-minute: waiting the provider's 1s, retry 1 of 2"
	for _, e := range []chain.Event{
		{Job: j, Kind: "try", Provider: "gemini", Attempt: 1},
		{Job: j, Kind: "outcome", Provider: "gemini", Outcome: chain.OutcomeRateLimited, Reason: reason},
		{Job: j, Kind: "wait", Provider: "gemini", Wait: time.Second, Reason: reason},
		{Job: j, Kind: "try", Provider: "gemini", Attempt: 2},
		{Job: j, Kind: "wait", Provider: "groq", Wait: 2 * time.Second, Reason: "pacing: rpm 10"},
	} {
		p.event(e)
	}
	p.close()
	out := b.String()
	if n := strings.Count(out, reason); n != 1 {
		t.Errorf("the 429 reason printed %d times, want 1:\n%s", n, out)
	}
	if !strings.Contains(out, "waiting 1s before the next try\n") {
		t.Errorf("the wait line does not say how long:\n%s", out)
	}
	if !strings.Contains(out, "waiting 2s before the next try: pacing: rpm 10") {
		t.Errorf("a wait with its own reason lost it:\n%s", out)
	}
}

// TestHealthTableAligned prints a table with a model name longer than any
// fixed width and expects the status and detail columns to line up.
func TestHealthTableAligned(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	printHealthTable(&b, []chain.HealthCheck{
		{Provider: "gemini", Model: "gemini-flash-latest", State: chain.HealthHealthy, OK: true, Outcome: chain.OutcomeOK, Latency: 120 * time.Millisecond},
		{Provider: "openrouter-long-name", Model: "meta-llama/llama-3.3-70b-instruct:free-with-a-long-suffix", State: chain.HealthUnhealthy,
			Outcome: chain.OutcomeServerError, HTTPStatus: 503, Detail: "overloaded"},
		{Provider: "groq", Model: "llama-3.3-70b-versatile", State: chain.HealthCapped, Skip: "cap", Detail: "daily cap reached"},
	})
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	col := func(line, cell string) int { return strings.Index(line, cell) }
	status := []string{"healthy", "unhealthy", string(chain.HealthCapped)}
	models := []string{"gemini-flash-latest", "meta-llama/", "llama-3.3-70b-versatile"}
	details := []string{"latency", "server_error", "daily cap"}
	for i := range lines {
		if col(lines[i], status[i]) != col(lines[0], status[0]) || col(lines[i], models[i]) != col(lines[0], models[0]) ||
			col(lines[i], details[i]) != col(lines[0], details[0]) {
			t.Fatalf("columns do not line up:\n%s", b.String())
		}
	}
}

// TestProgressNamesTheConnectCause: the line of a connection that could
// not be made ends in the resolver's words, however long the error.
func TestProgressNamesTheConnectCause(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := newProgress(&b, 1)
	j := chain.Job{ID: "2026-12-01/t", Topic: "t"}
	pol := chain.DefaultRetryPolicy()
	pe := &chain.ProviderError{Outcome: chain.OutcomeConnectFailed,
		Message: `Post "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse": dial tcp: lookup generativelanguage.googleapis.com on 127.0.0.53:53: no such host`}
	d, _ := pol.Judge(chain.Observation{Err: pe}, chain.Standing{}, time.Now())
	p.event(chain.Event{Job: j, Kind: "outcome", Provider: "gemini", Outcome: d.Outcome, Reason: d.Reason})
	p.close()
	if out := b.String(); !strings.Contains(out, "no such host") || strings.Contains(out, "waiting") || d.Wait != 0 {
		t.Fatalf("wait %s, line:\n%s", d.Wait, out)
	}
}

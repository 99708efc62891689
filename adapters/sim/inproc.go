package sim

import (
	"context"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/adapters/profile"
	"github.com/contentpipe/contentpipe/adapters/transport"
	"github.com/contentpipe/contentpipe/chain"
)

// InProc is a simulated provider that runs in the process: a chain.Provider
// that needs no socket and no real time. Each request draws a fault — from
// Profile.Script, then Profile.Rates (exactly as a loopback Server does),
// then from its Behaviour when it has one. An error fault is written as the
// provider's answer (status, headers with the daily quota, body: what a
// loopback Server sends) and read with the flavor's profile, the classifier
// the real adapter uses, so the *chain.ProviderError (status, outcome, waits,
// reset time, window, quota) is the one a real run would get; an answer's
// daily quota goes through the profile's headers the same way, and its text
// comes from the same article generator as the loopback servers, which the
// real quality gate then judges. A timeout or a cut stream has no answer
// to read; it is reported with the transport's outcome for it. Latency is
// spent by sleeping on Clock (advancing a VirtualClock).
// Name, Flavor and Clock are required. An InProc is safe for concurrent use.
type InProc struct {
	Name     string
	Flavor   Flavor
	Model    string // model name reported; "" = the flavor's default
	Clock    chain.Clock
	Timeouts chain.Timeouts // the link's timeouts: how long a hang costs
	JSONMode bool           // the link asks for JSON (always true for Gemini)
	Profile  Profile        // Script, Rates, Seed, RetryAfter, Thin, as for a Server
	// Behaviour, when set, decides each request the Profile leaves open
	// (a fault model); nil means the Profile alone.
	Behaviour Behaviour

	mu   sync.Mutex
	n    int
	vars map[Fault]int
}

var _ chain.Provider = (*InProc)(nil)

// Behaviour is what a fault model says about each request to one
// in-process provider: its fault, how long it takes and how its answer is
// written. InProc asks it under its own lock, one request at a time, so an
// implementation may keep state (a quota used, a 429 burst) without a lock
// of its own.
type Behaviour interface {
	// Decide decides req at now. When scripted is true the provider's
	// Profile has already chosen fault: Decide keeps it and decides only
	// the rest.
	Decide(now time.Time, req chain.Request, fault Fault, scripted bool) Decision
}

// Meter is an optional part of a Behaviour: InProc tells it the tokens of
// every answer it delivered (accepted by the gate or not), so that a fault
// model can count a daily token quota the way the provider does, from what
// it processed. Called under InProc's lock, like Decide.
type Meter interface {
	Answered(now time.Time, req chain.Request, inputTokens, outputTokens int)
}

// FaultStall is a fault only an InProc renders: the answer starts (the
// first token arrives) and then stalls mid-stream, a token or a keep-alive
// now and then so that no idle timeout fires, until the link's total
// timeout (else the job deadline). It is what an overloaded inference host
// does, and it costs the whole total timeout, where a 503 costs a second.
const FaultStall Fault = "stall"

// Decision is a Behaviour's answer for one request. The zero value is a
// normal answer at once with the Profile's text.
type Decision struct {
	Fault Fault
	// RetryAfter is the wait a per-minute 429 advertises; 0 means the
	// Profile's RetryAfter.
	RetryAfter time.Duration
	// ResetAt is when the quota behind a daily 429 resets; the zero time
	// means the flavor's usual answer.
	ResetAt time.Time
	// Quota is the daily allowance left; InProc reports it only for the
	// flavors whose real APIs send daily headers (Groq and Cerebras).
	Quota chain.QuotaHint
	// Latency is how long the call takes; FirstToken the part of it
	// before the first token.
	Latency, FirstToken time.Duration
	// TextSeed and TextN select the answer's text from the article
	// generator when the Profile names no Seed.
	TextSeed int64
	TextN    int
	// Thin asks for a thin article; Length is the share of the asked
	// length the model aims at (0 and 1 mean as asked).
	Thin   bool
	Length float64
}

// draw is what one request drew.
type draw struct {
	fault    Fault
	retry    time.Duration // per-minute 429: the advertised wait
	resetAt  time.Time     // daily 429: the provider's reset
	quota    chain.QuotaHint
	latency  time.Duration
	firstTok time.Duration
	length   float64 // share of the asked length aimed at; 0 = as asked
	turn     turn
}

func (p *InProc) model() string {
	if p.Model != "" {
		return p.Model
	}
	return p.Flavor.DefaultModel()
}

// Generate answers one request; see InProc.
func (p *InProc) Generate(ctx context.Context, req chain.Request) (chain.Response, error) {
	if err := ctx.Err(); err != nil {
		return chain.Response{}, &chain.ProviderError{Provider: p.Name, Outcome: chain.OutcomeTimeoutTotal, Message: "job deadline reached", Cause: err, Quota: chain.QuotaHint{Remaining: -1}}
	}
	d := p.draw(req)
	return p.render(ctx, d, req)
}

// draw assigns the request's fault under the lock.
func (p *InProc) draw(req chain.Request) draw {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.vars == nil {
		p.vars = map[Fault]int{}
	}
	p.n++
	n := p.n
	now := p.Clock.Now()
	prof := p.Profile
	d := draw{fault: FaultNone, quota: chain.QuotaHint{Remaining: -1}}
	scripted := false
	if n <= len(prof.Script) {
		d.fault, scripted = prof.Script[n-1], true
	} else if f, ok := prof.rateFault(n); ok {
		d.fault, scripted = f, true
	}
	textN := n
	if b := p.Behaviour; b != nil {
		dec := b.Decide(now, req, d.fault, scripted)
		if prof.Seed == 0 {
			prof.Seed, textN = dec.TextSeed, dec.TextN
		}
		d.fault, d.retry, d.resetAt = dec.Fault, dec.RetryAfter, dec.ResetAt
		d.latency, d.firstTok, d.length = dec.Latency, dec.FirstToken, dec.Length
		if !scripted && (p.Flavor == FlavorGroq || p.Flavor == FlavorCerebras) {
			d.quota = dec.Quota // only these two send daily headers
		}
		prof.Thin = prof.Thin || dec.Thin
	}
	v := p.vars[d.fault]
	p.vars[d.fault] = v + 1
	d.turn = turn{n: textN, fault: d.fault, prof: prof, rng: rand.New(rand.NewPCG(uint64(prof.Seed), uint64(textN))), variant: v}
	if p.Behaviour == nil {
		d.quota = p.serverQuota(n, d.fault, now)
	}
	return d
}

// serverQuota is the daily allowance a loopback Server's headers report
// (Groq x-ratelimit-remaining-requests, Cerebras ...-requests-day).
func (p *InProc) serverQuota(n int, f Fault, now time.Time) chain.QuotaHint {
	switch p.Flavor {
	case FlavorGroq:
		rem := max(0, groqRequestsPerDay-n)
		return chain.QuotaHint{Remaining: rem, Reset: time.Duration(float64(24*time.Hour) * float64(groqRequestsPerDay-rem) / groqRequestsPerDay).Round(10 * time.Millisecond)}
	case FlavorCerebras:
		rem := max(0, cerebrasRequestsPerDay-n)
		if f == FaultRateDay {
			rem = 0
		}
		return chain.QuotaHint{Remaining: rem, Reset: nextUTCMidnight(now).Sub(now).Round(10 * time.Millisecond)}
	}
	return chain.QuotaHint{Remaining: -1}
}

// fail is the error of an error fault: the answer the flavor's provider
// sends for it (status, headers with the daily quota d holds, body, as a
// loopback Server writes it), read with the flavor's profile exactly as
// the real adapter reads it.
func (p *InProc) fail(d draw, req chain.Request, now time.Time) *chain.ProviderError {
	t := d.turn
	t.retry, t.resetAt = d.retry, d.resetAt
	rp := (&Server{flavor: p.Flavor}).faultReply(t, call{model: p.model(), user: req.Prompt, system: req.System}, now, false)
	h := http.Header{}
	for k, v := range rp.header {
		h.Set(k, v)
	}
	q := d.quota
	if p.Flavor == FlavorCerebras && d.fault == FaultRateDay {
		// Cerebras says the day is used up in its headers too.
		ra, _ := transport.ParseRetryAfter(h.Get("Retry-After"), now)
		q = chain.QuotaHint{Remaining: 0, Reset: ra}
	}
	prof := p.Flavor.Profile()
	prof.WriteQuota(h, q)
	return prof.Failure(p.Name, profile.Answer{Status: rp.status, Header: h, Body: rp.body}, "", now)
}

// hang is what a request that never answers costs: the link's first-token
// timeout on a stream, else its total timeout, else the job deadline.
func (p *InProc) hang(ctx context.Context, stream bool) *chain.ProviderError {
	pe := &chain.ProviderError{Provider: p.Name, Quota: chain.QuotaHint{Remaining: -1}}
	switch {
	case stream && p.Timeouts.FirstToken > 0:
		_ = p.Clock.Sleep(ctx, p.Timeouts.FirstToken)
		pe.Outcome, pe.Message = chain.OutcomeTimeoutFirstToken, "no first token within "+p.Timeouts.FirstToken.String()
	case p.Timeouts.Total > 0:
		_ = p.Clock.Sleep(ctx, p.Timeouts.Total)
		pe.Outcome, pe.Message = chain.OutcomeTimeoutTotal, "no answer within "+p.Timeouts.Total.String()
	default:
		_ = p.Clock.Sleep(ctx, 15*time.Minute)
		pe.Outcome, pe.Message = chain.OutcomeTimeoutTotal, "job deadline reached"
	}
	return pe
}

// stall is what a stream that stalls after its first token costs: the
// link's total timeout (else the job deadline), with the first token in it.
func (p *InProc) stall(ctx context.Context, d draw) *chain.ProviderError {
	first := d.firstTok
	if first <= 0 {
		first = time.Second
	}
	total := p.Timeouts.Total
	if total <= 0 {
		total = chain.DefaultDeadline // no total timeout: the stall outlasts the default job deadline
	}
	first = min(first, total)
	_ = p.Clock.Sleep(ctx, total)
	return &chain.ProviderError{Provider: p.Name, Status: 200, Outcome: chain.OutcomeTimeoutTotal,
		Message: "the stream stalled after its first token: no complete answer within " + total.String(), FirstToken: first, Quota: d.quota}
}

// render turns a draw into the adapter's answer or error.
func (p *InProc) render(ctx context.Context, d draw, req chain.Request) (chain.Response, error) {
	now := p.Clock.Now()
	switch d.fault {
	case FaultHang:
		return chain.Response{}, p.hang(ctx, req.Stream)
	case FaultStall:
		return chain.Response{}, p.stall(ctx, d)
	case FaultRateMinute, FaultRateDay, FaultUnavailable, FaultServerError,
		FaultUnauthorized, FaultInvalidKey, FaultForbidden:
		_ = p.Clock.Sleep(ctx, d.latency)
		return chain.Response{}, p.fail(d, req, now)
	case FaultBlocked:
		if p.Flavor != FlavorGemini {
			_ = p.Clock.Sleep(ctx, d.latency)
			return chain.Response{}, p.fail(d, req, now)
		}
	}
	user := req.Prompt
	if d.length > 0 && d.length != 1 {
		user = scaleTarget(user, d.length)
	}
	c := call{model: p.model(), stream: req.Stream, jsonMode: p.JSONMode || p.Flavor == FlavorGemini,
		maxTokens: req.MaxTokens, user: user, system: req.System}
	if p.Flavor == FlavorGemini {
		c.op = opGenerate
		if req.Stream {
			c.op = opStreamGenerate
		}
	} else {
		c.op = opChat
	}
	a := (&Server{flavor: p.Flavor}).compose(d.turn, c)
	first := d.firstTok + a.slow
	if a.slow > 0 && p.Timeouts.FirstToken > 0 && first > p.Timeouts.FirstToken {
		_ = p.Clock.Sleep(ctx, p.Timeouts.FirstToken)
		return chain.Response{}, &chain.ProviderError{Provider: p.Name, Status: 200, Outcome: chain.OutcomeTimeoutFirstToken,
			Message: "no first token within " + p.Timeouts.FirstToken.String(), Quota: d.quota}
	}
	total := d.latency + a.slow
	if p.Timeouts.Total > 0 && total > p.Timeouts.Total {
		_ = p.Clock.Sleep(ctx, p.Timeouts.Total)
		return chain.Response{}, &chain.ProviderError{Provider: p.Name, Status: 200, Outcome: chain.OutcomeTimeoutTotal,
			Message: "no complete answer within " + p.Timeouts.Total.String(), FirstToken: first, Quota: d.quota}
	}
	if a.cut || a.errorChunk {
		cut := total * 2 / 5
		_ = p.Clock.Sleep(ctx, cut)
		r := []rune(a.text)
		partial := string(r[:len(r)*2/5])
		if a.errorChunk {
			partial = a.text
		}
		msg := "stream ended without its end event"
		if a.errorChunk {
			msg = "error chunk in the stream: Provider disconnected unexpectedly"
		}
		return chain.Response{}, &chain.ProviderError{Provider: p.Name, Status: 200, Outcome: chain.OutcomeStreamBroken,
			Message: msg, Partial: partial, FirstToken: first, Quota: d.quota}
	}
	_ = p.Clock.Sleep(ctx, total)
	prof := p.Flavor.Profile()
	if finish := finishGemini(a.finish); p.Flavor == FlavorGemini && prof.Blocked(finish) {
		return chain.Response{}, &chain.ProviderError{Provider: p.Name, Status: 200, Outcome: chain.OutcomeBlocked,
			Message: "answer blocked: finish reason " + finish, FirstToken: first, Quota: p.quota(d.quota)}
	}
	resp := chain.Response{
		Text: a.text, Model: c.model, HTTPStatus: 200, FirstToken: first, Quota: p.quota(d.quota),
		InputTokens: a.in, OutputTokens: a.out, Truncated: a.finish == finishLength,
	}
	if p.Flavor == FlavorGemini {
		resp.OutputTokens += a.thoughtTokens
		resp.FinishReason = finishGemini(a.finish)
	} else {
		resp.FinishReason = finishOpenAI(a.finish)
	}
	if m, ok := p.Behaviour.(Meter); ok {
		p.mu.Lock()
		m.Answered(p.Clock.Now(), req, resp.InputTokens, resp.OutputTokens)
		p.mu.Unlock()
	}
	return resp, nil
}

// quota is the daily allowance an answer carrying q reports: q written in
// the flavor's quota headers and read back with its profile.
func (p *InProc) quota(q chain.QuotaHint) chain.QuotaHint {
	h := http.Header{}
	prof := p.Flavor.Profile()
	prof.WriteQuota(h, q)
	return prof.Quota(h)
}

// scaleTarget rewrites the prompt's "Target words: N" line to N·share: the
// simulated model aims at a different length than it was asked for.
func scaleTarget(prompt string, share float64) string {
	lines := strings.Split(prompt, "\n")
	for i, l := range lines {
		rest, ok := strings.CutPrefix(strings.TrimSpace(l), "Target words:")
		if !ok {
			continue
		}
		n, err := strconv.Atoi(strings.Fields(rest + " x")[0])
		if err != nil {
			continue
		}
		lines[i] = "Target words: " + strconv.Itoa(int(math.Round(float64(n)*share)))
		break
	}
	return strings.Join(lines, "\n")
}

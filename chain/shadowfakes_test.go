package chain

import (
	"context"
	"sync"
	"testing"
	"time"
)

// gatedProvider answers only when release is closed (a slow shadow), or
// with the ctx error when the call is cancelled first. started is closed
// when the first call arrives.
type gatedProvider struct {
	release chan struct{}
	started chan struct{}
	once    sync.Once
	resp    Response
}

func newGated() *gatedProvider {
	return &gatedProvider{release: make(chan struct{}), started: make(chan struct{}),
		resp: Response{Text: "GOOD shadow article with a few more words", InputTokens: 100, OutputTokens: 900, HTTPStatus: 200}}
}

func (p *gatedProvider) Generate(ctx context.Context, _ Request) (Response, error) {
	p.once.Do(func() { close(p.started) })
	select {
	case <-p.release:
		return p.resp, nil
	case <-ctx.Done():
		return Response{}, ctx.Err()
	}
}

// comparisons collects the shadow comparisons a chain records.
type comparisons struct {
	mu   sync.Mutex
	rows []ShadowComparison
}

func (c *comparisons) record(_ context.Context, r ShadowComparison) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.rows = append(c.rows, r)
	return nil
}

func (c *comparisons) all() []ShadowComparison {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]ShadowComparison(nil), c.rows...)
}

// shadowOf adds a shadow link to the scenario: name is a chain link of the
// scenario or, when p is not nil, a new candidate with provider p.
func (s *scenario) shadowOf(name string, p Provider) (*Link, *comparisons) {
	s.t.Helper()
	var l *Link
	if p == nil {
		l = s.link(name)
	} else {
		reset, _ := ParseCapReset("")
		l = &Link{Name: name, Model: name + "-model", Family: "openai", Provider: p, CapReset: reset,
			Price: Price{InputPerMTok: 1, OutputPerMTok: 2}}
	}
	cmp := &comparisons{}
	s.chain.Shadow = Shadow{Links: append(s.chain.Shadow.Links, l), SampleRate: 1, Record: cmp.record}
	return l, cmp
}

// shadowCalls returns the recorded shadow calls of provider.
func (s *memStore) shadowCalls(provider string) []Call {
	var out []Call
	for _, c := range s.callsOf(provider) {
		if c.Shadow {
			out = append(out, c)
		}
	}
	return out
}

// jobCalls returns the recorded non-shadow calls of provider.
func (s *memStore) jobCalls(provider string) []Call {
	var out []Call
	for _, c := range s.callsOf(provider) {
		if !c.Shadow {
			out = append(out, c)
		}
	}
	return out
}

// generateAsync runs Generate in a goroutine and fails the test when it
// does not return within a generous real-time limit.
func (s *scenario) generateAsync(topic string) Result {
	s.t.Helper()
	done := make(chan Result, 1)
	go func() {
		res, err := s.chain.Generate(context.Background(), Job{ID: JobID(topic, "2026-11-29"), Topic: topic, Slot: "2026-11-29", Title: topic, Language: "en", TargetWords: 100})
		if err != nil {
			s.t.Errorf("generate: %v", err)
		}
		done <- res
	}()
	select {
	case res := <-done:
		return res
	case <-time.After(20 * time.Second):
		s.t.Fatal("Generate did not return while a shadow call was in flight")
		return Result{}
	}
}

func mustWaitShadows(t *testing.T, c *Chain) {
	t.Helper()
	if n := c.WaitShadows(20 * time.Second); n != 0 {
		t.Fatalf("%d shadow calls still in flight", n)
	}
}

package chain

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/contentpipe/contentpipe/quality"
)

// vclock is a virtual clock: Sleep advances time at once and is recorded.
type vclock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

func newVClock() *vclock {
	return &vclock{now: time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)}
}

func (c *vclock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *vclock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	return ctx.Err()
}

func (c *vclock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *vclock) totalSlept() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	var t time.Duration
	for _, d := range c.sleeps {
		t += d
	}
	return t
}

// step is one scripted provider answer.
type step struct {
	resp Response
	err  *ProviderError
	took time.Duration // virtual time the call takes
}

// scripted is a Provider that plays a script, then repeats its last step.
type scripted struct {
	name  string
	clock *vclock
	mu    sync.Mutex
	steps []step
	calls int
}

func (p *scripted) Generate(ctx context.Context, req Request) (Response, error) {
	p.mu.Lock()
	i := p.calls
	p.calls++
	var s step
	if len(p.steps) > 0 {
		if i >= len(p.steps) {
			i = len(p.steps) - 1
		}
		s = p.steps[i]
	}
	p.mu.Unlock()
	if s.took > 0 {
		p.clock.advance(s.took)
	}
	if s.err != nil {
		e := *s.err
		e.Provider = p.name
		return Response{}, &e
	}
	r := s.resp
	if r.Text == "" {
		r.Text = "GOOD"
	}
	r.HTTPStatus = 200
	return r, nil
}

func (p *scripted) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.calls
}

// markerGate scores "GOOD…" 90, "BAD…" 40, anything else 0 (outright).
type markerGate struct{}

func (markerGate) Evaluate(text string, _ quality.Spec) quality.Result {
	switch {
	case strings.HasPrefix(text, "GOOD"):
		return quality.Result{Score: 90, Pass: true, Article: &quality.Article{Title: "t", Sections: []quality.Section{{H2: "h", Body: text}}}}
	case strings.HasPrefix(text, "BAD"):
		return quality.Result{Score: 40, Checks: []quality.Check{{Name: "words", Penalty: 60}}, Article: &quality.Article{Title: "t", Sections: []quality.Section{{H2: "h", Body: text}}}}
	}
	return quality.Result{Score: 0, Outright: true, Checks: []quality.Check{{Name: "schema", Penalty: 100}}}
}

// memStore is an in-memory Store for scripted scenarios.
type memStore struct {
	mu       sync.Mutex
	calls    []Call
	skips    []Skip
	states   map[string]*ProviderState
	trans    []Transition
	reserved map[string]int // provider|dayStart → used
	resKey   map[int64]string
	nextRes  int64
}

func newMemStore() *memStore {
	return &memStore{states: map[string]*ProviderState{}, reserved: map[string]int{}, resKey: map[int64]string{}}
}

func (s *memStore) NextAttempt(_ context.Context, id string) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 1
	for _, c := range s.calls {
		if c.RequestID == id && c.Attempt >= n {
			n = c.Attempt + 1
		}
	}
	return n, nil
}

func (s *memStore) RecordCall(_ context.Context, c Call) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, c)
	return nil
}

// RecordAttempt applies an attempt's rows as the store's one transaction
// does.
func (s *memStore) RecordAttempt(ctx context.Context, r AttemptRecord) error {
	if r.Cap != nil {
		_ = s.SettleCap(ctx, r.Cap.ID, r.Cap.Sent, r.Cap.Tokens)
	}
	if r.Learn != nil {
		_ = s.UpdateProviderState(ctx, r.Call.Provider, r.Learn)
	}
	return s.RecordCall(ctx, r.Call)
}

func (s *memStore) RecordSkip(_ context.Context, k Skip) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.skips = append(s.skips, k)
	return nil
}

func (s *memStore) ReserveCap(_ context.Context, provider string, dayStart time.Time, limit int, _ time.Time) (int64, int, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := provider + "|" + dayStart.String()
	if s.reserved[k] >= limit {
		return 0, s.reserved[k], false, nil
	}
	s.reserved[k]++
	s.nextRes++
	s.resKey[s.nextRes] = k
	return s.nextRes, s.reserved[k], true, nil
}

// ReserveSpend checks the request limit only (a zero Cap takes an
// uncounted reservation); the token and money limits are telemetry's and
// tested there.
func (s *memStore) ReserveSpend(ctx context.Context, r SpendRequest) (SpendGrant, error) {
	if r.Cap <= 0 {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.nextRes++
		s.resKey[s.nextRes] = "uncounted"
		return SpendGrant{ID: s.nextRes}, nil
	}
	id, used, ok, err := s.ReserveCap(ctx, r.Provider, r.DayStart, r.Cap, r.Now)
	if err != nil || !ok {
		return SpendGrant{Refused: LimitCap, Used: float64(used), Limit: float64(r.Cap)}, err
	}
	return SpendGrant{ID: id}, nil
}

func (s *memStore) SettleCap(_ context.Context, id int64, sent bool, _ int) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !sent {
		s.reserved[s.resKey[id]]--
	}
	return nil
}

func (s *memStore) ProviderState(_ context.Context, p string) (ProviderState, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.states[p]; ok {
		return *st, nil
	}
	return ProviderState{}, nil
}

func (s *memStore) UpdateProviderState(_ context.Context, p string, fn func(*ProviderState) []Transition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.states[p]
	if !ok {
		st = &ProviderState{}
		s.states[p] = st
	}
	s.trans = append(s.trans, fn(st)...)
	return nil
}

func (s *memStore) callsOf(provider string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if c.Provider == provider {
			out = append(out, c)
		}
	}
	return out
}

func (s *memStore) skipsOf(provider string, reason SkipReason) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, k := range s.skips {
		if k.Provider == provider && k.Reason == reason {
			n++
		}
	}
	return n
}

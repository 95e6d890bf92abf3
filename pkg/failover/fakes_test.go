package failover

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retry"
)

// scripted is a fake provider: each call runs the next behaviour of its
// script (the last one repeats).
type scripted struct {
	mu     sync.Mutex
	script []func(ctx context.Context, call *provider.Call) (provider.Stream, error)
	calls  int
}

func (s *scripted) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	s.mu.Lock()
	i := min(s.calls, len(s.script)-1)
	s.calls++
	s.mu.Unlock()
	st, err := s.script[i](ctx, call)
	if call.OnResponse != nil {
		if err == nil {
			call.OnResponse(http.StatusOK, http.Header{})
		} else if ge := gwerr.As(err); ge.Status != 0 {
			call.OnResponse(ge.Status, http.Header{})
		}
	}
	return st, err
}

func (s *scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// fails answers with err before any byte.
func fails(err error) func(context.Context, *provider.Call) (provider.Stream, error) {
	return func(context.Context, *provider.Call) (provider.Stream, error) { return nil, err }
}

// serves streams events, then ends with end (io.EOF for a clean end).
func serves(end error, evs ...exchange.Event) func(context.Context, *provider.Call) (provider.Stream, error) {
	return func(ctx context.Context, _ *provider.Call) (provider.Stream, error) {
		return &fakeStream{ctx: ctx, evs: evs, end: end}, nil
	}
}

// stalls answers, then sends nothing until its context ends.
func stalls(evs ...exchange.Event) func(context.Context, *provider.Call) (provider.Stream, error) {
	return func(ctx context.Context, _ *provider.Call) (provider.Stream, error) {
		return &fakeStream{ctx: ctx, evs: evs, stall: true}, nil
	}
}

type fakeStream struct {
	out    int // text events sent: the output tokens it reports
	ctx    context.Context
	evs    []exchange.Event
	end    error
	stall  bool
	closed bool
}

func (f *fakeStream) Next() (exchange.Event, error) {
	if len(f.evs) > 0 {
		ev := f.evs[0]
		f.evs = f.evs[1:]
		if ev.Kind == exchange.Text {
			f.out++
		}
		return ev, nil
	}
	if f.stall {
		<-f.ctx.Done()
		return exchange.Event{}, provider.Interrupted("fake", "broke off", context.Cause(f.ctx))
	}
	if f.end == nil {
		return exchange.Event{}, io.EOF
	}
	return exchange.Event{}, f.end
}
func (f *fakeStream) Usage() exchange.TokenUsage { return exchange.TokenUsage{Input: 3, Output: f.out} }
func (f *fakeStream) Close() error               { f.closed = true; return nil }

func text(s string) exchange.Event { return exchange.Event{Kind: exchange.Text, Text: s} }

var (
	start  = exchange.Event{Kind: exchange.Start, ID: "r1", Name: "m"}
	finish = exchange.Event{Kind: exchange.Finish, Finish: exchange.FinishStop}
)

// guard is a fake breaker: open targets are refused; every outcome is
// recorded.
type guard struct {
	mu       sync.Mutex
	open     map[string]bool
	outcomes map[string][]breaker.Outcome
}

func newGuard(open ...string) *guard {
	g := &guard{open: map[string]bool{}, outcomes: map[string][]breaker.Outcome{}}
	for _, t := range open {
		g.open[t] = true
	}
	return g
}

func (g *guard) Allow(target string, _ breaker.Force) (func(breaker.Outcome), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open[target] {
		return nil, errors.New("open")
	}
	return func(o breaker.Outcome) {
		g.mu.Lock()
		defer g.mu.Unlock()
		g.outcomes[target] = append(g.outcomes[target], o)
	}, nil
}

func (g *guard) Outcomes(target string) []breaker.Outcome {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]breaker.Outcome(nil), g.outcomes[target]...)
}

// picker is a fake key ledger: providers in none have no usable key; every
// observed status is recorded.
type picker struct {
	mu       sync.Mutex
	none     map[string]bool
	observed []int
	// pickHook, when set, decides whether prov has a usable key now.
	pickHook func(prov string) bool
	// until is when a key pickHook refuses is usable again (zero: not
	// known); providers in none have only rejected keys.
	until time.Time
}

func (p *picker) Pick(prov, _ string) (keyledger.Key, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.none[prov] {
		return keyledger.Key{}, &keyledger.UnusableError{Provider: prov, Reason: "disabled"}
	}
	if p.pickHook != nil && !p.pickHook(prov) {
		return keyledger.Key{}, &keyledger.UnusableError{Provider: prov, Reason: "rate_limited", Until: p.until}
	}
	// A key the provider rate-limited is set aside: the next one differs.
	n := 0
	for _, st := range p.observed {
		if st == http.StatusTooManyRequests {
			n++
		}
	}
	return keyledger.Key{Fingerprint: fmt.Sprintf("fp-%s-%d", prov, n)}, nil
}

func (p *picker) Observe(_, _ string, _ keyledger.Key, status int, _ http.Header) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.observed = append(p.observed, status)
}

// rig is a router over scripted providers a, b and c, with waits recorded
// instead of slept.
type rig struct {
	router *Router
	provs  map[string]*scripted
	guard  *guard
	keys   *picker
	waits  []time.Duration
}

func newRig(scripts map[string][]func(context.Context, *provider.Call) (provider.Stream, error)) *rig {
	rg := &rig{provs: map[string]*scripted{}, guard: newGuard(), keys: &picker{none: map[string]bool{}}}
	provs := map[string]provider.Provider{}
	for id, sc := range scripts {
		rg.provs[id] = &scripted{script: sc}
		provs[id] = rg.provs[id]
	}
	var mu sync.Mutex
	rg.router = &Router{Providers: provs, Breakers: rg.guard, Keys: rg.keys, Budget: retry.NewBudget(),
		Rand: func() float64 { return 1 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			rg.waits = append(rg.waits, d)
			mu.Unlock()
			return ctx.Err()
		}}
	return rg
}

// request is a streaming request over a chain of the named providers, each
// target tried up to attempts times.
func request(attempts int, provs ...string) *exchange.Request {
	pol := config.Policy{Attempts: attempts, FirstTokenTimeout: config.Duration(time.Second), ResponseTimeout: config.Duration(time.Second),
		IdleTimeout: config.Duration(time.Second), RetryAfterCap: config.Duration(2 * time.Second),
		BackoffBase: config.Duration(100 * time.Millisecond), BackoffMax: config.Duration(time.Second),
		RetryBudget: 0.1, MinRetriesPerMin: 5,
		FallbackOn: []gwerr.Category{gwerr.RateLimited, gwerr.Timeout, gwerr.Overloaded, gwerr.Unavailable}}
	rq := &exchange.Request{ID: "req_test", API: exchange.Chat, Stream: true, Policy: pol, Route: "r"}
	for _, p := range provs {
		rq.Steps = append(rq.Steps, config.Step{ID: p + "/m", Provider: p, Model: "m", Attempts: attempts, FirstTokenTimeout: time.Second})
	}
	return rq
}

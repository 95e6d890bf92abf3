package failover

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/retry"
	"github.com/llmgw/llmgw/pkg/store/embedded"
)

// The three rules an independent conformance run found wrong (issue 22).

// ledgerRig is a router over scripted providers with the production key
// ledger (over the in-memory store) on a fixed clock; waits are recorded.
func ledgerRig(keys map[string][]keyledger.Key, provs map[string]*scripted) (*Router, *[]time.Duration) {
	now := time.Unix(1_800_000_000, 0)
	clock := func() time.Time { return now }
	ledger := keyledger.New(embedded.OpenMemory(embedded.WithClock(clock)), keyledger.Options{Now: clock})
	ledger.SetKeys(keys)
	ps := map[string]provider.Provider{}
	for id, p := range provs {
		ps[id] = p
	}
	var mu sync.Mutex
	waits := &[]time.Duration{}
	return &Router{Providers: ps, Breakers: newGuard(), Keys: ledger, Budget: retry.NewBudget(), Now: clock, Rand: func() float64 { return 0 },
		Sleep: func(ctx context.Context, d time.Duration) error {
			mu.Lock()
			*waits = append(*waits, d)
			mu.Unlock()
			return ctx.Err()
		}}, waits
}

// openAITokens429 answers like OpenAI when a key's token limit is spent
// for six minutes: a short Retry-After, and the headroom headers.
func openAITokens429(_ context.Context, call *provider.Call) (provider.Stream, error) {
	call.OnResponse(http.StatusTooManyRequests, http.Header{"Retry-After": {"1"},
		"X-Ratelimit-Remaining-Tokens": {"0"}, "X-Ratelimit-Reset-Tokens": {"6m0s"},
		"X-Ratelimit-Remaining-Requests": {"499"}, "X-Ratelimit-Reset-Requests": {"120ms"}})
	return nil, provider.StatusError("a", 429, "tokens", "Rate limit reached for tokens", time.Second)
}

// Rule (a): the only target's only key is rate-limited for six minutes.
// The client gets the 429 with a Retry-After of six minutes - not a 502
// "no usable provider key" after waiting out the one-second Retry-After -
// and the requests that follow get the same 429 at once, without an
// upstream call.
func TestA429OnTheOnlyKeyAnswers429UntilTheKeyFreesUp(t *testing.T) {
	a := &scripted{script: script{openAITokens429}}
	r, waits := ledgerRig(map[string][]keyledger.Key{"a": {keyledger.NewKey("sk-only", 0)}}, map[string]*scripted{"a": a})
	rq := request(3, "a")
	_, err := r.Open(context.Background(), rq)
	ge := gwerr.As(err)
	if ge.Category != gwerr.RateLimited || ge.RetryAfter != 6*time.Minute || a.Calls() != 1 || len(*waits) != 0 {
		t.Fatalf("first request: %v (retry after %v), %d calls, waits %v; want the 429 with Retry-After 6m at once", err, ge.RetryAfter, a.Calls(), *waits)
	}
	for i := 0; i < 2; i++ {
		rq := request(3, "a")
		_, err := r.Open(context.Background(), rq)
		ge := gwerr.As(err)
		if ge.Category != gwerr.RateLimited || ge.RetryAfter != 6*time.Minute || ge.Category.Status() != http.StatusTooManyRequests || a.Calls() != 1 {
			t.Fatalf("request in the window: %v (retry after %v), %d calls; want 429 with Retry-After 6m and no upstream call", err, ge.RetryAfter, a.Calls())
		}
		if got := rq.Trace.Attempts; len(got) != 1 || got[0].Skipped != "no_key" {
			t.Fatalf("trace %+v", got)
		}
	}
}

// Rule (a), the deadline: a Retry-After within the route's cap is not
// waited out when the request's deadline would pass first; the client
// gets the 429.
func TestARetryAfterLongerThanTheDeadlineAllowsIsNotWaited(t *testing.T) {
	rg := newRig(map[string]script{"a": {fails(rateLimited(1500 * time.Millisecond)), serves(io.EOF, text("late"), finish)}})
	rg.keys.pickHook = func(string) bool { return len(rg.keys.observed) == 0 } // the only key cools down
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := rg.router.Open(ctx, request(2, "a"))
	if gwerr.As(err).Category != gwerr.RateLimited || len(rg.waits) != 0 || rg.provs["a"].Calls() != 1 {
		t.Fatalf("err %v, waits %v, %d calls: a wait the deadline cannot outlast must not start", err, rg.waits, rg.provs["a"].Calls())
	}
}

// Rule (b): a provider without keys (Bedrock's credential chain) spends
// the retry budget on every retry of a 429: with a budget of 0 the 429 is
// the answer after one call.
func TestAKeylessProviderSpendsTheRetryBudgetOn429s(t *testing.T) {
	for _, ra := range []time.Duration{0, time.Second} {
		a := &scripted{script: script{fails(provider.StatusError("a", 429, "ThrottlingException", "", ra)), serves(io.EOF, text("x"), finish)}}
		r, _ := ledgerRig(map[string][]keyledger.Key{}, map[string]*scripted{"a": a})
		rq := request(3, "a")
		rq.Policy.RetryBudget, rq.Policy.MinRetriesPerMin = 0, 0
		_, err := r.Open(context.Background(), rq)
		if gwerr.As(err).Category != gwerr.RateLimited || a.Calls() != 1 {
			t.Fatalf("Retry-After %v: err %v after %d upstream calls; a budget of 0 allows one", ra, err, a.Calls())
		}
		// With budget, the same retries happen and are counted.
		a = &scripted{script: script{fails(provider.StatusError("a", 429, "ThrottlingException", "", ra)), serves(io.EOF, text("x"), finish)}}
		r, _ = ledgerRig(map[string][]keyledger.Key{}, map[string]*scripted{"a": a})
		rq = request(3, "a")
		rq.Policy.RetryBudget, rq.Policy.MinRetriesPerMin = 0, 1
		if _, err := r.Open(context.Background(), rq); err != nil || a.Calls() != 2 {
			t.Fatalf("Retry-After %v: err %v after %d calls with one retry in the budget", ra, err, a.Calls())
		}
		if r.Budget.Retry("a", 0, 1) {
			t.Fatalf("Retry-After %v: the retry was not counted against the budget", ra)
		}
	}
}

// gated streams evs, then waits for release (or its context) before
// streaming after.
type gated struct {
	ctx        context.Context
	evs, after []exchange.Event
	release    chan struct{}
	mu         sync.Mutex
	closed     bool
}

func (g *gated) Next() (exchange.Event, error) {
	if len(g.evs) == 0 && g.release != nil {
		select {
		case <-g.release:
			g.evs, g.after, g.release = g.after, nil, nil
		case <-g.ctx.Done():
			return exchange.Event{}, provider.Interrupted("a", "broke off", context.Cause(g.ctx))
		}
	}
	if len(g.evs) == 0 {
		return exchange.Event{}, io.EOF
	}
	ev := g.evs[0]
	g.evs = g.evs[1:]
	return ev, nil
}
func (g *gated) Usage() exchange.TokenUsage { return exchange.TokenUsage{Input: 1, Output: 2} }
func (g *gated) Close() error {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
	return nil
}

// Rule (c): the head buffer's duration is a timer. An upstream that sends
// a little and then nothing has its head released when the duration
// elapses - Open returns while the upstream is still silent (the idle
// timeout is far off) - and what it sends later follows the head.
func TestHeadBufferDurationReleasesTheHeadOfASilentUpstream(t *testing.T) {
	for _, endEarly := range []bool{false, true} {
		release := make(chan struct{})
		var g *gated
		rg := newRig(map[string]script{"a": {func(ctx context.Context, _ *provider.Call) (provider.Stream, error) {
			g = &gated{ctx: ctx, evs: []exchange.Event{start, text("Hel")}, after: []exchange.Event{text("lo"), finish}, release: release}
			return g, nil
		}}, "b": {serves(io.EOF, text("never"), finish)}})
		rq := request(1, "a", "b")
		rq.Policy.HeadBuffer = &config.HeadBuffer{Tokens: 1000, Duration: config.Duration(5 * time.Millisecond)}
		rq.Policy.IdleTimeout = config.Duration(5 * time.Second) // far beyond the duration
		s, err := rg.router.Open(context.Background(), rq)
		if err != nil {
			t.Fatal(err)
		}
		// Open returned with the upstream still gated: the head is out.
		var got []exchange.Kind
		for i := 0; i < 2; i++ {
			ev, err := s.Next()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev.Kind)
		}
		if !slices.Equal(got, []exchange.Kind{exchange.Start, exchange.Text}) || s.Buffered() {
			t.Fatalf("head %q (buffered %v), want Start and Text", got, s.Buffered())
		}
		if endEarly {
			// The client leaves while the read is in flight: End cancels
			// it and closes the stream after it, without a race.
			s.End(gwerr.ErrClientGone)
			if !g.closed || !slices.Equal(rg.guard.Outcomes("a/m"), []breaker.Outcome{breaker.Ignored}) {
				t.Fatalf("closed %v, breaker %v", g.closed, rg.guard.Outcomes("a/m"))
			}
			continue
		}
		close(release)
		texts, end := drain(t, s)
		if end != io.EOF || !slices.Equal(texts, []string{"lo"}) || rq.Trace.Target != "a/m" || rg.provs["b"].Calls() != 0 {
			t.Fatalf("rest %q, end %v, target %s", texts, end, rq.Trace.Target)
		}
	}
}

// Call runs a whole-body operation through the same walk: a target that
// fails (503) is left for the next, and the breaker hears of both.
func TestCallFailsOverAndFeedsTheBreaker(t *testing.T) {
	rg := newRig(map[string]script{"a": {fails(provider.StatusError("a", 503, "", "", 0))}, "b": {serves(io.EOF)}})
	calls := map[string]int{}
	op := Op{Name: "count_tokens", Post: func(ctx context.Context, call *provider.Call) ([]byte, error) {
		calls[call.Step.Provider]++
		if call.Step.Provider == "a" {
			return nil, provider.StatusError("a", 503, "", "", 0)
		}
		return []byte(`{"input_tokens":7}`), nil
	}}
	rq := request(1, "a", "b")
	body, err := rg.router.Call(context.Background(), rq, op)
	if err != nil || string(body) != `{"input_tokens":7}` || calls["a"] != 1 || calls["b"] != 1 || rq.Trace.Target != "b/m" {
		t.Fatalf("body %s, err %v, calls %v, target %s", body, err, calls, rq.Trace.Target)
	}
	if !slices.Equal(rg.guard.Outcomes("a/m"), []breaker.Outcome{breaker.Failure}) || !slices.Equal(rg.guard.Outcomes("b/m"), []breaker.Outcome{breaker.Success}) {
		t.Fatalf("breaker a %v, b %v", rg.guard.Outcomes("a/m"), rg.guard.Outcomes("b/m"))
	}
	if rg.provs["a"].Calls()+rg.provs["b"].Calls() != 0 {
		t.Fatal("Call used the adapters' Send")
	}
	// The operation's own 429 is not held against the breaker.
	rg = newRig(map[string]script{"a": {serves(io.EOF)}})
	_, err = rg.router.Call(context.Background(), request(1, "a"), Op{Name: "count_tokens", Post: func(ctx context.Context, call *provider.Call) ([]byte, error) {
		return nil, provider.StatusError("a", 429, "rate_limit_error", "", 0)
	}})
	if gwerr.As(err).Category != gwerr.RateLimited || !slices.Equal(rg.guard.Outcomes("a/m"), []breaker.Outcome{breaker.Ignored}) {
		t.Fatalf("err %v, breaker %v", err, rg.guard.Outcomes("a/m"))
	}
}

package breaker_test

import (
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// What the breaker and the key ledger cost in store calls, driven the way
// pkg/failover drives them (docs/state-model.md, "Expected store calls").

// testSettings are breaker settings for tests.
func testSettings() config.BreakerSettings {
	return config.BreakerSettings{
		Window: config.Duration(time.Minute), MinRequests: 10, FailureRate: 0.5, ConsecutiveFailures: 3,
		Cooldown: config.Duration(30 * time.Second), MaxCooldown: config.Duration(2 * time.Minute), HalfOpenProbes: 1,
	}
}

// generous is the store timeout of these tests: they are not about
// timeouts, and the emulator shares two cores with the race detector.
const generous = 20 * time.Second

func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func twoKeys() map[string][]keyledger.Key {
	return map[string][]keyledger.Key{"openai": {keyledger.NewKey("sk-test-two", 1), keyledger.NewKey("sk-test-one", 0)}}
}

// newBreaker returns one instance's breaker on st with the scenario's
// clock.
func newBreaker(e *storetest.Env, st breaker.Store, opt breaker.Options) *breaker.Breaker {
	opt.Now, opt.StoreTimeout = e.Now, generous
	b := breaker.New(st, testSettings(), opt)
	e.T.Cleanup(b.Wait)
	return b
}

// run makes one attempt through Allow and reports o, then waits for the
// background store work it started.
func run(b *breaker.Breaker, target string, o breaker.Outcome) {
	if done, err := b.Allow(target, ""); err == nil {
		done(o)
	}
	b.Wait()
}

// The cost model: one gateway instance serving requestRate requests per
// second on one route, measured on a simulated clock so the numbers do not
// depend on the machine's speed.
const (
	requestRate = 50 // per second, per instance
	step        = time.Second / requestRate
)

// okHeaders are a healthy OpenAI response's rate-limit headers.
var okHeaders = hdr("x-ratelimit-remaining-requests", "4999", "x-ratelimit-reset-requests", "12ms",
	"x-ratelimit-remaining-tokens", "1999000", "x-ratelimit-reset-tokens", "30ms")

// gatewayState is one instance's breaker and ledger, each over its own
// counting view of one store.
type gatewayState struct {
	bcs, lcs *storetest.Counting
	br       *breaker.Breaker
	kl       *keyledger.Ledger
}

func newGatewayState(st store.Store, now func() time.Time) *gatewayState {
	bcs, lcs := &storetest.Counting{Store: st}, &storetest.Counting{Store: st}
	g := &gatewayState{
		bcs: bcs, lcs: lcs,
		br: breaker.New(bcs, testSettings(), breaker.Options{Now: now, StoreTimeout: generous}),
		kl: keyledger.New(lcs, keyledger.Options{Now: now, StoreTimeout: generous}),
	}
	g.kl.SetKeys(twoKeys())
	return g
}

// calls is the store calls made so far: breaker reads and writes, ledger
// reads and writes.
type calls struct{ br, bw, lr, lw int64 }

func (g *gatewayState) calls() calls {
	br, bw := g.bcs.Counts()
	lr, lw := g.lcs.Counts()
	return calls{br, bw, lr, lw}
}

// perRequest is store calls per request.
type perRequest struct{ reads, writes, brReads, brWrites, klReads, klWrites float64 }

func (c calls) since(c0 calls, n int) perRequest {
	f := func(x int64) float64 { return float64(x) / float64(n) }
	return perRequest{
		reads: f(c.br - c0.br + c.lr - c0.lr), writes: f(c.bw - c0.bw + c.lw - c0.lw),
		brReads: f(c.br - c0.br), brWrites: f(c.bw - c0.bw), klReads: f(c.lr - c0.lr), klWrites: f(c.lw - c0.lw),
	}
}

func (p perRequest) String() string {
	return fmt.Sprintf("%.4f reads and %.4f writes per request (breaker %.4f r / %.4f w, ledger %.4f r / %.4f w)",
		p.reads, p.writes, p.brReads, p.brWrites, p.klReads, p.klWrites)
}

// request plays one request the way pkg/failover does: for each target of
// the chain, Allow, Pick, the upstream response (Observe), done. primaryUp
// says whether the primary target answers.
func (g *gatewayState) request(primaryUp bool) {
	for i, target := range []string{"openai/primary", "openai/secondary"} {
		done, err := g.br.Allow(target, "")
		if err != nil {
			continue
		}
		k, err := g.kl.Pick("openai", target)
		if err != nil {
			done(breaker.Ignored)
			continue
		}
		if i == 0 && !primaryUp {
			g.kl.Observe("openai", target, k, http.StatusServiceUnavailable, nil)
			done(breaker.Failure)
			continue
		}
		g.kl.Observe("openai", target, k, http.StatusOK, okHeaders)
		done(breaker.Success)
		return
	}
}

func (g *gatewayState) settle() {
	g.br.Wait()
	g.kl.Wait()
}

// measure plays warmup then n requests, one every step of simulated time,
// and returns the store calls per request after the warm-up.
func measure(g *gatewayState, advance func(time.Duration), warmup, n int, primaryUp bool) perRequest {
	for i := 0; i < warmup; i++ {
		advance(step)
		g.request(primaryUp)
		g.settle()
	}
	c0 := g.calls()
	for i := 0; i < n; i++ {
		advance(step)
		g.request(primaryUp)
		g.settle()
	}
	return g.calls().since(c0, n)
}

func TestStoreCallsPerRequest(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "HappyPath", Fn: func(t *testing.T, e *storetest.Env) {
			g := newGatewayState(e.Store, e.Now)
			t.Cleanup(g.settle)
			p := measure(g, e.Advance, 10, 1000, true)
			t.Logf("happy path, %d req/s: %v", requestRate, p)
			if p.writes > 0.05 || p.reads > 0.05 {
				t.Errorf("happy path: %v; want <= 0.05 reads and writes", p)
			}
			if p.brReads != 0 || p.klWrites != 0 {
				t.Errorf("happy path: %v; want no breaker reads and no ledger writes", p)
			}
		}},
		{Name: "BreakerHappyPathNeedsNoReads", Fn: func(t *testing.T, e *storetest.Env) {
			cs := &storetest.Counting{Store: e.Store}
			br := newBreaker(e, cs, breaker.Options{})
			for i := 0; i < 10; i++ { // warm-up: the first read
				e.Advance(step)
				run(br, "openai/primary", breaker.Success)
			}
			r0, w0 := cs.Counts()
			for i := 0; i < 1000; i++ {
				e.Advance(step)
				run(br, "openai/primary", breaker.Success)
			}
			r, w := cs.Counts()
			t.Logf("breaker alone, 1000 requests over %v: %d reads, %d writes", 1000*step, r-r0, w-w0)
			if r != r0 {
				t.Errorf("%d reads after warm-up on the happy path, want 0", r-r0)
			}
			if w-w0 > 1000*int64(step)/int64(time.Second)+1 {
				t.Errorf("%d writes in %v: more than one flush per second", w-w0, 1000*step)
			}
		}},
		{Name: "FlushIntervalBoundsWritesWhateverTheCacheTTL", Fn: func(t *testing.T, e *storetest.Env) {
			cs := &storetest.Counting{Store: e.Store}
			br := newBreaker(e, cs, breaker.Options{CacheTTL: 500 * time.Millisecond, FlushInterval: 2 * time.Second})
			_, w0 := cs.Counts()
			for i := 0; i < 1000; i++ { // 20s
				e.Advance(step)
				run(br, "openai/primary", breaker.Success)
			}
			if _, w := cs.Counts(); w-w0 > 11 {
				t.Errorf("%d writes in 20s with a 2s flush interval", w-w0)
			}
		}},
		{Name: "Failover", Fn: func(t *testing.T, e *storetest.Env) {
			g := newGatewayState(e.Store, e.Now)
			t.Cleanup(g.settle)
			// 2000 requests = 40s: the trip, the open period, one failed
			// probe after the 30s cooldown and the reopen.
			p := measure(g, e.Advance, 0, 2000, false)
			t.Logf("failover (primary down), %d req/s: %v", requestRate, p)
			if s := g.br.Snapshot("openai/primary"); s.State != breaker.Open {
				t.Fatalf("primary not open: %+v", s)
			}
			if p.writes > 0.05 || p.reads > 0.05 {
				t.Errorf("failover: %v; want <= 0.05 reads and writes", p)
			}
		}},
	})
}

// BenchmarkStoreCallsPerRequest reports the store calls per request of one
// instance at 50 requests/s (simulated clock), on the happy path and with
// the primary target down (failover to the secondary).
func BenchmarkStoreCallsPerRequest(b *testing.B) {
	for _, bc := range []struct {
		name      string
		primaryUp bool
	}{{"happy", true}, {"failover", false}} {
		b.Run(bc.name, func(b *testing.B) {
			clk := storetest.ClockOf(b)
			st := embedded.OpenMemory(embedded.WithClock(clk.Now))
			defer st.Close()
			g := newGatewayState(st, clk.Now)
			defer g.settle()
			for i := 0; i < 10; i++ { // warm-up
				clk.Advance(step)
				g.request(bc.primaryUp)
				g.settle()
			}
			c0 := g.calls()
			b.ReportAllocs()
			b.ResetTimer()
			n := 0
			for b.Loop() {
				clk.Advance(step)
				g.request(bc.primaryUp)
				g.settle()
				n++
			}
			p := g.calls().since(c0, n)
			b.ReportMetric(p.reads, "reads/req")
			b.ReportMetric(p.writes, "writes/req")
			b.ReportMetric(p.brReads, "breaker-reads/req")
			b.ReportMetric(p.brWrites, "breaker-writes/req")
			b.ReportMetric(p.klReads, "ledger-reads/req")
			b.ReportMetric(p.klWrites, "ledger-writes/req")
		})
	}
}

// BenchmarkAllowDone is the hot path's CPU cost (cache hit, no store call).
func BenchmarkAllowDone(b *testing.B) {
	st := embedded.OpenMemory()
	defer st.Close()
	br := breaker.New(st, testSettings(), breaker.Options{})
	defer br.Wait()
	b.ReportAllocs()
	for b.Loop() {
		done, err := br.Allow("p/m", "")
		if errors.Is(err, breaker.ErrOpen) {
			b.Fatal("open")
		}
		done(breaker.Success)
	}
}

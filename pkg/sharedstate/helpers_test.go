package sharedstate

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// env is one scenario's world: a manual clock shared by the store and
// every instance, and one store all instances share.
type env struct {
	t   *testing.T
	clk *storetest.Clock
	st  store.Store
	// backend names the store backend ("embedded" or "dynamodb").
	backend string
	// endpoint is dynalite's URL for the dynamodb backend.
	endpoint string
}

func (e *env) now() time.Time          { return e.clk.Now() }
func (e *env) advance(d time.Duration) { e.clk.Advance(d) }

// scenario is a test run once per backend.
type scenario struct {
	name string
	fn   func(t *testing.T, e *env)
}

// runScenarios runs every scenario on the embedded store, and on DynamoDB
// (dynalite) when it is installed; StartDynalite skips loudly without it,
// and fails in CI.
func runScenarios(t *testing.T, scenarios []scenario) {
	t.Run("embedded", func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				clk := storetest.ClockOf(t)
				s, err := embedded.Open("", embedded.WithClock(clk.Now))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				sc.fn(t, &env{t: t, clk: clk, st: s, backend: "embedded"})
			})
		}
	})
	t.Run("dynamodb", func(t *testing.T) {
		endpoint := storetest.StartDynalite(t)
		for _, sc := range scenarios {
			t.Run(sc.name, func(t *testing.T) {
				clk := storetest.ClockOf(t)
				s := storetest.NewDynamoStore(t, endpoint, dynamo.WithClock(clk.Now))
				sc.fn(t, &env{t: t, clk: clk, st: s, backend: "dynamodb", endpoint: endpoint})
			})
		}
	})
}

// testSettings are breaker settings for tests.
func testSettings() config.BreakerSettings {
	return config.BreakerSettings{
		Window: config.Duration(time.Minute), MinRequests: 10, FailureRate: 0.5, ConsecutiveFailures: 3,
		Cooldown: config.Duration(30 * time.Second), MaxCooldown: config.Duration(2 * time.Minute), HalfOpenProbes: 1,
	}
}

// generous is the store timeout of functional tests: the emulator shares
// two cores with the race detector, and these tests are not about
// timeouts (the outage tests inject their own).
const generous = 20 * time.Second

// logSink collects log lines.
type logSink struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logSink) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logSink) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// count counts lines containing s.
func (l *logSink) count(s string) int {
	n := 0
	for _, line := range strings.Split(l.String(), "\n") {
		if strings.Contains(line, s) {
			n++
		}
	}
	return n
}

func (l *logSink) logger() *slog.Logger { return slog.New(slog.NewJSONHandler(l, nil)) }

// newBreaker returns one instance's shared breaker on st with the env's
// clock.
func (e *env) newBreaker(st BreakerStore, set config.BreakerSettings, opt BreakerOptions) *SharedBreaker {
	opt.Now = e.now
	if opt.StoreTimeout == 0 {
		opt.StoreTimeout = generous
	}
	b := NewBreaker(st, set, opt)
	e.t.Cleanup(b.bg.Wait)
	return b
}

// settle waits for an instance's background store work (bounded: the
// store calls themselves are bounded).
func settle(bs ...*SharedBreaker) {
	for _, b := range bs {
		b.bg.Wait()
	}
}

// run makes one attempt through Allow and reports o; it returns Allow's
// error.
func run(b *SharedBreaker, target string, o breaker.Outcome) error {
	done, err := b.Allow(target, "")
	if err != nil {
		return err
	}
	done(o)
	return nil
}

// ---- store wrappers ----

// countingStore counts the calls made to the store it wraps.
type countingStore struct {
	store.Store
	reads, writes atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	c.reads.Add(1)
	return c.Store.Get(ctx, k)
}

func (c *countingStore) Query(ctx context.Context, pk, from, to string, fn func(store.Item) bool) error {
	c.reads.Add(1)
	return c.Store.Query(ctx, pk, from, to, fn)
}

func (c *countingStore) Put(ctx context.Context, it store.Item, cond store.Cond) (store.Item, error) {
	c.writes.Add(1)
	return c.Store.Put(ctx, it, cond)
}

func (c *countingStore) Add(ctx context.Context, k store.Key, d map[string]float64, o store.AddOptions) (store.Item, error) {
	c.writes.Add(1)
	return c.Store.Add(ctx, k, d, o)
}

func (c *countingStore) snapshot() (reads, writes int64) { return c.reads.Load(), c.writes.Load() }

// faultMode is how a faultyStore answers.
type faultMode int32

const (
	healthy  faultMode = iota // pass calls through
	failing                   // fail at once
	blocking                  // block until the call's context ends
	hanging                   // block until the test ends, ignoring the context
)

var errInjected = errors.New("injected store failure")

// faultyStore fails, blocks or hangs on demand, and records the time
// budget each call's context had.
type faultyStore struct {
	store.Store
	mode    atomic.Int32
	calls   atomic.Int64
	entered chan struct{} // receives once per blocked call (buffered)
	release chan struct{} // closed when the test ends

	mu      sync.Mutex
	budgets []time.Duration // deadline - call time, per call; -1 without a deadline
}

func newFaultyStore(t *testing.T, s store.Store) *faultyStore {
	f := &faultyStore{Store: s, entered: make(chan struct{}, 1024), release: make(chan struct{})}
	t.Cleanup(func() { close(f.release) })
	return f
}

func (f *faultyStore) set(m faultMode) { f.mode.Store(int32(m)) }

func (f *faultyStore) gate(ctx context.Context) error {
	f.calls.Add(1)
	budget := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	f.mu.Lock()
	f.budgets = append(f.budgets, budget)
	f.mu.Unlock()
	switch faultMode(f.mode.Load()) {
	case failing:
		return errInjected
	case blocking:
		f.entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	case hanging:
		f.entered <- struct{}{}
		<-f.release
		return errInjected
	}
	return nil
}

func (f *faultyStore) maxBudget() (time.Duration, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var m time.Duration
	for _, b := range f.budgets {
		if b < 0 {
			return 0, false
		}
		m = max(m, b)
	}
	return m, true
}

func (f *faultyStore) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	if err := f.gate(ctx); err != nil {
		return store.Item{}, false, err
	}
	return f.Store.Get(ctx, k)
}

func (f *faultyStore) Query(ctx context.Context, pk, from, to string, fn func(store.Item) bool) error {
	if err := f.gate(ctx); err != nil {
		return err
	}
	return f.Store.Query(ctx, pk, from, to, fn)
}

func (f *faultyStore) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	if err := f.gate(ctx); err != nil {
		return store.Item{}, err
	}
	return f.Store.Put(ctx, it, c)
}

func (f *faultyStore) Add(ctx context.Context, k store.Key, d map[string]float64, o store.AddOptions) (store.Item, error) {
	if err := f.gate(ctx); err != nil {
		return store.Item{}, err
	}
	return f.Store.Add(ctx, k, d, o)
}

// waitFor polls cond for a bounded time (for goroutines the code under
// test starts); it fails the test if cond never holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

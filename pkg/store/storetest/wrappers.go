package storetest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

var (
	_ store.Store = (*Counting)(nil)
	_ store.Store = (*Faulty)(nil)
)

// Counting is a store.Store that counts the calls made to the store it
// wraps: Get and Query are reads, Put and Add are writes.
type Counting struct {
	store.Store
	reads, writes atomic.Int64
}

// Get implements store.Getter.
func (c *Counting) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	c.reads.Add(1)
	return c.Store.Get(ctx, k)
}

// Query implements store.Querier.
func (c *Counting) Query(ctx context.Context, pk, from, to string, fn func(store.Item) bool) error {
	c.reads.Add(1)
	return c.Store.Query(ctx, pk, from, to, fn)
}

// Put implements store.Putter.
func (c *Counting) Put(ctx context.Context, it store.Item, cond store.Cond) (store.Item, error) {
	c.writes.Add(1)
	return c.Store.Put(ctx, it, cond)
}

// Add implements store.Adder.
func (c *Counting) Add(ctx context.Context, k store.Key, d map[string]float64, o store.AddOptions) (store.Item, error) {
	c.writes.Add(1)
	return c.Store.Add(ctx, k, d, o)
}

// Counts returns the reads and writes so far.
func (c *Counting) Counts() (reads, writes int64) { return c.reads.Load(), c.writes.Load() }

// FaultMode is how a [Faulty] store answers.
type FaultMode int32

// The fault modes.
const (
	Healthy  FaultMode = iota // pass calls through
	Failing                   // fail at once with ErrInjected
	Blocking                  // block until the call's context ends
	Hanging                   // block until the test ends, ignoring the context
	// Slow waits the delay of SetDelay, ignoring the context, then passes
	// the call through: a write lands after its caller gave up.
	Slow
	// Throttled fails at once with ErrThrottled, as DynamoDB answers a
	// partition over its throughput.
	Throttled
)

// ErrInjected is the error of a Failing (or released Hanging) call.
var ErrInjected = errors.New("injected store failure")

// ErrThrottled is the error of a Throttled call. Backends do not retry it
// past their caller's deadline; to the code above the store it is a
// failure like any other.
var ErrThrottled = errors.New("injected throttling: ProvisionedThroughputExceededException: the level of configured provisioned throughput for the table was exceeded")

// Faulty is a store.Store that fails, blocks or hangs on demand (Get,
// Query, Put, Add), and records the time budget each call's context had.
type Faulty struct {
	store.Store
	mode  atomic.Int32
	delay atomic.Int64 // for Slow, nanoseconds
	calls atomic.Int64
	// Entered receives once per blocked or hanging call (buffered).
	Entered chan struct{}
	release chan struct{} // closed when the test ends

	mu      sync.Mutex
	budgets []time.Duration // deadline - call time, per call; -1 without a deadline
}

// NewFaulty wraps s; hanging calls are released when t ends.
func NewFaulty(t testing.TB, s store.Store) *Faulty {
	f := &Faulty{Store: s, Entered: make(chan struct{}, 1024), release: make(chan struct{})}
	t.Cleanup(func() { close(f.release) })
	return f
}

// Set switches the mode of later calls.
func (f *Faulty) Set(m FaultMode) { f.mode.Store(int32(m)) }

// SetDelay sets how long a Slow call waits before it passes through.
func (f *Faulty) SetDelay(d time.Duration) { f.delay.Store(int64(d)) }

// Calls reports how many calls reached the wrapper.
func (f *Faulty) Calls() int64 { return f.calls.Load() }

// gate applies the mode to one call; a Slow call continues with a context
// that no longer ends (returned in place of ctx).
func (f *Faulty) gate(ctx context.Context) (context.Context, error) {
	mode := FaultMode(f.mode.Load())
	err := f.gateErr(ctx, mode)
	if err == nil && mode == Slow {
		ctx = context.WithoutCancel(ctx)
	}
	return ctx, err
}

func (f *Faulty) gateErr(ctx context.Context, mode FaultMode) error {
	f.calls.Add(1)
	budget := time.Duration(-1)
	if dl, ok := ctx.Deadline(); ok {
		budget = time.Until(dl)
	}
	f.mu.Lock()
	f.budgets = append(f.budgets, budget)
	f.mu.Unlock()
	switch mode {
	case Failing:
		return ErrInjected
	case Blocking:
		f.Entered <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	case Hanging:
		f.Entered <- struct{}{}
		<-f.release
		return ErrInjected
	case Slow:
		select {
		case <-time.After(time.Duration(f.delay.Load())):
		case <-f.release:
			return ErrInjected
		}
	case Throttled:
		return ErrThrottled
	}
	return nil
}

// MaxBudget is the longest time budget a call's context had; ok is false
// if some call had no deadline at all.
func (f *Faulty) MaxBudget() (budget time.Duration, ok bool) {
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

// Get implements store.Getter.
func (f *Faulty) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	ctx, err := f.gate(ctx)
	if err != nil {
		return store.Item{}, false, err
	}
	return f.Store.Get(ctx, k)
}

// Query implements store.Querier.
func (f *Faulty) Query(ctx context.Context, pk, from, to string, fn func(store.Item) bool) error {
	ctx, err := f.gate(ctx)
	if err != nil {
		return err
	}
	return f.Store.Query(ctx, pk, from, to, fn)
}

// Put implements store.Putter.
func (f *Faulty) Put(ctx context.Context, it store.Item, c store.Cond) (store.Item, error) {
	ctx, err := f.gate(ctx)
	if err != nil {
		return store.Item{}, err
	}
	return f.Store.Put(ctx, it, c)
}

// Add implements store.Adder.
func (f *Faulty) Add(ctx context.Context, k store.Key, d map[string]float64, o store.AddOptions) (store.Item, error) {
	ctx, err := f.gate(ctx)
	if err != nil {
		return store.Item{}, err
	}
	return f.Store.Add(ctx, k, d, o)
}

// ManualTimeout returns a context maker for a component's store calls
// (e.g. store.CallerOptions.NewContext) whose contexts all end when the
// returned fire function is called, not on a wall-clock timer.
func ManualTimeout() (newContext func() (context.Context, context.CancelFunc), fire func()) {
	ch := make(chan struct{})
	var once sync.Once
	return func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-ch:
				cancel()
			case <-ctx.Done():
			}
		}()
		return ctx, cancel
	}, func() { once.Do(func() { close(ch) }) }
}

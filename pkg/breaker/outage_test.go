package breaker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/internal/testkit"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

func TestStoreOutage(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "FailingStoreFailsOpenFromCache", Fn: testFailingStore},
		{Name: "BlockingStoreBoundedByTimeout", Fn: testBlockingStore},
		{Name: "HangingStoreCannotHoldAllow", Fn: testHangingStore},
	})
}

// slack is what the wall-clock bounds below allow on top of the injected
// store timeout: generous, because the machine is shared and noisy; the
// precise bound is checked on the deadline each store call was given.
const slack = 3 * time.Second

func testFailingStore(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	logs := &testkit.SyncBuffer{}
	a := newBreaker(e, f, testSettings(), Options{Logger: logger(logs)})
	other := newBreaker(e, e.Store, testSettings(), Options{})
	run(a, "p/ok", Success)
	run(a, dead, Success)
	settle(a)

	f.Set(storetest.Failing)
	// A minute of traffic with the store down: requests keep flowing from
	// the cache, far beyond its TTL.
	for i := 0; i < 600; i++ {
		e.Advance(100 * time.Millisecond)
		if err := run(a, "p/ok", Success); err != nil {
			t.Fatalf("request %d refused with the store down: %v", i, err)
		}
		settle(a)
	}
	// Local knowledge still acts at once: a failure run trips locally.
	tripA(t, a)
	// A cold instance (no cache at all) admits: fail-open.
	cold := newBreaker(e, f, testSettings(), Options{})
	if err := run(cold, "p/new", Success); err != nil {
		t.Fatalf("a cold instance refused with the store down: %v", err)
	}
	// An outage of a minute logs a handful of lines, not one per call.
	t.Logf("%d store-error log lines over a simulated minute of outage", logs.Count("shared state store call failed"))
	if n := logs.Count("shared state store call failed"); n < 1 || n > 8 {
		t.Fatalf("%d store-error log lines over a simulated minute; want a few (rate-limited)", n)
	}

	// The store comes back: the local trip is written, so other instances
	// learn it.
	f.Set(storetest.Healthy)
	e.Advance(time.Second)
	run(a, "p/ok", Success) // traffic drives the background sync
	settle(a)
	a.Flush()
	e.Advance(other.opt.CacheTTL)
	if err := run(other, dead, Success); !errors.Is(err, ErrOpen) {
		t.Fatal("the trip made during the outage never reached the store")
	}
	if logs.Count("store reachable again") < 1 {
		t.Fatalf("no recovery log line:\n%s", logs)
	}
}

func testBlockingStore(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	const timeout = 150 * time.Millisecond
	a := newBreaker(e, f, testSettings(), Options{StoreTimeout: timeout})
	f.Set(storetest.Blocking)

	start := time.Now()
	if err := run(a, "p/ok", Success); err != nil {
		t.Fatalf("Allow refused on a blocking store: %v", err)
	}
	if took := time.Since(start); took > timeout+slack {
		t.Fatalf("Allow took %v with a store timeout of %v", took, timeout)
	}
	settle(a)
	if budget, ok := f.MaxBudget(); !ok || budget > timeout {
		t.Fatalf("a store call got a budget of %v (deadline set: %v); want <= %v", budget, ok, timeout)
	}
	// While the store is known to be failing, requests do not wait on it
	// (background refreshes keep trying; they delay no request).
	before := a.call.BlockingCalls()
	for i := 0; i < 50; i++ {
		run(a, "p/other", Success)
	}
	if n := a.call.BlockingCalls() - before; n != 0 {
		t.Fatalf("%d store calls on the request path while the store was down", n)
	}
}

func testHangingStore(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	// The store timeout fires when the test says so: no wall-clock bound.
	newCtx, fire := storetest.ManualTimeout()
	a := newBreaker(e, f, testSettings(), Options{StoreContext: newCtx})
	f.Set(storetest.Hanging) // ignores its context entirely

	allowed := make(chan error, 1)
	go func() { allowed <- run(a, "p/ok", Success) }()
	select {
	case <-f.Entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the store was never called")
	}
	select {
	case <-allowed:
		t.Fatal("Allow returned before its store timeout fired")
	case <-time.After(20 * time.Millisecond):
	}
	fire() // the store timeout fires; the store itself still hangs
	select {
	case err := <-allowed:
		if err != nil {
			t.Fatalf("Allow refused: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Allow did not return when its store timeout fired")
	}
}

// TestDynaliteStopped runs the breaker against DynamoDB (dynalite), then
// kills dynalite and checks that Allow keeps working from cache, each call
// within its store timeout.
func TestDynaliteStopped(t *testing.T) {
	clk := storetest.ClockOf(t)
	const timeout = 500 * time.Millisecond
	var budget atomic.Int64
	budget.Store(int64(generous))
	newCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Duration(budget.Load()))
	}
	var a *Breaker
	logs := &testkit.SyncBuffer{}
	// dynalite lives as long as this subtest: StartDynalite stops it when
	// the subtest ends.
	t.Run("warm", func(t *testing.T) {
		endpoint := storetest.StartDynalite(t)
		st := storetest.NewDynamoStore(t, endpoint, dynamo.WithClock(clk.Now))
		// Quiet mode off: p/ok must reach the store every cache period
		// (a quiet target makes no store call in these 10 s).
		a = New(st, testSettings(), Options{Now: clk.Now, StoreContext: newCtx, Logger: logger(logs), QuietInterval: -1})
		run(a, "p/ok", Success)
		tripA(t, a)
		settle(a)
	})
	if a == nil {
		t.Skip("dynalite is not available: see the warm subtest")
	}
	budget.Store(int64(timeout))
	t.Cleanup(a.Wait)

	for i := 0; i < 20; i++ {
		clk.Advance(500 * time.Millisecond) // past every cache TTL
		start := time.Now()
		if err := run(a, "p/ok", Success); err != nil {
			t.Fatalf("Allow refused a closed target with dynalite stopped: %v", err)
		}
		if err := run(a, dead, Success); !errors.Is(err, ErrOpen) {
			t.Fatal("the cached open state was lost with dynalite stopped")
		}
		if took := time.Since(start); took > timeout+slack {
			t.Fatalf("Allow took %v with a store timeout of %v", took, timeout)
		}
	}
	settle(a)
	if logs.Count("shared state store call failed") == 0 {
		t.Fatalf("no store call failed: was dynalite stopped?\n%s", logs)
	}
}

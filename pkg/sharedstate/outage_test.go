package sharedstate

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/keys"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

func TestStoreOutage(t *testing.T) {
	runScenarios(t, []scenario{
		{"FailingStoreFailsOpenFromCache", testFailingStore},
		{"BlockingStoreBoundedByTimeout", testBlockingStore},
		{"HangingStoreCannotHoldAllowOrPick", testHangingStore},
	})
}

// slack is what the wall-clock bounds below allow on top of the injected
// store timeout: generous, because the machine is shared and noisy; the
// precise bound is checked on the deadline each store call was given.
const slack = 3 * time.Second

func testFailingStore(t *testing.T, e *env) {
	f := newFaultyStore(t, e.st)
	logs := &logSink{}
	opt := BreakerOptions{Logger: logs.logger()}
	a := e.newBreaker(f, testSettings(), opt)
	other := e.newBreaker(e.st, testSettings(), BreakerOptions{})
	l := e.newLedger(f, twoKeys(), LedgerOptions{Logger: logs.logger()})
	run(a, "p/ok", breaker.Success)
	run(a, dead, breaker.Success)
	wantPick(t, "warm", l, "gpt", key1)
	settle(a)
	l.Wait()

	f.set(failing)
	// A minute of traffic with the store down: requests keep flowing from
	// the cache, far beyond its TTL.
	for i := 0; i < 600; i++ {
		e.advance(100 * time.Millisecond)
		if err := run(a, "p/ok", breaker.Success); err != nil {
			t.Fatalf("request %d refused with the store down: %v", i, err)
		}
		wantPick(t, "store down", l, "gpt", key1)
		settle(a)
		l.Wait()
	}
	// Local knowledge still acts at once: a failure run trips locally, a
	// 429 moves to the next key.
	tripA(t, a)
	l.Observe("openai", "gpt", key1, http.StatusTooManyRequests, hdr("Retry-After", "20"))
	wantPick(t, "after a local 429", l, "gpt", key2)
	// A cold instance (no cache at all) admits: fail-open.
	cold := e.newBreaker(f, testSettings(), BreakerOptions{})
	if err := run(cold, "p/new", breaker.Success); err != nil {
		t.Fatalf("a cold instance refused with the store down: %v", err)
	}
	// An outage of a minute logs a handful of lines, not one per call.
	t.Logf("%d store-error log lines over a simulated minute of outage", logs.count("shared state store call failed"))
	if n := logs.count("shared state store call failed"); n < 1 || n > 16 {
		t.Fatalf("%d store-error log lines over a simulated minute; want a few (rate-limited)", n)
	}

	// The store comes back: the local trip is written, so other instances
	// learn it.
	f.set(healthy)
	e.advance(time.Second)
	run(a, "p/ok", breaker.Success) // traffic drives the background sync
	settle(a)
	a.Flush()
	e.advance(other.opt.CacheTTL)
	if err := run(other, dead, breaker.Success); !errors.Is(err, breaker.ErrOpen) {
		t.Fatal("the trip made during the outage never reached the store")
	}
	if logs.count("store reachable again") < 1 {
		t.Fatalf("no recovery log line:\n%s", logs)
	}
}

func testBlockingStore(t *testing.T, e *env) {
	f := newFaultyStore(t, e.st)
	const timeout = 150 * time.Millisecond
	a := e.newBreaker(f, testSettings(), BreakerOptions{StoreTimeout: timeout})
	l := e.newLedger(f, twoKeys(), LedgerOptions{StoreTimeout: timeout})
	f.set(blocking)

	start := time.Now()
	if err := run(a, "p/ok", breaker.Success); err != nil {
		t.Fatalf("Allow refused on a blocking store: %v", err)
	}
	if took := time.Since(start); took > timeout+slack {
		t.Fatalf("Allow took %v with a store timeout of %v", took, timeout)
	}
	start = time.Now()
	wantPick(t, "blocking store", l, "gpt", key1)
	if took := time.Since(start); took > timeout+slack {
		t.Fatalf("Pick took %v with a store timeout of %v", took, timeout)
	}
	settle(a)
	l.Wait()
	if budget, ok := f.maxBudget(); !ok || budget > timeout {
		t.Fatalf("a store call got a budget of %v (deadline set: %v); want <= %v", budget, ok, timeout)
	}
	// While the store is known to be failing, requests do not wait on it
	// (background refreshes keep trying; they delay no request).
	ba, bl := a.call.blockingRuns.Load(), l.call.blockingRuns.Load()
	for i := 0; i < 50; i++ {
		run(a, "p/other", breaker.Success)
		l.Pick("openai", "gpt-other")
	}
	if n := a.call.blockingRuns.Load() - ba + l.call.blockingRuns.Load() - bl; n != 0 {
		t.Fatalf("%d store calls on the request path while the store was down", n)
	}
}

func testHangingStore(t *testing.T, e *env) {
	f := newFaultyStore(t, e.st)
	a := e.newBreaker(f, testSettings(), BreakerOptions{})
	l := e.newLedger(f, twoKeys(), LedgerOptions{})
	// The store timeout fires when the test says so: no wall-clock bound.
	fire := make(chan struct{})
	manual := func() (context.Context, context.CancelFunc) {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-fire:
				cancel()
			case <-ctx.Done():
			}
		}()
		return ctx, cancel
	}
	a.call.newCtx, l.call.newCtx = manual, manual
	f.set(hanging) // ignores its context entirely

	allowed := make(chan error, 1)
	go func() { allowed <- run(a, "p/ok", breaker.Success) }()
	picked := make(chan keys.Key, 1)
	go func() { k, _ := l.Pick("openai", "gpt"); picked <- k }()
	for range 2 {
		select {
		case <-f.entered:
		case <-time.After(10 * time.Second):
			t.Fatal("the store was never called")
		}
	}
	select {
	case <-allowed:
		t.Fatal("Allow returned before its store timeout fired")
	case <-picked:
		t.Fatal("Pick returned before its store timeout fired")
	default:
	}
	close(fire) // the store timeout fires; the store itself still hangs
	select {
	case err := <-allowed:
		if err != nil {
			t.Fatalf("Allow refused: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Allow did not return when its store timeout fired")
	}
	select {
	case k := <-picked:
		if k.Fingerprint != key1.Fingerprint {
			t.Fatalf("Pick = %v, want key 1", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Pick did not return when its store timeout fired")
	}
}

// TestDynaliteStopped runs the gateway's shared state against DynamoDB
// (dynalite), then kills dynalite and checks that Allow and Pick keep
// working from cache, each within its store timeout.
func TestDynaliteStopped(t *testing.T) {
	clk := storetest.ClockOf(t)
	const timeout = 500 * time.Millisecond
	var a *SharedBreaker
	var l *Ledger
	logs := &logSink{}
	// dynalite lives as long as this subtest: StartDynalite stops it when
	// the subtest ends.
	t.Run("warm", func(t *testing.T) {
		endpoint := storetest.StartDynalite(t)
		st := storetest.NewDynamoStore(t, endpoint, dynamo.WithClock(clk.Now))
		a = NewBreaker(st, testSettings(), BreakerOptions{Now: clk.Now, StoreTimeout: generous, Logger: logs.logger()})
		l = NewLedger(st, twoKeys(), LedgerOptions{Now: clk.Now, StoreTimeout: generous, Logger: logs.logger()})
		run(a, "p/ok", breaker.Success)
		tripA(t, a)
		wantPick(t, "warm", l, "gpt", key1)
		l.Observe("openai", "gpt", key1, http.StatusTooManyRequests, hdr("Retry-After", "30"))
		settle(a)
		l.Wait()
	})
	if a == nil {
		t.Skip("dynalite is not available: see the warm subtest")
	}
	a.call.timeout, l.call.timeout = timeout, timeout
	t.Cleanup(a.bg.Wait)
	t.Cleanup(l.Wait)

	for i := 0; i < 20; i++ {
		clk.Advance(500 * time.Millisecond) // past every cache TTL
		start := time.Now()
		if err := run(a, "p/ok", breaker.Success); err != nil {
			t.Fatalf("Allow refused a closed target with dynalite stopped: %v", err)
		}
		if err := run(a, dead, breaker.Success); !errors.Is(err, breaker.ErrOpen) {
			t.Fatal("the cached open state was lost with dynalite stopped")
		}
		wantPick(t, "dynalite stopped", l, "gpt", key2)
		if took := time.Since(start); took > timeout+slack {
			t.Fatalf("Allow and Pick took %v with a store timeout of %v", took, timeout)
		}
	}
	settle(a)
	l.Wait()
	if logs.count("shared state store call failed") == 0 {
		t.Fatalf("no store call failed: was dynalite stopped?\n%s", logs)
	}
	t.Logf("log lines while dynalite was down:\n%s", logs)
}

package keyledger

import (
	"context"
	"net/http"
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
		{Name: "HangingStoreCannotHoldPick", Fn: testHangingStore},
	})
}

// slack is what the wall-clock bounds below allow on top of the injected
// store timeout: generous, because the machine is shared and noisy; the
// precise bound is checked on the deadline each store call was given.
const slack = 3 * time.Second

func testFailingStore(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	logs := &testkit.SyncBuffer{}
	l := newLedger(e, f, twoKeys(), Options{Logger: logger(logs)})
	wantPick(t, "warm", l, "gpt", key1)
	l.Wait()

	f.Set(storetest.Failing)
	// A minute of traffic with the store down: picks keep working from the
	// cache, far beyond its TTL.
	for i := 0; i < 600; i++ {
		e.Advance(100 * time.Millisecond)
		wantPick(t, "store down", l, "gpt", key1)
		l.Wait()
	}
	// Local knowledge still acts at once: a 429 moves to the next key.
	l.Observe("openai", "gpt", key1, http.StatusTooManyRequests, hdr("Retry-After", "20"))
	wantPick(t, "after a local 429", l, "gpt", key2)
	l.Wait()
	// An outage of a minute logs a handful of lines, not one per call.
	if n := logs.Count("shared state store call failed"); n < 1 || n > 8 {
		t.Fatalf("%d store-error log lines over a simulated minute; want a few (rate-limited)", n)
	}

	// The store comes back: the 429 is written at the next change, and the
	// recovery is logged.
	f.Set(storetest.Healthy)
	e.Advance(time.Second)
	l.Observe("openai", "gpt", key2, http.StatusTooManyRequests, hdr("Retry-After", "20"))
	l.Wait()
	other := newLedger(e, e.Store, twoKeys(), Options{})
	other.Statuses("openai", "gpt") // a cold cache: refreshed in the background
	other.Wait()
	if s := other.Statuses("openai", "gpt"); s[1].Available || s[1].Reason != "rate_limited" {
		t.Fatalf("the 429 observed after the outage never reached the store: %+v", s)
	}
	if logs.Count("store reachable again") < 1 {
		t.Fatalf("no recovery log line:\n%s", logs)
	}
}

func testBlockingStore(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	const timeout = 150 * time.Millisecond
	l := newLedger(e, f, twoKeys(), Options{StoreTimeout: timeout})
	f.Set(storetest.Blocking)

	start := time.Now()
	wantPick(t, "blocking store", l, "gpt", key1)
	if took := time.Since(start); took > timeout+slack {
		t.Fatalf("Pick took %v with a store timeout of %v", took, timeout)
	}
	l.Wait()
	if budget, ok := f.MaxBudget(); !ok || budget > timeout {
		t.Fatalf("a store call got a budget of %v (deadline set: %v); want <= %v", budget, ok, timeout)
	}
	// While the store is known to be failing, picks do not wait on it
	// (background refreshes keep trying; they delay no request).
	before := l.call.BlockingCalls()
	for i := 0; i < 50; i++ {
		l.Pick("openai", "gpt-other")
	}
	if n := l.call.BlockingCalls() - before; n != 0 {
		t.Fatalf("%d store calls on the request path while the store was down", n)
	}
}

func testHangingStore(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	// The store timeout fires when the test says so: no wall-clock bound.
	newCtx, fire := storetest.ManualTimeout()
	l := newLedger(e, f, twoKeys(), Options{StoreContext: newCtx})
	f.Set(storetest.Hanging) // ignores its context entirely

	picked := make(chan Key, 1)
	go func() { k, _ := l.Pick("openai", "gpt"); picked <- k }()
	select {
	case <-f.Entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the store was never called")
	}
	select {
	case <-picked:
		t.Fatal("Pick returned before its store timeout fired")
	case <-time.After(20 * time.Millisecond):
	}
	fire() // the store timeout fires; the store itself still hangs
	select {
	case k := <-picked:
		if k.Fingerprint != key1.Fingerprint {
			t.Fatalf("Pick = %v, want key 1", k)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Pick did not return when its store timeout fired")
	}
}

// TestDynaliteStopped runs the ledger against DynamoDB (dynalite), then
// kills dynalite and checks that Pick keeps working from cache, each call
// within its store timeout.
func TestDynaliteStopped(t *testing.T) {
	clk := storetest.ClockOf(t)
	const timeout = 500 * time.Millisecond
	var budget atomic.Int64
	budget.Store(int64(generous))
	newCtx := func() (context.Context, context.CancelFunc) {
		return context.WithTimeout(context.Background(), time.Duration(budget.Load()))
	}
	var l *Ledger
	logs := &testkit.SyncBuffer{}
	// dynalite lives as long as this subtest: StartDynalite stops it when
	// the subtest ends.
	t.Run("warm", func(t *testing.T) {
		endpoint := storetest.StartDynalite(t)
		st := storetest.NewDynamoStore(t, endpoint, dynamo.WithClock(clk.Now))
		l = New(st, Options{Now: clk.Now, StoreContext: newCtx, Logger: logger(logs)})
		l.SetKeys(twoKeys())
		wantPick(t, "warm", l, "gpt", key1)
		l.Observe("openai", "gpt", key1, http.StatusTooManyRequests, hdr("Retry-After", "30"))
		l.Wait()
	})
	if l == nil {
		t.Skip("dynalite is not available: see the warm subtest")
	}
	budget.Store(int64(timeout))
	t.Cleanup(l.Wait)

	for i := 0; i < 20; i++ {
		clk.Advance(500 * time.Millisecond) // past every cache TTL
		start := time.Now()
		wantPick(t, "dynalite stopped", l, "gpt", key2)
		if took := time.Since(start); took > timeout+slack {
			t.Fatalf("Pick took %v with a store timeout of %v", took, timeout)
		}
	}
	l.Wait()
	if logs.Count("shared state store call failed") == 0 {
		t.Fatalf("no store call failed: was dynalite stopped?\n%s", logs)
	}
}

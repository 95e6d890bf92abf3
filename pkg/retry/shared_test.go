package retry_test

import (
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/retry"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// The retry budget shared through the store (issue 13, item 13): two
// instances over one store spend one budget, on dynalite and the embedded
// store, under the scenarios' manual clock.
func TestSharedBudget(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "FloorIsTheFleets", Fn: testFleetFloor},
		{Name: "RatioCountsEveryInstancesTraffic", Fn: testFleetRatio},
		{Name: "NoStoreCallPerRequest", Fn: testBatched},
		{Name: "OneRequestAtATimeWritesOncePerSlot", Fn: testQuiet},
		{Name: "StoreDownFallsBackToLocalCounts", Fn: testStoreDown},
	})
}

// generous bounds store calls: dynalite shares two cores with the race
// detector; these tests are not about timeouts.
const generous = 20 * time.Second

func newShared(e *storetest.Env, st retry.Store) *retry.Budget {
	b := retry.NewSharedBudget(st, retry.SharedOptions{Now: e.Now, StoreTimeout: generous})
	e.T.Cleanup(b.Wait)
	return b
}

// testFleetFloor: 10 first attempts on each instance; the floor of 5
// retries a minute is the fleet's, not 5 per instance.
func testFleetFloor(t *testing.T, e *storetest.Env) {
	a, b := newShared(e, e.Store), newShared(e, e.Store)
	for i := 0; i < 10; i++ {
		a.Request("p")
		b.Request("p")
	}
	allowed := 0
	for i := 0; i < 20; i++ {
		in := []*retry.Budget{a, b}[i%2]
		e.Advance(1100 * time.Millisecond)
		if in.Retry("p", 0.1, 5) {
			allowed++
		}
		in.Flush() // what traffic does within one flush interval
	}
	if allowed != 5 {
		t.Fatalf("two instances allowed %d retries for 20 first attempts, want the fleet's floor of 5", allowed)
	}
}

// testFleetRatio: the ratio applies to every instance's first attempts: an
// instance that took none itself may retry 10% of the fleet's.
func testFleetRatio(t *testing.T, e *storetest.Env) {
	a, b := newShared(e, e.Store), newShared(e, e.Store)
	for i := 0; i < 200; i++ {
		a.Request("p")
	}
	a.Flush()
	allowed := 0
	for i := 0; i < 40; i++ {
		if b.Retry("p", 0.1, 5) {
			allowed++
		}
	}
	if allowed != 20 {
		t.Fatalf("B allowed %d retries, want 20 (10%% of the fleet's 200 first attempts)", allowed)
	}
	b.Flush()
	e.Advance(1100 * time.Millisecond)
	if a.Retry("p", 0.1, 5) {
		t.Fatal("A retried although B had spent the fleet's budget")
	}
	// A minute later the budget is fresh again.
	e.Advance(time.Minute)
	if !a.Retry("p", 0.1, 5) {
		t.Fatal("no retry a minute later")
	}
}

// testBatched: first attempts cost no store call of their own: counts are
// flushed at most once a second.
func testBatched(t *testing.T, e *storetest.Env) {
	st := &storetest.Counting{Store: e.Store}
	a := newShared(e, st)
	const requests = 1000 // 100 a second for 10 seconds
	for i := 0; i < requests; i++ {
		a.Request("p")
		a.Wait()
		e.Advance(10 * time.Millisecond)
	}
	reads, writes := st.Counts()
	t.Logf("%d first attempts: %d store reads, %d writes", requests, reads, writes)
	if writes > 11 || reads > 3 {
		t.Fatalf("%d reads and %d writes for %d first attempts over 10s: want about one flush a second", reads, writes, requests)
	}
}

// testStoreDown: a failing store never blocks or stops decisions; the
// instance decides on its own counts meanwhile.
func testStoreDown(t *testing.T, e *storetest.Env) {
	f := storetest.NewFaulty(t, e.Store)
	f.Set(storetest.Failing)
	a := newShared(e, f)
	for i := 0; i < 100; i++ {
		a.Request("p")
	}
	allowed := 0
	for i := 0; i < 30; i++ {
		if a.Retry("p", 0.1, 5) {
			allowed++
		}
	}
	if allowed != 10 {
		t.Fatalf("allowed %d retries on local counts, want 10", allowed)
	}
}

// testQuiet: an instance serving one request at a time, each longer than
// the flush interval (a Lambda instance in front of a model), flushes its
// first attempts once per slot, not once per request, and reads nothing
// while nobody retries; a retry decision then still sees the fleet's
// first attempts (one bounded read) and its retries are flushed within the
// flush interval.
func testQuiet(t *testing.T, e *storetest.Env) {
	st := &storetest.Counting{Store: e.Store}
	a := newShared(e, st)
	for i := 0; i < 10; i++ { // 12 s
		a.Request("p")
		a.Wait()
		e.Advance(1200 * time.Millisecond)
	}
	reads, writes := st.Counts()
	if writes > 2 || reads > 0 { // 12 s span at most two ended slots, one write each; the current one waits
		t.Fatalf("10 first attempts 1.2 s apart: %d reads, %d writes; want at most one write per 10 s slot and no read", reads, writes)
	}
	a.Flush()
	b := newShared(e, e.Store)
	allowed := 0
	for i := 0; i < 8; i++ {
		if b.Retry("p", 0.5, 0) { // 50% of the fleet's 10 first attempts
			allowed++
		}
	}
	if allowed != 5 {
		t.Fatalf("another instance allowed %d retries, want 5 (half the fleet's first attempts)", allowed)
	}
	_, before := st.Counts()
	b2 := newShared(e, st)
	b2.Retry("p", 0.5, 0)
	e.Advance(1100 * time.Millisecond)
	b2.Request("p") // the next request after the flush interval flushes the pending retry
	b2.Wait()
	if _, after := st.Counts(); after == before {
		t.Fatal("a pending retry was not flushed within the flush interval")
	}
}

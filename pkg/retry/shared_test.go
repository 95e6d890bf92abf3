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
		{Name: "OneRequestAtATimeWritesNothingWhileQuiet", Fn: testQuiet},
		{Name: "QuietFirstAttemptsFlushedOncePerQuietInterval", Fn: testQuietInterval},
		{Name: "QuietFlushesCountEachFirstAttemptOnce", Fn: testQuietCountsOnce},
		{Name: "RetryEndsQuietMode", Fn: testRetryEndsQuiet},
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
// the flush interval (a Lambda instance in front of a model), writes and
// reads nothing while nobody retries (its first attempts wait for the
// quiet interval); a retry decision then still sees the fleet's first
// attempts (one bounded read) and its retries are flushed within the
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
	if writes > 0 || reads > 0 {
		t.Fatalf("10 first attempts 1.2 s apart: %d reads, %d writes; want none within the quiet interval", reads, writes)
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

// testQuietInterval: 500 first attempts 1.2 s apart (10 minutes) cost at
// most one write per quiet interval (plus one) and no read; each write
// carries the last minute's first attempts, which another instance's ratio
// then counts.
func testQuietInterval(t *testing.T, e *storetest.Env) {
	st := &storetest.Counting{Store: e.Store}
	a := newShared(e, st)
	const n = 500
	for i := 0; i < n; i++ {
		a.Request("p")
		a.Wait()
		e.Advance(1200 * time.Millisecond)
	}
	reads, writes := st.Counts()
	limit := int64((n*1200*time.Millisecond+retry.DefaultQuietInterval-1)/retry.DefaultQuietInterval) + 1
	t.Logf("%d first attempts 1.2 s apart: %d reads, %d writes (limit %d)", n, reads, writes, limit)
	if reads != 0 || writes == 0 || writes > limit {
		t.Fatalf("%d reads and %d writes, want none and 1..%d", reads, writes, limit)
	}
	// Right after the next quiet flush, another instance counts the
	// minute's first attempts: about 50 (60 s / 1.2 s), merged onto the
	// oldest of their slots.
	for _, w0 := st.Counts(); ; {
		a.Request("p")
		a.Wait()
		if _, w := st.Counts(); w > w0 {
			break
		}
		e.Advance(1200 * time.Millisecond)
	}
	b := newShared(e, e.Store)
	allowed := 0
	for i := 0; i < 100; i++ {
		if b.Retry("p", 1, 0) {
			allowed++
		}
	}
	if allowed < 40 || allowed > 51 {
		t.Fatalf("another instance allowed %d retries at ratio 1, want the ~50 first attempts of the quiet instance's last minute", allowed)
	}
}

// testRetryEndsQuiet: a retry flushes at once with the pending first
// attempts, and while the minute holds a retry, first attempts are
// flushed once their slot has ended again (one write per slot).
func testRetryEndsQuiet(t *testing.T, e *storetest.Env) {
	st := &storetest.Counting{Store: e.Store}
	a := newShared(e, st)
	for i := 0; i < 20; i++ { // 24 s, nothing written
		a.Request("p")
		a.Wait()
		e.Advance(1200 * time.Millisecond)
	}
	if _, w := st.Counts(); w != 0 {
		t.Fatalf("%d writes while quiet", w)
	}
	if !a.Retry("p", 0.5, 0) { // 50% of 20: the decision flushed the pending first attempts
		t.Fatal("retry refused")
	}
	a.Wait()
	_, w0 := st.Counts()
	if w0 == 0 {
		t.Fatal("the retry decision flushed nothing")
	}
	for i := 0; i < 25; i++ { // 30 s: at least two slots end
		e.Advance(1200 * time.Millisecond)
		a.Request("p")
		a.Wait()
	}
	if _, w := st.Counts(); w-w0 < 2 {
		t.Fatalf("%d writes in 30 s after a retry, want one per ended slot (quiet mode over)", w-w0)
	}
}

// testQuietCountsOnce: with a quiet interval of 15 s, the merged flushes
// of 48 s carry each first attempt once: another instance then counts
// exactly the 40 of them (all still in the minute).
func testQuietCountsOnce(t *testing.T, e *storetest.Env) {
	st := &storetest.Counting{Store: e.Store}
	a := retry.NewSharedBudget(st, retry.SharedOptions{Now: e.Now, StoreTimeout: generous, QuietInterval: 15 * time.Second})
	t.Cleanup(a.Wait)
	// Start at a slot's start: every slot below stays in the minute.
	e.Advance(e.Now().Truncate(10 * time.Second).Add(10 * time.Second).Sub(e.Now()))
	for i := 0; i < 40; i++ {
		a.Request("p")
		a.Wait()
		e.Advance(1200 * time.Millisecond)
	}
	if _, w := st.Counts(); w < 2 {
		t.Fatalf("%d quiet flushes in 48 s with a 15 s quiet interval, want 2 or more", w)
	}
	a.Flush()
	b := newShared(e, e.Store)
	allowed := 0
	for i := 0; i < 100; i++ {
		if b.Retry("p", 1, 0) {
			allowed++
		}
	}
	if allowed != 40 {
		t.Fatalf("another instance allowed %d retries at ratio 1 after 40 first attempts, want 40", allowed)
	}
}

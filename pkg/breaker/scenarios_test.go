package breaker

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

func TestBreaker(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "TripReachesIdleInstanceWithinCachePeriod", Fn: testTripReachesIdleInstance},
		{Name: "TripReachesBusyInstanceThroughFlushAnswer", Fn: testTripReachesBusyInstance},
		{Name: "ErrorRateIsCountedAcrossInstances", Fn: testGlobalErrorRate},
		{Name: "HalfOpenProbesBoundedAcrossInstances", Fn: testProbesBounded},
		{Name: "ProbeVerdictsCloseOrReopenWithCappedBackoff", Fn: testProbeVerdicts},
		{Name: "LostProbeDoesNotBlackOut", Fn: testLostProbe},
		{Name: "IgnoredOutcomesNeverTrip", Fn: testIgnoredNeverTrips},
		{Name: "ForcedStatesWin", Fn: testForcedStatesWin},
	})
}

const dead = "p/dead"

// tripA trips the target on instance a with a run of failures and waits
// until the trip is in the store.
func tripA(t *testing.T, a *Breaker) time.Time {
	t.Helper()
	for i := 0; i < a.cfg().set.ConsecutiveFailures; i++ {
		if err := run(a, dead, Failure); err != nil {
			t.Fatalf("failure %d refused: %v", i, err)
		}
	}
	if err := run(a, dead, Success); !errors.Is(err, ErrOpen) {
		t.Fatalf("A did not trip after %d consecutive failures", a.cfg().set.ConsecutiveFailures)
	}
	settle(a)
	return a.Snapshot(dead).OpenUntil
}

func testTripReachesIdleInstance(t *testing.T, e *storetest.Env) {
	a := newBreaker(e, e.Store, testSettings(), Options{})
	b := newBreaker(e, e.Store, testSettings(), Options{})
	run(a, dead, Success)
	// B has seen a failure of its own: the target is not quiet there, so
	// CacheTTL bounds its cache (quiet targets: quiet_test.go).
	run(b, dead, Failure)
	settle(a, b)

	until := tripA(t, a)
	tripped := e.Now()
	// B is idle; one cache period later its next Allow re-reads the state
	// before admitting anything, and refuses.
	e.Advance(b.opt.CacheTTL)
	if err := run(b, dead, Failure); !errors.Is(err, ErrOpen) {
		t.Fatalf("B admitted a request %v after A tripped the target", e.Now().Sub(tripped))
	}
	if learned := e.Now().Sub(tripped); learned > 2*time.Second {
		t.Fatalf("B learned after %v, want <= 2s", learned)
	}
	if s := b.Snapshot(dead); s.State != Open || !s.OpenUntil.Equal(until) {
		t.Fatalf("B's snapshot = %+v, want open until %v", s, until)
	}
}

func testTripReachesBusyInstance(t *testing.T, e *storetest.Env) {
	a := newBreaker(e, e.Store, testSettings(), Options{})
	b := newBreaker(e, e.Store, testSettings(), Options{})
	run(a, dead, Success)
	run(b, dead, Failure) // not quiet on B (quiet targets: quiet_test.go)
	settle(a, b)
	// B serves traffic: its outcomes are pending for its next flush.
	for i := 0; i < 5; i++ {
		run(b, dead, Success)
	}
	tripA(t, a)
	tripped := e.Now()
	admitted := 0
	for e.Now().Sub(tripped) <= 5*time.Second {
		e.Advance(100 * time.Millisecond)
		done, err := b.Allow(dead, "")
		if errors.Is(err, ErrOpen) {
			break
		}
		admitted++
		done(Ignored) // keep B's own failures out of it: B must learn A's trip
		settle(b)
	}
	learned := e.Now().Sub(tripped)
	t.Logf("B learned the trip %v (simulated) after A made it; it admitted %d requests meanwhile", learned, admitted)
	if learned > 2*time.Second {
		t.Fatalf("B learned after %v, want <= 2s", learned)
	}
}

func testGlobalErrorRate(t *testing.T, e *storetest.Env) {
	set := testSettings()
	set.ConsecutiveFailures = 1000 // only the rate may trip
	a := newBreaker(e, e.Store, set, Options{})
	b := newBreaker(e, e.Store, set, Options{})
	// 5 failures on each: neither has the minimum volume (10) alone.
	for i := 0; i < 5; i++ {
		run(a, dead, Failure)
		run(b, dead, Failure)
	}
	if a.Snapshot(dead).State != Closed || b.Snapshot(dead).State != Closed {
		t.Fatal("tripped on local counts below the minimum volume")
	}
	a.Flush()
	b.Flush()
	if sa, sb := a.Snapshot(dead), b.Snapshot(dead); sa.State != Open && sb.State != Open {
		t.Fatalf("10 failures out of 10 across instances did not trip: %+v %+v", sa, sb)
	}
	e.Advance(a.opt.CacheTTL)
	if run(a, dead, Success) == nil || run(b, dead, Success) == nil {
		t.Fatal("an instance admitted a request one cache period after the trip")
	}

	// The same failures diluted by another instance's successes do not
	// trip. (An instance sees the others' counts in its flush's answer.)
	const ok = "p/ok"
	for i := 0; i < 20; i++ {
		run(b, ok, Success)
	}
	b.Flush()
	for i := 0; i < 5; i++ {
		run(a, ok, Failure)
	}
	a.Flush()
	if sa := a.Snapshot(ok); sa.State != Closed || sa.Requests != 25 || sa.Failures != 5 {
		t.Fatalf("A's view of the global window = %+v, want closed with 5 failures of 25", sa)
	}
}

func testProbesBounded(t *testing.T, e *storetest.Env) {
	set := testSettings()
	set.HalfOpenProbes = 3
	a := newBreaker(e, e.Store, set, Options{})
	b := newBreaker(e, e.Store, set, Options{})
	tripA(t, a)
	e.Advance(set.Cooldown.D())

	var mu sync.Mutex
	var dones []func(Outcome)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 50; i++ {
		inst := a
		if i%2 == 1 {
			inst = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			done, err := inst.Allow(dead, "")
			if err == nil {
				mu.Lock()
				dones = append(dones, done)
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(dones) != set.HalfOpenProbes {
		t.Fatalf("%d probes granted across both instances, want exactly %d", len(dones), set.HalfOpenProbes)
	}
	for _, inst := range []*Breaker{a, b} {
		if _, err := inst.Allow(dead, ""); !errors.Is(err, ErrOpen) {
			t.Fatal("a probe beyond the round's budget was granted")
		}
	}
	// One probe succeeds: closed for both.
	dones[0](Success)
	for _, d := range dones[1:] {
		d(Ignored)
	}
	settle(a, b)
	e.Advance(a.opt.CacheTTL)
	for name, inst := range map[string]*Breaker{"a": a, "b": b} {
		if err := run(inst, dead, Success); err != nil {
			t.Fatalf("%s: refused after a successful probe closed the breaker: %v", name, err)
		}
	}
}

func testProbeVerdicts(t *testing.T, e *storetest.Env) {
	set := testSettings() // cooldown 30s, max 2m
	a := newBreaker(e, e.Store, set, Options{})
	b := newBreaker(e, e.Store, set, Options{})
	until := tripA(t, a)
	if got := until.Sub(e.Now()); got != 30*time.Second {
		t.Fatalf("first cooldown %v, want 30s", got)
	}
	// The open state item carries an expiry: a crashed writer cannot leave
	// the target open forever.
	it, found, err := e.Store.Get(context.Background(), store.BreakerKey(dead))
	if err != nil || !found || it.Expires.IsZero() || it.Expires.Before(until) || it.Expires.After(until.Add(set.MaxCooldown.D()+time.Second)) {
		t.Fatalf("open state item = %+v (found %v, err %v); want an expiry after open-until, within max_cooldown", it, found, err)
	}

	// Failed probes reopen with a doubling cooldown, capped at max_cooldown;
	// the probing instance alternates.
	for i, want := range []time.Duration{time.Minute, 2 * time.Minute, 2 * time.Minute} {
		e.Advance(until.Sub(e.Now()))
		inst := []*Breaker{b, a}[i%2]
		done, err := inst.Allow(dead, "")
		if err != nil {
			t.Fatalf("probe %d refused: %v", i, err)
		}
		done(Failure)
		settle(a, b)
		s := inst.Snapshot(dead)
		if s.State != Open || s.OpenUntil.Sub(e.Now()) != want {
			t.Fatalf("after failed probe %d: %+v, want open for %v", i, s, want)
		}
		until = s.OpenUntil
	}
	// A successful probe closes it for everyone, with a fresh window.
	e.Advance(until.Sub(e.Now()))
	done, err := b.Allow(dead, "")
	if err != nil {
		t.Fatalf("last probe refused: %v", err)
	}
	done(Success)
	settle(a, b)
	e.Advance(a.opt.CacheTTL)
	if s := a.Snapshot(dead); s.State == Open {
		t.Fatalf("A still open after B's successful probe: %+v", s)
	}
	if err := run(a, dead, Success); err != nil {
		t.Fatalf("A refused after the close: %v", err)
	}
	if s := a.Snapshot(dead); s.State != Closed || s.Failures != 0 {
		t.Fatalf("after close: %+v, want closed with an empty window", s)
	}
	// The next trip starts from the base cooldown again.
	if until := tripA(t, a); until.Sub(e.Now()) != 30*time.Second {
		t.Fatalf("cooldown after a close = %v, want 30s", until.Sub(e.Now()))
	}
}

func testLostProbe(t *testing.T, e *storetest.Env) {
	a := newBreaker(e, e.Store, testSettings(), Options{})
	b := newBreaker(e, e.Store, testSettings(), Options{})
	tripA(t, a)
	e.Advance(a.cfg().set.Cooldown.D())
	if _, err := a.Allow(dead, ""); err != nil { // this probe never reports: its instance died
		t.Fatalf("probe refused: %v", err)
	}
	if _, err := b.Allow(dead, ""); !errors.Is(err, ErrOpen) {
		t.Fatal("a second probe was granted in the same round")
	}
	e.Advance(b.opt.ProbeLease)
	done, err := b.Allow(dead, "")
	if err != nil {
		t.Fatalf("no probe granted one lease after a lost probe: %v", err)
	}
	done(Success)
	settle(b)
	if s := b.Snapshot(dead); s.State != Closed {
		t.Fatalf("not closed: %+v", s)
	}
}

func testIgnoredNeverTrips(t *testing.T, e *storetest.Env) {
	cs := &storetest.Counting{Store: e.Store}
	a := newBreaker(e, cs, testSettings(), Options{})
	run(a, dead, Failure)
	run(a, dead, Failure)
	a.Flush()
	_, w0 := cs.Counts()
	for i := 0; i < 200; i++ {
		e.Advance(50 * time.Millisecond)
		if err := run(a, dead, Ignored); err != nil {
			t.Fatalf("refused after %d ignored outcomes: %v", i, err)
		}
		settle(a)
	}
	if s := a.Snapshot(dead); s.State != Closed || s.Failures != 2 {
		t.Fatalf("ignored outcomes counted: %+v", s)
	}
	if _, w := cs.Counts(); w != w0 {
		t.Fatalf("ignored outcomes caused %d store writes", w-w0)
	}
}

func testForcedStatesWin(t *testing.T, e *storetest.Env) {
	cs := &storetest.Counting{Store: e.Store}
	a := newBreaker(e, cs, testSettings(), Options{})
	tripA(t, a)
	r0, w0 := cs.Counts()
	done, err := a.Allow(dead, "closed")
	if err != nil {
		t.Fatal("forced closed refused an open target")
	}
	done(Failure)
	if _, err := a.Allow("p/fine", "open"); !errors.Is(err, ErrOpen) {
		t.Fatal("forced open admitted")
	}
	settle(a)
	if r, w := cs.Counts(); r != r0 || w != w0 {
		t.Fatalf("forced states made %d reads and %d writes", r-r0, w-w0)
	}
}

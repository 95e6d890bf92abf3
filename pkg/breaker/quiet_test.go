package breaker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/storetest"
)

// Quiet targets (quiet.go): one instance serving one request at a time in
// front of a model that answers in 1.2 s, as on Lambda.

const modelTime = 1200 * time.Millisecond

// slowRequest makes one attempt that takes modelTime on the scenario's
// clock, reports o and waits for the background store work it started;
// it returns Allow's error.
func slowRequest(e *storetest.Env, b *Breaker, id string, o Outcome) error {
	done, err := b.Allow(id, "")
	if err != nil {
		return err
	}
	e.Advance(modelTime)
	done(o)
	settle(b)
	return nil
}

func TestQuietTarget(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{
		{Name: "SuccessesCostOneWritePerQuietInterval", Fn: testQuietCost},
		{Name: "FailureEndsQuietModeAndIsFlushedAtOnce", Fn: testQuietFailureFlushed},
		{Name: "TripLearnedWithinQuietIntervalOrCacheTTL", Fn: testQuietLearnsTrip},
		{Name: "FailureElsewhereEndsQuietMode", Fn: testQuietEndsOnGlobalFailures},
		{Name: "SlowSampleEndsQuietMode", Fn: testQuietEndsOnSlowSample},
		{Name: "TripLearnedAtTheQuietInstancesFirstFailure", Fn: testQuietLearnsTripAtFirstFailure},
	})
}

func testQuietCost(t *testing.T, e *storetest.Env) {
	cs := &storetest.Counting{Store: e.Store}
	b := newBreaker(e, cs, testSettings(), Options{})
	if err := slowRequest(e, b, dead, Success); err != nil { // warm-up: the first read and flush
		t.Fatal(err)
	}
	r0, w0 := cs.Counts()
	const n = 250 // 300 s
	for i := 0; i < n; i++ {
		if err := slowRequest(e, b, dead, Success); err != nil {
			t.Fatal(err)
		}
	}
	r, w := cs.Counts()
	limit := int64((time.Duration(n)*modelTime+DefaultQuietInterval-1)/DefaultQuietInterval) + 1
	t.Logf("%d requests %v apart: %d reads, %d writes (limit %d writes)", n, modelTime, r-r0, w-w0, limit)
	if r != r0 {
		t.Errorf("%d reads, want 0", r-r0)
	}
	if w-w0 > limit {
		t.Errorf("%d writes, want <= %d", w-w0, limit)
	}
	if s := b.Snapshot(dead); s.State != Closed {
		t.Fatalf("snapshot %+v", s)
	}
}

// windowCounts reads the target's window bucket holding now.
func windowCounts(t *testing.T, e *storetest.Env, b *Breaker, id string) counts {
	t.Helper()
	tg := b.target(id)
	tg.mu.Lock()
	s := b.bucket(tg.sh.epoch, e.Now())
	tg.mu.Unlock()
	it, _, err := e.Store.Get(t.Context(), store.BreakerWindowKey(id, s))
	if err != nil {
		t.Fatal(err)
	}
	return counts{it.Nums[attrTotal], it.Nums[attrFailures]}
}

func testQuietFailureFlushed(t *testing.T, e *storetest.Env) {
	set := testSettings()
	set.ConsecutiveFailures = 1000 // only the rate may trip
	cs := &storetest.Counting{Store: e.Store}
	b := newBreaker(e, cs, set, Options{})
	// Start at a window bucket's start, so every request below falls in it.
	e.Advance(e.Now().Truncate(time.Minute).Add(time.Minute).Sub(e.Now()))
	slowRequest(e, b, dead, Success) // read, first flush: quiet from here
	for i := 0; i < 10; i++ {        // 12 s of successes, pending
		slowRequest(e, b, dead, Success)
	}
	_, w0 := cs.Counts()
	if c := windowCounts(t, e, b, dead); c.total != 1 {
		t.Fatalf("window %+v before the failure, want the first success only (the rest pending)", c)
	}
	slowRequest(e, b, dead, Failure)
	_, w := cs.Counts()
	if w != w0+1 {
		t.Errorf("%d writes after the failure, want 1 (the flush, at once)", w-w0)
	}
	if c := windowCounts(t, e, b, dead); c.total != 12 || c.failures != 1 {
		t.Errorf("window %+v after the failure, want 12 outcomes with 1 failure", c)
	}
	// Out of quiet mode: the next successes flush once per FlushInterval.
	_, w0 = cs.Counts()
	for i := 0; i < 5; i++ {
		slowRequest(e, b, dead, Success)
	}
	if _, w := cs.Counts(); w-w0 < 4 {
		t.Errorf("%d writes for 5 successes %v apart after a failure, want one each (normal flush interval)", w-w0, modelTime)
	}
}

func testQuietLearnsTrip(t *testing.T, e *storetest.Env) {
	a := newBreaker(e, e.Store, testSettings(), Options{})
	quiet := newBreaker(e, e.Store, testSettings(), Options{})
	loud := newBreaker(e, e.Store, testSettings(), Options{})
	slowRequest(e, quiet, dead, Success)
	slowRequest(e, loud, dead, Failure) // not quiet: it has seen a failure
	for i := 0; i < 5; i++ {
		slowRequest(e, quiet, dead, Success)
		slowRequest(e, loud, dead, Success)
	}
	tripA(t, a)
	tripped := e.Now()
	learned := map[*Breaker]time.Duration{}
	for len(learned) < 2 && e.Now().Sub(tripped) <= 2*DefaultQuietInterval {
		for _, b := range []*Breaker{quiet, loud} {
			if _, ok := learned[b]; ok {
				continue
			}
			if err := slowRequest(e, b, dead, Success); errors.Is(err, ErrOpen) {
				learned[b] = e.Now().Sub(tripped)
			}
		}
	}
	t.Logf("the quiet instance learned the trip after %v, the other after %v (simulated)", learned[quiet], learned[loud])
	if d, ok := learned[loud]; !ok || d > DefaultCacheTTL+2*modelTime {
		t.Errorf("the instance that is not quiet learned the trip after %v (ok %v), want <= CacheTTL %v plus a request", d, ok, DefaultCacheTTL)
	}
	if d, ok := learned[quiet]; !ok || d > DefaultQuietInterval+2*modelTime {
		t.Errorf("the quiet instance learned the trip after %v (ok %v), want <= QuietInterval %v plus a request", d, ok, DefaultQuietInterval)
	}
}

// testQuietLearnsTripAtFirstFailure: a quiet instance that sends a request
// to a target another instance tripped (the documented cost of quiet mode:
// its cache is trusted for QuietInterval) learns the trip from that
// attempt's failure, which is flushed at once and whose answer carries the
// trip's marker, well before QuietInterval and without a failure run of
// its own.
func testQuietLearnsTripAtFirstFailure(t *testing.T, e *storetest.Env) {
	a := newBreaker(e, e.Store, testSettings(), Options{})
	quiet := newBreaker(e, e.Store, testSettings(), Options{})
	slowRequest(e, quiet, dead, Success)
	slowRequest(e, quiet, dead, Success)
	if !quiet.target(dead).quietNow(quiet, e.Now()) {
		t.Fatal("the instance with successes only is not quiet")
	}
	until := tripA(t, a)
	e.Advance(modelTime)
	// Still trusting its cache: admitted, and the attempt fails.
	if err := slowRequest(e, quiet, dead, Failure); err != nil {
		t.Fatalf("the quiet instance refused before any store call: %v", err)
	}
	if s := quiet.Snapshot(dead); s.State != Open || !s.OpenUntil.Equal(until) {
		t.Fatalf("after its first failure the quiet instance shows %+v, want A's trip (open until %v)", s, until)
	}
	if s := quiet.Snapshot(dead); s.Consecutive >= testSettings().ConsecutiveFailures {
		t.Fatalf("learned by its own failure run (%d), not from A's trip", s.Consecutive)
	}
}

func testQuietEndsOnGlobalFailures(t *testing.T, e *storetest.Env) {
	set := testSettings()
	set.ConsecutiveFailures = 1000
	cs := &storetest.Counting{Store: e.Store}
	quiet := newBreaker(e, cs, set, Options{})
	other := newBreaker(e, e.Store, set, Options{})
	// Everything below happens in one window bucket (a minute from its
	// start): the quiet instance's next flush writes into the bucket that
	// holds the other's failure, and its answer shows it.
	e.Advance(e.Now().Truncate(time.Minute).Add(time.Minute).Sub(e.Now()))
	slowRequest(e, quiet, dead, Success) // quiet from here
	slowRequest(e, other, dead, Failure)
	for i := 0; i < 26; i++ { // 31 s: one quiet flush, whose answer holds the failure
		slowRequest(e, quiet, dead, Success)
	}
	_, w0 := cs.Counts()
	for i := 0; i < 10; i++ {
		slowRequest(e, quiet, dead, Success)
	}
	if _, w := cs.Counts(); w-w0 < 9 {
		t.Errorf("%d writes for 10 successes %v apart with a failure in the window, want one each", w-w0, modelTime)
	}
}

func testQuietEndsOnSlowSample(t *testing.T, e *storetest.Env) {
	set := testSettings()
	set.Latency = &config.LatencySettings{Percentile: 0.95, Threshold: config.Duration(5 * time.Second), MinRequests: 20,
		Window: config.Duration(time.Minute), Cooldown: config.Duration(30 * time.Second)}
	cs := &storetest.Counting{Store: e.Store}
	b := newBreaker(e, cs, set, Options{})
	attempt := func(ttft time.Duration) {
		done, err := b.AllowContext(context.Background(), dead, "")
		if err != nil {
			t.Fatal(err)
		}
		e.Advance(modelTime)
		done(Success, ttft)
		settle(b)
	}
	attempt(time.Second)
	_, w0 := cs.Counts()
	for i := 0; i < 10; i++ {
		attempt(time.Second)
	}
	if _, w := cs.Counts(); w != w0 {
		t.Fatalf("%d writes for 10 fast successes on a quiet target, want 0 (pending)", w-w0)
	}
	attempt(6 * time.Second) // slower than the threshold: out of quiet mode, flushed at once
	if _, w := cs.Counts(); w-w0 != 2 {
		t.Errorf("%d writes after a slow sample, want 2 (the outcome and latency flushes)", w-w0)
	}
}

// gatedStore holds Get calls while armed, and says when one arrived.
type gatedStore struct {
	Store
	armed   atomic.Bool
	entered chan struct{}
	release chan struct{}
}

func (g *gatedStore) Get(ctx context.Context, k store.Key) (store.Item, bool, error) {
	if g.armed.CompareAndSwap(true, false) {
		close(g.entered)
		<-g.release
	}
	return g.Store.Get(ctx, k)
}

// TestUrgentSyncDuringARequestPathRead: a trip decided while a request
// re-reads the state on its path (the sync is busy) is written once that
// read ends, not at some later request.
func TestUrgentSyncDuringARequestPathRead(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{{Name: "TripWritten", Fn: func(t *testing.T, e *storetest.Env) {
		g := &gatedStore{Store: e.Store, entered: make(chan struct{}), release: make(chan struct{})}
		b := newBreaker(e, g, testSettings(), Options{QuietInterval: -1})
		run(b, dead, Success)
		settle(b)
		var dones []func(Outcome)
		for i := 0; i < b.cfg().set.ConsecutiveFailures; i++ {
			d, err := b.Allow(dead, "")
			if err != nil {
				t.Fatal(err)
			}
			dones = append(dones, d)
		}
		e.Advance(b.opt.CacheTTL) // the next Allow re-reads on its path
		g.armed.Store(true)
		allowed := make(chan error, 1)
		go func() {
			_, err := b.Allow(dead, "")
			allowed <- err
		}()
		<-g.entered
		for _, d := range dones {
			d(Failure) // the last one trips: its sync is asked for while the read holds the target
		}
		close(g.release)
		<-allowed
		settle(b)
		it, found, err := e.Store.Get(t.Context(), store.BreakerKey(dead))
		if err != nil || !found || it.Strs[attrState] != "open" {
			t.Fatalf("state item after the trip: %+v found %v, %v; want open", it, found, err)
		}
	}}})
}

// TestOutcomeDuringASyncIsFlushedWhenItEnds: an outcome that is due for a
// flush but recorded while a background sync is running (the sync took
// the pending counts before it) is flushed by one more sync when that one
// ends, not left pending until this instance's next request.
func TestOutcomeDuringASyncIsFlushedWhenItEnds(t *testing.T) {
	storetest.RunBackends(t, []storetest.Scenario{{Name: "Flushed", Fn: func(t *testing.T, e *storetest.Env) {
		g := &gatedStore{Store: e.Store, entered: make(chan struct{}), release: make(chan struct{})}
		// Quiet mode off: the target is flushed once per FlushInterval.
		b := newBreaker(e, g, testSettings(), Options{QuietInterval: -1})
		e.Advance(e.Now().Truncate(time.Minute).Add(time.Minute).Sub(e.Now())) // one window bucket below
		run(b, dead, Success)
		b.Flush() // that success in the store: nothing pending below
		// Older than FlushInterval, younger than CacheTTL: Allow admits on
		// the cache and starts a sync, which has nothing to flush and
		// re-reads the state ahead of expiry (held by the gate).
		e.Advance(b.opt.FlushInterval + b.opt.FlushInterval/2)
		g.armed.Store(true)
		done, err := b.Allow(dead, "")
		if err != nil {
			t.Fatal(err)
		}
		select {
		case <-g.entered:
		case <-time.After(time.Minute):
			t.Fatal("Allow's sync made no read: the scenario's premise does not hold")
		}
		e.Advance(modelTime)
		done(Success) // due (a flush interval since the sync started), while it runs
		close(g.release)
		settle(b)
		if c := windowCounts(t, e, b, dead); c.total != 2 {
			t.Errorf("window %+v once the syncs ended, want both outcomes (the second flushed after the running sync)", c)
		}
	}}})
}

// quietNow reports whether the target is quiet on b now (for tests).
func (t *target) quietNow(b *Breaker, now time.Time) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return b.quietLocked(t, now)
}

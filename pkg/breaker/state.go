package breaker

// state.go holds the breaker's items as stored, each target's cache, and
// the rules: when a target trips, for how long it stays open, and what
// its window counts are.

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// Attribute names of the breaker's items.
const (
	attrState     = "state"      // state item: "open" or "closed"
	attrOpenUntil = "open_until" // state item: unix ms
	attrTrips     = "trips"      // state item: opens since the last close
	attrEpoch     = "epoch"      // state item: unix ms of the last close (window grid anchor)
	attrTotal     = "n"          // window item: outcomes; probe item: probes granted
	attrFailures  = "f"          // window item: failures
	attrGen       = "gen"        // window item: transitions to open marked in it
	attrReason    = "reason"     // state item: why it opened (Reason*)
)

// shared is the decoded state item: the breaker as every instance sees it.
type shared struct {
	found     bool
	ver       int64
	open      bool
	openUntil time.Time // ms precision
	trips     int       // opens since the last close, for the doubling cooldown
	epoch     time.Time // last close: anchors the window grid (zero: unix epoch)
	reason    string    // why it opened (Reason*), while open
}

func decodeShared(it store.Item, found bool) shared {
	if !found {
		return shared{}
	}
	return shared{
		found: true, ver: it.Version, open: it.Strs[attrState] == "open",
		openUntil: store.FromMillis(it.Nums[attrOpenUntil]), trips: int(it.Nums[attrTrips]), epoch: store.FromMillis(it.Nums[attrEpoch]),
		reason: it.Strs[attrReason],
	}
}

func (s shared) item(id string, expires time.Time) store.Item {
	st := "closed"
	if s.open {
		st = "open"
	}
	strs := map[string]string{attrState: st}
	if s.open && s.reason != "" {
		strs[attrReason] = s.reason
	}
	return store.Item{
		Key: store.BreakerKey(id), Expires: expires,
		Strs: strs,
		Nums: map[string]float64{attrOpenUntil: store.Millis(s.openUntil), attrTrips: float64(s.trips), attrEpoch: store.Millis(s.epoch)},
	}
}

// cond is the write condition that replaces exactly the state s was read at.
func (s shared) cond() store.Cond {
	if !s.found {
		return store.IfAbsent()
	}
	return store.IfVersion(s.ver)
}

type counts struct{ total, failures float64 }

// localTrip is a trip this instance decided but has not written yet (the
// store failed, or the background sync has not run yet).
type localTrip struct {
	pending   bool
	openUntil time.Time
	trips     int
	reason    string
}

// target is one target's cache, local counts and bookkeeping.
type target struct {
	id string

	mu          sync.Mutex
	sh          shared        // last known store state
	seq         uint64        // incremented whenever sh is installed
	known       bool          // sh was read or written at least once
	confirmedAt time.Time     // sh known current as of then
	verifiedAt  time.Time     // last read of the state item
	lastSync    time.Time     // last background sync started
	lastFlush   time.Time     // last window flush started
	urgent      bool          // flush at the next sync whatever the interval
	busy        bool          // a request's store read or a background sync is running
	loading     chan struct{} // closed when the request-path read in flight ends
	again       bool          // run the background sync once more
	calm        bool          // the last flush answer showed no failures (quiet.go)

	// Transition-marker baseline: the gen of window genStart when sh was
	// last read.
	genStart time.Time
	genSeen  float64
	genOK    bool

	// Global window counts as last seen.
	curStart, prevStart time.Time
	cur, prev           counts
	prevFetched         bool // prev was read after its bucket ended

	pending     counts    // local outcomes not yet flushed
	pendingAt   time.Time // when the oldest of them was recorded
	consecutive int       // local failure run

	loc         localTrip
	marks       []time.Time // window buckets still to mark with a transition
	fullRound   time.Time   // probe round known to be full
	localProbes int         // probes in flight granted without the store
	lastState   State

	lat latWindow // time-to-first-token windows (latency-aware breakers)
}

func (b *Breaker) now() time.Time { return b.opt.Now() }

func (b *Breaker) target(id string) *target {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.targets[id]
	if t == nil {
		t = &target{id: id, lastState: Closed}
		b.targets[id] = t
	}
	return t
}

// ---- derived state ----

// stateLocked is the effective state: the store's view, overlaid with a
// local trip that is not in the store yet.
func (b *Breaker) stateLocked(t *target, now time.Time) (State, time.Time) {
	until := time.Time{}
	if t.sh.open {
		until = t.sh.openUntil
	}
	if t.loc.pending {
		until = later(until, t.loc.openUntil)
	}
	switch {
	case now.Before(until):
		return Open, until
	case t.sh.open || t.loc.pending:
		return HalfOpen, until
	}
	return Closed, time.Time{}
}

// cooldown is the open period after trips earlier opens since the last
// close: the base cooldown, doubled per earlier open, capped.
func (b *Breaker) cooldown(trips int) time.Duration {
	cool, capD := b.cfg().set.Cooldown.D(), b.cfg().set.MaxCooldown.D()
	if capD <= 0 {
		capD = cool
	}
	for i := 0; i < trips && cool < capD; i++ {
		cool *= 2
	}
	return min(cool, capD)
}

// round is the start of the probe round holding now, for the episode open
// until openUntil.
func (b *Breaker) round(openUntil, now time.Time) time.Time {
	lease := b.opt.ProbeLease
	return openUntil.Add(max(now.Sub(openUntil), 0) / lease * lease)
}

// bucket is the start of the window bucket holding now, on the grid
// anchored at the last close (so a close starts a fresh window everywhere).
func (b *Breaker) bucket(epoch, now time.Time) time.Time {
	w := b.cfg().set.Window.D().Milliseconds()
	e, n := int64(store.Millis(epoch)), now.UnixMilli()
	if n < e {
		n = e
	}
	return time.UnixMilli(e + (n-e)/w*w).UTC()
}

// estimateLocked combines the last known global counts with the local
// unflushed ones into a sliding-window estimate: the current bucket plus
// the previous one weighted by how much of it is still inside the window.
func (b *Breaker) estimateLocked(t *target, now time.Time) counts {
	win := b.cfg().set.Window.D()
	s := b.bucket(t.sh.epoch, now)
	c := t.pending
	if b.stalePendingLocked(t, now) {
		c = counts{}
	}
	if t.curStart.Equal(s) {
		c.total += t.cur.total
		c.failures += t.cur.failures
	}
	var prev counts
	switch ps := s.Add(-win); {
	case ps.Before(t.sh.epoch):
	case t.prevStart.Equal(ps):
		prev = t.prev
	case t.curStart.Equal(ps):
		prev = t.cur // the bucket rolled since we last saw it
	}
	w := math.Max(0, math.Min(1, 1-float64(now.Sub(s))/float64(win)))
	c.total += prev.total * w
	c.failures += prev.failures * w
	return c
}

// stalePendingLocked reports whether the unflushed outcomes were recorded
// before the previous window bucket, i.e. outside the sliding window: the
// target's traffic stopped before they were flushed.
func (b *Breaker) stalePendingLocked(t *target, now time.Time) bool {
	return t.pending.total > 0 && t.pendingAt.Before(b.bucket(t.sh.epoch, now).Add(-b.cfg().set.Window.D()))
}

// dropStalePendingLocked forgets stale unflushed outcomes, so that an
// outcome is only ever counted in the window it happened in.
func (b *Breaker) dropStalePendingLocked(t *target, now time.Time) {
	if b.stalePendingLocked(t, now) {
		t.pending = counts{}
	}
}

func (b *Breaker) tripsByRate(c counts) bool {
	return c.total > 0 && c.total >= float64(b.cfg().set.MinRequests) && c.failures/c.total >= b.cfg().set.FailureRate
}

func (b *Breaker) done(ctx context.Context, t *target, o Outcome, ttft time.Duration) {
	if o == Ignored {
		return
	}
	now := b.now()
	t.mu.Lock()
	b.dropStalePendingLocked(t, now)
	if t.pending.total == 0 {
		t.pendingAt = now
	}
	wasQuiet := b.quietLocked(t, now)
	t.pending.total++
	slowTrip := false
	if b.cfg().lat != nil && ttft > 0 {
		b.recordLatencyLocked(t, now, ttft)
		if ttft > b.cfg().lat.Threshold.D() {
			t.calm = false
			slowTrip = slowTrip || wasQuiet // and so does its first slow sample
		}
		if st, _ := b.stateLocked(t, now); st == Closed && b.slow(b.latEstimateLocked(t, now)) {
			if b.call.Healthy() {
				slowTrip = true // the flush decides on fresh global samples
			} else {
				b.tripSlowLocked(t, now)
			}
		}
	}
	if o == Success {
		t.consecutive = 0
		b.maybeSyncLocked(t, now, slowTrip)
		tr := b.noteLocked(t, now, "local")
		t.mu.Unlock()
		b.emit(ctx, t.id, tr)
		return
	}
	t.pending.failures++
	t.consecutive++
	urgent := slowTrip || wasQuiet // a quiet target's first failure goes out at once
	t.calm = false
	if st, _ := b.stateLocked(t, now); st == Closed {
		switch {
		case b.cfg().set.ConsecutiveFailures > 0 && t.consecutive >= b.cfg().set.ConsecutiveFailures:
			b.tripLocallyLocked(t, now, t.sh.trips, ReasonConsecutive)
			urgent = true
		case b.tripsByRate(b.estimateLocked(t, now)):
			if b.call.Healthy() {
				urgent = true // the flush decides on fresh global counts
			} else {
				b.tripLocallyLocked(t, now, t.sh.trips, ReasonErrorRate)
			}
		}
	}
	b.maybeSyncLocked(t, now, urgent)
	tr := b.noteLocked(t, now, "local")
	t.mu.Unlock()
	b.emit(ctx, t.id, tr)
}

// tripLocallyLocked opens the breaker on this instance at once, after
// trips earlier opens; the background sync writes it to the store.
func (b *Breaker) tripLocallyLocked(t *target, now time.Time, trips int, reason string) {
	until := store.FromMillis(store.Millis(now.Add(b.cooldown(trips))))
	t.loc = localTrip{pending: true, openUntil: later(until, t.loc.openUntil), trips: trips + 1, reason: reason}
	t.consecutive, t.fullRound, t.calm = 0, time.Time{}, false
}

// probeDone settles a half-open probe: success closes, failure reopens
// with a doubled cooldown, ignored frees the slot. The store write is made
// here (bounded by StoreTimeout), so the next request on any instance that
// re-reads the state sees it.

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

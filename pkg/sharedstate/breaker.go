package sharedstate

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
)

// BreakerStore is what the shared breaker needs from the store: single-item
// reads, conditional puts for state transitions, and atomic adds for window
// counters and probe grants.
type BreakerStore interface {
	store.Getter
	store.Putter
	store.Adder
}

// Breaker defaults.
const (
	// DefaultBreakerCacheTTL is the longest an instance acts on a target's
	// shared state without confirming it with the store.
	DefaultBreakerCacheTTL = 2 * time.Second
	// DefaultFlushInterval is the shortest gap between two flushes of a
	// target's local outcome counts (each flush also confirms the cache).
	DefaultFlushInterval = time.Second
	// DefaultVerifyInterval is how often a flushing instance re-reads the
	// state item even when no transition marker says it changed.
	DefaultVerifyInterval = 30 * time.Second
)

// BreakerOptions tune a [SharedBreaker]. Zero fields take defaults.
type BreakerOptions struct {
	// CacheTTL bounds how stale a target's shared state may be when a
	// request is admitted (default 2s): an instance learns another one's
	// trip within one flush interval under traffic, and within CacheTTL in
	// any case (an older cache is re-read before admitting a request).
	CacheTTL time.Duration
	// FlushInterval is the shortest gap between two writes of a target's
	// batched outcome counts (default 1s). A failure run that would trip is
	// flushed at once.
	FlushInterval time.Duration
	// VerifyInterval is how often a target's state item is re-read even
	// when the window items show no transition marker (default 30s): a
	// safety net for a writer that died between its transition and its
	// marker.
	VerifyInterval time.Duration
	// ProbeLease is the length of one half-open probe round (default: the
	// settings' cooldown). If a granted probe never reports (its instance
	// died), the next round grants new probes; at most HalfOpenProbes are
	// granted per round across all instances.
	ProbeLease time.Duration
	// StoreTimeout bounds every store call (default 250ms).
	StoreTimeout time.Duration
	// StoreRetry is how long after a failed store call requests stop
	// waiting on the store and work from cache and local counts (default
	// 1s); background refreshes keep trying.
	StoreRetry time.Duration
	// LogEvery rate-limits store-error log lines (default 10s).
	LogEvery time.Duration
	// Now is the clock (nil: time.Now). Tests shift it instead of sleeping.
	Now func() time.Time
	// Logger receives one line per breaker transition and rate-limited
	// store errors (nil: discarded).
	Logger *slog.Logger
	// OnTransition, when set, is called (outside locks) on every state
	// change this instance sees, whether it made it or learned it.
	OnTransition func(target string, from, to breaker.State, snap breaker.Snapshot)
}

// SharedBreaker is a [breaker.Guard] and [breaker.Reporter] whose state is
// shared by every gateway instance through the store: when one instance
// trips a target, the others skip it within one cache period.
//
// The request path normally makes no store call: each target's shared
// state is cached, outcomes are counted locally and flushed in batches by a
// background goroutine, and the flush's answer confirms the cache. See
// docs/state-model.md for the protocol and the expected store calls.
type SharedBreaker struct {
	st   BreakerStore
	set  config.BreakerSettings
	opt  BreakerOptions
	call *caller
	log  *slog.Logger

	mu      sync.Mutex
	targets map[string]*target

	bg tracker // background syncs, for Flush and tests
}

var (
	_ breaker.Guard    = (*SharedBreaker)(nil)
	_ breaker.Reporter = (*SharedBreaker)(nil)
)

// NewBreaker returns a shared breaker over st with the given settings
// (already defaulted, e.g. config.Config.Breaker after loading).
func NewBreaker(st BreakerStore, settings config.BreakerSettings, opt BreakerOptions) *SharedBreaker {
	if opt.CacheTTL <= 0 {
		opt.CacheTTL = DefaultBreakerCacheTTL
	}
	if opt.FlushInterval <= 0 {
		opt.FlushInterval = DefaultFlushInterval
	}
	if opt.VerifyInterval <= 0 {
		opt.VerifyInterval = DefaultVerifyInterval
	}
	if opt.ProbeLease <= 0 {
		opt.ProbeLease = max(settings.Cooldown.D(), time.Second)
	}
	if opt.StoreTimeout <= 0 {
		opt.StoreTimeout = DefaultStoreTimeout
	}
	if opt.StoreRetry <= 0 {
		opt.StoreRetry = DefaultStoreRetry
	}
	if opt.LogEvery <= 0 {
		opt.LogEvery = DefaultLogEvery
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Logger == nil {
		opt.Logger = discardLogger
	}
	if settings.Window <= 0 {
		settings.Window = config.BuiltinBreaker().Window
	}
	if settings.HalfOpenProbes <= 0 {
		settings.HalfOpenProbes = 1
	}
	return &SharedBreaker{
		st: st, set: settings, opt: opt, log: opt.Logger, targets: map[string]*target{},
		call: newCaller("breaker", opt.StoreTimeout, opt.StoreRetry, opt.LogEvery, opt.Now, opt.Logger),
	}
}

// Attribute names of the breaker's items.
const (
	attrState     = "state"      // state item: "open" or "closed"
	attrOpenUntil = "open_until" // state item: unix ms
	attrTrips     = "trips"      // state item: opens since the last close
	attrEpoch     = "epoch"      // state item: unix ms of the last close (window grid anchor)
	attrTotal     = "n"          // window item: outcomes; probe item: probes granted
	attrFailures  = "f"          // window item: failures
	attrGen       = "gen"        // window item: transitions to open marked in it
)

// shared is the decoded state item: the breaker as every instance sees it.
type shared struct {
	found     bool
	ver       int64
	open      bool
	openUntil time.Time // ms precision
	trips     int       // opens since the last close, for the doubling cooldown
	epoch     time.Time // last close: anchors the window grid (zero: unix epoch)
}

func decodeShared(it store.Item, found bool) shared {
	if !found {
		return shared{}
	}
	return shared{
		found: true, ver: it.Version, open: it.Strs[attrState] == "open",
		openUntil: fromMS(it.Nums[attrOpenUntil]), trips: int(it.Nums[attrTrips]), epoch: fromMS(it.Nums[attrEpoch]),
	}
}

func (s shared) item(id string, expires time.Time) store.Item {
	st := "closed"
	if s.open {
		st = "open"
	}
	return store.Item{
		Key: store.BreakerKey(id), Expires: expires,
		Strs: map[string]string{attrState: st},
		Nums: map[string]float64{attrOpenUntil: ms(s.openUntil), attrTrips: float64(s.trips), attrEpoch: ms(s.epoch)},
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

	// Transition-marker baseline: the gen of window genStart when sh was
	// last read.
	genStart time.Time
	genSeen  float64
	genOK    bool

	// Global window counts as last seen.
	curStart, prevStart time.Time
	cur, prev           counts
	prevFetched         bool // prev was read after its bucket ended

	pending     counts // local outcomes not yet flushed
	consecutive int    // local failure run

	loc         localTrip
	marks       []time.Time // window buckets still to mark with a transition
	fullRound   time.Time   // probe round known to be full
	localProbes int         // probes in flight granted without the store
	lastState   breaker.State
}

func (b *SharedBreaker) now() time.Time { return b.opt.Now() }

func (b *SharedBreaker) target(id string) *target {
	b.mu.Lock()
	defer b.mu.Unlock()
	t := b.targets[id]
	if t == nil {
		t = &target{id: id, lastState: breaker.Closed}
		b.targets[id] = t
	}
	return t
}

// ---- derived state ----

// stateLocked is the effective state: the store's view, overlaid with a
// local trip that is not in the store yet.
func (b *SharedBreaker) stateLocked(t *target, now time.Time) (breaker.State, time.Time) {
	until := time.Time{}
	if t.sh.open {
		until = t.sh.openUntil
	}
	if t.loc.pending {
		until = later(until, t.loc.openUntil)
	}
	switch {
	case now.Before(until):
		return breaker.Open, until
	case t.sh.open || t.loc.pending:
		return breaker.HalfOpen, until
	}
	return breaker.Closed, time.Time{}
}

// cooldown is the open period after trips earlier opens since the last
// close: the base cooldown, doubled per earlier open, capped.
func (b *SharedBreaker) cooldown(trips int) time.Duration {
	cool, capD := b.set.Cooldown.D(), b.set.MaxCooldown.D()
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
func (b *SharedBreaker) round(openUntil, now time.Time) time.Time {
	lease := b.opt.ProbeLease
	return openUntil.Add(max(now.Sub(openUntil), 0) / lease * lease)
}

// bucket is the start of the window bucket holding now, on the grid
// anchored at the last close (so a close starts a fresh window everywhere).
func (b *SharedBreaker) bucket(epoch, now time.Time) time.Time {
	w := b.set.Window.D().Milliseconds()
	e, n := int64(ms(epoch)), now.UnixMilli()
	if n < e {
		n = e
	}
	return time.UnixMilli(e + (n-e)/w*w).UTC()
}

// estimateLocked combines the last known global counts with the local
// unflushed ones into a sliding-window estimate: the current bucket plus
// the previous one weighted by how much of it is still inside the window.
func (b *SharedBreaker) estimateLocked(t *target, now time.Time) counts {
	win := b.set.Window.D()
	s := b.bucket(t.sh.epoch, now)
	c := t.pending
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

func (b *SharedBreaker) tripsByRate(c counts) bool {
	return c.total > 0 && c.total >= float64(b.set.MinRequests) && c.failures/c.total >= b.set.FailureRate
}

// ---- transitions: logging ----

type transition struct {
	from, to breaker.State
	snap     breaker.Snapshot
	source   string
}

// noteLocked returns the change of the effective state since the last
// note, if any; emit it after unlocking.
func (b *SharedBreaker) noteLocked(t *target, now time.Time, source string) *transition {
	st, _ := b.stateLocked(t, now)
	if st == t.lastState {
		return nil
	}
	tr := &transition{from: t.lastState, to: st, snap: b.snapshotLocked(t, now), source: source}
	t.lastState = st
	return tr
}

// emit logs a transition (one structured line) and calls OnTransition.
func (b *SharedBreaker) emit(id string, tr *transition) {
	if tr == nil {
		return
	}
	lvl := slog.LevelWarn
	if tr.to == breaker.Closed {
		lvl = slog.LevelInfo
	}
	b.log.LogAttrs(context.Background(), lvl, "breaker", slog.String("target", id),
		slog.String("from", string(tr.from)), slog.String("to", string(tr.to)), slog.String("source", tr.source),
		slog.Float64("error_rate", tr.snap.ErrorRate), slog.Int("window_requests", tr.snap.Requests),
		slog.Int("window_failures", tr.snap.Failures), slog.Time("open_until", tr.snap.OpenUntil))
	if b.opt.OnTransition != nil {
		b.opt.OnTransition(id, tr.from, tr.to, tr.snap)
	}
}

// report notes and emits a change of state.
func (b *SharedBreaker) report(t *target, source string) {
	t.mu.Lock()
	tr := b.noteLocked(t, b.now(), source)
	t.mu.Unlock()
	b.emit(t.id, tr)
}

// ---- store access ----

// readState reads the state item. blocking marks a read on a request's
// path: it is skipped while the store is known to be failing.
func (b *SharedBreaker) readState(blocking bool, id string) (shared, error) {
	var sh shared
	err := b.call.do(blocking, "get breaker state", func(ctx context.Context) error {
		it, found, err := b.st.Get(ctx, store.BreakerKey(id))
		sh = decodeShared(it, found)
		return err
	})
	if err != nil {
		return shared{}, err // a timed-out call may still be writing sh
	}
	return sh, nil
}

// putState writes a transition conditioned on the state it replaces.
func (b *SharedBreaker) putState(blocking bool, id string, next shared, expires time.Time, base shared) (shared, error) {
	var out store.Item
	err := b.call.do(blocking, "put breaker state", func(ctx context.Context) error {
		var err error
		out, err = b.st.Put(ctx, next.item(id, expires), base.cond())
		return err
	})
	if err != nil {
		return shared{}, err // a timed-out call may still be writing out
	}
	next.found, next.ver = true, out.Version
	return next, nil
}

// installLocked makes sh the known store state as of now. seq is t.seq
// when the read or write of sh started: if another state was installed
// since, sh replaces it only if it is a later version, so a slow read never
// undoes a newer transition.
func (b *SharedBreaker) installLocked(t *target, sh shared, now time.Time, seq uint64) bool {
	if t.seq != seq && t.sh.found && (!sh.found || sh.ver < t.sh.ver) {
		return false
	}
	if sh.open != t.sh.open || !sh.openUntil.Equal(t.sh.openUntil) {
		t.fullRound, t.localProbes = time.Time{}, 0
		if sh.open && !t.sh.open {
			t.consecutive = 0
		}
	}
	if !sh.epoch.Equal(t.sh.epoch) {
		// A close started a new window grid: old counts are history.
		t.cur, t.prev, t.curStart, t.prevStart, t.prevFetched = counts{}, counts{}, time.Time{}, time.Time{}, false
		t.genOK = false
	}
	if t.loc.pending && sh.open && !sh.openUntil.Before(t.loc.openUntil) {
		t.loc = localTrip{} // a trip in the store covers ours
	}
	t.sh, t.known, t.confirmedAt = sh, true, now
	t.seq++
	return true
}

// refresh reads the state item and installs it; false if the store did
// not answer.
func (b *SharedBreaker) refresh(t *target, blocking bool, now time.Time) bool {
	t.mu.Lock()
	seq := t.seq
	t.mu.Unlock()
	sh, err := b.readState(blocking, t.id)
	if err != nil {
		return false
	}
	t.mu.Lock()
	if b.installLocked(t, sh, now, seq) {
		t.verifiedAt, t.genOK = now, false
	}
	t.mu.Unlock()
	return true
}

// ---- Allow / done ----

// Allow implements breaker.Guard. It makes no store call unless the cached
// state is older than CacheTTL (one caller per target reads it, bounded by
// StoreTimeout, while concurrent callers use the cache) or the target is
// half-open (probe grants are coordinated through the store).
func (b *SharedBreaker) Allow(id string, force breaker.Force) (func(breaker.Outcome), error) {
	switch force {
	case "open":
		return nil, breaker.ErrOpen
	case "closed":
		return func(breaker.Outcome) {}, nil
	}
	t := b.target(id)
	now := b.now()
	t.mu.Lock()
	st, _ := b.stateLocked(t, now)
	if st != breaker.Open && (!t.known || now.Sub(t.confirmedAt) >= b.opt.CacheTTL) && b.call.healthy() {
		switch {
		case !t.busy:
			// Singleflight: this caller reads; concurrent ones use the
			// cache, or wait for this read when there is no cache yet.
			t.busy, t.loading = true, make(chan struct{})
			t.mu.Unlock()
			b.refresh(t, true, now)
			t.mu.Lock()
			t.busy = false
			close(t.loading)
			t.loading = nil
		case !t.known && t.loading != nil:
			ch := t.loading
			t.mu.Unlock()
			<-ch // bounded: the read it waits for is
			t.mu.Lock()
		}
		st, _ = b.stateLocked(t, now)
	}
	var p probe
	var err error
	switch st {
	case breaker.Open:
		err = breaker.ErrOpen
		t.mu.Unlock()
	case breaker.Closed:
		b.maybeSyncLocked(t, now, false)
		t.mu.Unlock()
	default:
		t.mu.Unlock()
		p, err = b.grantProbe(t, now)
	}
	b.report(t, "store")
	if err != nil {
		return nil, err
	}
	var once sync.Once
	return func(o breaker.Outcome) {
		once.Do(func() {
			if p.active {
				b.probeDone(t, p, o)
			} else {
				b.done(t, o)
			}
		})
	}, nil
}

// probe identifies a half-open probe admitted by Allow.
type probe struct {
	active  bool      // false: an ordinary attempt (the breaker was closed after all)
	stored  bool      // granted through the store (else locally)
	episode time.Time // the open-until of the episode it probes
	round   time.Time // its probe round (stored probes)
}

// grantProbe admits a half-open probe if its round has a slot left across
// all instances (a conditional Add on the round's probe item), or, when the
// store cannot answer, if this instance has a local slot left.
func (b *SharedBreaker) grantProbe(t *target, now time.Time) (probe, error) {
	for attempt := 0; ; attempt++ {
		t.mu.Lock()
		switch st, _ := b.stateLocked(t, now); {
		case st == breaker.Closed:
			t.mu.Unlock()
			return probe{}, nil
		case st == breaker.Open:
			t.mu.Unlock()
			return probe{}, breaker.ErrOpen
		case t.loc.pending || !b.call.healthy():
			t.mu.Unlock()
			return b.grantLocalProbe(t)
		}
		round := b.round(t.sh.openUntil, now)
		if t.fullRound.Equal(round) {
			b.maybeSyncLocked(t, now, false) // learns a close by another instance's probe
			t.mu.Unlock()
			return probe{}, breaker.ErrOpen
		}
		if attempt == 0 && t.confirmedAt.Before(t.sh.openUntil) {
			// Not looked since the cooldown ended: another instance may
			// have closed or reopened it.
			t.mu.Unlock()
			if !b.refresh(t, true, now) {
				return b.grantLocalProbe(t)
			}
			continue
		}
		episode := t.sh.openUntil
		t.mu.Unlock()
		key := store.BreakerProbeKey(t.id, round)
		err := b.call.do(true, "grant breaker probe", func(ctx context.Context) error {
			_, err := b.st.Add(ctx, key, map[string]float64{attrTotal: 1}, store.AddOptions{
				Expires: round.Add(2 * b.opt.ProbeLease), Max: map[string]float64{attrTotal: float64(b.set.HalfOpenProbes)},
			})
			return err
		})
		switch {
		case err == nil:
			return probe{active: true, stored: true, episode: episode, round: round}, nil
		case errors.Is(err, store.ErrLimit):
			t.mu.Lock()
			if t.sh.openUntil.Equal(episode) {
				t.fullRound = round
			}
			t.mu.Unlock()
			return probe{}, breaker.ErrOpen
		}
		return b.grantLocalProbe(t)
	}
}

// grantLocalProbe bounds probes per instance when the store cannot.
func (b *SharedBreaker) grantLocalProbe(t *target) (probe, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.localProbes >= b.set.HalfOpenProbes {
		return probe{}, breaker.ErrOpen
	}
	t.localProbes++
	return probe{active: true, episode: t.sh.openUntil}, nil
}

// done records the outcome of an ordinary (closed-state) attempt: it only
// touches local counters, and starts a background sync when one is due or
// the failures would trip.
func (b *SharedBreaker) done(t *target, o breaker.Outcome) {
	if o == breaker.Ignored {
		return
	}
	now := b.now()
	t.mu.Lock()
	t.pending.total++
	if o == breaker.Success {
		t.consecutive = 0
		b.maybeSyncLocked(t, now, false)
		t.mu.Unlock()
		return
	}
	t.pending.failures++
	t.consecutive++
	urgent := false
	if st, _ := b.stateLocked(t, now); st == breaker.Closed {
		switch {
		case b.set.ConsecutiveFailures > 0 && t.consecutive >= b.set.ConsecutiveFailures:
			b.tripLocallyLocked(t, now, t.sh.trips)
			urgent = true
		case b.tripsByRate(b.estimateLocked(t, now)):
			if b.call.healthy() {
				urgent = true // the flush decides on fresh global counts
			} else {
				b.tripLocallyLocked(t, now, t.sh.trips)
			}
		}
	}
	b.maybeSyncLocked(t, now, urgent)
	tr := b.noteLocked(t, now, "local")
	t.mu.Unlock()
	b.emit(t.id, tr)
}

// tripLocallyLocked opens the breaker on this instance at once, after
// trips earlier opens; the background sync writes it to the store.
func (b *SharedBreaker) tripLocallyLocked(t *target, now time.Time, trips int) {
	until := fromMS(ms(now.Add(b.cooldown(trips))))
	t.loc = localTrip{pending: true, openUntil: later(until, t.loc.openUntil), trips: trips + 1}
	t.consecutive, t.fullRound = 0, time.Time{}
}

// probeDone settles a half-open probe: success closes, failure reopens
// with a doubled cooldown, ignored frees the slot. The store write is made
// here (bounded by StoreTimeout), so the next request on any instance that
// re-reads the state sees it.
func (b *SharedBreaker) probeDone(t *target, p probe, o breaker.Outcome) {
	if !p.stored {
		t.mu.Lock()
		t.localProbes = max(t.localProbes-1, 0)
		t.mu.Unlock()
	}
	switch o {
	case breaker.Ignored:
		if p.stored {
			key := store.BreakerProbeKey(t.id, p.round)
			_ = b.call.do(true, "release breaker probe", func(ctx context.Context) error {
				_, err := b.st.Add(ctx, key, map[string]float64{attrTotal: -1}, store.AddOptions{})
				return err
			})
			t.mu.Lock()
			if t.fullRound.Equal(p.round) {
				t.fullRound = time.Time{}
			}
			t.mu.Unlock()
		}
	case breaker.Success:
		b.settle(t, p, true)
	case breaker.Failure:
		b.settle(t, p, false)
	}
}

// settle writes a probe's verdict on its episode: closed on success,
// reopened with a doubled cooldown on failure. A conflict means another
// instance moved the state first: it is re-read, and the write retried only
// while the episode is still the one probed.
func (b *SharedBreaker) settle(t *target, p probe, success bool) {
	now := b.now()
	t.mu.Lock()
	if t.loc.pending {
		// The episode probed is this instance's own, not in the store.
		if !success {
			b.tripLocallyLocked(t, now, t.loc.trips)
			b.maybeSyncLocked(t, now, true)
			t.mu.Unlock()
			b.report(t, "local")
			return
		}
		t.loc = localTrip{}
	}
	base, seq := t.sh, t.seq
	episode := p.episode
	if !p.stored {
		episode = base.openUntil // a local probe vouches for the store's episode too
	}
	t.mu.Unlock()
	for attempt := 0; attempt < 3 && base.open && base.openUntil.Equal(episode); attempt++ {
		var next shared
		var expires time.Time
		if success {
			next = shared{epoch: fromMS(ms(now))}
			expires = now.Add(3 * b.set.Window.D())
		} else {
			next = shared{open: true, openUntil: fromMS(ms(now.Add(b.cooldown(base.trips)))), trips: base.trips + 1, epoch: base.epoch}
			expires = next.openUntil.Add(b.set.MaxCooldown.D())
		}
		written, err := b.putState(true, t.id, next, expires, base)
		if err == nil {
			t.mu.Lock()
			b.installLocked(t, written, now, seq)
			t.verifiedAt, t.genOK = now, false
			t.mu.Unlock()
			break
		}
		if !errors.Is(err, store.ErrConflict) {
			// The store is failing: act on the verdict locally.
			t.mu.Lock()
			if success {
				t.sh.open = false
				t.confirmedAt = time.Time{} // re-read once the store answers
			} else {
				b.tripLocallyLocked(t, now, base.trips)
			}
			t.mu.Unlock()
			break
		}
		t.mu.Lock()
		seq = t.seq
		t.mu.Unlock()
		if !b.refresh(t, true, now) {
			break
		}
		t.mu.Lock()
		base, seq = t.sh, t.seq
		t.mu.Unlock()
	}
	b.report(t, "local")
}

// ---- background sync ----

// maybeSyncLocked starts the background sync when it is due (one flush
// interval since the last one) or urgent, unless one is running.
func (b *SharedBreaker) maybeSyncLocked(t *target, now time.Time, urgent bool) {
	due := now.Sub(t.lastSync) >= min(b.opt.FlushInterval, b.opt.CacheTTL/2)
	if !urgent && !due {
		return
	}
	if urgent {
		t.urgent = true
	}
	if t.busy {
		if urgent {
			t.again = true
		}
		return
	}
	t.busy, t.lastSync = true, now
	b.bg.Add(1)
	go func() {
		defer b.bg.Done()
		for {
			b.syncOnce(t)
			t.mu.Lock()
			if !t.again {
				t.busy = false
				t.mu.Unlock()
				return
			}
			t.again = false
			t.mu.Unlock()
		}
	}()
}

// syncOnce flushes local counts (one Add, whose answer also confirms the
// cached state unless a transition marker moved), re-reads the state when
// needed, trips on the global error rate, and writes a local trip and its
// markers. Its store calls never block a request.
func (b *SharedBreaker) syncOnce(t *target) {
	win := b.set.Window.D()
	start := b.now()
	t.mu.Lock()
	p := t.pending
	if !t.urgent && start.Sub(t.lastFlush) < b.opt.FlushInterval {
		p = counts{} // flushed recently: this sync only refreshes
	}
	if p.total > 0 {
		t.urgent, t.lastFlush = false, start
	}
	s := b.bucket(t.sh.epoch, start)
	age := start.Sub(t.confirmedAt)
	confirmed := t.known && age < b.opt.CacheTTL
	needGet := !t.known || start.Sub(t.verifiedAt) >= b.opt.VerifyInterval
	seq := t.seq
	t.mu.Unlock()

	var gen float64
	flushed := false
	if p.total > 0 {
		var it store.Item
		err := b.call.do(false, "flush breaker window", func(ctx context.Context) error {
			var err error
			it, err = b.st.Add(ctx, store.BreakerWindowKey(t.id, s),
				map[string]float64{attrTotal: p.total, attrFailures: p.failures},
				store.AddOptions{Expires: s.Add(3 * win)})
			return err
		})
		if err != nil {
			// Counts stay pending; decide on the local estimate meanwhile.
			now := b.now()
			t.mu.Lock()
			if st, _ := b.stateLocked(t, now); st == breaker.Closed && b.tripsByRate(b.estimateLocked(t, now)) {
				b.tripLocallyLocked(t, now, t.sh.trips)
			}
			t.mu.Unlock()
			b.report(t, "local")
			return
		}
		flushed, gen = true, it.Nums[attrGen]
		t.mu.Lock()
		t.pending.total -= p.total
		t.pending.failures -= p.failures
		if t.curStart.Equal(s.Add(-win)) {
			t.prevStart, t.prev, t.prevFetched = t.curStart, t.cur, false // partial; re-read below if it matters
		}
		t.curStart, t.cur = s, counts{it.Nums[attrTotal], it.Nums[attrFailures]}
		if unchanged := gen == 0 || (t.genOK && t.genStart.Equal(s) && t.genSeen == gen); confirmed && unchanged && t.seq == seq {
			t.confirmedAt = start
		} else {
			needGet = true
		}
		// The previous bucket matters only once this one has failures; read
		// it once after it ended (other instances may have flushed into it
		// after our last flush there).
		ps := s.Add(-win)
		needPrev := t.cur.failures > 0 && !ps.Before(t.sh.epoch) && !(t.prevStart.Equal(ps) && t.prevFetched)
		t.mu.Unlock()
		if needPrev {
			var pit store.Item
			var found bool
			err := b.call.do(false, "get breaker window", func(ctx context.Context) error {
				var err error
				pit, found, err = b.st.Get(ctx, store.BreakerWindowKey(t.id, ps))
				return err
			})
			if err == nil {
				t.mu.Lock()
				t.prevStart, t.prev, t.prevFetched = ps, counts{}, true
				if found {
					t.prev = counts{pit.Nums[attrTotal], pit.Nums[attrFailures]}
				}
				t.mu.Unlock()
			}
		}
	} else if !confirmed || age >= b.opt.FlushInterval {
		needGet = true // nothing to flush: refresh ahead of expiry
	}

	if needGet {
		t.mu.Lock()
		seq = t.seq
		t.mu.Unlock()
		if sh, err := b.readState(false, t.id); err == nil {
			t.mu.Lock()
			if b.installLocked(t, sh, start, seq) {
				t.verifiedAt = start
				t.genStart, t.genSeen, t.genOK = s, gen, flushed
			}
			t.mu.Unlock()
		}
	}

	now := b.now()
	t.mu.Lock()
	if st, _ := b.stateLocked(t, now); st == breaker.Closed && flushed && b.tripsByRate(b.estimateLocked(t, now)) {
		b.tripLocallyLocked(t, now, t.sh.trips)
	}
	loc := t.loc
	t.mu.Unlock()
	b.report(t, "local")
	if loc.pending {
		b.writeTrip(t, loc, now)
	}
	b.writeMarks(t)
}

// writeTrip writes a local trip to the store (closed -> open). If another
// instance's trip is already there it is adopted; if the state moved to
// closed meanwhile, the trip is retried on the new version (our evidence
// still stands).
func (b *SharedBreaker) writeTrip(t *target, loc localTrip, now time.Time) {
	t.mu.Lock()
	base, seq := t.sh, t.seq
	t.mu.Unlock()
	for attempt := 0; attempt < 3; attempt++ {
		if base.open && now.Before(base.openUntil) {
			t.mu.Lock()
			if t.loc.pending && !base.openUntil.Before(t.loc.openUntil) {
				t.loc = localTrip{}
			}
			t.mu.Unlock()
			return
		}
		next := shared{open: true, openUntil: loc.openUntil, trips: loc.trips, epoch: base.epoch}
		if base.open { // reopening an expired episode: keep doubling from it
			next.trips = max(next.trips, base.trips+1)
			next.openUntil = later(next.openUntil, fromMS(ms(now.Add(b.cooldown(next.trips-1)))))
		}
		written, err := b.putState(false, t.id, next, next.openUntil.Add(b.set.MaxCooldown.D()), base)
		if err == nil {
			t.mu.Lock()
			if t.loc.pending && !written.openUntil.Before(t.loc.openUntil) {
				t.loc = localTrip{}
			}
			b.installLocked(t, written, now, seq)
			s := b.bucket(base.epoch, now)
			t.marks = []time.Time{s, s.Add(b.set.Window.D())}
			t.mu.Unlock()
			return
		}
		if !errors.Is(err, store.ErrConflict) {
			return // stays local; the next sync retries
		}
		t.mu.Lock()
		seq = t.seq
		t.mu.Unlock()
		if !b.refresh(t, false, now) {
			return
		}
		t.mu.Lock()
		base, seq = t.sh, t.seq
		t.mu.Unlock()
	}
}

// writeMarks bumps the transition marker ("gen") of the trip's window
// bucket and of the next one, so instances that flush into either notice
// the trip in the flush's answer without polling the state item.
func (b *SharedBreaker) writeMarks(t *target) {
	win := b.set.Window.D()
	for {
		t.mu.Lock()
		if len(t.marks) == 0 {
			t.mu.Unlock()
			return
		}
		ws := t.marks[0]
		t.mu.Unlock()
		err := b.call.do(false, "mark breaker window", func(ctx context.Context) error {
			_, err := b.st.Add(ctx, store.BreakerWindowKey(t.id, ws), map[string]float64{attrGen: 1},
				store.AddOptions{Expires: ws.Add(3 * win)})
			return err
		})
		if err != nil {
			return // the next sync retries
		}
		t.mu.Lock()
		if len(t.marks) > 0 && t.marks[0].Equal(ws) {
			t.marks = t.marks[1:]
		}
		t.mu.Unlock()
	}
}

// Flush waits for background syncs, then writes every target's pending
// counts, local trips and markers now (each store call bounded by
// StoreTimeout). Call it before a process exits or freezes; the request
// path never needs it.
func (b *SharedBreaker) Flush() {
	b.bg.Wait()
	b.mu.Lock()
	ts := make([]*target, 0, len(b.targets))
	for _, t := range b.targets {
		ts = append(ts, t)
	}
	b.mu.Unlock()
	for _, t := range ts {
		t.mu.Lock()
		if t.busy || (t.pending.total == 0 && !t.loc.pending && len(t.marks) == 0) {
			t.mu.Unlock()
			continue
		}
		t.busy, t.urgent = true, true
		t.mu.Unlock()
		b.syncOnce(t)
		t.mu.Lock()
		t.busy = false
		t.mu.Unlock()
	}
}

// ---- reports ----

func (b *SharedBreaker) snapshotLocked(t *target, now time.Time) breaker.Snapshot {
	st, until := b.stateLocked(t, now)
	c := b.estimateLocked(t, now)
	snap := breaker.Snapshot{State: st, Requests: int(math.Round(c.total)), Failures: int(math.Round(c.failures)),
		Consecutive: t.consecutive}
	if st == breaker.Open {
		snap.OpenUntil = until
	}
	if c.total > 0 {
		snap.ErrorRate = c.failures / c.total
	}
	return snap
}

// Snapshot implements breaker.Reporter from the cache: it never calls the
// store. Window counts are this instance's best knowledge of the global
// sliding window (the last flush's answer plus unflushed local outcomes).
func (b *SharedBreaker) Snapshot(id string) breaker.Snapshot {
	b.mu.Lock()
	t := b.targets[id]
	b.mu.Unlock()
	if t == nil {
		return breaker.Snapshot{State: breaker.Closed}
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return b.snapshotLocked(t, b.now())
}

// StoreCalls reports how many store calls this breaker has issued (for
// metrics and tests).
func (b *SharedBreaker) StoreCalls() int64 { return b.call.calls.Load() }

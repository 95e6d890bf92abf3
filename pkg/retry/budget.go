package retry

import (
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// Budget caps retries per provider: over the last minute, retries may be at
// most Ratio of first attempts, or MinPerMinute, whichever is larger.
//
// A shared budget ([NewSharedBudget]) counts every instance's attempts:
// each instance counts locally, flushes its counts to the store in batches
// (in the background: at most once per FlushInterval per provider while
// retries are pending, once per 10 s slot for first attempts alone while
// the minute holds retries, and once per QuietInterval, in one write, for
// the first attempts of a quiet provider: see SharedOptions), and
// learns the others' from the flush's answer and, while
// retries happen, from a periodic read of the minute. A request never
// waits on the store, except a retry decision on counts older than one
// flush interval (one bounded sync).
type Budget struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex
	m  map[string]*window

	// shared state (nil st: this process only)
	st   Store
	opt  SharedOptions
	call *store.Caller
}

// slots of the rolling minute, slotLen each.
const (
	slots   = 6
	slotLen = 10 // seconds
)

// window is one provider's rolling minute. requests and retries are this
// instance's counts not yet flushed (all of them for a local budget);
// shReq and shRet the store's totals as last seen (every instance's
// flushed counts, this one's included).
type window struct {
	start        [slots]int64 // slot start, unix seconds
	requests     [slots]int
	retries      [slots]int
	shReq, shRet [slots]float64

	// sync state
	busy      bool
	synced    chan struct{} // closed when the running sync ends
	lastSync  time.Time
	lastRead  time.Time // last read of the whole minute
	read      bool      // the minute has been read once
	readStart int64     // the slot start of that read
}

// NewBudget returns an empty Budget of this process only.
func NewBudget() *Budget { return &Budget{m: map[string]*window{}} }

func (b *Budget) now() time.Time {
	if b.Now != nil {
		return b.Now()
	}
	return time.Now()
}

// slotLocked returns the provider's window, the index of the current slot
// (reset if it held an older slot) and its start.
func (b *Budget) slotLocked(provider string, now time.Time) (*window, int, int64) {
	start := slotStartOf(now)
	w := b.m[provider]
	if w == nil {
		// The first sync waits one flush (or quiet) interval like the
		// others: a fresh instance's first request writes nothing.
		w = &window{lastSync: now}
		b.m[provider] = w
	}
	return w, w.use(start), start
}

// use returns the index of the slot starting at start, resetting it if it
// held an older slot.
func (w *window) use(start int64) int {
	i := int(start/slotLen) % slots
	if w.start[i] != start {
		w.start[i], w.requests[i], w.retries[i], w.shReq[i], w.shRet[i] = start, 0, 0, 0, 0
	}
	return i
}

// sums returns the minute's requests and retries up to the slot starting
// at start: the store's totals plus this instance's unflushed counts.
func (w *window) sums(start int64) (req, ret float64) {
	for i := range slots {
		if d := start - w.start[i]; d >= 0 && d < slots*slotLen {
			req += w.shReq[i] + float64(w.requests[i])
			ret += w.shRet[i] + float64(w.retries[i])
		}
	}
	return req, ret
}

// Request records a first attempt at a provider.
func (b *Budget) Request(provider string) {
	now := b.now()
	b.mu.Lock()
	w, i, _ := b.slotLocked(provider, now)
	w.requests[i]++
	b.maybeSyncLocked(provider, w, now)
	b.mu.Unlock()
}

// Retry reports whether a retry at the provider fits the budget and, if so,
// records it. A shared budget refreshes its view first (one bounded store
// call) when it is about to spend a retry on counts older than one flush
// interval, or knows nothing of the provider yet; a refusal costs no store
// call.
func (b *Budget) Retry(provider string, ratio float64, minPerMinute int) bool {
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	w, _, start := b.slotLocked(provider, now)
	if b.st != nil && (!w.read || now.Sub(w.lastSync) >= b.opt.FlushInterval) && b.call.Healthy() {
		req, ret := w.sums(start)
		if !w.read || int(ret) < max(int(ratio*req), minPerMinute) {
			b.refreshLocked(provider, w)
		}
	}
	w, i, start := b.slotLocked(provider, now)
	req, ret := w.sums(start)
	if int(ret) >= max(int(ratio*req), minPerMinute) {
		return false
	}
	w.retries[i]++
	b.maybeSyncLocked(provider, w, now)
	return true
}

// refreshLocked brings the provider's counts up to date before a decision:
// it waits for the running sync, or runs one on the request's path. b.mu
// is released meanwhile.
func (b *Budget) refreshLocked(provider string, w *window) {
	if w.busy {
		ch := w.synced
		b.mu.Unlock()
		<-ch // bounded: the sync's store calls are
		b.mu.Lock()
		return
	}
	w.busy, w.synced = true, make(chan struct{})
	b.mu.Unlock()
	b.sync(provider, w, true, false)
	b.mu.Lock()
}

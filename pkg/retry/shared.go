package retry

// shared.go holds the shared budget's store traffic: batched flushes of
// this instance's counts (one Add per provider and slot, whose answer is
// every instance's total) and a periodic read of the rolling minute (one
// Query per provider), all in the background.

import (
	"context"
	"log/slog"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// Store is what a shared budget needs from the store: atomic adds for the
// slot counters, reads of one slot and range reads of a provider's minute.
type Store interface {
	store.Getter
	store.Adder
	store.Querier
}

// Shared budget defaults.
const (
	// DefaultFlushInterval is the shortest gap between two flushes of a
	// provider's counts when retries are among them.
	DefaultFlushInterval = time.Second
	// DefaultReadInterval is how often a provider's whole minute is re-read
	// (the current slot is learned from every flush's answer).
	DefaultReadInterval = slotLen * time.Second
	// DefaultQuietInterval is the shortest gap between two flushes of a
	// quiet provider's first attempts (SharedOptions.QuietInterval).
	DefaultQuietInterval = 5 * time.Minute
)

// SharedOptions tune a shared [Budget]. Zero fields take defaults.
type SharedOptions struct {
	// FlushInterval is the shortest gap between two flushes of one
	// provider's counts (default 1s). Between flushes an instance decides
	// on what it knows: other instances' retries of the last interval may
	// be missing, so the fleet can overshoot by what it retries in one
	// interval.
	FlushInterval time.Duration
	// ReadInterval is how often the provider's minute is re-read from the
	// store in the background while retries happen at that provider
	// (default 10s, one slot). Without retries nothing is read until a
	// retry decision needs it (one bounded read then).
	ReadInterval time.Duration
	// QuietInterval is the shortest gap between two flushes of a quiet
	// provider's first attempts (default 5 minutes; negative: first
	// attempts are flushed once their 10 s slot has ended, as when
	// retries happen). A provider is quiet on an instance while no retry
	// of its own is pending and the minute as last seen holds no retry of
	// any instance. First attempts matter to other instances only as the
	// denominator of their retry ratio, so while quiet they are flushed
	// in one Add: those of the last minute (older ones count nowhere),
	// onto the oldest slot among them, so they leave the others' minute
	// early, never late. Bound: other instances' budgets may miss up to
	// QuietInterval of a quiet instance's first attempts, so the fleet
	// retries less than the ratio allows, never more; this instance's
	// own retry decisions always flush and read first (one bounded
	// sync), and its first retry ends quiet mode.
	QuietInterval time.Duration
	// StoreTimeout bounds every store call (default 250ms).
	StoreTimeout time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Logger receives rate-limited store errors (nil: discarded).
	Logger *slog.Logger
}

// Attributes of a slot item.
const (
	attrRequests = "requests"
	attrRetries  = "retries"
)

// NewSharedBudget returns a Budget shared by every instance that uses st.
func NewSharedBudget(st Store, opt SharedOptions) *Budget {
	if opt.FlushInterval <= 0 {
		opt.FlushInterval = DefaultFlushInterval
	}
	if opt.ReadInterval <= 0 {
		opt.ReadInterval = DefaultReadInterval
	}
	if opt.QuietInterval == 0 {
		opt.QuietInterval = DefaultQuietInterval
	}
	b := &Budget{Now: opt.Now, m: map[string]*window{}, st: st, opt: opt}
	b.call = store.NewCaller(store.CallerOptions{Component: "retry budget", Timeout: opt.StoreTimeout,
		Now: b.now, Logger: opt.Logger})
	return b
}

// maybeSyncLocked starts a background sync of the provider when one is
// due, at most once per FlushInterval: at once when retries are pending;
// first attempts alone once their slot has ended, so they cost one write
// per slot (10 s) however they are spread. First attempts only raise other
// instances' budgets, so their lag errs on the safe side (the fleet allows
// fewer retries, never more), and a single-request-at-a-time instance
// (Lambda, in front of a model that takes seconds) does not write once per
// request.
//
// A quiet provider (SharedOptions.QuietInterval) syncs at most once per
// QuietInterval, and only to flush first attempts of the last minute.
func (b *Budget) maybeSyncLocked(provider string, w *window, now time.Time) {
	if b.st == nil || w.busy || now.Sub(w.lastSync) < b.opt.FlushInterval {
		return
	}
	cur, all := slotStartOf(now), w.retryPending()
	if b.quietLocked(w, cur) {
		if now.Sub(w.lastSync) >= b.opt.QuietInterval && w.merged(cur).req > 0 {
			w.busy, w.synced = true, make(chan struct{})
			b.call.Go(func() { b.sync(provider, w, false, false) })
		}
		return
	}
	due := false
	for i := range slots {
		due = due || w.flushable(i, cur, all)
	}
	if !due {
		return
	}
	w.busy, w.synced = true, make(chan struct{})
	b.call.Go(func() { b.sync(provider, w, false, false) })
}

// pendingSlot is a slot's unflushed counts.
type pendingSlot struct {
	i        int
	start    int64
	req, ret int
	parts    []pendingSlot // merged: the slots whose first attempts req sums
}

// sync flushes the provider's unflushed counts and, when due, re-reads its
// minute; blocking marks a sync on a request's path, final one that must
// flush everything (Flush). w.busy and w.synced are set by the caller; sync
// clears busy and closes synced.
func (b *Budget) sync(provider string, w *window, blocking, final bool) {
	now := b.now()
	b.mu.Lock()
	w.lastSync = now
	cur, all := slotStartOf(now), blocking || final || w.retryPending()
	var flush []pendingSlot
	if !all && b.quietLocked(w, cur) {
		if m := w.merged(cur); m.req > 0 {
			flush = append(flush, m)
		}
	} else {
		for i := range slots {
			if w.flushable(i, cur, all) {
				flush = append(flush, pendingSlot{i: i, start: w.start[i], req: w.requests[i], ret: w.retries[i]})
			}
		}
	}
	stale := !w.read || w.readStart != cur || now.Sub(w.lastRead) >= b.opt.ReadInterval
	// In the background the minute is only kept fresh while someone
	// retries at the provider; a decision (blocking) always reads.
	read := stale && (blocking || w.retried(cur))
	b.mu.Unlock()
	defer func() {
		b.mu.Lock()
		w.busy = false
		close(w.synced)
		b.mu.Unlock()
	}()

	flushedCur := false
	for _, p := range flush {
		flushedCur = flushedCur || p.start == cur
		var it store.Item
		err := b.call.Do(blocking, "flush retry budget", func(ctx context.Context) error {
			var err error
			it, err = b.st.Add(ctx, store.RetryBudgetKey(provider, time.Unix(p.start, 0)),
				map[string]float64{attrRequests: float64(p.req), attrRetries: float64(p.ret)},
				store.AddOptions{Expires: time.Unix(p.start+2*slots*slotLen, 0)})
			return err
		})
		if err != nil {
			return // the counts stay pending; the next sync retries
		}
		b.mu.Lock()
		for _, q := range p.parts {
			if w.start[q.i] == q.start {
				w.requests[q.i] -= q.req
			}
		}
		if w.start[p.i] == p.start {
			if p.parts == nil {
				w.requests[p.i] -= p.req
			}
			w.retries[p.i] -= p.ret
			w.shReq[p.i] = max(w.shReq[p.i], it.Nums[attrRequests])
			w.shRet[p.i] = max(w.shRet[p.i], it.Nums[attrRetries])
		}
		b.mu.Unlock()
	}
	if blocking && !flushedCur && !read {
		// A decision is waiting: learn the current slot's totals.
		var it store.Item
		var found bool
		err := b.call.Do(true, "get retry budget", func(ctx context.Context) error {
			var err error
			it, found, err = b.st.Get(ctx, store.RetryBudgetKey(provider, time.Unix(cur, 0)))
			return err
		})
		if err == nil && found {
			b.mu.Lock()
			i := w.use(cur)
			w.shReq[i] = max(w.shReq[i], it.Nums[attrRequests])
			w.shRet[i] = max(w.shRet[i], it.Nums[attrRetries])
			b.mu.Unlock()
		}
	}
	if !read {
		return
	}
	from := time.Unix(cur-(slots-1)*slotLen, 0)
	var items []store.Item
	err := b.call.Do(blocking, "read retry budget", func(ctx context.Context) error {
		items = items[:0]
		return b.st.Query(ctx, store.RetryBudgetPK(provider), store.RetryBudgetSK(from),
			store.RetryBudgetSK(time.Unix(cur+slotLen, 0)), func(it store.Item) bool {
				items = append(items, it)
				return true
			})
	})
	if err != nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, it := range items {
		start, ok := slotStart(it.Key.SK)
		if !ok || start > cur || cur-start >= slots*slotLen {
			continue
		}
		i := w.use(start)
		w.shReq[i] = max(w.shReq[i], it.Nums[attrRequests])
		w.shRet[i] = max(w.shRet[i], it.Nums[attrRetries])
	}
	w.read, w.readStart, w.lastRead = true, cur, now
}

// quietLocked reports whether the provider is quiet on this instance at
// the slot starting at cur: quiet mode on, no retry of its own pending,
// and none in the minute as last seen.
func (b *Budget) quietLocked(w *window, cur int64) bool {
	return b.opt.QuietInterval > b.opt.FlushInterval && !w.retryPending() && !w.retried(cur)
}

// merged is a quiet flush: the unflushed first attempts of the minute up
// to the slot starting at cur, summed onto the oldest slot holding some.
func (w *window) merged(cur int64) pendingSlot {
	m := pendingSlot{i: -1}
	for i := range slots {
		d := cur - w.start[i]
		if w.requests[i] <= 0 || d < 0 || d >= slots*slotLen {
			continue
		}
		if m.i < 0 || w.start[i] < m.start {
			m.i, m.start = i, w.start[i]
		}
		m.req += w.requests[i]
		m.parts = append(m.parts, pendingSlot{i: i, start: w.start[i], req: w.requests[i]})
	}
	return m
}

// slotStartOf is the start (unix seconds) of the slot holding t.
func slotStartOf(t time.Time) int64 {
	sec := t.Unix()
	return sec - sec%slotLen
}

// retryPending reports whether any retry is not flushed yet.
func (w *window) retryPending() bool {
	for i := range slots {
		if w.retries[i] > 0 {
			return true
		}
	}
	return false
}

// flushable reports whether slot i's unflushed counts go out in a sync at
// slot cur: with all (a retry is pending, a decision waits, or Flush),
// whatever is pending; otherwise first attempts alone once their slot has
// ended, so they cost one write per slot (they only make other instances
// allow fewer retries, never more).
func (w *window) flushable(i int, cur int64, all bool) bool {
	return (w.requests[i] > 0 || w.retries[i] > 0) && (all || w.start[i] < cur)
}

// retried reports whether the minute up to the slot starting at cur has
// seen a retry, here or (as last seen) on any instance.
func (w *window) retried(cur int64) bool {
	for i := range slots {
		if d := cur - w.start[i]; d >= 0 && d < slots*slotLen && (w.retries[i] > 0 || w.shRet[i] > 0) {
			return true
		}
	}
	return false
}

// slotStart parses the slot start (unix seconds) of a slot item's SK.
func slotStart(sk string) (int64, bool) {
	const prefix = len("win#")
	if len(sk) <= prefix {
		return 0, false
	}
	t, err := time.Parse(time.RFC3339Nano, sk[prefix:])
	if err != nil {
		return 0, false
	}
	return t.Unix(), true
}

// Flush waits for background syncs, then flushes every provider's
// unflushed counts now. Call it before a process exits or freezes.
func (b *Budget) Flush() {
	if b.st == nil {
		return
	}
	b.call.Wait()
	b.mu.Lock()
	var provs []string
	for p, w := range b.m {
		if !w.busy {
			w.busy, w.synced = true, make(chan struct{})
			provs = append(provs, p)
		}
	}
	b.mu.Unlock()
	for _, p := range provs {
		b.mu.Lock()
		w := b.m[p]
		b.mu.Unlock()
		b.sync(p, w, false, true)
	}
}

// Wait waits for the background syncs started so far (for tests).
func (b *Budget) Wait() {
	if b.call != nil {
		b.call.Wait()
	}
}

// StoreCalls reports how many store calls the budget has issued.
func (b *Budget) StoreCalls() int64 {
	if b.call == nil {
		return 0
	}
	return b.call.Calls()
}

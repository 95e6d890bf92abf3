package teams

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/store"
)

// Budget leases. The shared item of a limited window (store.BudgetKey)
// counts what every instance has TAKEN, not what requests have used. An
// instance takes a lease - a share of the limit - with one conditional Add
// bounded by the limit, admits requests against it locally, settles their
// real usage locally, and gives the unspent part back (one unbounded Add)
// when the lease has not been used for usage.lease.ttl, or on Flush. Since
// the item never exceeds its limit through a take, admitted reservations
// never exceed the limit either, whatever the number of instances; only
// spend beyond a request's estimate (settled later) and the outage
// allowance below can go past it.
//
// A take is bounded by usage.lease.take_timeout, not by the request
// read's usage.store_timeout: a store that answers slowly still grants
// leases. And the next lease is taken in the background as soon as the
// unspent part of the one in hand falls below half a lease (prefetch), so
// that while the store answers, slowly or not, requests find a lease in
// hand and wait for no write.
//
// When a take fails (an error, its timeout, throttling), requests that the
// lease in hand covers are still admitted; beyond it, usage.fail_closed
// refuses them, and otherwise each instance admits at most one lease's
// worth more per window (its outage allowance), recorded in the item with
// its next successful write.

// refuseMemo is how long a lease refused by the item's limit makes the
// instance refuse requests its lease does not cover without asking again:
// a team over its limit costs at most one refused write per second per
// instance and item, not one per request.
const refuseMemo = time.Second

// sweepEvery is how often admissions look for idle leases to give back.
const sweepEvery = time.Second

// errLeaseStore marks a take that failed because of the store (not the
// limit), for the waiters of that take.
var errLeaseStore = errors.New("teams: lease not taken: store failed")

// leaseParams are the lease settings in force (config usage.lease and
// usage.fail_closed).
type leaseParams struct {
	share       float64
	maxRequests float64
	ttl         time.Duration
	takeTimeout time.Duration
	failClosed  bool
}

func leaseParamsOf(cfg *config.Config) leaseParams {
	l := cfg.Usage.Lease
	p := leaseParams{share: l.Share, maxRequests: float64(l.MaxRequests), ttl: l.TTL.D(), takeTimeout: l.TakeTimeout.D(),
		failClosed: cfg.Usage.FailClosed}
	if p.share <= 0 || p.share > 1 {
		p.share = config.DefaultLeaseShare
	}
	if p.maxRequests < 1 {
		p.maxRequests = config.DefaultLeaseMaxRequests
	}
	if p.ttl <= 0 {
		p.ttl = config.DefaultLeaseTTL
	}
	if p.takeTimeout <= 0 {
		p.takeTimeout = config.DefaultLeaseTakeTimeout
	}
	p.takeTimeout = max(p.takeTimeout, storeTimeout(cfg))
	return p
}

// outcome is how one counter answered a request.
type outcome uint8

const (
	reserved  outcome = iota // covered by this instance's lease
	unbacked                 // admitted on the outage allowance
	overLimit                // the item is at its limit
	storeDown                // the store failed and nothing covers the request
)

// lease is this instance's share of one budget item.
type lease struct {
	key store.Key
	end time.Time // the window's end: the lease dies with it

	mu         sync.Mutex
	attrs      [nAttrs]bool  // attributes limited in the item
	granted    amounts       // taken from the item and not given back
	used       amounts       // reserved by admitted requests; settled ones count their real usage
	outage     amounts       // admitted in this window while the store failed
	size       float64       // the next lease, in request reservations
	seenVer    int64         // the item's version after a take, at seenAt
	seenAt     time.Time     // start of the span measuring the item's write rate
	sizeKey    string        // scope and window kind: the next window's lease starts at this size
	takenAt    time.Time     // when the last lease was taken
	lastUse    time.Time     // when a request last reserved from it
	fullUntil  time.Time     // the item refused a lease: refuse locally until then
	noPrefetch time.Time     // the item refused a background lease: none until then
	taking     chan struct{} // non-nil while a take is in flight
	takeErr    error         // the last take's outcome, for its waiters
	syncing    bool          // a give-back is in flight
}

// covers reports whether the unspent lease covers need (lock held).
func (ls *lease) covers(c *counter) bool {
	for a := range nAttrs {
		if c.limited(a) && ls.granted[a]-ls.used[a] < c.need[a] {
			return false
		}
	}
	return true
}

// spend reserves need (lock held).
func (ls *lease) spend(c *counter, now time.Time, viaOutage bool) {
	for a := range nAttrs {
		if c.limited(a) {
			ls.used[a] += c.need[a]
			if viaOutage {
				ls.outage[a] += c.need[a]
			}
		}
	}
	ls.lastUse = now
}

// unspend gives back a reservation of a request that was refused by
// another counter.
func (ls *lease) unspend(c *counter, viaOutage bool) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for a := range nAttrs {
		if c.limited(a) {
			ls.used[a] -= c.need[a]
			if viaOutage {
				ls.outage[a] -= c.need[a]
			}
		}
	}
}

// nonzero renders the non-zero amounts of v as store deltas.
func nonzero(v amounts) map[string]float64 {
	m := make(map[string]float64, nAttrs)
	for a := range nAttrs {
		if v[a] != 0 {
			m[attrNames[a]] = v[a]
		}
	}
	return m
}

// bounds is the Max of a take: the limit of every attribute it adds to.
func bounds(c *counter, v amounts) map[string]float64 {
	m := make(map[string]float64, nAttrs)
	for a := range nAttrs {
		if v[a] > 0 {
			m[attrNames[a]] = c.limit[a]
		}
	}
	return m
}

// leaseFor returns this instance's lease of c's item, creating it.
func (l *Limiter) leaseFor(c *counter) *lease {
	l.mu.Lock()
	ls := l.leases[c.key]
	if ls == nil {
		sizeKey := c.scope + "|" + c.window
		ls = &lease{key: c.key, end: c.end, size: max(1, l.sizes.get(sizeKey)), sizeKey: sizeKey}
		l.leases[c.key] = ls
	}
	l.mu.Unlock()
	ls.mu.Lock()
	for a := range nAttrs {
		ls.attrs[a] = ls.attrs[a] || c.limited(a)
	}
	ls.mu.Unlock()
	return ls
}

// reserveLocal reserves c's need from the lease in hand, without I/O.
func (ls *lease) reserveLocal(c *counter, now time.Time) bool {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if !ls.covers(c) {
		return false
	}
	ls.spend(c, now, false)
	return true
}

// reserve reserves c's need, taking a new lease when the one in hand does
// not cover it. Only one take per lease is in flight: concurrent requests
// wait for it and then try the lease again (after a take that failed on
// the store, they go straight to the outage rules).
func (l *Limiter) reserve(ls *lease, c *counter, p leaseParams) (outcome, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for {
		now := l.Now()
		if ls.covers(c) {
			ls.spend(c, now, false)
			l.prefetch(ls, c, p, now)
			return reserved, nil
		}
		if now.Before(ls.fullUntil) {
			return overLimit, nil
		}
		if ch := ls.taking; ch != nil {
			ls.mu.Unlock()
			<-ch
			ls.mu.Lock()
			switch err := ls.takeErr; {
			case errors.Is(err, errLeaseStore):
				return l.outageRules(ls, c, p, err)
			case err != nil && !ls.covers(c):
				return overLimit, nil
			}
			continue
		}
		ch := make(chan struct{})
		ls.taking = ch
		err := l.take(ls, c, p, now)
		ls.taking, ls.takeErr = nil, err
		close(ch)
		switch {
		case errors.Is(err, store.ErrLimit):
			return overLimit, nil
		case err != nil:
			return l.outageRules(ls, c, p, err)
		}
		// Taken: the lease now covers c (the loop reserves it).
	}
}

// take takes a lease for c from the item (lock held on entry and exit,
// released during store calls): a full lease, else (the limit refused it)
// exactly what c lacks; when even that is refused, any debt is recorded
// and the lease refuses locally for refuseMemo.
func (l *Limiter) take(ls *lease, c *counter, p leaseParams, now time.Time) error {
	var tried amounts
	for i, exact := range []bool{false, true} {
		want := ls.wanted(c, p, exact)
		if i > 0 && want == tried {
			break // the full lease was already exactly what c lacks
		}
		tried = want
		ls.mu.Unlock()
		it, err := l.addWithin(p.takeTimeout, true, "take lease", c.key, c.end, nonzero(want), bounds(c, want))
		ls.mu.Lock()
		if err == nil {
			for a := range nAttrs {
				ls.granted[a] += want[a]
			}
			l.grow(ls, it.Version, p, now, exact)
			return nil
		}
		if !errors.Is(err, store.ErrLimit) {
			return errors.Join(errLeaseStore, err)
		}
	}
	var debt amounts
	for a := range nAttrs {
		if c.limited(a) {
			debt[a] = max(0, ls.used[a]-ls.granted[a])
		}
	}
	if d := nonzero(debt); len(d) > 0 {
		ls.mu.Unlock()
		_, err := l.addWithin(p.takeTimeout, true, "record spend", c.key, c.end, d, nil)
		ls.mu.Lock()
		if err == nil {
			for a := range nAttrs {
				ls.granted[a] += debt[a]
			}
		}
	}
	ls.fullUntil = now.Add(refuseMemo)
	if ls.fullUntil.After(ls.end) {
		ls.fullUntil = ls.end
	}
	return store.ErrLimit
}

// outageRules decides a request the lease does not cover while the store
// fails (lock held): fail_closed refuses; otherwise the request is
// admitted if the instance's outage allowance for this window (one
// lease, capOf) still holds it.
func (l *Limiter) outageRules(ls *lease, c *counter, p leaseParams, err error) (outcome, error) {
	if p.failClosed {
		return storeDown, err
	}
	lim := capOf(c, p)
	for a := range nAttrs {
		if c.limited(a) && ls.outage[a]+c.need[a] > lim[a] {
			return storeDown, err
		}
	}
	ls.spend(c, l.Now(), true)
	return unbacked, err
}

// add runs one bounded Add on the item (max nil: unbounded) and returns
// the item after it, bounded by usage.store_timeout.
func (l *Limiter) add(blocking bool, op string, k store.Key, end time.Time, deltas, maxes map[string]float64) (store.Item, error) {
	return l.addWithin(0, blocking, op, k, end, deltas, maxes)
}

// addWithin is add bounded by timeout (0: usage.store_timeout).
func (l *Limiter) addWithin(timeout time.Duration, blocking bool, op string, k store.Key, end time.Time, deltas, maxes map[string]float64) (store.Item, error) {
	var it store.Item
	call := l.call.Do
	if timeout > 0 {
		call = func(blocking bool, op string, fn func(ctx context.Context) error) error {
			return l.call.DoWithin(timeout, blocking, op, fn)
		}
	}
	err := call(blocking, op, func(ctx context.Context) error {
		got, err := l.store.Add(ctx, k, deltas, store.AddOptions{Expires: end, Max: maxes})
		if err == nil {
			it = got
		}
		return err
	})
	if err != nil {
		return store.Item{}, err
	}
	return it, nil
}

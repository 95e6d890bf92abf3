package teams

import (
	"errors"
	"math"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// Taking the next lease ahead: before the lease in hand runs out, so that
// requests find one in hand and wait for no store write (see lease.go).

// prefetch starts a background take when the unspent lease fell below half
// a lease (lock held), so that the requests after c find a lease in hand:
// one take at a time (requests the lease no longer covers wait for it, as
// for any take), none while the item refuses leases.
func (l *Limiter) prefetch(ls *lease, c *counter, p leaseParams, now time.Time) {
	if ls.taking != nil || now.Before(ls.fullUntil) || now.Before(ls.noPrefetch) || !now.Before(ls.end) {
		return
	}
	half := ls.size / 2
	low := false
	for a := range nAttrs {
		if c.limited(a) && ls.granted[a]-ls.used[a] < math.Floor(half*c.need[a]) {
			low = true
		}
	}
	if !low {
		return
	}
	ch := make(chan struct{})
	ls.taking = ch
	next := *c // the request's counter shapes the lease; the request goes on
	l.call.Go(func() {
		ls.mu.Lock()
		defer ls.mu.Unlock()
		err := l.takeAhead(ls, &next, p, l.Now())
		ls.taking, ls.takeErr = nil, err
		close(ch)
	})
}

// takeAhead takes the next lease in the background (lock held on entry
// and exit, released during the store call): a full lease or nothing. A
// refusal by the limit says only that a whole lease no longer fits - a
// request that needs less may still - so it stops background takes for
// refuseMemo and refuses nothing; a request the lease does not cover then
// takes exactly what it lacks itself.
func (l *Limiter) takeAhead(ls *lease, c *counter, p leaseParams, now time.Time) error {
	// A whole next lease, on top of what is unspent: one write per lease
	// whatever the traffic (topping up to one lease would take half a
	// lease per write), so at most one and a half leases are in hand.
	lim := capOf(c, p)
	var want amounts
	for a := range nAttrs {
		if c.limited(a) {
			want[a] = max(c.need[a], min(math.Floor(ls.size*c.need[a]), lim[a]))
		}
	}
	ls.mu.Unlock()
	it, err := l.addWithin(p.takeTimeout, true, "take lease ahead", c.key, c.end, nonzero(want), bounds(c, want))
	ls.mu.Lock()
	switch {
	case errors.Is(err, store.ErrLimit):
		ls.noPrefetch = now.Add(refuseMemo)
		return nil
	case err != nil:
		return errors.Join(errLeaseStore, err)
	}
	for a := range nAttrs {
		ls.granted[a] += want[a]
	}
	l.grow(ls, it.Version, p, now, false)
	return nil
}

// grow sizes the next lease after a take (lock held): doubled when this
// one came within the lease TTL of the last (a full take, not an exact
// one), scaled by the item's fleet-wide write rate, capped.
func (l *Limiter) grow(ls *lease, version int64, p leaseParams, now time.Time, exact bool) {
	size := ls.size
	if !exact && !ls.takenAt.IsZero() && now.Sub(ls.takenAt) < p.ttl {
		size *= 2
	}
	size *= ls.excess(version, now)
	if size = min(size, p.maxRequests); size != ls.size {
		ls.size = size
		l.sizes.set(ls.sizeKey, size)
	}
	ls.takenAt = now
}

// refill is prefetch for a request the lease in hand covered.
func (l *Limiter) refill(ls *lease, c *counter, p leaseParams, now time.Time) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l.prefetch(ls, c, p, now)
}

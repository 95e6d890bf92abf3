package teams

import (
	"math"
	"sync"
	"time"
)

// Lease sizes: a lease grows from one reservation (doubling per lease taken
// within the lease TTL, and by the excess of the item's fleet-wide write
// rate over itemWrites) up to capOf.

// itemWrites is the write rate per item that lease sizes aim at across all
// instances. Every write increments an item's version, so between two of
// its takes an instance sees how many writes per second the item took
// from the whole fleet; above itemWrites it multiplies its lease size by
// the excess (within the lease cap), so that the fleet converges to about
// itemWrites writes per second per item, however many instances share it.
const itemWrites = 100.0

// rateSpan is the shortest span over which an item's write rate is
// measured.
const rateSpan = 100 * time.Millisecond

// capOf is the largest lease for c's request, per attribute:
// max(need, floor(min(limit x share, need x max_requests))). It is also
// the outage allowance per window.
func capOf(c *counter, p leaseParams) amounts {
	var out amounts
	for a := range nAttrs {
		if c.limited(a) {
			out[a] = max(c.need[a], math.Floor(min(c.limit[a]*p.share, c.need[a]*p.maxRequests)))
		}
	}
	return out
}

// wanted is what a take asks for (lock held): enough to bring the unspent
// lease up to size reservations (capped), or, exact, only what the request
// lacks. Debt (spend beyond the lease) is included either way.
func (ls *lease) wanted(c *counter, p leaseParams, exact bool) amounts {
	lim := capOf(c, p)
	var out amounts
	for a := range nAttrs {
		if !c.limited(a) {
			continue
		}
		avail := ls.granted[a] - ls.used[a]
		target := c.need[a]
		if !exact {
			target = max(c.need[a], min(math.Floor(ls.size*c.need[a]), lim[a]))
		}
		out[a] = max(0, target-avail)
	}
	return out
}

// excess is the item's write rate across the fleet over itemWrites (at
// least 1), measured from its version between takes at least rateSpan
// apart (lock held): 1 until a span is complete.
func (ls *lease) excess(version int64, now time.Time) float64 {
	if ls.seenAt.IsZero() || version < ls.seenVer {
		ls.seenVer, ls.seenAt = version, now
		return 1
	}
	span := now.Sub(ls.seenAt)
	if span < rateSpan {
		return 1
	}
	rate := float64(version-ls.seenVer) / span.Seconds()
	ls.seenVer, ls.seenAt = version, now
	return max(1, rate/itemWrites)
}

// sizeMemo remembers lease sizes per scope and window kind, so that the
// lease of a new window starts where the last one ended. It has its own
// lock: it is used with a lease's lock held.
type sizeMemo struct {
	mu sync.Mutex
	m  map[string]float64
}

func (s *sizeMemo) get(k string) float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[k]
}

func (s *sizeMemo) set(k string, v float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string]float64{}
	}
	s.m[k] = v
}

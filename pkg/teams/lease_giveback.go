package teams

import (
	"context"
	"time"
)

// giveBack brings the item in line with this instance's real usage: it
// gives back the unspent lease (or records spend beyond it) in one
// unbounded Add. The amount is taken out of the lease before the call, so
// nothing is admitted against it meanwhile; a failed call restores it.
func (l *Limiter) giveBack(ls *lease, shrink bool) error {
	ls.mu.Lock()
	for ls.taking != nil && !ls.syncing {
		// A take (one taken ahead, say) is in flight: give back after it
		// lands, so that what it grants is given back too.
		ch := ls.taking
		ls.mu.Unlock()
		<-ch
		ls.mu.Lock()
	}
	if ls.syncing {
		ls.mu.Unlock()
		return nil
	}
	var delta amounts
	for a := range nAttrs {
		if ls.attrs[a] {
			delta[a] = ls.used[a] - ls.granted[a]
			ls.granted[a] += delta[a]
		}
	}
	d := nonzero(delta)
	if len(d) == 0 {
		ls.mu.Unlock()
		return nil
	}
	ls.syncing = true
	ls.mu.Unlock()
	_, err := l.add(false, "give back lease", ls.key, ls.end, d, nil)
	ls.mu.Lock()
	defer ls.mu.Unlock()
	ls.syncing = false
	if err != nil {
		for a := range nAttrs {
			ls.granted[a] -= delta[a]
		}
		l.storeFailed(context.Background(), "", err, "an unspent lease was not given back yet; retrying")
		return err
	}
	if shrink {
		ls.size = max(1, ls.size/2)
		l.sizes.set(ls.sizeKey, ls.size)
	}
	return nil
}

// maybeSweep, at most once per sweepEvery, forgets leases of closed
// windows and gives back (in the background) those unused for ttl.
func (l *Limiter) maybeSweep(now time.Time, p leaseParams) {
	l.mu.Lock()
	due := now.Sub(l.lastSweep) >= sweepEvery
	if due {
		l.lastSweep = now
	}
	l.mu.Unlock()
	if !due {
		return
	}
	if idle := l.idle(now, p.ttl); len(idle) > 0 {
		l.call.Go(func() {
			for _, ls := range idle {
				l.giveBack(ls, true)
			}
		})
	}
}

// idle forgets leases of closed windows and returns those unused for ttl
// that hold something to give back or record.
func (l *Limiter) idle(now time.Time, ttl time.Duration) []*lease {
	var idle []*lease
	l.mu.Lock()
	defer l.mu.Unlock()
	for k, ls := range l.leases {
		if !now.Before(ls.end) {
			delete(l.leases, k) // the window closed: its item decides nothing now
			continue
		}
		ls.mu.Lock()
		if now.Sub(ls.lastUse) >= ttl && ls.granted != ls.used {
			idle = append(idle, ls)
		}
		ls.mu.Unlock()
	}
	return idle
}

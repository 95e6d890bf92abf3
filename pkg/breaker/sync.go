package breaker

// sync.go holds the breaker's store traffic: reading and writing the state
// item, and the background sync that flushes batched outcome counts,
// learns other instances' transitions and writes local trips.

import (
	"context"
	"errors"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

// ---- store access ----

// readState reads the state item. blocking marks a read on a request's
// path: it is skipped while the store is known to be failing.
func (b *Breaker) readState(blocking bool, id string) (shared, error) {
	var sh shared
	err := b.call.Do(blocking, "get breaker state", func(ctx context.Context) error {
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
func (b *Breaker) putState(blocking bool, id string, next shared, expires time.Time, base shared) (shared, error) {
	var out store.Item
	err := b.call.Do(blocking, "put breaker state", func(ctx context.Context) error {
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
func (b *Breaker) installLocked(t *target, sh shared, now time.Time, seq uint64) bool {
	if t.seq != seq && t.sh.found && (!sh.found || sh.ver < t.sh.ver) {
		return false
	}
	if sh.open != t.sh.open || !sh.openUntil.Equal(t.sh.openUntil) {
		t.fullRound, t.localProbes = time.Time{}, 0
		if sh.open && !t.sh.open {
			t.consecutive = 0
		}
	}
	if sh.open != t.sh.open || !sh.epoch.Equal(t.sh.epoch) {
		t.calm = false // a transition ends quiet mode
	}
	if !sh.epoch.Equal(t.sh.epoch) {
		// A close started a new window grid: old counts are history, and
		// so are the samples of a slow episode.
		t.cur, t.prev, t.curStart, t.prevStart, t.prevFetched = counts{}, counts{}, time.Time{}, time.Time{}, false
		t.genOK = false
		t.lat = latWindow{}
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
func (b *Breaker) refresh(t *target, blocking bool, now time.Time) bool {
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

// ---- background sync ----

// maybeSyncLocked starts the background sync when it is due (one flush
// interval since the last one) or urgent, unless one is running.
func (b *Breaker) maybeSyncLocked(t *target, now time.Time, urgent bool) {
	every := min(b.opt.FlushInterval, b.opt.CacheTTL/2)
	if b.quietLocked(t, now) {
		every = b.quietEvery()
	}
	due := now.Sub(t.lastSync) >= every
	if !urgent && !due {
		return
	}
	if urgent {
		t.urgent = true
	}
	if t.busy {
		// The call running now (a background sync, or a request's read)
		// may have taken t.pending before this outcome: run the sync once
		// more when it ends, or a due outcome would wait for this
		// instance's next request (and an idle instance never sends it).
		t.again = true
		return
	}
	b.startSyncLocked(t, now)
}

// startSyncLocked starts the background sync (t.busy must be false): it
// runs syncOnce, and again for as long as an outcome asks for it meanwhile.
func (b *Breaker) startSyncLocked(t *target, now time.Time) {
	t.busy, t.lastSync = true, now
	b.call.Go(func() {
		for {
			b.syncOnce(t)
			t.mu.Lock()
			if !t.again {
				t.busy = false
				t.mu.Unlock()
				return
			}
			// The next run counts as a sync started now: an outcome
			// during it is due only a flush interval after this.
			t.again, t.lastSync = false, b.now()
			t.mu.Unlock()
		}
	})
}

// syncOnce flushes local counts (one Add, whose answer also confirms the
// cached state unless a transition marker moved), re-reads the state when
// needed, trips on the global error rate, and writes a local trip and its
// markers. Its store calls never block a request.
func (b *Breaker) syncOnce(t *target) {
	win := b.cfg().set.Window.D()
	start := b.now()
	t.mu.Lock()
	b.dropStalePendingLocked(t, start)
	p := t.pending
	if !t.urgent && start.Sub(t.lastFlush) < b.flushEveryLocked(t, start) {
		p = counts{} // flushed recently: this sync only refreshes
	}
	if p.total > 0 {
		t.urgent, t.lastFlush = false, start
	}
	s := b.bucket(t.sh.epoch, start)
	age := start.Sub(t.confirmedAt)
	quiet := b.quietLocked(t, start)
	confirmed := t.known && age < b.confirmableLocked(t, start)
	// A quiet target skips the safety-net read: it learns marked trips
	// from its flushes, and re-reads once it leaves quiet mode.
	needGet := !t.known || (!quiet && start.Sub(t.verifiedAt) >= b.opt.VerifyInterval)
	refreshAt := b.opt.FlushInterval // nothing to flush: refresh ahead of expiry
	if quiet {
		refreshAt = b.quietEvery()
	}
	seq := t.seq
	t.mu.Unlock()

	var gen float64
	flushed := false
	if p.total > 0 {
		var it store.Item
		err := b.call.Do(false, "flush breaker window", func(ctx context.Context) error {
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
			t.calm = false
			if st, _ := b.stateLocked(t, now); st == Closed && b.tripsByRate(b.estimateLocked(t, now)) {
				b.tripLocallyLocked(t, now, t.sh.trips, ReasonErrorRate)
			} else if st == Closed && b.slow(b.latEstimateLocked(t, now)) {
				b.tripSlowLocked(t, now)
			}
			t.mu.Unlock()
			b.report(context.Background(), t, "local")
			return
		}
		flushed, gen = true, it.Nums[attrGen]
		t.mu.Lock()
		t.pending.total -= p.total
		t.pending.failures -= p.failures
		t.pendingAt = start // what is left was recorded during the flush
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
			err := b.call.Do(false, "get breaker window", func(ctx context.Context) error {
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
	} else if !confirmed || age >= refreshAt {
		needGet = true // nothing to flush: refresh ahead of expiry
	}
	latFlushed := flushed && b.flushLatency(t, start)
	if flushed {
		t.mu.Lock()
		b.calmAnswerLocked(t, start)
		t.mu.Unlock()
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
	if st, _ := b.stateLocked(t, now); st == Closed && flushed && b.tripsByRate(b.estimateLocked(t, now)) {
		b.tripLocallyLocked(t, now, t.sh.trips, ReasonErrorRate)
	} else if st == Closed && latFlushed && b.slow(b.latEstimateLocked(t, now)) {
		b.tripSlowLocked(t, now)
	}
	loc := t.loc
	t.mu.Unlock()
	b.report(context.Background(), t, "local")
	if loc.pending {
		b.writeTrip(t, loc, now)
	}
	b.writeMarks(t)
}

// writeTrip writes a local trip to the store (closed -> open). If another
// instance's trip is already there it is adopted; if the state moved to
// closed meanwhile, the trip is retried on the new version (our evidence
// still stands).
func (b *Breaker) writeTrip(t *target, loc localTrip, now time.Time) {
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
		next := shared{open: true, openUntil: loc.openUntil, trips: loc.trips, epoch: base.epoch, reason: loc.reason}
		if base.open { // reopening an expired episode: keep doubling from it
			next.trips = max(next.trips, base.trips+1)
			next.openUntil = later(next.openUntil, store.FromMillis(store.Millis(now.Add(b.cooldown(next.trips-1)))))
		}
		written, err := b.putState(false, t.id, next, next.openUntil.Add(b.cfg().set.MaxCooldown.D()), base)
		if err == nil {
			t.mu.Lock()
			if t.loc.pending && !written.openUntil.Before(t.loc.openUntil) {
				t.loc = localTrip{}
			}
			b.installLocked(t, written, now, seq)
			s := b.bucket(base.epoch, now)
			t.marks = []time.Time{s, s.Add(b.cfg().set.Window.D())}
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
func (b *Breaker) writeMarks(t *target) {
	win := b.cfg().set.Window.D()
	for {
		t.mu.Lock()
		if len(t.marks) == 0 {
			t.mu.Unlock()
			return
		}
		ws := t.marks[0]
		t.mu.Unlock()
		err := b.call.Do(false, "mark breaker window", func(ctx context.Context) error {
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
func (b *Breaker) Flush() {
	b.call.Wait()
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

package breaker

// quiet.go holds the quiet target: a target whose outcomes on this
// instance are all successes while no instance reports failures is flushed
// and confirmed once per quiet interval instead of once per flush interval
// (Options.QuietInterval; docs/state-model.md, "Quiet targets").
//
// Successes matter to other instances only as the denominator of an error
// rate, and there is none while nobody fails; an instance that keeps
// succeeding loses little by learning another instance's trip up to one
// quiet interval late. Quiet mode ends at once on a local failure or slow
// sample, a transition, or a flush answer with failures; the normal
// FlushInterval and CacheTTL rules apply from then until a flush answer
// shows a calm window again.

import "time"

// DefaultQuietInterval is the default of Options.QuietInterval.
const DefaultQuietInterval = 30 * time.Second

// quietEvery is the quiet interval in force: Options.QuietInterval, at
// most half the window (so a confirmation by transition marker, which
// covers the current and previous window buckets, still covers the whole
// age of the cache); 0 when quiet mode is off.
func (b *Breaker) quietEvery() time.Duration {
	q := min(b.opt.QuietInterval, b.cfg().set.Window.D()/2)
	if q <= b.opt.CacheTTL || q <= b.opt.FlushInterval {
		return 0
	}
	return q
}

// quietLocked reports whether the target is quiet on this instance now:
// closed, its unflushed outcomes all successes (none slow), no failure run,
// and the last global window answer it holds calm (no failures, no slow
// samples in the current and previous buckets).
func (b *Breaker) quietLocked(t *target, now time.Time) bool {
	if !t.calm || !t.known || t.loc.pending || t.pending.failures > 0 || t.consecutive > 0 || t.lat.pending.slow > 0 || b.quietEvery() == 0 {
		return false
	}
	st, _ := b.stateLocked(t, now)
	return st == Closed
}

// trustLocked is how long the cached state is acted on without
// confirming it: QuietInterval while quiet, CacheTTL otherwise.
func (b *Breaker) trustLocked(t *target, now time.Time) time.Duration {
	if b.quietLocked(t, now) {
		return b.quietEvery()
	}
	return b.opt.CacheTTL
}

// flushEveryLocked is the shortest gap between two window flushes:
// QuietInterval while quiet, FlushInterval otherwise.
func (b *Breaker) flushEveryLocked(t *target, now time.Time) time.Duration {
	if b.quietLocked(t, now) {
		return b.quietEvery()
	}
	return b.opt.FlushInterval
}

// confirmableLocked is the oldest cache age a flush answer (an unchanged
// transition marker) may still confirm: the trust in force plus CacheTTL
// of grace for the flush that renews it, within the window.
func (b *Breaker) confirmableLocked(t *target, now time.Time) time.Duration {
	if b.quietLocked(t, now) {
		return min(b.quietEvery()+b.opt.CacheTTL, b.cfg().set.Window.D())
	}
	return b.opt.CacheTTL
}

// calmAnswerLocked sets t.calm from the flush answer just installed (the
// window bucket holding now): calm when the current and previous window
// buckets show no failures and, for a latency-aware breaker, the latency
// buckets last seen show no slow samples.
func (b *Breaker) calmAnswerLocked(t *target, now time.Time) {
	win := b.cfg().set.Window.D()
	s := b.bucket(t.sh.epoch, now)
	calm := !t.curStart.Equal(s) || t.cur.failures == 0
	if t.prevStart.Equal(s.Add(-win)) {
		calm = calm && t.prev.failures == 0
	}
	if b.cfg().lat != nil {
		calm = calm && t.lat.cur.slow == 0 && (!t.lat.prevStart.Equal(t.lat.curStart.Add(-b.cfg().lat.Window.D())) || t.lat.prev.slow == 0)
	}
	t.calm = calm
}

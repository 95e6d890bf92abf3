package breaker

// probe.go holds the half-open state: probe grants (bounded per round
// across instances) and probe verdicts (close, or reopen for longer).

import (
	"context"
	"errors"
	"time"

	"github.com/llmgw/llmgw/pkg/store"
)

type probe struct {
	active  bool      // false: an ordinary attempt (the breaker was closed after all)
	stored  bool      // granted through the store (else locally)
	episode time.Time // the open-until of the episode it probes
	round   time.Time // its probe round (stored probes)
}

// grantProbe admits a half-open probe if its round has a slot left across
// all instances (a conditional Add on the round's probe item), or, when the
// store cannot answer, if this instance has a local slot left.
func (b *Breaker) grantProbe(t *target, now time.Time) (probe, error) {
	for attempt := 0; ; attempt++ {
		t.mu.Lock()
		switch st, _ := b.stateLocked(t, now); {
		case st == Closed:
			t.mu.Unlock()
			return probe{}, nil
		case st == Open:
			t.mu.Unlock()
			return probe{}, ErrOpen
		case t.loc.pending || !b.call.Healthy():
			t.mu.Unlock()
			return b.grantLocalProbe(t)
		}
		round := b.round(t.sh.openUntil, now)
		if t.fullRound.Equal(round) {
			b.maybeSyncLocked(t, now, false) // learns a close by another instance's probe
			t.mu.Unlock()
			return probe{}, ErrOpen
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
		err := b.call.Do(true, "grant breaker probe", func(ctx context.Context) error {
			_, err := b.st.Add(ctx, key, map[string]float64{attrTotal: 1}, store.AddOptions{
				Expires: round.Add(2 * b.opt.ProbeLease), Max: map[string]float64{attrTotal: float64(b.cfg().set.HalfOpenProbes)},
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
			return probe{}, ErrOpen
		}
		return b.grantLocalProbe(t)
	}
}

// grantLocalProbe bounds probes per instance when the store cannot.
func (b *Breaker) grantLocalProbe(t *target) (probe, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.localProbes >= b.cfg().set.HalfOpenProbes {
		return probe{}, ErrOpen
	}
	t.localProbes++
	return probe{active: true, episode: t.sh.openUntil}, nil
}

// done records the outcome of an ordinary (closed-state) attempt: it only
// touches local counters, and starts a background sync when one is due or
// the failures would trip.

// probeDone settles a half-open probe. On a latency-aware breaker a probe
// slower than the threshold is a failure: the target is still slow.
func (b *Breaker) probeDone(rctx context.Context, t *target, p probe, o Outcome, ttft time.Duration) {
	reason := ""
	if o == Success && b.cfg().lat != nil && ttft > b.cfg().lat.Threshold.D() {
		o, reason = Failure, ReasonLatency
	}
	if !p.stored {
		t.mu.Lock()
		t.localProbes = max(t.localProbes-1, 0)
		t.mu.Unlock()
	}
	switch o {
	case Ignored:
		if p.stored {
			key := store.BreakerProbeKey(t.id, p.round)
			_ = b.call.Do(true, "release breaker probe", func(ctx context.Context) error {
				_, err := b.st.Add(ctx, key, map[string]float64{attrTotal: -1}, store.AddOptions{})
				return err
			})
			t.mu.Lock()
			if t.fullRound.Equal(p.round) {
				t.fullRound = time.Time{}
			}
			t.mu.Unlock()
		}
	case Success:
		b.settle(rctx, t, p, true, "")
	case Failure:
		b.settle(rctx, t, p, false, reason)
	}
}

// settle writes a probe's verdict on its episode: closed on success,
// reopened with a doubled cooldown on failure (for reason, or the
// episode's own reason when empty). A conflict means another instance
// moved the state first: it is re-read, and the write retried only while
// the episode is still the one probed.
func (b *Breaker) settle(ctx context.Context, t *target, p probe, success bool, reason string) {
	now := b.now()
	t.mu.Lock()
	if t.loc.pending {
		// The episode probed is this instance's own, not in the store.
		if !success {
			b.tripLocallyLocked(t, now, t.loc.trips, or(reason, t.loc.reason))
			b.maybeSyncLocked(t, now, true)
			t.mu.Unlock()
			b.report(ctx, t, "local")
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
			next = shared{epoch: store.FromMillis(store.Millis(now))}
			expires = now.Add(3 * b.cfg().set.Window.D())
		} else {
			next = shared{open: true, openUntil: store.FromMillis(store.Millis(now.Add(b.cooldown(base.trips)))), trips: base.trips + 1, epoch: base.epoch,
				reason: or(reason, base.reason)}
			expires = next.openUntil.Add(b.cfg().set.MaxCooldown.D())
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
				b.tripLocallyLocked(t, now, base.trips, or(reason, base.reason))
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
	b.report(ctx, t, "local")
}

// or returns a, or b when a is empty.
func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

package keyledger

import "time"

// Whether a (key, model) pair is usable now, and when it is again.

// why says why a (key, model) pair is not usable now ("" if it is).
func (l *Ledger) why(e *keyEntry, model string, now time.Time) string {
	if now.Before(e.disabledUntil) {
		return "disabled"
	}
	s := e.models[model]
	if s == nil {
		return ""
	}
	if now.Before(s.until) {
		return "rate_limited"
	}
	if !l.hasHeadroom(s.hr, s.obs, now) {
		return "low_headroom"
	}
	return ""
}

// hasHeadroom reports whether every reported dimension is above its
// threshold or past its reset. A low dimension without a reset time is
// trusted for DefaultCooldown after it was reported.
func (l *Ledger) hasHeadroom(hr headroom, obs, now time.Time) bool {
	for d, lim := range hr {
		if !lim.known {
			continue
		}
		min := l.opt.MinRemainingTokens
		if dimension(d) == dimRequests {
			min = l.opt.MinRemainingRequests
		}
		if lim.remaining > min {
			continue
		}
		reset := lim.reset
		if reset.IsZero() {
			reset = obs.Add(l.opt.DefaultCooldown)
		}
		if now.Before(reset) {
			return false
		}
	}
	return true
}

// usableAt is when a (key, model) pair that is not usable now becomes
// usable again: the end of its disabled stamp, of its 429 cooldown, and of
// every low headroom dimension, the latest of them. Guarded by l.mu.
func (l *Ledger) usableAt(e *keyEntry, model string, now time.Time) time.Time {
	at := now
	if now.Before(e.disabledUntil) {
		at = e.disabledUntil
	}
	s := e.models[model]
	if s == nil {
		return at
	}
	at = later(at, s.until)
	for d, lim := range s.hr {
		min := l.opt.MinRemainingTokens
		if dimension(d) == dimRequests {
			min = l.opt.MinRemainingRequests
		}
		if !lim.known || lim.remaining > min {
			continue
		}
		reset := lim.reset
		if reset.IsZero() {
			reset = s.obs.Add(l.opt.DefaultCooldown)
		}
		at = later(at, reset)
	}
	return at
}

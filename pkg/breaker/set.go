package breaker

import (
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
)

// Set is the in-process Guard: one breaker per target, created on first use.
type Set struct {
	settings config.BreakerSettings
	// Now is the clock; nil means time.Now. Tests shift it instead of sleeping.
	Now func() time.Time
	// OnTransition, when set, is called (outside the lock) on every state
	// change, for the structured log line.
	OnTransition func(target string, from, to State, snap Snapshot)

	mu sync.Mutex
	m  map[string]*breaker
}

var (
	_ Guard    = (*Set)(nil)
	_ Reporter = (*Set)(nil)
)

// NewSet returns breakers with the given settings (already defaulted).
func NewSet(s config.BreakerSettings) *Set {
	return &Set{settings: s, m: map[string]*breaker{}}
}

const buckets = 10

type bucket struct {
	start          time.Time
	total, failure int
}

type breaker struct {
	state       State
	win         [buckets]bucket
	consecutive int
	openUntil   time.Time
	trips       int // consecutive opens without a successful close, for backoff
	probes      int // half-open probes in flight
}

func (s *Set) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *Set) get(target string) *breaker {
	b := s.m[target]
	if b == nil {
		b = &breaker{state: Closed}
		s.m[target] = b
	}
	return b
}

// Allow implements Guard.
func (s *Set) Allow(target string, force Force) (func(Outcome), error) {
	switch force {
	case "open":
		return nil, ErrOpen
	case "closed":
		return func(Outcome) {}, nil
	}
	now := s.now()
	s.mu.Lock()
	b := s.get(target)
	from := b.state
	if b.state == Open && !now.Before(b.openUntil) {
		b.state, b.probes = HalfOpen, 0
	}
	if b.state == Open || (b.state == HalfOpen && b.probes >= s.settings.HalfOpenProbes) {
		s.mu.Unlock()
		s.notify(target, from, b)
		return nil, ErrOpen
	}
	probe := b.state == HalfOpen
	if probe {
		b.probes++
	}
	s.mu.Unlock()
	s.notify(target, from, b)
	var once sync.Once
	return func(o Outcome) { once.Do(func() { s.done(target, probe, o) }) }, nil
}

func (s *Set) notify(target string, from State, b *breaker) {
	if s.OnTransition == nil {
		return
	}
	s.mu.Lock()
	to, snap := b.state, s.snapshot(b)
	s.mu.Unlock()
	if to != from {
		s.OnTransition(target, from, to, snap)
	}
}

func (s *Set) done(target string, probe bool, o Outcome) {
	now := s.now()
	s.mu.Lock()
	b := s.get(target)
	from := b.state
	if probe && b.probes > 0 {
		b.probes--
	}
	switch o {
	case Success:
		b.record(now, s.settings.Window.D(), false)
		b.consecutive = 0
		if b.state == HalfOpen && probe {
			b.state, b.trips, b.win = Closed, 0, [buckets]bucket{}
		}
	case Failure:
		b.record(now, s.settings.Window.D(), true)
		b.consecutive++
		switch {
		case b.state == HalfOpen && probe:
			s.open(b, now)
		case b.state == Closed && s.shouldTrip(b, now):
			s.open(b, now)
		}
	}
	s.mu.Unlock()
	s.notify(target, from, b)
}

// open trips b with a cooldown that doubles per consecutive trip, capped.
func (s *Set) open(b *breaker, now time.Time) {
	cool := s.settings.Cooldown.D()
	for i := 0; i < b.trips && cool < s.settings.MaxCooldown.D(); i++ {
		cool *= 2
	}
	cool = min(cool, s.settings.MaxCooldown.D())
	b.trips++
	b.state, b.openUntil, b.probes = Open, now.Add(cool), 0
}

func (s *Set) shouldTrip(b *breaker, now time.Time) bool {
	if b.consecutive >= s.settings.ConsecutiveFailures {
		return true
	}
	total, failed := b.counts(now, s.settings.Window.D())
	return total >= s.settings.MinRequests && float64(failed)/float64(total) >= s.settings.FailureRate
}

func (b *breaker) record(now time.Time, window time.Duration, failed bool) {
	width := window / buckets
	start := now.Truncate(width)
	i := int(start.UnixNano()/int64(width)) % buckets
	if !b.win[i].start.Equal(start) {
		b.win[i] = bucket{start: start}
	}
	b.win[i].total++
	if failed {
		b.win[i].failure++
	}
}

func (b *breaker) counts(now time.Time, window time.Duration) (total, failed int) {
	for _, bk := range b.win {
		if !bk.start.IsZero() && now.Sub(bk.start) < window {
			total += bk.total
			failed += bk.failure
		}
	}
	return total, failed
}

func (s *Set) snapshot(b *breaker) Snapshot {
	now := s.now()
	total, failed := b.counts(now, s.settings.Window.D())
	snap := Snapshot{State: b.state, Requests: total, Failures: failed, Consecutive: b.consecutive}
	if b.state == Open && now.Before(b.openUntil) {
		snap.OpenUntil = b.openUntil
	} else if b.state == Open {
		snap.State = HalfOpen
	}
	if total > 0 {
		snap.ErrorRate = float64(failed) / float64(total)
	}
	return snap
}

// Snapshot implements Reporter.
func (s *Set) Snapshot(target string) Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, ok := s.m[target]
	if !ok {
		return Snapshot{State: Closed}
	}
	return s.snapshot(b)
}

package storetest

import (
	"sync"
	"testing"
	"time"
)

// Clock is a manual clock for one test: it starts at the real time (whole
// seconds) and moves only when the test advances it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's current time; pass it (via [Now]) as a store's clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

var clocks sync.Map // testing.TB -> *Clock

// ClockOf returns the manual clock of test t, creating it on first use (it is
// forgotten when t ends).
func ClockOf(t testing.TB) *Clock {
	c := &Clock{now: time.Now().Truncate(time.Second)}
	if v, loaded := clocks.LoadOrStore(t, c); loaded {
		return v.(*Clock)
	}
	t.Cleanup(func() { clocks.Delete(t) })
	return c
}

// Now returns the clock function that a store under test must use:
// the newStore function given to [Run] passes Now(t) as the store's clock
// option (embedded.WithClock, dynamo.WithClock), so the suite can move time
// instead of sleeping. The suite's expiry tests fail when a store ignores it.
func Now(t testing.TB) func() time.Time { return ClockOf(t).Now }

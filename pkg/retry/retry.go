// Package retry holds the two rules that keep retries from making an
// outage worse: exponential backoff with full jitter, and a retry budget
// that caps retries at a share of a provider's traffic over a rolling minute.
package retry

import (
	"math/rand/v2"
	"sync"
	"time"
)

// Backoff returns the wait before retry number n (n >= 1): a uniformly
// random duration in [0, min(max, base*2^(n-1))] ("full jitter"). rnd
// returns a float in [0, 1); nil means math/rand.
func Backoff(n int, base, max time.Duration, rnd func() float64) time.Duration {
	if rnd == nil {
		rnd = rand.Float64
	}
	ceil := base
	for i := 1; i < n && ceil < max; i++ {
		ceil *= 2
	}
	ceil = min(ceil, max)
	return time.Duration(rnd() * float64(ceil))
}

// Budget caps retries per provider: over the last minute, retries may be at
// most Ratio of first attempts, or MinPerMinute, whichever is larger.
type Budget struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	mu sync.Mutex
	m  map[string]*window
}

// slots of the rolling minute.
const slots = 6

type window struct {
	start    [slots]int64 // slot start, unix seconds
	requests [slots]int
	retries  [slots]int
}

// NewBudget returns an empty Budget.
func NewBudget() *Budget { return &Budget{m: map[string]*window{}} }

func (b *Budget) slot(provider string) (*window, int, int64) {
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	sec := now().Unix()
	start := sec - sec%10
	w := b.m[provider]
	if w == nil {
		w = &window{}
		b.m[provider] = w
	}
	i := int(start/10) % slots
	if w.start[i] != start {
		w.start[i], w.requests[i], w.retries[i] = start, 0, 0
	}
	return w, i, start
}

func (w *window) sums(start int64) (req, ret int) {
	for i := range slots {
		if start-w.start[i] < 60 {
			req += w.requests[i]
			ret += w.retries[i]
		}
	}
	return req, ret
}

// Request records a first attempt at a provider.
func (b *Budget) Request(provider string) {
	b.mu.Lock()
	w, i, _ := b.slot(provider)
	w.requests[i]++
	b.mu.Unlock()
}

// Retry reports whether a retry at the provider fits the budget and, if so,
// records it.
func (b *Budget) Retry(provider string, ratio float64, minPerMinute int) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	w, i, start := b.slot(provider)
	req, ret := w.sums(start)
	allowed := max(int(ratio*float64(req)), minPerMinute)
	if ret >= allowed {
		return false
	}
	w.retries[i]++
	return true
}

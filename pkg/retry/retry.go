// Package retry holds the two rules that keep retries from making an
// outage worse: exponential backoff with full jitter, and a retry budget
// that caps retries at a share of a provider's traffic over a rolling
// minute. The budget is either this process's ([NewBudget]) or shared by
// every gateway instance through the store ([NewSharedBudget]), so that
// 100 Lambda instances spend one budget, not 100.
package retry

import (
	"math/rand/v2"
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

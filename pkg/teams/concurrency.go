package teams

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// enter counts one more request of team in flight on this instance and
// returns the function that counts it out (call it exactly once; nil when
// the team has no such limit). Over
// limit (limits.max_concurrent_requests; 0: none) it refuses with 429
// rate_limited, code concurrency_limit_exceeded, and counts nothing.
func (l *Limiter) enter(team string, limit int64) (func(), error) {
	if limit <= 0 {
		return nil, nil
	}
	v, _ := l.inFlight.LoadOrStore(team, new(atomic.Int64))
	n := v.(*atomic.Int64)
	if n.Add(1) > limit {
		n.Add(-1)
		return nil, concurrencyRefusal(limit, "")
	}
	var once sync.Once
	return func() { once.Do(func() { n.Add(-1) }) }, nil
}

// releasing returns a Settle that runs settle (if any) and then release:
// a request is in flight until its settlement, after its last byte.
func releasing(settle exchange.Settle, release func()) exchange.Settle {
	return func(ctx context.Context, rec *exchange.Record) {
		defer release()
		if settle != nil {
			settle(ctx, rec)
		}
	}
}

package teams

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/store"
)

// Fleet-wide concurrency (limits.concurrency_scope: fleet). A team with
// max_concurrent_requests N has slots 0..N-1 in the store
// (store.ConcurrencyKey): a request holds one while it is in flight. To
// enter, an instance reads the team's slot partition (one Query: the live
// slots) and creates a free slot with a conditional put (IfAbsent); when
// every slot is live, the request is refused with 429
// concurrency_limit_exceeded. A slot is deleted at settlement, and its
// item carries a lease (server.request_timeout plus
// config.ConcurrencyLeaseMargin), so the slot of a holder that crashed
// frees itself when the lease runs out: an expired item counts as absent
// to IfAbsent and to Query. Because a slot number is one item, at most N
// requests hold slots across every instance, whatever the races.
//
// Cost: one Query and one conditional write to enter, one delete to
// leave (a refusal costs the Query alone; a lost race one more write per
// slot tried), all in the team's own partition, and only for teams that
// set the fleet scope.
//
// A store fault (an error or a timeout, usage.store_timeout) degrades as
// the budgets do: with usage.fail_closed the request is refused
// (503 usage_store_unavailable); otherwise it is admitted within the
// per-instance limit (N per instance), so while the store is down a team
// has at most N requests in flight per instance.

// slotStore is what the fleet scope needs of the store beyond Add; every
// backend has it.
type slotStore interface {
	store.Putter
	store.Querier
	store.Deleter
}

// slotSafety is how long before its lease ends a slot is left to expire
// rather than deleted: past it, the item may already be another holder's
// (an expired slot is free), whose version a delete could match.
const slotSafety = 5 * time.Second

// slotLease is a slot's lease: no request is in flight longer.
func slotLease(cfg *config.Config) time.Duration {
	return cfg.Server.RequestTimeout.D() + config.ConcurrencyLeaseMargin
}

// concurrencyRefusal is the 429 of a team at its limit.
func concurrencyRefusal(limit int64, where string) error {
	return gwerr.New(gwerr.RateLimited,
		"this team has %d requests in flight%s, its limit (limits.max_concurrent_requests); retry when one ends", limit, where).
		WithCode("concurrency_limit_exceeded")
}

// enterFleet is enter for the fleet scope: it takes a slot of team's
// limit in the store and returns the function that frees it (call it
// exactly once).
func (l *Limiter) enterFleet(ctx context.Context, cfg *config.Config, team string, limit int64) (func(), error) {
	ss, ok := l.store.(slotStore)
	if !ok {
		return l.enter(team, limit)
	}
	now := l.Now()
	expires := now.Add(slotLease(cfg))
	var taken store.Item
	full := false
	err := l.call.Do(true, "concurrency slot", func(ctx context.Context) error {
		live := make([]bool, limit)
		err := ss.Query(ctx, store.ConcurrencyPK(team), "", "", func(it store.Item) bool {
			if n, ok := store.ConcurrencySlot(it.Key.SK); ok && int64(n) < limit {
				live[n] = true
			}
			return true
		})
		if err != nil {
			return err
		}
		start := rand.Int64N(limit) // instances spread over the free slots
		for j := range limit {
			n := (start + j) % limit
			if live[n] {
				continue
			}
			it, err := ss.Put(ctx, store.Item{Key: store.ConcurrencyKey(team, int(n)), Expires: expires}, store.IfAbsent())
			if errors.Is(err, store.ErrConflict) {
				continue // another instance took it since the read
			}
			if err != nil {
				return err
			}
			taken = it
			return nil
		}
		full = true
		return nil
	})
	switch {
	case err != nil && cfg.Usage.FailClosed:
		l.storeFailed(ctx, team, err, "refusing (usage.fail_closed): the fleet concurrency slots cannot be read")
		e := gwerr.New(gwerr.Unavailable, "usage accounting is unavailable; try again shortly").WithCode("usage_store_unavailable")
		e.RetryAfter, e.Cause = time.Second, err
		return nil, e
	case err != nil:
		l.storeFailed(ctx, team, err, "admitting within the per-instance concurrency limit: the fleet concurrency slots cannot be read")
		return l.enter(team, limit)
	case full:
		return nil, concurrencyRefusal(limit, " across the gateway's instances")
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			if !l.Now().Before(expires.Add(-slotSafety)) {
				return // near or past its lease: it frees itself, and may be another's by now
			}
			_ = l.call.Do(false, "concurrency slot release", func(ctx context.Context) error {
				err := ss.Delete(ctx, taken.Key, store.IfVersion(taken.Version))
				if errors.Is(err, store.ErrConflict) {
					return nil // gone already
				}
				return err
			})
		})
	}, nil
}

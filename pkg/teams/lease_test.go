package teams_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// faultStore is one fresh store with fault injection: Faulty above the
// backend (latency, errors) and, on DynamoDB, FaultyAPI below it (real
// throttling answers through the SDK and the backend).
type faultStore struct {
	*storetest.Faulty
	api     *storetest.FaultyAPI // nil on the embedded backend
	clk     *usagetest.Clock
	backend string
}

// throttle makes the store answer like a throttled DynamoDB partition.
func (f *faultStore) throttle(on bool) {
	switch {
	case f.api != nil:
		f.api.SetThrottled(on)
	case on:
		f.Set(storetest.Throttled)
	default:
		f.Set(storetest.Healthy)
	}
}

// forBackends runs fn on the embedded store and on DynamoDB (dynalite);
// open returns a fresh store whose clock (shared with the limiters) reads
// tLimits.
func forBackends(t *testing.T, fn func(t *testing.T, open func(t *testing.T) *faultStore)) {
	t.Run("embedded", func(t *testing.T) {
		fn(t, func(t *testing.T) *faultStore {
			clk := usagetest.NewClock(tLimits)
			s := embedded.OpenMemory(embedded.WithClock(clk.Now))
			t.Cleanup(func() { s.Close() })
			return &faultStore{Faulty: storetest.NewFaulty(t, s), clk: clk, backend: "embedded"}
		})
	})
	t.Run("dynamodb", func(t *testing.T) {
		endpoint := storetest.StartDynalite(t)
		fn(t, func(t *testing.T) *faultStore {
			clk := usagetest.NewClock(tLimits)
			api := storetest.NewFaultyAPI(storetest.DynaliteClient(endpoint))
			s := storetest.NewDynamoStoreWithAPI(t, api, dynamo.WithClock(clk.Now))
			return &faultStore{Faulty: storetest.NewFaulty(t, s), api: api, clk: clk, backend: "dynamodb"}
		})
	})
}

// The store timeout of the fault tests, and how late a slow store answers.
const (
	slowTimeout = 150 * time.Millisecond
	slowDelay   = 450 * time.Millisecond
)

// budget50 is a day budget of exactly 50 reservations of body400; the
// default lease share (5%) makes a lease 2.5 of them, so an instance's
// outage allowance admits 2.
const budget50 = "limits: {cost_per_day_usd: 0.10535}"

var dayKey = store.BudgetKey("search", "", "day", time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC))

// fleet is n limiter instances over one store, as n gateway instances.
func fleet(t *testing.T, s store.Adder, clk *usagetest.Clock, n int, cfg *config.Config) []*teams.Limiter {
	return fleetOf(s, clk, n, func() *config.Config { return cfg })
}

// fleetOf is fleet with the config in force read from current.
func fleetOf(s store.Adder, clk *usagetest.Clock, n int, current func() *config.Config) []*teams.Limiter {
	out := make([]*teams.Limiter, n)
	for i := range out {
		out[i] = teams.NewLimiter(s, current, nil)
		out[i].Now = clk.Now
	}
	return out
}

// burst sends 200 concurrent requests (body400) round-robin to the
// instances; each admitted one settles at exactly its estimate. after (may
// be nil) runs once, when the admissions reach afterN.
func burst(t *testing.T, lims []*teams.Limiter, cfg *config.Config, afterN int, after func()) (admitted int, refusals []error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n atomic.Int32
	var once sync.Once
	start := make(chan struct{})
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			adm := admission(t, cfg, "search", "", body400)
			<-start
			settle, err := lims[i%len(lims)].Admit(context.Background(), adm)
			if err != nil {
				mu.Lock()
				refusals = append(refusals, err)
				mu.Unlock()
				return
			}
			if int(n.Add(1)) == afterN && after != nil {
				once.Do(after)
			}
			settle(context.Background(), &exchange.Record{Target: "up/up-model", Provider: "up", InputTokens: 107, OutputTokens: 1000})
		}()
	}
	close(start)
	wg.Wait()
	return int(n.Load()), refusals
}

// recoverAndFlush heals the store, lets the instances' one-second store
// memo pass, gives every lease back and returns the day counter.
func recoverAndFlush(t *testing.T, fs *faultStore, lims []*teams.Limiter) float64 {
	t.Helper()
	fs.Set(storetest.Healthy)
	fs.throttle(false)
	time.Sleep(slowDelay + 100*time.Millisecond) // slow writes still in flight land
	fs.clk.Advance(time.Second)
	for _, l := range lims {
		flush(t, l)
	}
	return counterValue(t, fs, dayKey, "cost_nano_usd")
}

// TestBudgetHoldsWhenTheStoreFails: 200 concurrent requests against a day
// budget of 50 reservations, on three instances sharing one store, while
// the store is down (it takes calls and never answers), fails outright,
// or throttles - from the start of the burst, or from its
// 20th admission on. Admitted requests stay within the budget plus one
// lease (the outage allowance: 2.5 reservations) per instance, never all
// of them; with usage.fail_closed nothing beyond the leases in hand is
// admitted. Once the store is back and the leases are given back, the
// counter holds every admitted request's cost. A store that is only slow
// is TestSlowStoreCostsNoRefusals.
func TestBudgetHoldsWhenTheStoreFails(t *testing.T) {
	const instances = 3
	const lease = 2.5 // reservations: 0.10535 USD x 5% / 2,107,000 nano-USD
	bound := 50 + int(math.Floor(instances*lease))
	forBackends(t, func(t *testing.T, open func(t *testing.T) *faultStore) {
		faults := []struct {
			name string
			set  func(*faultStore)
		}{
			// down: the store takes every call and never answers (Blocking
			// until the take's own timeout): a dead store, not a slow one.
			{"down", func(f *faultStore) { f.Set(storetest.Blocking) }},
			{"failing", func(f *faultStore) { f.Set(storetest.Failing) }},
			{"throttled", func(f *faultStore) { f.throttle(true) }},
		}
		for _, fault := range faults {
			for _, from := range []int{0, 20} {
				for _, closed := range []bool{false, true} {
					name := fmt.Sprintf("%s/from-%d/fail_closed=%v", fault.name, from, closed)
					t.Run(name, func(t *testing.T) {
						fs := open(t)
						cfg := limitsConfig(t, budget50)
						// Only the slow store needs a short timeout; a long one
						// elsewhere keeps a loaded machine from timing out the
						// healthy store (a lost answer would count a lease twice).
						cfg.Usage.StoreTimeout = config.Duration(5 * time.Second)
						if fault.name == "down" {
							cfg.Usage.StoreTimeout = config.Duration(slowTimeout)
							cfg.Usage.Lease.TakeTimeout = config.Duration(slowTimeout)
						}
						cfg.Usage.FailClosed = closed
						var cur atomic.Pointer[config.Config]
						cur.Store(cfg)
						lims := fleetOf(fs, fs.clk, instances, cur.Load)
						begin := func() { fault.set(fs) }
						if from == 0 {
							begin()
						}
						admitted, refusals := burst(t, lims, cfg, from, begin)
						if admitted == 200 || admitted > bound {
							t.Fatalf("%d of 200 admitted; the bound is %d (50 + one lease per instance)", admitted, bound)
						}
						if closed && admitted > 50 {
							t.Fatalf("fail_closed: %d admitted, more than the leases can hold", admitted)
						}
						if from == 0 && closed && admitted != 0 {
							t.Fatalf("fail_closed with the store failing from the start: %d admitted", admitted)
						}
						if from == 0 && !closed && admitted > instances*2 {
							t.Fatalf("store failing from the start: %d admitted, outage allowance is 2 per instance", admitted)
						}
						for _, err := range refusals {
							var ge *gwerr.Error
							if !errors.As(err, &ge) || (ge.Category != gwerr.Unavailable && ge.Category != gwerr.BudgetExceeded) {
								t.Fatalf("refusal %v", err)
							}
						}
						// Give-backs on a loaded machine get more time.
						healthy := *cfg
						healthy.Usage.StoreTimeout = config.Duration(5 * time.Second)
						cur.Store(&healthy)
						got := recoverAndFlush(t, fs, lims)
						spent := float64(admitted) * reserve400
						// With the short timeouts of the down store, a write of the
						// healthy start can land after its timeout on a loaded
						// machine: it counts unused (the safe side).
						if got < spent || (fault.name != "down" && got != spent) {
							t.Fatalf("counter %v after recovery, admitted %d x %d = %v", got, admitted, reserve400, spent)
						}
						t.Logf("%s: admitted %d (bound %d), counter %v = %.2f reservations", fs.backend, admitted, bound, got, got/reserve400)
					})
				}
			}
		}
	})
}

// TestSlowStoreCostsNoRefusals: a store that answers, however slowly, is
// not a dead one. With every write 450 ms late - three times
// usage.store_timeout - from the start of a 200-request burst or from its
// 20th admission, one instance admits exactly the budget (50), three
// instances the budget less what their leases strand (at most one
// reservation each, as with a healthy store), and the rest are refused for
// the budget, never as "usage accounting is unavailable": takes are
// bounded by usage.lease.take_timeout (1s), not by the read timeout, and
// the next lease is taken in the background.
func TestSlowStoreCostsNoRefusals(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) *faultStore) {
		for _, tc := range []struct{ instances, from int }{{1, 0}, {3, 20}} {
			for _, closed := range []bool{false, true} {
				t.Run(fmt.Sprintf("instances-%d/from-%d/fail_closed=%v", tc.instances, tc.from, closed), func(t *testing.T) {
					from := tc.from
					fs := open(t)
					cfg := limitsConfig(t, budget50)
					cfg.Usage.StoreTimeout = config.Duration(slowTimeout)
					cfg.Usage.FailClosed = closed
					lims := fleet(t, fs, fs.clk, tc.instances, cfg)
					begin := func() { fs.SetDelay(slowDelay); fs.Set(storetest.Slow) }
					if from == 0 {
						begin()
					}
					admitted, refusals := burst(t, lims, cfg, from, begin)
					if admitted > 50 || admitted < 50-(tc.instances-1) || tc.instances == 1 && admitted != 50 {
						t.Errorf("%d of 200 admitted on %d instances, want the budget's 50 (less at most one stranded per other instance)", admitted, tc.instances)
					}
					for _, err := range refusals {
						var ge *gwerr.Error
						if !errors.As(err, &ge) || ge.Category != gwerr.BudgetExceeded {
							t.Fatalf("a slow store refused a request as %v; only the budget may refuse", err)
						}
					}
					if got, spent := recoverAndFlush(t, fs, lims), float64(admitted)*reserve400; got != spent {
						t.Fatalf("counter %v after recovery, admitted %d x %d = %v", got, admitted, reserve400, spent)
					}
				})
			}
		}
	})
}

// TestLeaseInHandServesWhileTheStoreFails: a failing store stops only new
// leases. Requests the unspent lease covers are admitted (fail_closed or
// not), and with fail_closed none beyond it.
func TestLeaseInHandServesWhileTheStoreFails(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) *faultStore) {
		fs := open(t)
		cfg := limitsConfig(t, "limits: {cost_per_day_usd: 100}") // ~47,000 reservations
		cfg.Usage.FailClosed = true
		lim := fleet(t, fs, fs.clk, 1, cfg)[0]
		for i := 0; i < 40; i++ {
			if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400)); err != nil {
				t.Fatal(err)
			}
		}
		lim.Wait() // a lease taken in the background is in hand too
		leased := counterValue(t, fs, dayKey, "cost_nano_usd") / reserve400
		inHand := int(leased) - 40
		if inHand <= 0 {
			t.Fatalf("leased %v reservations for 40 requests", leased)
		}
		fs.Set(storetest.Failing)
		n := 0
		for ; n < 1000; n++ {
			if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400)); err != nil {
				var ge *gwerr.Error
				if !errors.As(err, &ge) || ge.Code != "usage_store_unavailable" {
					t.Fatalf("refusal %v", err)
				}
				break
			}
		}
		if n != inHand {
			t.Fatalf("%d admitted while the store failed; the lease in hand held %d", n, inHand)
		}
	})
}

// TestLeasesAcrossInstances: with a healthy store, instances sharing one
// budget never admit more than it together, however their leases
// interleave, and the counter ends exact.
func TestLeasesAcrossInstances(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) *faultStore) {
		for _, n := range []int{1, 4} {
			t.Run(fmt.Sprint(n), func(t *testing.T) {
				fs := open(t)
				cfg := limitsConfig(t, budget50)
				lims := fleet(t, fs, fs.clk, n, cfg)
				admitted, _ := burst(t, lims, cfg, 0, nil)
				// Each instance may strand less than one reservation in its
				// lease when the budget runs out.
				if admitted > 50 || admitted < 50-n {
					t.Fatalf("%d instances admitted %d against a budget of 50", n, admitted)
				}
				if got := recoverAndFlush(t, fs, lims); got != float64(admitted)*reserve400 {
					t.Fatalf("counter %v, admitted %d", got, admitted)
				}
			})
		}
	})
}

// TestOneWritePerLease: writes to the counters drop from one or two per
// request to one per lease (doubling from one reservation up to
// usage.lease.max_requests), and idle leases go back after usage.lease.ttl.
func TestOneWritePerLease(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) *faultStore) {
		fs := open(t)
		counted := &storetest.Counting{Store: fs}
		cfg := limitsConfig(t, "limits: {requests_per_minute: 100000, tokens_per_minute: 100000000, cost_per_hour_usd: 1000, cost_per_day_usd: 1000}")
		lim := fleet(t, counted, fs.clk, 1, cfg)[0]
		rec := &exchange.Record{Target: "up/up-model", Provider: "up", InputTokens: 100, OutputTokens: 200}
		const n = 1000
		for i := 0; i < n; i++ {
			settle, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400))
			if err != nil {
				t.Fatal(err)
			}
			settle(ctxT(t), rec)
		}
		_, writes := counted.Counts()
		// Three items; per item leases of 1, 2, 4, ... 64 reservations,
		// then 64 each: 7 + (1000 - 127) / 64 = 21 takes.
		if writes > 3*21 {
			t.Fatalf("%d writes for %d requests with three limited items", writes, n)
		}
		t.Logf("%s: %d writes for %d requests (%.3f per request)", fs.backend, writes, n, float64(writes)/n)
		// Unused for the lease TTL, the leases go back with the next
		// admission (one write per item), and the items hold real usage
		// (plus the new request's lease and the next one, which it takes in
		// the background).
		fs.clk.Advance(config.DefaultLeaseTTL)
		if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400)); err != nil {
			t.Fatal(err)
		}
		lim.Wait()
		minute := store.BudgetKey("search", "", "minute", tLimits.Add(config.DefaultLeaseTTL).Truncate(time.Minute))
		if got := counterValue(t, fs, minute, "tokens"); got < n*300 || got > n*300+2*1107*64 {
			t.Fatalf("minute tokens %v after the give-back; used %d (+ the new request's lease)", got, n*300)
		}
		if got := counterValue(t, fs, dayKey, "cost_nano_usd"); got < n*500_000 || got > n*500_000+2*reserve400*64 {
			t.Fatalf("day cost %v after the give-back; used %d", got, n*500_000)
		}
	})
}

// TestRefusalsCostNoWrites: a team over its limit costs at most one
// refused write per second per instance and item, not one per request.
func TestRefusalsCostNoWrites(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) *faultStore) {
		fs := open(t)
		counted := &storetest.Counting{Store: fs}
		cfg := limitsConfig(t, "limits: {requests_per_minute: 10}")
		lim := fleet(t, counted, fs.clk, 1, cfg)[0]
		admitted := 0
		for i := 0; i < 100; i++ {
			if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400)); err == nil {
				admitted++
			}
		}
		_, writes := counted.Counts()
		if admitted != 10 || writes > 10+2 {
			t.Fatalf("%d admitted with %d writes; want 10 with at most 10 takes and 2 refused ones", admitted, writes)
		}
		// A second later the item is asked again (once).
		fs.clk.Advance(time.Second)
		for i := 0; i < 10; i++ {
			lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400))
		}
		if _, w := counted.Counts(); w-writes > 2 {
			t.Fatalf("%d writes in the next second", w-writes)
		}
	})
}

// TestLeasesGrowWithTheItemsWriteRate: an instance that sees the item
// written faster than 100 times a second by the fleet (its version, between
// two of its takes) scales its next lease by the excess; and a new window's
// lease starts at the size the last one reached.
func TestLeasesGrowWithTheItemsWriteRate(t *testing.T) {
	forBackends(t, func(t *testing.T, open func(t *testing.T) *faultStore) {
		fs := open(t)
		cfg := limitsConfig(t, "limits: {requests_per_minute: 100000}")
		lim := fleet(t, fs, fs.clk, 1, cfg)[0]
		minute := store.BudgetKey("search", "", "minute", tLimits.Truncate(time.Minute))
		admit := func() {
			t.Helper()
			if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400)); err != nil {
				t.Fatal(err)
			}
		}
		admit() // a lease of 1
		// The rest of the fleet writes the item 500 times in the next second.
		for i := 0; i < 500; i++ {
			if _, err := fs.Add(ctxT(t), minute, map[string]float64{"requests": 1}, store.AddOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		fs.clk.Advance(time.Second)
		// The second lease (1) sees 500 writes/s, 5x the aim: the next one
		// is 1 x 2 (doubling within the TTL) x 5 = 10.
		admit()
		admit()
		lim.Wait()
		// The third request's lease is 10; its 9 unspent are below half the
		// next lease (10 x 2 within the TTL = 20), so that one is taken in
		// the background, whole (+20).
		if got := counterValue(t, fs, minute, "requests"); got != 1+500+1+10+20 {
			t.Fatalf("counter %v: the third and fourth leases were %v, want 10 + 20", got, got-502)
		}
		// The next minute's first lease is as large as the last one would
		// have been (20 x 2 for a take within the TTL).
		fs.clk.Advance(time.Minute)
		admit()
		lim.Wait()
		next := store.BudgetKey("search", "", "minute", tLimits.Add(61*time.Second).Truncate(time.Minute))
		if got := counterValue(t, fs, next, "requests"); got != 40 {
			t.Fatalf("the new window's first lease is %v, want 40", got)
		}
	})
}

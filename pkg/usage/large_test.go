package usage_test

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// largeDay is the number of records of the big team-day.
const largeDay = 50_000

// heapProbe wraps a store and, every few thousand items of a Query, forces
// a GC and records the live heap: a rollup that keeps what it reads shows a
// live heap growing with the item count.
type heapProbe struct {
	usage.RollupStore
	every   int
	maxLive uint64
	items   int
}

func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func (h *heapProbe) Query(ctx context.Context, pk, from, to string, fn func(store.Item) bool) error {
	return h.RollupStore.Query(ctx, pk, from, to, func(it store.Item) bool {
		h.items++
		if h.items%h.every == 0 {
			h.maxLive = max(h.maxLive, liveHeap())
		}
		return fn(it)
	})
}

func largeRecord(day time.Time, i int) exchange.Record {
	return exchange.Record{RequestID: fmt.Sprintf("req_%08d", i), Time: day.Add(time.Duration(i) * time.Second), Team: "big",
		Route: fmt.Sprintf("route-%d", i%300), Tag: fmt.Sprintf("tag-%d", i%7), Outcome: "ok", Status: 200,
		Target: "openai/gpt-4.1-mini", Provider: "openai", InputTokens: 100 + i%50, OutputTokens: 20, CostUSD: 0.000123,
		Attempts: []exchange.Attempt{{Target: "openai/gpt-4.1-mini", Status: 503, Category: "overloaded", LatencyM: 3},
			{Target: "azure/gpt-4.1-mini", Status: 200, LatencyM: 40}}}
}

// TestRollupStreamsALargeDay rolls up 50,000 records of one team-day on the
// embedded store and checks that the live heap does not grow with them (the
// records alone are about 30 MB decoded).
func TestRollupStreamsALargeDay(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 50,000 records")
	}
	clk := usagetest.NewClock(t0)
	s, err := embedded.Open("", embedded.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	var wantIn, wantNano int64
	start := time.Now()
	const writers = 4
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		go func() {
			for i := w; i < largeDay; i += writers {
				r := largeRecord(day, i)
				data, _ := json.Marshal(&r)
				// Straight to the store: the recorder's path is tested elsewhere.
				if _, err := s.Put(context.Background(), store.Item{Key: store.UsageKey("big", r.Time, r.RequestID), Data: data}, store.IfAbsent()); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for w := 0; w < writers; w++ {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < largeDay; i++ {
		r := largeRecord(day, i)
		wantIn += int64(r.InputTokens)
		wantNano += usage.NanoUSD(r.CostUSD)
	}
	t.Logf("wrote %d records in %v", largeDay, time.Since(start))

	probe := &heapProbe{RollupStore: s, every: 5000}
	roller := usage.NewRoller(probe, cfgFunc(t, testConfig))
	roller.Now = clk.Now
	base := liveHeap()
	start = time.Now()
	ru, written, err := roller.RollupDay(ctxT(t), "big", day)
	if err != nil || !written {
		t.Fatalf("rollup: %v %v", written, err)
	}
	elapsed := time.Since(start)
	growth := int64(probe.maxLive) - int64(base)
	t.Logf("rolled up %d records in %v; live heap grew at most %d KB while reading", probe.items, elapsed, growth/1024)
	if ru.Requests != largeDay || ru.InputTokens != wantIn || ru.CostNanoUSD != wantNano {
		t.Fatalf("rollup %+v", ru.Totals)
	}
	// 300 routes: capped at MaxBreakdown plus _other, which holds the rest.
	if len(ru.Routes) != usage.MaxBreakdown+1 || ru.Routes[usage.OtherKey] == nil {
		t.Fatalf("%d routes in the rollup", len(ru.Routes))
	}
	var sum int64
	for _, rt := range ru.Routes {
		sum += rt.Requests
	}
	if sum != largeDay {
		t.Fatalf("route breakdown sums to %d", sum)
	}
	if growth > 8<<20 {
		t.Fatalf("live heap grew by %d MB while reading %d records: the rollup is not streaming", growth>>20, largeDay)
	}
	// The stored item is well within DynamoDB's 400 KB.
	it, ok, err := s.Get(ctxT(t), store.RollupKey("big", day))
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if len(it.Data) > 200<<10 {
		t.Fatalf("rollup item is %d KB", len(it.Data)>>10)
	}
	t.Logf("rollup item: %d KB", len(it.Data)>>10)
}

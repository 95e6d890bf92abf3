package usage_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// TestOversizeRouteNamesNeverStopATeamsRollup is the review's attack: five
// 404 requests with 110 KB model names left a team's daily rollup item too
// large to write, freezing its cost in every report. Records carrying such
// names (from a writer that did not bound them) are summed under _other,
// and a day at every cap at once (MaxBreakdown routes and tags, each name
// at MaxBreakdownName) still fits an item.
func TestOversizeRouteNamesNeverStopATeamsRollup(t *testing.T) {
	clk := usagetest.NewClock(t0)
	s, err := embedded.Open("", embedded.WithClock(clk.Now))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	put := func(i int, route, tag string) {
		r := exchange.Record{RequestID: fmt.Sprintf("req_%08d", i), Time: day.Add(time.Duration(i) * time.Second), Team: "t",
			Route: route, Tag: tag, Outcome: "not_found", Status: 404, CostUSD: 0.001}
		data, _ := json.Marshal(&r)
		if _, err := s.Put(ctxT(t), store.Item{Key: store.UsageKey("t", r.Time, r.RequestID), Data: data}, store.IfAbsent()); err != nil {
			t.Fatal(err)
		}
	}
	n := 0
	for i := range 5 {
		put(n, strings.Repeat(fmt.Sprint(i), 110<<10), "")
		n++
	}
	// Every cap at once: more distinct routes and tags than kept, each
	// name as long as kept.
	for i := range usage.MaxBreakdown + 20 {
		name := fmt.Sprintf("%03d", i) + strings.Repeat("r", usage.MaxBreakdownName-3)
		put(n, name, strings.Replace(name, "r", "t", -1))
		n++
	}
	roller := usage.NewRoller(s, cfgFunc(t, testConfig))
	roller.Now = clk.Now
	ru, written, err := roller.RollupDay(ctxT(t), "t", day)
	if err != nil || !written {
		t.Fatalf("rollup: written %v, %v", written, err)
	}
	if ru.Requests != int64(n) || ru.CostNanoUSD != int64(n)*usage.NanoUSD(0.001) {
		t.Errorf("rollup counts %d requests, %d nano-USD; want %d and all their cost", ru.Requests, ru.CostNanoUSD, n)
	}
	for name := range ru.Routes {
		if len(name) > usage.MaxBreakdownName {
			t.Fatalf("a %d-byte route name kept", len(name))
		}
	}
	if o := ru.Routes[usage.OtherKey]; o == nil || o.Requests < 5 {
		t.Errorf("_other = %+v, want the oversize names in it", o)
	}
	it, ok, err := s.Get(ctxT(t), store.RollupKey("t", day))
	if err != nil || !ok || len(it.Data) > store.MaxItemBytes*3/4 {
		t.Fatalf("rollup item: %v %v, %d bytes", ok, err, len(it.Data))
	}
	t.Logf("rollup item at every cap: %d KB", len(it.Data)>>10)
}

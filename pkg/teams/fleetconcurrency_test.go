package teams_test

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
)

// fleetLimits is a fleet-wide limit of 2 requests in flight for team
// search.
const fleetLimits = "limits: {max_concurrent_requests: 2, concurrency_scope: fleet}"

// TestFleetConcurrencyHoldsAcrossInstances: two gateway instances sharing
// one store (embedded, and DynamoDB in dynalite) hold team search to 2
// requests in flight between them: with one stream open on each, a third
// is refused (429 concurrency_limit_exceeded) on both, with no upstream
// call; the slots free at settlement. A holder that crashed (it took the
// slots and never settled) blocks the team until its lease
// (server.request_timeout + config.ConcurrencyLeaseMargin) runs out, then
// the slots free themselves. A store fault degrades within a stated
// bound: fail-open admits within the per-instance limit (2 per
// instance), fail_closed refuses (502 usage_store_unavailable, as the budgets do).
func TestFleetConcurrencyHoldsAcrossInstances(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{{Name: "Fleet", Fn: func(t *testing.T, open usagetest.Opener) {
		clk := usagetest.NewClock(time.Date(2026, 11, 3, 10, 0, 30, 0, time.UTC))
		shared := open(t, clk.Now)
		arrived := make(chan struct{}, 16)
		var gate atomic.Pointer[chan struct{}]
		// gated holds "hold" requests until the returned function runs.
		gated := func() func() {
			c := make(chan struct{})
			gate.Store(&c)
			var once sync.Once
			free := func() { once.Do(func() { close(c) }) }
			t.Cleanup(free)
			return free
		}
		free := gated()
		hold := func(w http.ResponseWriter, _ *http.Request, body []byte) {
			if strings.Contains(string(body), "hold") {
				c := *gate.Load()
				arrived <- struct{}{}
				<-c
			}
			reply(w, body, []string{"Hello"})
		}
		var gws [2]*gw
		for i := range gws {
			gws[i] = newGW(t, gwOptions{limits: fleetLimits, upstream: hold,
				open: func(testing.TB, func() time.Time) store.Store { return shared }})
			gws[i].lim.Now = clk.Now
		}
		a, b := gws[0], gws[1]
		post := func(g *gw, body string) (int, string) {
			req, _ := http.NewRequest(http.MethodPost, g.URL+"/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+g.keys["search"])
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			out, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(out)
		}
		holdBody := `{"model":"m","stream":true,"messages":[{"role":"user","content":"hold"}]}`
		var wg sync.WaitGroup
		for _, g := range gws {
			wg.Go(func() {
				if code, out := post(g, holdBody); code != 200 {
					t.Errorf("held stream: %d %s", code, out)
				}
			})
		}
		<-arrived
		<-arrived
		for i, g := range gws {
			code, out := post(g, chatBody)
			if code != 429 || !strings.Contains(out, `"code":"concurrency_limit_exceeded"`) || !strings.Contains(out, "across the gateway's instances") {
				t.Errorf("instance %d, third request in flight: %d %s", i, code, out)
			}
		}
		if n := a.up.hits.Load() + b.up.hits.Load(); n != 2 {
			t.Errorf("%d upstream calls, want the 2 held", n)
		}
		free()
		wg.Wait()
		a.inflight.Wait()
		b.inflight.Wait()
		for i, g := range gws {
			if code, out := post(g, chatBody); code != 200 {
				t.Fatalf("instance %d after the streams ended: %d %s", i, code, out)
			}
			g.inflight.Wait()
		}

		// A crashed instance: it took both slots and never settles.
		crashed := teams.NewLimiter(shared, func() *config.Config { return a.cfg.Load() }, nil)
		crashed.Now = clk.Now
		for range 2 {
			if _, err := crashed.Admit(ctxT(t), admission(t, a.cfg.Load(), "search", "", chatBody)); err != nil {
				t.Fatal(err)
			}
		}
		if code, out := post(a, chatBody); code != 429 {
			t.Fatalf("with a crashed holder's slots live: %d %s", code, out)
		}
		clk.Advance(a.cfg.Load().Server.RequestTimeout.D() + config.ConcurrencyLeaseMargin + 2*time.Second)
		for i, g := range gws {
			if code, out := post(g, chatBody); code != 200 {
				t.Errorf("instance %d after the crashed holder's lease: %d %s", i, code, out)
			}
			g.inflight.Wait()
		}

		// The store fails: fail-open admits within the per-instance limit.
		a.sw.SetDown(true)
		free2 := gated()
		var wg2 sync.WaitGroup
		for range 2 {
			wg2.Go(func() {
				if code, out := post(a, holdBody); code != 200 {
					t.Errorf("held stream while the store is down: %d %s", code, out)
				}
			})
		}
		<-arrived
		<-arrived
		if code, out := post(a, chatBody); code != 429 || strings.Contains(out, "across") {
			t.Errorf("store down, third on the instance: %d %s, want the per-instance 429", code, out)
		}
		free2()
		wg2.Wait()
		a.inflight.Wait()
		// fail_closed refuses instead.
		a.setConfig(t, strings.Replace(a.yaml, "usage: {store_timeout: 5s}", "usage: {store_timeout: 5s, fail_closed: true}", 1))
		if code, out := post(a, chatBody); code != 502 || !strings.Contains(out, "usage_store_unavailable") {
			t.Errorf("store down, fail_closed: %d %s", code, out)
		}
		a.inflight.Wait()
	}}})
}

// TestFleetConcurrencyStoreCalls measures the fleet scope's cost at the
// DynamoDB API (dynalite): an admitted and settled request makes one
// Query and two writes (the conditional put and the delete), a refused
// one the Query alone; a team without the fleet scope makes none.
func TestFleetConcurrencyStoreCalls(t *testing.T) {
	endpoint := storetest.StartDynalite(t)
	clk := usagetest.NewClock(tLimits)
	api := storetest.NewFaultyAPI(storetest.DynaliteClient(endpoint))
	s := storetest.NewDynamoStoreWithAPI(t, api, dynamo.WithClock(clk.Now))
	for _, c := range []struct {
		limits                string
		reads, writes, refuse int64
	}{
		{fleetLimits, 1, 2, 1},
		{"limits: {max_concurrent_requests: 2}", 0, 0, 0},
	} {
		cfg := limitsConfig(t, c.limits)
		lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
		lim.Now = clk.Now
		r0, w0 := api.Reads(), func() int64 { n, _ := api.Writes(); return n }()
		const n = 10
		for range n {
			settle, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400))
			if err != nil {
				t.Fatal(err)
			}
			settle(ctxT(t), &exchange.Record{Team: "search"})
		}
		w1, _ := api.Writes()
		if r, w := api.Reads()-r0, w1-w0; r != c.reads*n || w != c.writes*n {
			t.Errorf("%s: %d reads and %d writes for %d requests, want %d and %d each", c.limits, r, w, n, c.reads, c.writes)
		}
		var settles []exchange.Settle
		for range 2 {
			settle, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400))
			if err != nil {
				t.Fatal(err)
			}
			settles = append(settles, settle)
		}
		r1, w2 := api.Reads(), func() int64 { n, _ := api.Writes(); return n }()
		if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400)); err == nil {
			t.Fatalf("%s: a third request in flight was admitted", c.limits)
		}
		w3, _ := api.Writes()
		if r, w := api.Reads()-r1, w3-w2; r != c.refuse || w != 0 {
			t.Errorf("%s: a refusal made %d reads and %d writes, want %d and 0", c.limits, r, w, c.refuse)
		}
		for _, settle := range settles {
			settle(ctxT(t), &exchange.Record{Team: "search"})
		}
	}
}

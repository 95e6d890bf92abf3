package resilience

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/server"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/dynamo"
	"github.com/llmgw/llmgw/pkg/store/storetest"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
)

// TestToxicStoreLatencyRequestsFlowFromCache puts Toxiproxy between the
// gateway's DynamoDB client and dynalite, and wires every store user the
// way production does: team authentication and the limiter (store Adds on
// the request path), the shared circuit breaker and key ledger
// (pkg/breaker, pkg/keyledger) and the usage recorder. After a warm phase
// that trips the primary's breaker, the store link gets 5 s of latency:
// requests keep flowing, served from cached state (the tripped primary is
// still skipped without a call), each bounded by the store timeouts
// (200 ms), never by the store's latency; when the latency goes, records
// are stored again.
func TestToxicStoreLatencyRequestsFlowFromCache(t *testing.T) {
	endpoint := storetest.StartDynalite(t) // skips loudly without node/dynalite (fails in CI)
	toxi := newToxiproxy()
	px := toxi.proxy(t, strings.TrimPrefix(endpoint, "http://"))
	st := dynamo.New(storetest.DynaliteClient("http://"+px.addr()), storetest.UniqueTableName(t))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := st.EnsureTable(ctx); err != nil {
		t.Fatal(err)
	}

	primary := newFake(t, openaiKind, script{status: 503, errMsg: "down"})
	secondary := newFake(t, openaiKind, script{words: words(5)})
	key, hash, err := teams.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("RESILIENCE_STORE_KEY", "sk-store-test-provider-key-0001")
	yaml := fastPolicy + fmt.Sprintf(`
breaker: {consecutive_failures: 2, cooldown: 10m, max_cooldown: 10m}
usage: {store_timeout: 200ms}
teams:
  t1:
    keys: [{id: k1, sha256: %q}]
    limits: {requests_per_minute: 100000, tokens_per_minute: 100000000}
providers:
  primary: {kind: openai, base_url: "%s/v1", keys: [{env: RESILIENCE_STORE_KEY}]}
  secondary: {kind: openai, base_url: "%s/v1", keys: [{env: RESILIENCE_STORE_KEY}]}
routes:
  m:
    attempts: 1
    targets: [{provider: primary, model: a}, {provider: secondary, model: b}]
  cold:
    targets: [{provider: secondary, model: c}]
`, hash, primary.URL, secondary.URL)
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatal(err)
	}
	const storeTimeout = 200 * time.Millisecond
	logs := &syncBuffer{}
	log := slog.New(slog.NewJSONHandler(logs, nil))
	br := breaker.New(st, cfg.Breaker, breaker.Options{StoreTimeout: storeTimeout, Logger: log})
	kl := keyledger.New(st, keyledger.Options{StoreTimeout: storeTimeout, Logger: log})
	t.Cleanup(func() { br.Flush(); kl.Wait() })
	cfgNow := func() *config.Config { return cfg }
	recorder := usage.NewRecorder(st, cfgNow, log)
	g := newGateway(t, yaml, func(o *server.Options) {
		capture := o.Record
		o.Logger = log
		o.Breakers, o.Keys = br, kl
		o.Authenticate = teams.NewAuthenticator(cfgNow, log).Authenticate
		o.Admit = teams.NewLimiter(st, cfgNow, log).Admit
		o.Record = func(ctx context.Context, r *exchange.Record) {
			recorder.Record(ctx, r)
			capture(ctx, r)
		}
	})
	g.logs = logs
	c := newClient(t)
	auth := []string{"Authorization", "Bearer " + key}

	var requestRoute func(phase string, i int, route string) (ttft, total time.Duration)
	// request sends one streaming request and returns its time to the
	// response headers (the first content) and in total.
	request := func(phase string, i int) (ttft, total time.Duration) {
		return requestRoute(phase, i, "m")
	}
	requestRoute = func(phase string, i int, route string) (ttft, total time.Duration) {
		t.Helper()
		start := time.Now()
		req := strings.NewReader(strings.Replace(streamBody, `"model":"m"`, `"model":"`+route+`"`, 1))
		hr, _ := newRequest(g.URL, req, auth...)
		resp, err := c.Do(hr)
		if err != nil {
			t.Fatalf("%s %d: %v", phase, i, err)
		}
		ttft = time.Since(start)
		r := newFrameReader(resp).rest()
		total = time.Since(start)
		if r.Status != 200 || r.Header.Get("x-gateway-provider") != "secondary" {
			t.Fatalf("%s %d: status %d provider %q: %s", phase, i, r.Status, r.Header.Get("x-gateway-provider"), r.Body)
		}
		checkTerminal(t, r)
		if !r.Done || r.Text != strings.Join(words(5), "") {
			t.Fatalf("%s %d: incomplete stream:\n%s", phase, i, r.Body)
		}
		return ttft, total
	}

	// Warm: the primary fails twice and its breaker trips; the trip and
	// the records reach the store.
	for i := 0; i < 4; i++ {
		request("warm", i)
	}
	if primary.hits.Load() != 2 {
		t.Fatalf("primary called %d times while warming; want 2 (then tripped)", primary.hits.Load())
	}
	br.Flush()
	kl.Wait()
	warm := g.waitRecords(t, 4)
	for _, rec := range warm {
		if _, ok, err := st.Get(ctx, store.UsageKey("t1", rec.Time, rec.RequestID)); err != nil || !ok {
			t.Fatalf("warm record %s not stored (ok %v, err %v): the store path does not work", rec.RequestID, ok, err)
		}
	}

	// The store gets slow: 5 s on every answer. The first request goes to
	// a target neither the breaker nor the key ledger has seen: with no
	// cache they must ask the store, on the request's path, and give up
	// after the store timeout (fail-open).
	px.toxic(t, "slow-store", "latency", "downstream", `{"latency":5000}`)
	if ttft, _ := requestRoute("cold target", 0, "cold"); ttft > 2*time.Second {
		t.Errorf("a cold target waited %v for its first content with a slow store: store calls on the request path are not bounded", ttft)
	}
	n := 12
	if testing.Short() {
		n = 6
	}
	var worstTTFT, worstTotal time.Duration
	for i := 0; i < n; i++ {
		ttft, total := request("slow store", i)
		worstTTFT, worstTotal = max(worstTTFT, ttft), max(worstTotal, total)
	}
	t.Logf("with a 5s store: worst time to first content %v, worst total %v (store timeout %v)", worstTTFT, worstTotal, storeTimeout)
	// Admission (Adds in parallel), Allow and Pick wait at most a store
	// timeout or two; the record and the settlement after the last byte
	// (three record attempts) a few more. Never the store's 5 s.
	if worstTTFT > 2*time.Second {
		t.Errorf("a request waited %v for its first content with a slow store: store calls on the request path are not bounded", worstTTFT)
	}
	if worstTotal > 4*time.Second {
		t.Errorf("a request took %v with a slow store (store timeout %v)", worstTotal, storeTimeout)
	}
	if primary.hits.Load() != 2 {
		t.Errorf("the tripped primary was called %d more times while the store was slow: cached breaker state was not used", primary.hits.Load()-2)
	}
	recs := g.waitRecords(t, 5+n)
	for _, rec := range recs[5:] {
		if len(rec.Attempts) == 0 || rec.Attempts[0].Skipped != "breaker_open" || rec.Outcome != "ok" {
			t.Errorf("record during the slow store = %+v", rec)
		}
	}

	// The latency goes: after the store-retry period the store is used
	// again and records are stored.
	px.removeToxic(t, "slow-store")
	time.Sleep(1500 * time.Millisecond) // the breaker's and ledger's StoreRetry (1s) and a margin
	for i := 0; i < 3; i++ {
		request("recovered", i)
	}
	recs = g.waitRecords(t, 5+n+3)
	for _, rec := range recs[5+n:] {
		if _, ok, err := st.Get(ctx, store.UsageKey("t1", rec.Time, rec.RequestID)); err != nil || !ok {
			t.Errorf("record %s after recovery not stored (ok %v, err %v)", rec.RequestID, ok, err)
		}
	}
	if primary.hits.Load() != 2 {
		t.Errorf("primary called again after recovery (%d): its trip was lost", primary.hits.Load())
	}
}

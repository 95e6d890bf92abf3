package teams_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/store"
	"github.com/llmgw/llmgw/pkg/store/embedded"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/usage"
	"github.com/llmgw/llmgw/pkg/usage/usagetest"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// limitsYAML is a config for calling the Limiter directly (no upstream).
const limitsYAML = `
providers:
  up: {kind: openai, base_url: "http://127.0.0.1:9/v1"}
routes:
  m: {targets: [{provider: up, model: up-model}]}
  chain: {targets: [{provider: up, model: up-model}, {provider: up, model: up-dear}]}
prices:
  "up/up-model": {input: 1, output: 2}
  "up/up-dear": {input: 10, output: 30}
usage: {store_timeout: 5s}
teams:
  search:
    keys: [{id: k1, sha256: "0000000000000000000000000000000000000000000000000000000000000001"}]
    LIMITS
  free:
    keys: [{id: k1, sha256: "0000000000000000000000000000000000000000000000000000000000000002"}]
`

func limitsYAMLWith(limits string) string { return strings.Replace(limitsYAML, "LIMITS", limits, 1) }

func limitsConfig(t *testing.T, limits string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(limitsYAMLWith(limits)))
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

func admissionB(b testing.TB, cfg *config.Config) *exchange.Request {
	req, err := chatwire.Parse([]byte(body400), chatwire.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	steps, _, _ := cfg.Chain(req.Model)
	prompt, _, err := chat.ToPrompt(req, []byte(body400))
	if err != nil {
		b.Fatal(err)
	}
	return &exchange.Request{Caller: &exchange.Caller{Team: "search"}, Route: req.Model, Steps: steps, Prompt: prompt, Body: []byte(body400)}
}

func admission(t testing.TB, cfg *config.Config, team, tag, body string) *exchange.Request {
	t.Helper()
	req, err := chatwire.Parse([]byte(body), chatwire.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	steps, _, ok := cfg.Chain(req.Model)
	if !ok {
		t.Fatalf("no route %s", req.Model)
	}
	prompt, _, err := chat.ToPrompt(req, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	return &exchange.Request{Caller: &exchange.Caller{Team: team}, Route: req.Model, Tag: tag, Steps: steps, Prompt: prompt, Body: []byte(body)}
}

// body400 has 400 characters of content and max_tokens 1000: the estimate
// is ceil(400/4) + 4 (message) + 3 (priming) = 107 input tokens and 1000
// output tokens; at up/up-model's prices (1 and 2 USD per million) that is
// 107 x 1 + 1000 x 2 = 2107 micro-dollars = 2,107,000 nano-dollars.
var body400 = `{"model":"m","max_tokens":1000,"messages":[{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]}`

const reserve400 = 2_107_000 // nano-USD

func counterValue(t *testing.T, s store.Getter, k store.Key, attr string) float64 {
	t.Helper()
	it, ok, err := s.Get(ctxT(t), k)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		return 0
	}
	return it.Nums[attr]
}

var tLimits = time.Date(2026, 11, 3, 10, 0, 30, 0, time.UTC)

func TestLimitsWithStores(t *testing.T) {
	usagetest.Run(t, []usagetest.Case{
		{Name: "ConcurrentRequestsPerMinute", Fn: testConcurrentRPM},
		{Name: "ConcurrentCostBudget", Fn: testConcurrentCost},
		{Name: "ConcurrentCostBudgetWithSettlement", Fn: testConcurrentCostSettled},
		{Name: "ServerRefusesWithRetryAfterAndRecords", Fn: testServerRateLimit},
		{Name: "TagLimits", Fn: testTagLimits},
		{Name: "SettlementReplacesReservation", Fn: testSettlement},
		{Name: "StoreOutage", Fn: testStoreOutage},
	})
}

// run200 calls Admit from 200 goroutines at once; settle (may be nil) runs
// right after each admission.
func run200(t *testing.T, lim *teams.Limiter, a func() *exchange.Request, settle func(exchange.Settle)) (admitted int, refusals []error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var n atomic.Int32
	start := make(chan struct{})
	for i := 0; i < 200; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			adm := a()
			<-start
			s, err := lim.Admit(context.Background(), adm)
			if err != nil {
				mu.Lock()
				refusals = append(refusals, err)
				mu.Unlock()
				return
			}
			n.Add(1)
			if settle != nil {
				settle(s)
			}
		}()
	}
	close(start)
	wg.Wait()
	return int(n.Load()), refusals
}

func testConcurrentRPM(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(tLimits)
	s := open(t, clk.Now)
	cfg := limitsConfig(t, "limits: {requests_per_minute: 50}")
	lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	admitted, refusals := run200(t, lim, func() *exchange.Request { return admission(t, cfg, "search", "", body400) }, nil)
	if admitted > 50 || admitted < 1 {
		t.Fatalf("%d of 200 concurrent requests admitted with 50 requests per minute", admitted)
	}
	for _, err := range refusals {
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Category != gwerr.RateLimited || ge.RetryAfter != 30*time.Second {
			t.Fatalf("refusal %v", err)
		}
	}
	// Every lease given back, the counter holds what was admitted.
	flush(t, lim)
	start := tLimits.Truncate(time.Minute)
	if got := counterValue(t, s, store.BudgetKey("search", "", "minute", start), "requests"); got != float64(admitted) {
		t.Fatalf("counter %v, admitted %d", got, admitted)
	}
	t.Logf("admitted %d of 200", admitted)
	// The next minute is a new window.
	clk.Set(start.Add(time.Minute))
	if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400)); err != nil {
		t.Fatalf("next minute: %v", err)
	}
}

func testConcurrentCost(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(tLimits)
	s := open(t, clk.Now)
	// A day budget of exactly 50 reservations: 50 x 2,107,000 nano-USD.
	cfg := limitsConfig(t, "limits: {cost_per_day_usd: 0.10535}")
	lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	var spent atomic.Int64
	admitted, refusals := run200(t, lim, func() *exchange.Request { return admission(t, cfg, "search", "", body400) },
		func(settle exchange.Settle) {
			// The request used exactly its estimate.
			rec := &exchange.Record{Target: "up/up-model", Provider: "up", InputTokens: 107, OutputTokens: 1000}
			spent.Add(usage.NanoUSD(usage.Cost(cfg, rec)))
			settle(context.Background(), rec)
		})
	if admitted > 51 {
		t.Fatalf("%d admitted against a budget of 50 requests", admitted)
	}
	if admitted < 50 {
		t.Fatalf("only %d admitted against a budget of 50 requests", admitted)
	}
	limit := int64(105_350_000)
	if spent.Load() > limit+reserve400 {
		t.Fatalf("spent %d nano-USD, limit %d + one reservation %d", spent.Load(), limit, reserve400)
	}
	for _, err := range refusals {
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Category != gwerr.BudgetExceeded || ge.Code != "team_budget_exceeded" {
			t.Fatalf("refusal %v", err)
		}
		if want := 13*time.Hour + 59*time.Minute + 30*time.Second; ge.RetryAfter != want {
			t.Fatalf("retry after %v, want %v (to UTC midnight)", ge.RetryAfter, want)
		}
	}
	flush(t, lim)
	day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	if got := counterValue(t, s, store.BudgetKey("search", "", "day", day), "cost_nano_usd"); int64(got) != spent.Load() {
		t.Fatalf("counter %v, spent %d", got, spent.Load())
	}
}

// testConcurrentCostSettled: requests settle below their reservation while
// others are being admitted, so more than 50 get in, but the spend stays
// within the budget and the counter equals the real spend.
func testConcurrentCostSettled(t *testing.T, open usagetest.Opener) {
	clk := usagetest.NewClock(tLimits)
	s := open(t, clk.Now)
	cfg := limitsConfig(t, "limits: {cost_per_day_usd: 0.10535}")
	lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	var spent atomic.Int64
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(3, 4))
	admitted, _ := run200(t, lim, func() *exchange.Request { return admission(t, cfg, "search", "", body400) },
		func(settle exchange.Settle) {
			mu.Lock()
			out := rng.IntN(1001) // at most the max_tokens asked for
			mu.Unlock()
			rec := &exchange.Record{Target: "up/up-model", Provider: "up", InputTokens: 100, OutputTokens: out}
			spent.Add(usage.NanoUSD(usage.Cost(cfg, rec)))
			settle(context.Background(), rec)
		})
	limit := int64(105_350_000)
	if spent.Load() > limit+reserve400 {
		t.Fatalf("spent %d nano-USD over %d admitted requests; limit %d + one reservation %d", spent.Load(), admitted, limit, reserve400)
	}
	// Settlement corrects the leases; giving them back corrects the item.
	flush(t, lim)
	day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	if got := counterValue(t, s, store.BudgetKey("search", "", "day", day), "cost_nano_usd"); int64(got) != spent.Load() {
		t.Fatalf("counter %v, real spend %d: settlement did not replace the reservations", got, spent.Load())
	}
	t.Logf("admitted %d, spent %d of %d nano-USD", admitted, spent.Load(), limit)
}

func testServerRateLimit(t *testing.T, open usagetest.Opener) {
	g := newGW(t, gwOptions{open: open, limits: "limits: {requests_per_minute: 3}"})
	var codes []int
	for i := 0; i < 5; i++ {
		resp, body := g.call(t, g.keys["search"], chatBody)
		codes = append(codes, resp.StatusCode)
		if i >= 3 {
			if resp.StatusCode != 429 || resp.Header.Get("Retry-After") != "30" ||
				!strings.Contains(body, `"type":"rate_limited"`) || !strings.Contains(body, `"code":"team_rate_limit_exceeded"`) {
				t.Fatalf("request %d: %d retry-after %q %s", i, resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
		}
	}
	if g.up.hits.Load() != 3 {
		t.Fatalf("%d upstream calls, want 3 (refusals cost nothing): %v", g.up.hits.Load(), codes)
	}
	recs := g.records(t, "search")
	refused := 0
	for _, r := range recs {
		if r.Outcome == "rate_limited" {
			refused++
			if r.InputTokens != 0 || r.CostUSD != 0 || len(r.Attempts) != 0 {
				t.Fatalf("refused record %+v", r)
			}
		}
	}
	if len(recs) != 5 || refused != 2 {
		t.Fatalf("%d records, %d refused; want 5 and 2: %+v", len(recs), refused, recs)
	}
	// Another team is not affected.
	if resp, body := g.call(t, g.keys["ads"], chatBody); resp.StatusCode != 200 {
		t.Fatalf("ads: %d %s", resp.StatusCode, body)
	}
}

func testTagLimits(t *testing.T, open usagetest.Opener) {
	g := newGW(t, gwOptions{open: open, limits: "tags: {checkout: {requests_per_minute: 1}}"})
	tag := func(v string) []string { return []string{"x-gateway-tag", v} }
	if resp, body := g.call(t, g.keys["search"], chatBody, tag("checkout")...); resp.StatusCode != 200 {
		t.Fatalf("first checkout: %d %s", resp.StatusCode, body)
	}
	resp, body := g.call(t, g.keys["search"], chatBody, tag("checkout")...)
	if resp.StatusCode != 429 || !strings.Contains(body, `tag \"checkout\" of team \"search\"`) {
		t.Fatalf("second checkout: %d %s", resp.StatusCode, body)
	}
	// The tag's limit does not hold back other tags or untagged requests.
	for _, h := range [][]string{nil, tag("browse")} {
		if resp, body := g.call(t, g.keys["search"], chatBody, h...); resp.StatusCode != 200 {
			t.Fatalf("%v: %d %s", h, resp.StatusCode, body)
		}
	}
	// The tag from the body's metadata counts too.
	resp, _ = g.call(t, g.keys["search"], `{"model":"m","metadata":{"tag":"checkout"},"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 429 {
		t.Fatalf("metadata tag: %d", resp.StatusCode)
	}
	tags := map[string]int{}
	for _, r := range g.records(t, "search") {
		tags[r.Tag]++
	}
	if tags["checkout"] != 3 || tags["browse"] != 1 || tags[""] != 1 {
		t.Fatalf("tags recorded: %v", tags)
	}
}

func testSettlement(t *testing.T, open usagetest.Opener) {
	g := newGW(t, gwOptions{open: open, limits: "limits: {tokens_per_minute: 100000, cost_per_hour_usd: 10}"})
	if resp, body := g.call(t, g.keys["search"], chatBody); resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	// The upstream reported 11 input and 2 output tokens: once the lease is
	// given back, the counters hold exactly that, not the reservation
	// (8 + 4096 tokens).
	flush(t, g.lim)
	minute := store.BudgetKey("search", "", "minute", tLimits.Truncate(time.Minute))
	if got := counterValue(t, g.sw, minute, "tokens"); got != 13 {
		t.Fatalf("tokens counter %v, want 13", got)
	}
	hour := store.BudgetKey("search", "", "hour", tLimits.Truncate(time.Hour))
	// 11 x 1 + 2 x 2 = 15 micro-dollars.
	if got := counterValue(t, g.sw, hour, "cost_nano_usd"); got != 15_000 {
		t.Fatalf("cost counter %v, want 15000", got)
	}
	it, _, _ := g.sw.Get(ctxT(t), minute)
	if want := tLimits.Truncate(time.Minute).Add(time.Minute); !it.Expires.Equal(want) {
		t.Fatalf("minute counter expires %v, want %v", it.Expires, want)
	}
	// A stream settles too (tokens of the usage chunk).
	resp, _ := g.call(t, g.keys["search"], `{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	if resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}
	flush(t, g.lim)
	if got := counterValue(t, g.sw, minute, "tokens"); got != 26 {
		t.Fatalf("tokens counter after a stream %v, want 26", got)
	}
}

func testStoreOutage(t *testing.T, open usagetest.Opener) {
	g := newGW(t, gwOptions{open: open, limits: "limits: {requests_per_minute: 100}"})
	g.sw.SetDown(true)
	for i := 0; i < 3; i++ {
		if resp, body := g.call(t, g.keys["search"], chatBody); resp.StatusCode != 200 {
			t.Fatalf("fail-open: %d %s", resp.StatusCode, body)
		}
	}
	logs := g.logs.String()
	if strings.Count(logs, "limits: usage store unavailable; admitting") != 1 || !strings.Contains(logs, "usage record not stored") {
		t.Fatalf("outage not logged once:\n%s", logs)
	}
	g.sw.SetDown(false)
	if resp, _ := g.call(t, g.keys["search"], chatBody); resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode)
	}

	// fail_closed refuses while the store is down, with no upstream call.
	closed := newGW(t, gwOptions{open: open, limits: "limits: {requests_per_minute: 100}",
		extra: "\nusage: {fail_closed: true, store_timeout: 5s}\n"})
	closed.sw.SetDown(true)
	resp, body := closed.call(t, closed.keys["search"], chatBody)
	if resp.StatusCode != 502 || !strings.Contains(body, `"type":"unavailable"`) || !strings.Contains(body, `"code":"usage_store_unavailable"`) {
		t.Fatalf("fail-closed: %d %s", resp.StatusCode, body)
	}
	if closed.up.hits.Load() != 0 {
		t.Fatal("fail-closed request reached the upstream")
	}
	closed.sw.SetDown(false)
	closed.clk.Advance(time.Second) // a failed store is not asked again for a second
	if resp, _ := closed.call(t, closed.keys["search"], chatBody); resp.StatusCode != 200 {
		t.Fatalf("after recovery: %d", resp.StatusCode)
	}
}

// TestCeilings: plan ceilings refuse with invalid_request before any store
// call or upstream call; without max_tokens the ceiling is reserved.
func TestCeilings(t *testing.T) {
	g := newGW(t, gwOptions{open: openEmbedded, limits: "limits: {max_input_tokens: 20, max_output_tokens: 100, tokens_per_minute: 100000}"})
	long := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("y", 200) + `"}]}`
	resp, body := g.call(t, g.keys["search"], long)
	if resp.StatusCode != 400 || !strings.Contains(body, `"code":"max_input_tokens_exceeded"`) || !strings.Contains(body, `"param":"messages"`) {
		t.Fatalf("long input: %d %s", resp.StatusCode, body)
	}
	// Each output-limit field is checked, and when both are sent the larger
	// one (an upstream may honour either) is bounded: the review sent
	// max_completion_tokens within the ceiling and max_tokens far above it.
	for fields, param := range map[string]string{
		`"max_tokens":101`: "max_tokens", `"max_completion_tokens":101`: "max_completion_tokens",
		`"max_completion_tokens":10,"max_tokens":100000`: "max_tokens",
		`"max_tokens":10,"max_completion_tokens":100000`: "max_completion_tokens",
	} {
		resp, body := g.call(t, g.keys["search"], `{"model":"m",`+fields+`,"messages":[{"role":"user","content":"hi"}]}`)
		if resp.StatusCode != 400 || !strings.Contains(body, `"code":"max_output_tokens_exceeded"`) || !strings.Contains(body, `"param":"`+param+`"`) {
			t.Fatalf("%s over the ceiling: %d %s", fields, resp.StatusCode, body)
		}
	}
	if g.up.hits.Load() != 0 {
		t.Fatal("a request over a ceiling reached the upstream")
	}
	for _, it := range g.spy.Written() {
		if strings.HasPrefix(it.Key.PK, "budget#") {
			t.Fatalf("a refused request touched a counter: %s", it.Key)
		}
	}
	// Without max_tokens the ceiling (100) is reserved: 8 + 100 tokens.
	cfg := g.cfg.Load()
	lim := teams.NewLimiter(g.sw, func() *config.Config { return cfg }, nil)
	lim.Now = g.clk.Now
	adm := admission(t, cfg, "search", "", chatBody)
	if _, err := lim.Admit(ctxT(t), adm); err != nil {
		t.Fatal(err)
	}
	// ... and the provider is asked for at most that many tokens.
	if adm.OutputCap != 100 {
		t.Fatalf("output cap = %d, want the ceiling 100", adm.OutputCap)
	}
	minute := store.BudgetKey("search", "", "minute", tLimits.Truncate(time.Minute))
	if got := counterValue(t, g.sw, minute, "tokens"); got != 108 {
		t.Fatalf("reserved %v tokens, want 108", got)
	}
	withMax := admission(t, cfg, "search", "", `{"model":"m","max_tokens":50,"messages":[{"role":"user","content":"hi"}]}`)
	if _, err := lim.Admit(ctxT(t), withMax); err != nil || withMax.OutputCap != 0 {
		t.Fatalf("a client's own max_tokens got a cap %d (%v)", withMax.OutputCap, err)
	}
	if resp, body := g.call(t, g.keys["search"], chatBody); resp.StatusCode != 200 {
		t.Fatalf("within ceilings: %d %s", resp.StatusCode, body)
	}
}

// flush gives back every lease of lim.
func flush(t *testing.T, lim *teams.Limiter) {
	t.Helper()
	if err := lim.Flush(ctxT(t)); err != nil {
		t.Fatalf("flush: %v", err)
	}
}

func openEmbedded(t testing.TB, now func() time.Time) store.Store {
	t.Helper()
	s, err := embedded.Open("", embedded.WithClock(now))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestEstimateUsesTheMostExpensiveTarget: the cost reserved is priced at
// the dearest target of the chain, not the primary.
func TestEstimateUsesTheMostExpensiveTarget(t *testing.T) {
	clk := usagetest.NewClock(tLimits)
	s := openEmbedded(t, clk.Now)
	cfg := limitsConfig(t, "limits: {cost_per_day_usd: 100}")
	lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	body := strings.Replace(body400, `"model":"m"`, `"model":"chain"`, 1)
	if _, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body)); err != nil {
		t.Fatal(err)
	}
	// up/up-dear: 107 x 10 + 1000 x 30 = 31,070 micro-dollars. Giving the
	// leases back (a take ahead may have run) leaves the reservation alone.
	flush(t, lim)
	day := time.Date(2026, 11, 3, 0, 0, 0, 0, time.UTC)
	if got := counterValue(t, s, store.BudgetKey("search", "", "day", day), "cost_nano_usd"); got != 31_070_000 {
		t.Fatalf("reserved %v nano-USD, want 31,070,000 (the dear target's price)", got)
	}
}

// TestRetryAfterIsTheWindowsEnd: a request whose estimate alone exceeds the
// hour's budget is refused until the hour ends.
func TestRetryAfterIsTheWindowsEnd(t *testing.T) {
	clk := usagetest.NewClock(time.Date(2026, 11, 3, 10, 20, 0, 0, time.UTC))
	s := openEmbedded(t, clk.Now)
	cfg := limitsConfig(t, "limits: {cost_per_hour_usd: 0.001}")
	lim := teams.NewLimiter(s, func() *config.Config { return cfg }, nil)
	lim.Now = clk.Now
	_, err := lim.Admit(ctxT(t), admission(t, cfg, "search", "", body400))
	var ge *gwerr.Error
	if !errors.As(err, &ge) || ge.Category != gwerr.BudgetExceeded || ge.RetryAfter != 40*time.Minute ||
		!strings.Contains(ge.Message, "per hour") {
		t.Fatalf("refusal %v (retry after %v)", err, ge.RetryAfter)
	}
	// Teams without limits, unknown teams and anonymous callers are not
	// limited and cost no store call.
	for _, team := range []string{"free", "nobody", ""} {
		settle, err := lim.Admit(ctxT(t), admission(t, cfg, team, "", body400))
		if err != nil || settle != nil {
			t.Fatalf("team %q: %v", team, err)
		}
	}
}

func TestEstimateInputTokens(t *testing.T) {
	body := `{"model":"m","messages":[
	  {"role":"system","content":"You are helpful."},
	  {"role":"user","content":"Hello there, how are you?"},
	  {"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},
	  {"role":"tool","tool_call_id":"call_1","content":"sunny"},
	  {"role":"user","content":[{"type":"text","text":"describe"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}],
	 "tools":[{"type":"function","function":{"name":"get_weather","description":"Weather for a city","parameters":{"type":"object"}}}]}`
	req, err := chatwire.Parse([]byte(body), chatwire.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	// Text bytes: 16 + 25 + (11 + 16) + (6 + 5) + 8 + (11 + 18 + 17) = 133
	// -> ceil(133/4) = 34 tokens; 5 messages x 4 + 3 priming = 23; one
	// image part 768. Total 825.
	prompt, _, err := chat.ToPrompt(req, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	if got := teams.EstimateInputTokens(prompt); got != 825 {
		t.Fatalf("estimate %d, want 825", got)
	}
}

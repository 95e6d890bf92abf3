package usage_test

import (
	"math"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/usage"
)

const testConfig = `
providers:
  openai: {kind: openai, base_url: "https://api.openai.com/v1"}
  azure: {kind: openai, base_url: "https://x.openai.azure.com/openai/v1"}
  anthropic: {kind: anthropic, base_url: "https://api.anthropic.com"}
  bedrock: {kind: bedrock, region: us-east-1}
routes:
  gpt-4.1-mini: {targets: [{provider: openai, model: gpt-4.1-mini}, {provider: azure, model: gpt-4.1-mini}]}
  claude: {targets: [{provider: anthropic, model: claude-sonnet-4-5}, {provider: bedrock, model: claude-sonnet-4-5}]}
teams:
  search: {keys: [{id: k1, sha256: "0000000000000000000000000000000000000000000000000000000000000001"}]}
  ads: {}
  ops: {admin: true}
prices:
  "openai/gpt-4.1-mini": {input: 0.40, output: 1.60, cached_input: 0.10}
  "gpt-4.1-mini": {input: 99, output: 99}
  "claude-sonnet-4-5": {input: 3, output: 15, cached_input: 0.30, cache_write: 3.75}
  "openai/gpt-4o": {input: 2.50, output: 10}
`

func mustConfig(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Parse([]byte(yaml))
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}

// TestCostTable checks the price arithmetic against hand-computed costs.
// Prices are USD per million tokens; input counts every prompt token
// (cached and cache-written ones included).
func TestCostTable(t *testing.T) {
	cfg := mustConfig(t, testConfig)
	cases := []struct {
		name                        string
		target                      string
		in, out, cached, cacheWrite int
		want                        float64
		arithmetic                  string
	}{
		{"one million input tokens", "openai/gpt-4.1-mini", 1_000_000, 0, 0, 0, 0.40,
			"1,000,000 x 0.40 / 1e6"},
		{"input and output", "openai/gpt-4.1-mini", 1000, 500, 0, 0, 0.0012,
			"1000 x 0.40 + 500 x 1.60 = 400 + 800 = 1200 / 1e6"},
		{"cached input billed at the cached price", "openai/gpt-4.1-mini", 1000, 200, 600, 0, 0.00054,
			"(1000-600) x 0.40 + 600 x 0.10 + 200 x 1.60 = 160 + 60 + 320 = 540 / 1e6"},
		{"cache write defaults to the input price", "openai/gpt-4.1-mini", 1000, 0, 0, 500, 0.0004,
			"500 x 0.40 + 500 x 0.40 (cache_write unset) = 400 / 1e6"},
		{"anthropic with cache read and write", "anthropic/claude-sonnet-4-5", 10_000, 1000, 2000, 3000, 0.04185,
			"(10000-2000-3000) x 3 + 2000 x 0.30 + 3000 x 3.75 + 1000 x 15 = 15000 + 600 + 11250 + 15000 = 41850 / 1e6"},
		{"model-only entry matches any provider", "bedrock/claude-sonnet-4-5", 1000, 1000, 0, 0, 0.018,
			"1000 x 3 + 1000 x 15 = 18000 / 1e6"},
		{"provider/model wins over model", "azure/gpt-4.1-mini", 1000, 0, 0, 0, 0.099,
			"azure has no provider entry: model entry, 1000 x 99 / 1e6"},
		{"cached beyond input is clamped", "openai/gpt-4.1-mini", 100, 0, 500, 0, 0.00001,
			"cached clamped to 100: 100 x 0.10 = 10 / 1e6"},
		{"unpriced model costs nothing", "openai/o3", 1000, 1000, 0, 0, 0, "no entry"},
		{"no target (nothing served)", "", 1000, 1000, 0, 0, 0, "no target"},
		{"output only", "openai/gpt-4o", 0, 2500, 0, 0, 0.025, "2500 x 10 / 1e6"},
	}
	for _, c := range cases {
		rec := &exchange.Record{Target: c.target, InputTokens: c.in, OutputTokens: c.out, CachedTokens: c.cached, CacheWriteTokens: c.cacheWrite}
		rec.Provider, _, _ = strings.Cut(c.target, "/")
		got := usage.Cost(cfg, rec)
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s: cost = %.10f, want %.10f (%s)", c.name, got, c.want, c.arithmetic)
		}
	}
}

func TestEstimateCostAndNano(t *testing.T) {
	p := config.Price{Input: 3, Output: 15}
	// 2000 x 3 + 4096 x 15 = 6000 + 61440 = 67440 / 1e6
	if got := usage.EstimateCost(p, 2000, 4096); math.Abs(got-0.06744) > 1e-12 {
		t.Fatalf("EstimateCost = %v", got)
	}
	if usage.NanoUSD(0.06744) != 67_440_000 || usage.USD(67_440_000) != 0.06744 {
		t.Fatal("nano-dollar conversion")
	}
}

// A stage call's own price (a guardrail's text units, Attempt.CostUSD) is
// part of the request's cost; a generation attempt's is not read.
func TestCostAddsStageCallPrices(t *testing.T) {
	cfg := &config.Config{}
	rec := &exchange.Record{Attempts: []exchange.Attempt{
		{Target: "bedrock-guardrail/abc:1", Stage: exchange.StageModerationInput, CostUSD: 0.002},
		{Target: "bedrock-guardrail/abc:1", Stage: exchange.StageModerationOutput, CostUSD: 0.003, Calls: 3},
		{Target: "p/m", CostUSD: 7},
	}}
	if got := usage.Cost(cfg, rec); got < 0.004999 || got > 0.005001 {
		t.Fatalf("cost %v, want 0.005", got)
	}
}

// Cost prices a record its caller owns (it sets the cache cost parts);
// Total gives the same figure and writes nothing, so readers of a shared
// record (the limiter's settlement) never race with its owner.
func TestTotalReadsTheRecordOnly(t *testing.T) {
	cfg := mustConfig(t, testConfig)
	rec := exchange.Record{Target: "anthropic/claude-sonnet-4-5", Provider: "anthropic", InputTokens: 3000, OutputTokens: 100,
		CachedTokens: 1000, CacheWriteTokens: 1000}
	before := rec
	total := usage.Total(cfg, &rec)
	if rec.CacheReadCostUSD != before.CacheReadCostUSD || rec.CacheWriteCostUSD != before.CacheWriteCostUSD {
		t.Fatalf("Total wrote the record: %+v", rec)
	}
	if got := usage.Cost(cfg, &rec); got != total || total == 0 {
		t.Fatalf("Cost %v, Total %v", got, total)
	}
	if math.Abs(rec.CacheReadCostUSD-0.0003) > 1e-12 || math.Abs(rec.CacheWriteCostUSD-0.00375) > 1e-12 {
		t.Fatalf("Cost set cache parts %v / %v, want 0.0003 / 0.00375", rec.CacheReadCostUSD, rec.CacheWriteCostUSD)
	}
}

package usage

import (
	"math"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
)

// perMillion converts prices per million tokens.
const perMillion = 1e6

// Cost prices a finished request with the config's price table (see
// [TokenCost]); its signature is server.Options.Cost. It is the cost of the
// serving target's tokens plus that of the attempts recorded with tokens
// (a chat-based moderation check; a generation attempt discarded inside
// the head buffer: each priced at its own target) and the stage calls' own
// prices (Attempt.CostUSD: guardrail text
// units). A record without a serving target (a cache hit, a refusal)
// costs only its stage calls; an unpriced target costs 0. The serving
// target's server-side tool use (Record.ToolCalls) costs ToolFees over the
// request's duration (LatencyMillis), a discarded attempt's
// (Attempt.ToolCalls) over its own.
func Cost(cfg *config.Config, rec *exchange.Record) float64 {
	if cfg == nil || rec == nil {
		return 0
	}
	total := 0.0
	if rec.Target != "" {
		provider, model, _ := strings.Cut(rec.Target, "/")
		if rec.Provider != "" && strings.HasPrefix(rec.Target, rec.Provider+"/") {
			provider, model = rec.Provider, strings.TrimPrefix(rec.Target, rec.Provider+"/")
		}
		if p, ok := cfg.PriceFor(provider, model); ok {
			total = TokenCost(p, rec.InputTokens, rec.OutputTokens, rec.CachedTokens, rec.CacheWriteTokens) +
				ToolFees(p, rec.ToolCalls, millis(rec.LatencyMillis))
		}
	}
	for _, a := range rec.Attempts {
		if a.Stage != "" {
			total += max(a.CostUSD, 0)
		}
		if a.InputTokens+a.OutputTokens == 0 && a.ToolCalls.IsZero() {
			continue
		}
		provider, model, _ := strings.Cut(a.Target, "/")
		if p, ok := cfg.PriceFor(provider, model); ok {
			total += TokenCost(p, a.InputTokens, a.OutputTokens, 0, 0) + ToolFees(p, a.ToolCalls, millis(a.LatencyM))
		}
	}
	return total
}

// TokenCost is the cost in USD of one request's tokens at price p (USD per
// million tokens). Input counts every prompt token, cached and cache-written
// ones included (the gateway's convention for every provider), so:
//
//	cost = (input - cached - cache_write) x p.Input
//	     + cached      x p.CachedInput (default p.Input)
//	     + cache_write x p.CacheWrite  (default p.Input)
//	     + output      x p.Output
//	     all divided by 1,000,000.
//
// Cached and cache-write counts are clamped so that their sum never exceeds
// input; negative counts count as 0.
func TokenCost(p config.Price, input, output, cached, cacheWrite int) float64 {
	input, output = max(input, 0), max(output, 0)
	cached = min(max(cached, 0), input)
	cacheWrite = min(max(cacheWrite, 0), input-cached)
	plain := input - cached - cacheWrite
	c := float64(plain)*p.Input + float64(cached)*p.CachedInputPrice() +
		float64(cacheWrite)*p.CacheWritePrice() + float64(output)*p.Output
	return c / perMillion
}

// ToolFees is the cost in USD of server-side tool use at price p, for a
// request (or attempt) that lasted d: each kind's count times
// p.ToolCalls[kind], plus each code-execution container (c.Containers)
// for max(config.MinContainerTime, d) at p.ToolHours["code_execution"]
// per hour: the container cannot have run longer than the request that
// used it, and Anthropic bills no less than its minimum. An unpriced kind
// costs 0.
func ToolFees(p config.Price, c exchange.ToolCalls, d time.Duration) float64 {
	total := 0.0
	for _, k := range config.FeeKinds {
		if n := c.Get(k); n > 0 {
			total += float64(n) * p.ToolCalls[k]
		}
	}
	if c.Containers > 0 {
		total += float64(c.Containers) * max(config.MinContainerTime, d).Hours() * p.ToolHours[config.FeeCodeExecution]
	}
	return total
}

// millis is a duration of ms milliseconds.
func millis(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// EstimateCost is the cost in USD of input uncached tokens and output
// tokens at price p: the admission estimate.
func EstimateCost(p config.Price, input, output int64) float64 {
	return (float64(max(input, 0))*p.Input + float64(max(output, 0))*p.Output) / perMillion
}

// NanoUSD converts USD to integral nano-dollars (rounded to nearest), the
// unit of counters and sums: integer sums are exact and order-independent.
func NanoUSD(usd float64) int64 { return int64(math.Round(usd * 1e9)) }

// USD converts nano-dollars back to USD.
func USD(nano int64) float64 { return float64(nano) / 1e9 }

package usage

import (
	"cmp"
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
//
// The serving target is priced at the record's service tier
// (Record.ServiceTier, else the tier its target id asks for; Price.AtTier),
// each other attempt at its own target's tier. Cost prices a record its
// caller owns: it also sets the record's CacheReadCostUSD and
// CacheWriteCostUSD, the parts of the serving target's cost paid for cache
// reads and writes (Total only reads).
func Cost(cfg *config.Config, rec *exchange.Record) float64 {
	if rec == nil {
		return 0
	}
	total, read, write := costs(cfg, rec)
	rec.CacheReadCostUSD, rec.CacheWriteCostUSD = read, write
	return total
}

// Total is Cost without setting anything on rec: for readers of a record
// they do not own (the limiter's settlement).
func Total(cfg *config.Config, rec *exchange.Record) float64 {
	total, _, _ := costs(cfg, rec)
	return total
}

// costs is the record's cost and the serving target's cache read and
// write parts of it (see Cost); it reads rec only.
func costs(cfg *config.Config, rec *exchange.Record) (total, cacheRead, cacheWrite float64) {
	if cfg == nil || rec == nil {
		return 0, 0, 0
	}
	if rec.Target != "" {
		provider, model, tier := config.SplitTargetID(rec.Target)
		if rec.Provider != "" && strings.HasPrefix(rec.Target, rec.Provider+"/") {
			provider = rec.Provider
		}
		if p, ok := cfg.PriceFor(provider, model); ok {
			p = p.AtTier(cmp.Or(rec.ServiceTier, tier))
			b := TokenCost(p, Tokens{Input: rec.InputTokens, Output: rec.OutputTokens, CacheRead: rec.CachedTokens,
				CacheWrite: rec.CacheWriteTokens, CacheWrite1h: rec.CacheWrite1hTokens})
			cacheRead, cacheWrite = b.CacheRead, b.CacheWrite
			total = b.Total() + ToolFees(p, rec.ToolCalls, millis(rec.LatencyMillis))
		}
	}
	for _, a := range rec.Attempts {
		if a.Stage != "" {
			total += max(a.CostUSD, 0)
		}
		if a.InputTokens+a.OutputTokens == 0 && a.ToolCalls.IsZero() {
			continue
		}
		provider, model, tier := config.SplitTargetID(a.Target)
		if p, ok := cfg.PriceFor(provider, model); ok {
			p = p.AtTier(tier)
			total += TokenCost(p, Tokens{Input: a.InputTokens, Output: a.OutputTokens}).Total() + ToolFees(p, a.ToolCalls, millis(a.LatencyM))
		}
	}
	return total, cacheRead, cacheWrite
}

// Tokens are the token counts of one request as the gateway counts them
// for every provider: Input counts every prompt token, cache reads and
// cache writes included; CacheWrite1h is the part of CacheWrite written
// with a 1-hour lifetime.
type Tokens struct {
	Input, Output, CacheRead, CacheWrite, CacheWrite1h int
}

// TokenCosts are the parts of a request's token cost in USD.
type TokenCosts struct {
	// Input is the uncached input's, Output the output's.
	Input, Output float64
	// CacheRead is the cache reads', CacheWrite the cache writes' (both
	// lifetimes).
	CacheRead, CacheWrite float64
}

// Total is the sum of the parts.
func (c TokenCosts) Total() float64 { return c.Input + c.Output + c.CacheRead + c.CacheWrite }

// TokenCost is the cost in USD of one request's tokens at price p (USD per
// million tokens). Input counts every prompt token, cached and cache-written
// ones included (the gateway's convention for every provider), so:
//
//	cost = (input - cached - cache_write) x p.Input
//	     + cached      x p.CachedInput (default p.Input)
//	     + (cache_write - cache_write_1h) x p.CacheWrite  (default p.Input)
//	     + cache_write_1h x p.CacheWrite1h (default p.CacheWrite)
//	     + output      x p.Output
//	     all divided by 1,000,000.
//
// Cached and cache-write counts are clamped so that their sum never exceeds
// input, and 1-hour writes to the writes; negative counts count as 0.
func TokenCost(p config.Price, t Tokens) TokenCosts {
	input, output := max(t.Input, 0), max(t.Output, 0)
	cached := min(max(t.CacheRead, 0), input)
	cacheWrite := min(max(t.CacheWrite, 0), input-cached)
	write1h := min(max(t.CacheWrite1h, 0), cacheWrite)
	plain := input - cached - cacheWrite
	return TokenCosts{
		Input:      float64(plain) * p.Input / perMillion,
		Output:     float64(output) * p.Output / perMillion,
		CacheRead:  float64(cached) * p.CachedInputPrice() / perMillion,
		CacheWrite: (float64(cacheWrite-write1h)*p.CacheWritePrice() + float64(write1h)*p.CacheWrite1hPrice()) / perMillion,
	}
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

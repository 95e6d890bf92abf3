// Package usage holds the usage record (one per client request, whatever
// its outcome, metadata only: prompt and completion text never enter a
// record), the store-backed [Recorder] that persists records idempotently,
// the cost arithmetic ([Cost], [TokenCost]), the daily per-team [Roller]
// and the read side: [BuildReport], the cost table and the GET /v1/usage
// handler ([NewHandler]).
//
// # Storage
//
// A record is one item at store.UsageKey(team, time, requestID) (partition
// usage#<team>#<day>), its JSON in Data, expiring after usage.ttl (default
// 90 days). A rollup is one item per team-day at store.RollupKey(team, day),
// with headline totals as Nums and the breakdown (per route, per tag, per
// outcome) as JSON in Data; rollups never expire.
package usage

import (
	"time"

	"github.com/llmgw/llmgw/pkg/failover"
)

// Record is the metadata of one client request.
type Record struct {
	RequestID string    `json:"request_id"`
	Time      time.Time `json:"time"`
	// Team is the caller's team ("anonymous" once stored, for callers
	// without one).
	Team string `json:"team,omitempty"`
	// KeyID names the team key used (its config id, never the key).
	KeyID         string             `json:"key_id,omitempty"`
	Tag           string             `json:"tag,omitempty"`
	Route         string             `json:"route,omitempty"`
	Target        string             `json:"target,omitempty"`   // provider/model that served
	Provider      string             `json:"provider,omitempty"` // its provider id
	Attempts      []failover.Attempt `json:"attempts,omitempty"`
	FallbackDepth int                `json:"fallback_depth"`
	// Outcome is "ok", an error category, or "client_cancelled".
	Outcome       string  `json:"outcome"`
	Status        int     `json:"status"`
	Stream        bool    `json:"stream"`
	TTFTMillis    float64 `json:"ttft_ms,omitempty"`
	LatencyMillis float64 `json:"latency_ms"`
	// InputTokens counts every prompt token, cached or not (cache reads
	// and cache writes included).
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
	// CachedTokens are the input tokens read from the provider's prompt
	// cache; CacheWriteTokens those written to it.
	CachedTokens     int `json:"cached_tokens,omitempty"`
	CacheWriteTokens int `json:"cache_write_tokens,omitempty"`
	// CacheHit reports that the prompt cache served part of the input
	// (CachedTokens > 0); set when the record is stored.
	CacheHit  bool    `json:"cache_hit,omitempty"`
	Estimated bool    `json:"tokens_estimated,omitempty"`
	CostUSD   float64 `json:"cost_usd,omitempty"`
}

// Package usage holds the usage record: one per client request, whatever
// its outcome, with metadata only. Prompt and completion text never enter a
// record.
package usage

import (
	"time"

	"github.com/llmgw/llmgw/pkg/failover"
)

// Record is the metadata of one client request.
type Record struct {
	RequestID     string             `json:"request_id"`
	Time          time.Time          `json:"time"`
	Team          string             `json:"team,omitempty"`
	Tag           string             `json:"tag,omitempty"`
	Route         string             `json:"route,omitempty"`
	Target        string             `json:"target,omitempty"`   // provider/model that served
	Provider      string             `json:"provider,omitempty"` // its provider id
	Attempts      []failover.Attempt `json:"attempts,omitempty"`
	FallbackDepth int                `json:"fallback_depth"`
	// Outcome is "ok", an error category, or "client_cancelled".
	Outcome          string  `json:"outcome"`
	Status           int     `json:"status"`
	Stream           bool    `json:"stream"`
	TTFTMillis       float64 `json:"ttft_ms,omitempty"`
	LatencyMillis    float64 `json:"latency_ms"`
	InputTokens      int     `json:"input_tokens"`
	OutputTokens     int     `json:"output_tokens"`
	CachedTokens     int     `json:"cached_tokens,omitempty"`
	CacheWriteTokens int     `json:"cache_write_tokens,omitempty"`
	Estimated        bool    `json:"tokens_estimated,omitempty"`
	CostUSD          float64 `json:"cost_usd,omitempty"`
}

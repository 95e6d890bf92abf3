package exchange

import (
	"context"
	"slices"
	"time"
)

// Record is the metadata of one client request: one per request, whatever
// its outcome. Prompt and completion text never enter a record.
type Record struct {
	RequestID string `json:"request_id"`
	// TraceID is the request's W3C trace id (exchange.Request.TraceID).
	TraceID string    `json:"trace_id,omitempty"`
	Time    time.Time `json:"time"`
	// API is the client API the request arrived on.
	API API `json:"api,omitempty"`
	// Operation is what the request asked of its API when it is not a
	// generation: [OperationCountTokens]; empty for a generation.
	Operation string `json:"operation,omitempty"`
	// Team is the caller's team ("anonymous" once stored, for callers
	// without one).
	Team string `json:"team,omitempty"`
	// KeyID names the team key used (its config id, never the key).
	KeyID         string    `json:"key_id,omitempty"`
	Tag           string    `json:"tag,omitempty"`
	Route         string    `json:"route,omitempty"`
	Target        string    `json:"target,omitempty"`   // provider/model that served
	Provider      string    `json:"provider,omitempty"` // its provider id
	Variant       string    `json:"variant,omitempty"`  // its prompt variant, if any
	Attempts      []Attempt `json:"attempts,omitempty"`
	FallbackDepth int       `json:"fallback_depth"`
	// Outcome is "ok", an error category, or "client_cancelled".
	Outcome string `json:"outcome"`
	// ClientDropped is set when the gateway dropped a client that stopped
	// reading (outcome client_cancelled): a write stayed blocked past
	// server.client_idle_timeout.
	ClientDropped bool `json:"client_dropped,omitempty"`
	Status        int  `json:"status"`
	Stream        bool `json:"stream"`
	// Pacing is the pacing profile the response was released at.
	Pacing        string  `json:"pacing,omitempty"`
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
	// CacheWrite1hTokens is the part of CacheWriteTokens written with a
	// 1-hour lifetime (Anthropic models), priced apart.
	CacheWrite1hTokens int `json:"cache_write_1h_tokens,omitempty"`
	// CacheReadCostUSD and CacheWriteCostUSD are the parts of CostUSD
	// paid for the serving target's cache reads and cache writes.
	CacheReadCostUSD  float64 `json:"cache_read_cost_usd,omitempty"`
	CacheWriteCostUSD float64 `json:"cache_write_cost_usd,omitempty"`
	// ServiceTier is the provider service tier that served the request:
	// the tier the response reports, else the one its target asked for
	// (Target.ServiceTier); "" for the provider's default. Prices follow it.
	ServiceTier string `json:"service_tier,omitempty"`
	// CacheHit reports that the prompt cache served part of the input
	// (CachedTokens > 0); set when the record is stored.
	CacheHit bool `json:"cache_hit,omitempty"`
	// ToolCalls counts the serving target's billed server-side tool calls
	// (web searches, fetches, ...), priced per call (Price.ToolCalls).
	ToolCalls ToolCalls `json:"tool_calls,omitzero"`
	Estimated bool      `json:"tokens_estimated,omitempty"`
	// DroppedFeatures lists the request features (keys) the serving target
	// went without, as the route's translate_without allowed.
	DroppedFeatures []string `json:"dropped_features,omitempty"`
	// MalformedFrames counts upstream frames skipped as invalid JSON.
	MalformedFrames int     `json:"malformed_frames,omitempty"`
	CostUSD         float64 `json:"cost_usd,omitempty"`
	// ResponseCache is the response cache's verdict: "hit" (served from
	// the cache: no upstream call, no tokens, cost 0), "miss", "bypass"
	// (the client asked for a fresh answer), or "" when the request was
	// not cacheable. Distinct from CacheHit, the provider's prompt cache.
	ResponseCache string `json:"response_cache,omitempty"`
	// SavedCostUSD is, on a hit, what the cached answer cost when it was
	// generated (its tokens at today's prices).
	SavedCostUSD float64 `json:"saved_cost_usd,omitempty"`
	// ResponseID is the Responses API response the request created or
	// acted on (an upstream id, never content), for a target that keeps
	// Responses state.
	ResponseID string `json:"response_id,omitempty"`
	// ContinuedBy lists the targets that continued the stream after its
	// target (Target) was cut; the tokens are every attempt's sum.
	ContinuedBy []string `json:"continued_by,omitempty"`
	// FinishReasons are the finish reasons the answer carried, in order
	// (canonical, OpenAI's vocabulary): for traces; not stored.
	FinishReasons []string `json:"-"`
}

// NoteFinish adds a finish reason the answer carried (once each).
func (rec *Record) NoteFinish(reason string) {
	if reason != "" && !slices.Contains(rec.FinishReasons, reason) {
		rec.FinishReasons = append(rec.FinishReasons, reason)
	}
}

// OperationCountTokens is the operation of a token-count request
// (Record.Operation; also its key-ledger slot, keyledger.Slot): nothing is
// generated, and its record carries no tokens.
const OperationCountTokens = "count_tokens"

// NewRecord starts the record of a request that has just arrived.
func NewRecord(r *Request) Record {
	return Record{RequestID: r.ID, TraceID: r.TraceID, Time: r.Start.UTC(), API: r.API, Outcome: "ok"}
}

// Fill copies what the request learned on its way (caller, route, tag,
// the trace) into the record.
func (rec *Record) Fill(r *Request) {
	if r.Caller != nil {
		rec.Team, rec.KeyID = r.Caller.Team, r.Caller.KeyID
	}
	rec.Route, rec.Tag, rec.Stream = r.Route, r.Tag, r.Stream
	rec.Target, rec.Provider, rec.Variant = r.Trace.Target, r.Trace.Provider, r.Trace.Variant
	rec.Attempts, rec.FallbackDepth = r.Trace.Attempts, r.Trace.FallbackDepth
	rec.MalformedFrames = r.Trace.MalformedFrames
	rec.ContinuedBy = r.Trace.Continued
}

// SetUsage copies an attempt's token counts into the record.
func (rec *Record) SetUsage(u TokenUsage) {
	rec.InputTokens, rec.OutputTokens = u.Input, u.Output
	rec.CachedTokens, rec.CacheWriteTokens, rec.Estimated = u.CacheRead, u.CacheWrite, u.Estimated
	rec.CacheWrite1hTokens = u.CacheWrite1h
	rec.ToolCalls = u.Tools
	if u.Tier != "" {
		rec.ServiceTier = u.Tier
	}
}

// Settle is called exactly once, after a request, with its final record,
// so that a limiter can replace its reservation with what was really spent.
type Settle func(ctx context.Context, rec *Record)

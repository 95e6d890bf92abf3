// Package requestlog writes the gateway's one log line per request: the
// metadata of its usage record (never prompt or completion text, never a
// key) as structured attributes.
package requestlog

import (
	"log/slog"
	"net"
	"net/http"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Write logs rec as the "request" line: info, or warn for a 5xx.
func Write(log *slog.Logger, r *http.Request, rec *exchange.Record) {
	level := slog.LevelInfo
	if rec.Status >= 500 {
		level = slog.LevelWarn
	}
	log.LogAttrs(r.Context(), level, "request",
		slog.String("request_id", rec.RequestID), slog.String("trace_id", rec.TraceID),
		slog.String("api", string(rec.API)), slog.String("route", rec.Route),
		slog.String("client_ip", ClientIP(r)),
		slog.String("team", rec.Team), slog.String("tag", rec.Tag),
		slog.Bool("stream", rec.Stream), slog.Int("status", rec.Status), slog.String("outcome", rec.Outcome),
		slog.String("provider", rec.Provider), slog.String("target", rec.Target), slog.String("variant", rec.Variant),
		slog.Any("attempts", rec.Attempts), slog.Int("fallback_depth", rec.FallbackDepth),
		slog.Float64("ttft_ms", rec.TTFTMillis), slog.Float64("latency_ms", rec.LatencyMillis),
		slog.Int("tokens_in", rec.InputTokens), slog.Int("tokens_out", rec.OutputTokens),
		slog.Int("tokens_cached", rec.CachedTokens), slog.Bool("tokens_estimated", rec.Estimated),
		slog.Float64("cost_usd", rec.CostUSD), slog.Int("malformed_frames", rec.MalformedFrames),
		slog.Bool("client_dropped", rec.ClientDropped), slog.String("response_cache", rec.ResponseCache),
		slog.Float64("saved_cost_usd", rec.SavedCostUSD), slog.String("pacing", rec.Pacing),
		slog.Any("continued_by", rec.ContinuedBy))
}

// ClientIP is the caller's address: on Lambda, lambdaurl puts the Function
// URL request context's source IP (no port) in RemoteAddr.
func ClientIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

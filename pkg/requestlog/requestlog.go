// Package requestlog writes the gateway's one log line per request: the
// metadata of its usage record (never prompt or completion text, never a
// key) as structured attributes.
//
// The line goes through the gateway's *slog.Logger. When that logger's
// handler is this package's [JSONHandler] (the gateway's mains use it), the
// line is built by an append-based encoder, with no reflection and no
// per-attribute allocation, byte for byte what slog.JSONHandler would
// write for the same record; any other handler (tests inject their own)
// gets the line through slog as usual.
package requestlog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Write logs rec as the "request" line: info, or warn for a 5xx.
func Write(log *slog.Logger, r *http.Request, rec *exchange.Record) {
	level := slog.LevelInfo
	if rec.Status >= 500 {
		level = slog.LevelWarn
	}
	if h, ok := log.Handler().(*JSONHandler); ok && finite(rec) {
		if !h.Enabled(r.Context(), level) {
			return
		}
		h.writeRequest(time.Now(), level, ClientIP(r), rec)
		return
	}
	log.LogAttrs(r.Context(), level, "request", attrs(ClientIP(r), rec)...)
}

// attrs are the line's attributes, in order.
func attrs(clientIP string, rec *exchange.Record) []slog.Attr {
	return []slog.Attr{
		slog.String("request_id", rec.RequestID), slog.String("trace_id", rec.TraceID),
		slog.String("api", string(rec.API)), slog.String("route", rec.Route),
		slog.String("client_ip", clientIP),
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
		slog.Any("continued_by", rec.ContinuedBy),
	}
}

// finite reports whether every float of the line is finite (slog writes an
// error text for the others; the encoder leaves those lines to slog).
func finite(rec *exchange.Record) bool {
	ok := func(f float64) bool { return !math.IsInf(f, 0) && !math.IsNaN(f) }
	if !ok(rec.TTFTMillis) || !ok(rec.LatencyMillis) || !ok(rec.CostUSD) || !ok(rec.SavedCostUSD) {
		return false
	}
	for i := range rec.Attempts {
		if !ok(rec.Attempts[i].LatencyM) {
			return false
		}
	}
	return true
}

// ClientIP is the caller's address: on Lambda, lambdaurl puts the Function
// URL request context's source IP (no port) in RemoteAddr.
func ClientIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

// JSONHandler is slog.JSONHandler with a fast path for the request line:
// every record goes to an inner slog.JSONHandler, except the line [Write]
// logs, which it encodes itself into the same writer (both under one lock,
// so lines never interleave). Create it with [NewJSONHandler].
type JSONHandler struct {
	inner slog.Handler
	w     *lockedWriter
	pool  sync.Pool
}

// lockedWriter serializes writes of whole lines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// NewJSONHandler returns a handler writing JSON lines to w, as
// slog.NewJSONHandler(w, opts) does. The request line's fast path assumes
// opts has no ReplaceAttr (with one, every line goes through slog).
func NewJSONHandler(w io.Writer, opts *slog.HandlerOptions) *JSONHandler {
	lw := &lockedWriter{w: w}
	h := &JSONHandler{inner: slog.NewJSONHandler(lw, opts), w: lw}
	if opts != nil && opts.ReplaceAttr != nil {
		h.w = nil // no fast path
	}
	h.pool.New = func() any { b := make([]byte, 0, 1024); return &b }
	return h
}

// Enabled implements slog.Handler.
func (h *JSONHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

// Handle implements slog.Handler.
func (h *JSONHandler) Handle(ctx context.Context, r slog.Record) error { return h.inner.Handle(ctx, r) }

// WithAttrs implements slog.Handler (the result has no fast path).
func (h *JSONHandler) WithAttrs(as []slog.Attr) slog.Handler { return h.inner.WithAttrs(as) }

// WithGroup implements slog.Handler (the result has no fast path).
func (h *JSONHandler) WithGroup(name string) slog.Handler { return h.inner.WithGroup(name) }

// writeRequest encodes and writes the request line.
func (h *JSONHandler) writeRequest(now time.Time, level slog.Level, clientIP string, rec *exchange.Record) {
	if h.w == nil {
		r := slog.NewRecord(now, level, "request", 0)
		r.AddAttrs(attrs(clientIP, rec)...)
		_ = h.inner.Handle(context.Background(), r)
		return
	}
	bp := h.pool.Get().(*[]byte)
	b := AppendRequestLine((*bp)[:0], now, level, clientIP, rec)
	_, _ = h.w.Write(b)
	if cap(b) <= 64<<10 {
		*bp = b
		h.pool.Put(bp)
	}
}

// AppendRequestLine appends the request line of rec, logged at now, to b:
// exactly what slog.JSONHandler writes (newline included) for the record
// [Write] logs. Every float of rec must be finite.
func AppendRequestLine(b []byte, now time.Time, level slog.Level, clientIP string, rec *exchange.Record) []byte {
	b = append(b, `{"time":"`...)
	b = now.Round(0).AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","level":"`...)
	b = append(b, level.String()...)
	b = append(b, `","msg":"request"`...)
	b = str(b, "request_id", rec.RequestID)
	b = str(b, "trace_id", rec.TraceID)
	b = str(b, "api", string(rec.API))
	b = str(b, "route", rec.Route)
	b = str(b, "client_ip", clientIP)
	b = str(b, "team", rec.Team)
	b = str(b, "tag", rec.Tag)
	b = boolean(b, "stream", rec.Stream)
	b = integer(b, "status", rec.Status)
	b = str(b, "outcome", rec.Outcome)
	b = str(b, "provider", rec.Provider)
	b = str(b, "target", rec.Target)
	b = str(b, "variant", rec.Variant)
	b = append(b, `,"attempts":`...)
	b = appendAttempts(b, rec.Attempts)
	b = integer(b, "fallback_depth", rec.FallbackDepth)
	b = float(b, "ttft_ms", rec.TTFTMillis)
	b = float(b, "latency_ms", rec.LatencyMillis)
	b = integer(b, "tokens_in", rec.InputTokens)
	b = integer(b, "tokens_out", rec.OutputTokens)
	b = integer(b, "tokens_cached", rec.CachedTokens)
	b = boolean(b, "tokens_estimated", rec.Estimated)
	b = float(b, "cost_usd", rec.CostUSD)
	b = integer(b, "malformed_frames", rec.MalformedFrames)
	b = boolean(b, "client_dropped", rec.ClientDropped)
	b = str(b, "response_cache", rec.ResponseCache)
	b = float(b, "saved_cost_usd", rec.SavedCostUSD)
	b = str(b, "pacing", rec.Pacing)
	b = append(b, `,"continued_by":`...)
	if rec.ContinuedBy == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, t := range rec.ContinuedBy {
			if i > 0 {
				b = append(b, ',')
			}
			b = jsonb.AppendString(b, t)
		}
		b = append(b, ']')
	}
	return append(b, '}', '\n')
}

// appendAttempts writes attempts as encoding/json does (slog marshals
// slog.Any values with it, HTML escaping off).
func appendAttempts(b []byte, as []exchange.Attempt) []byte {
	if as == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range as {
		a := &as[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"target":`...)
		b = jsonb.AppendString(b, a.Target)
		if a.Key != "" {
			b = append(b, `,"key":`...)
			b = jsonb.AppendString(b, a.Key)
		}
		if a.Status != 0 {
			b = append(b, `,"status":`...)
			b = strconv.AppendInt(b, int64(a.Status), 10)
		}
		if a.Category != "" {
			b = append(b, `,"category":`...)
			b = jsonb.AppendString(b, string(a.Category))
		}
		if a.Phase != "" {
			b = append(b, `,"phase":`...)
			b = jsonb.AppendString(b, a.Phase)
		}
		if a.Skipped != "" {
			b = append(b, `,"skipped":`...)
			b = jsonb.AppendString(b, a.Skipped)
		}
		if a.Continues {
			b = append(b, `,"continues":true`...)
		}
		b = append(b, `,"latency_ms":`...)
		b = appendFloat(b, a.LatencyM)
		if a.Stage != "" {
			b = append(b, `,"stage":`...)
			b = jsonb.AppendString(b, a.Stage)
		}
		if a.InputTokens != 0 {
			b = append(b, `,"input_tokens":`...)
			b = strconv.AppendInt(b, int64(a.InputTokens), 10)
		}
		if a.OutputTokens != 0 {
			b = append(b, `,"output_tokens":`...)
			b = strconv.AppendInt(b, int64(a.OutputTokens), 10)
		}
		if a.Decision != "" {
			b = append(b, `,"decision":`...)
			b = jsonb.AppendString(b, a.Decision)
		}
		if a.Reason != "" {
			b = append(b, `,"reason":`...)
			b = jsonb.AppendString(b, a.Reason)
		}
		if a.TextUnits != 0 {
			b = append(b, `,"text_units":`...)
			b = strconv.AppendInt(b, int64(a.TextUnits), 10)
		}
		if a.CostUSD != 0 {
			b = append(b, `,"cost_usd":`...)
			b = appendFloat(b, a.CostUSD)
		}
		if a.Calls != 0 {
			b = append(b, `,"calls":`...)
			b = strconv.AppendInt(b, int64(a.Calls), 10)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

func key(b []byte, k string) []byte {
	b = append(b, ',', '"')
	b = append(b, k...)
	return append(b, '"', ':')
}

func str(b []byte, k, v string) []byte { return appendSlogString(key(b, k), v) }

func integer(b []byte, k string, v int) []byte { return strconv.AppendInt(key(b, k), int64(v), 10) }

func boolean(b []byte, k string, v bool) []byte { return strconv.AppendBool(key(b, k), v) }

func float(b []byte, k string, v float64) []byte { return appendFloat(key(b, k), v) }

// appendFloat formats f as encoding/json does (slog marshals floats with
// it): the shortest repr, in exponent form only below 1e-6 or from 1e21.
func appendFloat(b []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(b)
		if n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

const hex = "0123456789abcdef"

// appendSlogString appends s quoted as slog's JSON handler quotes a string
// attribute. It is not jsonb.AppendString (encoding/json's form, which
// this package uses for values slog would marshal, as inside a slog.Any):
// slog's own string encoder writes \b and \f as \u0008 and \u000c, and the
// request log must be byte for byte what slog writes. Otherwise the two
// agree: no HTML escaping, U+2028, U+2029 and each invalid UTF-8 byte as
// escapes.
func appendSlogString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

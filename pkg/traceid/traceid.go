// Package traceid is the gateway's trace context: a W3C trace id taken
// from the client's traceparent or X-Amzn-Trace-Id header (or, on Lambda,
// from the invocation's X-Ray trace id), or generated, and the traceparent
// the gateway sends upstream with its own span id. Standard library only.
//
// The 32 hex digits of a W3C trace id and an X-Ray root id are the same
// value written two ways: Root=1-5759e988-bd862e3fe1be46a994272793 is the
// trace id 5759e988bd862e3fe1be46a994272793.
package traceid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"
	"os"
	"strings"
)

// Context is one request's trace context.
type Context struct {
	// TraceID is the W3C trace id: 32 lowercase hex digits, not all zero.
	TraceID string
	// SpanID is the gateway's span for this request: 16 hex digits. It is
	// the parent-id of the traceparent sent upstream.
	SpanID string
	// Sampled is the caller's sampling decision (true when it gave none).
	Sampled bool
	// Source says where the trace id came from: "traceparent",
	// "x-amzn-trace-id", "lambda" or "generated".
	Source string
	// ParentID is the caller's span id (the parent-id of its traceparent,
	// or the Parent of its X-Ray header): the parent of the gateway's
	// span. Empty when the caller gave none.
	ParentID string
}

// Traceparent is the W3C traceparent header for calls the gateway makes:
// version 00, the trace id, the gateway's span id and the sampled flag.
func (c Context) Traceparent() string {
	flags := "00"
	if c.Sampled {
		flags = "01"
	}
	return "00-" + c.TraceID + "-" + c.SpanID + "-" + flags
}

// XRay is the trace context as an X-Amzn-Trace-Id header value, for AWS
// services: Root=1-<8 hex>-<24 hex>;Parent=<span>;Sampled=0|1.
func (c Context) XRay() string {
	s := "0"
	if c.Sampled {
		s = "1"
	}
	return "Root=1-" + c.TraceID[:8] + "-" + c.TraceID[8:] + ";Parent=" + c.SpanID + ";Sampled=" + s
}

// lambdaKey is the context key aws-lambda-go stores the invocation's
// X-Ray trace header under (a plain string, as the library does).
const lambdaKey = "x-amzn-trace-id"

// FromRequest returns r's trace context: the trace id of a valid
// traceparent header, else of a valid X-Amzn-Trace-Id header, else of the
// Lambda invocation's X-Ray trace header (the context value aws-lambda-go
// sets, or _X_AMZN_TRACE_ID), else a new random one. The span id is
// always new: the gateway's own span.
func FromRequest(r *http.Request) Context {
	if c, ok := ParseTraceparent(r.Header.Get("Traceparent")); ok {
		c.Source = "traceparent"
		return c
	}
	if c, ok := ParseXRay(r.Header.Get("X-Amzn-Trace-Id")); ok {
		c.Source = "x-amzn-trace-id"
		return c
	}
	v, _ := r.Context().Value(lambdaKey).(string)
	if v == "" {
		v = os.Getenv("_X_AMZN_TRACE_ID")
	}
	if c, ok := ParseXRay(v); ok {
		c.Source = "lambda"
		return c
	}
	return New()
}

// New returns a new trace context with random ids, sampled.
func New() Context {
	var b [16]byte
	for {
		rand.Read(b[:])
		if id := hex.EncodeToString(b[:]); !allZero(id) {
			return Context{TraceID: id, SpanID: newSpan(), Sampled: true, Source: "generated"}
		}
	}
}

func newSpan() string {
	var b [8]byte
	for {
		rand.Read(b[:])
		if id := hex.EncodeToString(b[:]); !allZero(id) {
			return id
		}
	}
}

// ParseTraceparent reads a W3C traceparent (version 00, or a later version
// read as 00 allows). The span id of the result is new.
func ParseTraceparent(v string) (Context, bool) {
	v = strings.TrimSpace(v)
	parts := strings.Split(v, "-")
	if len(parts) < 4 || len(parts[0]) != 2 || !isHex(parts[0]) || parts[0] == "ff" ||
		(parts[0] == "00" && len(parts) != 4) {
		return Context{}, false
	}
	tid, pid, flags := parts[1], parts[2], parts[3]
	if len(tid) != 32 || !isHex(tid) || tid != strings.ToLower(tid) || allZero(tid) || len(pid) != 16 || !isHex(pid) || allZero(pid) ||
		len(flags) != 2 || !isHex(flags) {
		return Context{}, false
	}
	f, _ := hex.DecodeString(flags)
	return Context{TraceID: tid, SpanID: newSpan(), Sampled: f[0]&1 == 1, ParentID: strings.ToLower(pid)}, true
}

// ParseXRay reads an X-Amzn-Trace-Id header (Root=1-<8 hex>-<24 hex>,
// with optional Parent and Sampled fields, in any order). The span id of
// the result is new.
func ParseXRay(v string) (Context, bool) {
	c := Context{Sampled: true}
	for _, f := range strings.Split(v, ";") {
		k, val, _ := strings.Cut(strings.TrimSpace(f), "=")
		switch k {
		case "Root":
			p := strings.Split(val, "-")
			if len(p) != 3 || p[0] != "1" || len(p[1]) != 8 || len(p[2]) != 24 || !isHex(p[1]+p[2]) || allZero(p[1]+p[2]) {
				return Context{}, false
			}
			c.TraceID = strings.ToLower(p[1] + p[2])
		case "Sampled":
			c.Sampled = val != "0"
		case "Parent":
			if len(val) == 16 && isHex(val) && !allZero(val) {
				c.ParentID = strings.ToLower(val)
			}
		}
	}
	if c.TraceID == "" {
		return Context{}, false
	}
	c.SpanID = newSpan()
	return c, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') && !(c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}

func allZero(s string) bool { return strings.Trim(s, "0") == "" }

type ctxKey struct{}

// With returns a context carrying the trace id, for log lines written
// below the front (breaker transitions).
func With(ctx context.Context, traceID string) context.Context {
	return context.WithValue(ctx, ctxKey{}, traceID)
}

type spanKey struct{}

// WithSpan returns a context carrying the whole trace context (the
// gateway's span and the caller's parent), for what reports the request
// as a span after it ended.
func WithSpan(ctx context.Context, c Context) context.Context {
	return context.WithValue(ctx, spanKey{}, c)
}

// SpanFrom returns the trace context WithSpan stored (ok false if none).
func SpanFrom(ctx context.Context) (Context, bool) {
	if ctx == nil {
		return Context{}, false
	}
	c, ok := ctx.Value(spanKey{}).(Context)
	return c, ok
}

// From returns the trace id a context carries ("" if none).
func From(ctx context.Context) string {
	if ctx == nil {
		return ""
	}
	s, _ := ctx.Value(ctxKey{}).(string)
	return s
}

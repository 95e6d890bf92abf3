package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/failover"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/usage"
)

// exchange is the state of one chat request, from arrival to its record.
type exchange struct {
	h      *Handler
	rt     *runtimeState
	w      http.ResponseWriter
	r      *http.Request
	start  time.Time
	rec    exchange.Record
	trace  failover.Trace
	stream bool
	settle Settle
}

// chat serves POST /v1/chat/completions.
func (h *Handler) chat(w http.ResponseWriter, r *http.Request, rid string) {
	x := &exchange{h: h, rt: h.current.Load(), w: w, r: r, start: h.opts.Now()}
	x.rec = exchange.Record{RequestID: rid, Time: x.start.UTC(), Outcome: "ok"}
	defer x.finish()
	cfg := x.rt.cfg

	body, gerr := readBody(w, r, cfg.Server.MaxBodyBytes)
	if gerr != nil {
		x.fail(gerr)
		return
	}
	req, err := openaiwire.Parse(body, openaiwire.Limits{})
	if err != nil {
		x.fail(gwerr.As(err))
		return
	}
	x.stream, x.rec.Stream, x.rec.Route = req.Stream, req.Stream, req.Model
	if req.Stream && !acceptsStream(r.Header.Get("Accept")) {
		x.fail(gwerr.New(gwerr.InvalidRequest, "a streaming request must accept text/event-stream (Accept: %q)", r.Header.Get("Accept")).WithCode("not_acceptable"))
		return
	}
	caller := CallerFrom(r.Context())
	x.rec.Team, x.rec.KeyID = caller.Team, caller.KeyID
	tag, terr := requestTag(r, req)
	if terr != nil {
		x.fail(terr)
		return
	}
	x.rec.Tag = tag
	if tag != "" {
		w.Header().Set("x-gateway-tag", tag)
	}
	steps, route, ok := cfg.Chain(req.Model)
	if !ok {
		x.fail(gwerr.New(gwerr.NotFound, "the model %q does not exist; GET /v1/models lists the models this gateway serves", req.Model).
			WithParam("model").WithCode("model_not_found"))
		return
	}
	if !caller.MayUse(req.Model) {
		x.fail(gwerr.New(gwerr.Permission, "this key may not use the model %q", req.Model).WithParam("model").WithCode("model_not_allowed"))
		return
	}
	capOut := 0
	if h.opts.Admit != nil {
		adm := &Admission{Caller: caller, Route: req.Model, Tag: tag, Steps: steps, Req: req, Body: body}
		settle, err := h.opts.Admit(r.Context(), adm)
		if err != nil {
			x.fail(gwerr.As(err))
			return
		}
		x.settle, capOut = settle, adm.CapOutputTokens
	}

	ctx, cancel := requestContext(r.Context(), x.start, cfg.Server.RequestTimeout.D(), cfg.Server.DeadlineMargin.D())
	defer cancel()
	sess, err := x.rt.router.Open(ctx, &failover.Request{Steps: steps, Policy: route.Policy, Req: req, Body: body, CapOutputTokens: capOut}, &x.trace)
	if err != nil {
		if errors.Is(err, failover.ErrClientGone) {
			x.rec.Outcome, x.rec.Status = "client_cancelled", 499
			return
		}
		x.fail(gwerr.As(err))
		return
	}
	x.relay(sess)
}

// requestContext bounds a request: the configured timeout, and the caller's
// own deadline (the Lambda invocation's) less a margin, so that a stream is
// ended with an error event while there is still time to send it.
func requestContext(parent context.Context, now time.Time, timeout, margin time.Duration) (context.Context, context.CancelFunc) {
	deadline := now.Add(timeout)
	if d, ok := parent.Deadline(); ok && d.Add(-margin).Before(deadline) {
		deadline = d.Add(-margin)
	}
	return context.WithDeadlineCause(parent, deadline, failover.ErrDeadline)
}

// relay writes a committed response: the same loop for SSE and JSON.
func (x *exchange) relay(sess *failover.Session) {
	x.setGatewayHeaders()
	h := x.w.Header()
	var enc encoder = jsonEncoder{}
	if x.stream {
		enc = &sseEncoder{}
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
	} else {
		h.Set("Content-Type", "application/json")
	}
	// The first frame is already buffered (it committed the response). A
	// non-streaming body is whole: give it a Content-Length, so the client
	// has its answer without waiting for the record to be written.
	first, err := sess.Next()
	if err == nil && !x.stream {
		h.Set("Content-Length", strconv.Itoa(len(first.Data)))
	}
	x.w.WriteHeader(http.StatusOK)
	x.rec.Status = http.StatusOK
	x.rec.TTFTMillis = ms(x.h.opts.Now().Sub(x.start))
	rc := http.NewResponseController(x.w)
	for f := first; err == nil; f, err = sess.Next() {
		if werr := write(x.w, rc, enc.frame(f.Data)); werr != nil {
			err = failover.ErrClientGone
			break
		}
	}
	u := sess.Usage()
	sess.End(err)
	x.setUsage(u)
	switch {
	case err == io.EOF:
		write(x.w, rc, enc.end())
	case errors.Is(err, failover.ErrClientGone):
		x.rec.Outcome = "client_cancelled"
	default:
		ge := gwerr.As(err)
		x.rec.Outcome = string(ge.Category)
		env := openaiwire.NewErrorEnvelope(ge, x.rec.RequestID, u.OpenAI())
		write(x.w, rc, enc.fail(env.Marshal()))
	}
}

// write sends one piece and flushes it. lambdaurl's writer cannot flush and
// does not need to (every write streams), so ErrNotSupported is fine.
func write(w http.ResponseWriter, rc *http.ResponseController, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if _, err := w.Write(b); err != nil {
		return err
	}
	if err := rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return nil
}

func (x *exchange) setUsage(u provider.Usage) {
	x.rec.InputTokens, x.rec.OutputTokens = u.Input, u.Output
	x.rec.CachedTokens, x.rec.CacheWriteTokens, x.rec.Estimated = u.CacheRead, u.CacheWrite, u.Estimated
}

// setGatewayHeaders sets the headers every chat response carries.
func (x *exchange) setGatewayHeaders() {
	h := x.w.Header()
	h.Set("x-gateway-attempts", strconv.Itoa(len(x.trace.Attempts)))
	h.Set("x-gateway-fallback-depth", strconv.Itoa(x.trace.FallbackDepth))
	if x.trace.Provider != "" {
		h.Set("x-gateway-provider", x.trace.Provider)
	} else if n := len(x.trace.Attempts); n > 0 {
		h.Set("x-gateway-provider", providerOf(x.trace.Attempts[n-1].Target))
	}
}

func providerOf(target string) string {
	p, _, _ := strings.Cut(target, "/")
	return p
}

// fail answers with an error before anything was committed.
func (x *exchange) fail(e *gwerr.Error) {
	x.setGatewayHeaders()
	x.rec.Outcome = string(e.Category)
	x.rec.Status = writeError(x.w, e, x.rec.RequestID)
}

// finish completes the record: log line, usage hook.
func (x *exchange) finish() {
	x.rec.Target, x.rec.Provider = x.trace.Target, x.trace.Provider
	x.rec.Attempts, x.rec.FallbackDepth = x.trace.Attempts, x.trace.FallbackDepth
	x.rec.LatencyMillis = ms(x.h.opts.Now().Sub(x.start))
	// The client may be gone; settlement and the record must still happen.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), 5*time.Second)
	defer cancel()
	if x.h.opts.Cost != nil {
		x.rec.CostUSD = x.h.opts.Cost(x.rt.cfg, &x.rec)
	}
	if x.settle != nil {
		x.settle(ctx, &x.rec)
	}
	x.h.logRequest(x.r, &x.rec)
	if x.h.opts.Record != nil {
		x.h.opts.Record(ctx, &x.rec)
	}
}

func (h *Handler) logRequest(r *http.Request, rec *exchange.Record) {
	level := slog.LevelInfo
	if rec.Status >= 500 {
		level = slog.LevelWarn
	}
	h.log.LogAttrs(r.Context(), level, "request",
		slog.String("request_id", rec.RequestID), slog.String("route", rec.Route),
		slog.String("client_ip", clientIP(r)),
		slog.String("team", rec.Team), slog.String("tag", rec.Tag),
		slog.Bool("stream", rec.Stream), slog.Int("status", rec.Status), slog.String("outcome", rec.Outcome),
		slog.String("provider", rec.Provider), slog.String("target", rec.Target),
		slog.Any("attempts", rec.Attempts), slog.Int("fallback_depth", rec.FallbackDepth),
		slog.Float64("ttft_ms", rec.TTFTMillis), slog.Float64("latency_ms", rec.LatencyMillis),
		slog.Int("tokens_in", rec.InputTokens), slog.Int("tokens_out", rec.OutputTokens),
		slog.Int("tokens_cached", rec.CachedTokens), slog.Bool("tokens_estimated", rec.Estimated),
		slog.Float64("cost_usd", rec.CostUSD))
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// readBody reads the whole body within the size limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *gwerr.Error) {
	if r.ContentLength > limit {
		return nil, gwerr.New(gwerr.InvalidRequest, "request body is %d bytes; the limit is %d", r.ContentLength, limit).WithCode("body_too_large")
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, gwerr.New(gwerr.InvalidRequest, "request body exceeds the limit of %d bytes", limit).WithCode("body_too_large")
		}
		return nil, gwerr.New(gwerr.InvalidRequest, "request body could not be read")
	}
	return body, nil
}

// acceptsStream reports whether an Accept header admits an SSE response.
// No header, */*, text/* and text/event-stream do; application/json is
// tolerated because several SDKs send it on every request.
func acceptsStream(accept string) bool {
	if strings.TrimSpace(accept) == "" {
		return true
	}
	for _, part := range strings.Split(accept, ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "*/*", "text/*", "text/event-stream", "application/json", "application/*":
			return true
		}
	}
	return false
}

// clientIP is the caller's address: on Lambda, lambdaurl puts the Function
// URL request context's source IP (no port) in RemoteAddr.
func clientIP(r *http.Request) string {
	if host, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return host
	}
	return r.RemoteAddr
}

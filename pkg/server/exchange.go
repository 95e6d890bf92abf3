package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/failover"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/requestlog"
)

// exchangeState is one request on its way through the front: the one
// request value, the ingress that speaks the client's API, and its record.
type exchangeState struct {
	h      *Handler
	rt     *runtimeState
	in     ingress.Ingress
	w      http.ResponseWriter
	r      *http.Request
	req    *exchange.Request
	rec    exchange.Record
	settle exchange.Settle
}

// serve runs one request of any client API through the shared pipeline:
// read, decode, route, admit, fail over, relay, record. The ingress decides
// only the wire formats.
func (h *Handler) serve(in ingress.Ingress, w http.ResponseWriter, r *http.Request, rid string) {
	rt := h.current.Load()
	req := &exchange.Request{ID: rid, API: in.API(), Start: h.opts.Now(), Caller: exchange.CallerFrom(r.Context())}
	x := &exchangeState{h: h, rt: rt, in: in, w: w, r: r, req: req, rec: exchange.NewRecord(req)}
	defer x.finish()
	cfg := rt.cfg

	if gerr := checkContentType(r); gerr != nil {
		x.fail(gerr)
		return
	}
	body, gerr := readBody(w, r, cfg.Server.MaxBodyBytes)
	if gerr != nil {
		x.fail(gerr)
		return
	}
	if err := in.Decode(r, body, req); err != nil {
		x.fail(gwerr.As(err))
		return
	}
	if req.Stream && !acceptsStream(r.Header.Get("Accept")) {
		x.fail(gwerr.New(gwerr.InvalidRequest, "a streaming request must accept text/event-stream (Accept: %q)", r.Header.Get("Accept")).WithCode("not_acceptable"))
		return
	}
	if err := x.route(cfg); err != nil {
		x.fail(err)
		return
	}
	if h.opts.Admit != nil {
		settle, err := h.opts.Admit(r.Context(), req)
		if err != nil {
			x.fail(gwerr.As(err))
			return
		}
		x.settle = settle
	}

	ctx, cancel := requestContext(r.Context(), req.Start, cfg.Server.RequestTimeout.D(), cfg.Server.DeadlineMargin.D())
	defer cancel()
	sess, err := rt.router.Open(ctx, req)
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

// route reads the feature tag and resolves the route's chain, checking the
// caller may use it.
func (x *exchangeState) route(cfg *config.Config) *gwerr.Error {
	req := x.req
	if t := x.r.Header.Get("x-gateway-tag"); t != "" {
		req.Tag = t
	}
	if req.Tag != "" {
		if !validTag(req.Tag) {
			req.Tag = ""
			return gwerr.New(gwerr.InvalidRequest, "feature tag must be 1-64 characters of letters, digits and - _ . : /").WithParam("x-gateway-tag")
		}
		x.w.Header().Set("x-gateway-tag", req.Tag)
	}
	steps, route, ok := cfg.Chain(req.Route)
	if !ok {
		return gwerr.New(gwerr.NotFound, "the model %q does not exist; GET /v1/models lists the models this gateway serves", req.Route).
			WithParam("model").WithCode("model_not_found")
	}
	if !req.Caller.MayUse(req.Route) {
		return gwerr.New(gwerr.Permission, "this key may not use the model %q", req.Route).WithParam("model").WithCode("model_not_allowed")
	}
	req.Steps, req.Policy = steps, route.Policy
	return nil
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

// relay writes a committed response through the ingress's encoder: the same
// loop for streams and whole bodies. A stream is written event by event; a
// non-streaming body is sent whole at the end, with a Content-Length, so the
// client has its answer without waiting for the record to be written.
func (x *exchangeState) relay(sess *failover.Session) {
	enc := x.in.NewEncoder(x.req)
	x.setGatewayHeaders()
	h := x.w.Header()
	h.Set("Content-Type", enc.ContentType())
	stream := x.req.Stream
	if stream {
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Accel-Buffering", "no")
		x.w.WriteHeader(http.StatusOK)
		x.rec.Status = http.StatusOK
		x.rec.TTFTMillis = exchange.Millis(x.h.opts.Now().Sub(x.req.Start))
	}
	rc := http.NewResponseController(x.w)
	var buf []byte
	ev, err := sess.Next()
	for ; err == nil; ev, err = sess.Next() {
		if !stream {
			enc.Event(nil, &ev)
			continue
		}
		buf = enc.Event(buf[:0], &ev)
		if werr := write(x.w, rc, buf); werr != nil {
			err = failover.ErrClientGone
			break
		}
	}
	u := sess.Usage()
	sess.End(err)
	x.rec.SetUsage(u)
	switch {
	case err == io.EOF && !stream:
		body := enc.End(nil, u)
		h.Set("Content-Length", strconv.Itoa(len(body)))
		x.w.WriteHeader(http.StatusOK)
		x.rec.Status = http.StatusOK
		x.rec.TTFTMillis = exchange.Millis(x.h.opts.Now().Sub(x.req.Start))
		write(x.w, rc, body)
	case err == io.EOF:
		write(x.w, rc, enc.End(buf[:0], u))
	case errors.Is(err, failover.ErrClientGone):
		x.rec.Outcome = "client_cancelled"
	case !stream:
		x.fail(gwerr.As(err))
	default:
		ge := gwerr.As(err)
		x.rec.Outcome = string(ge.Category)
		write(x.w, rc, enc.Fail(buf[:0], ge, x.req.ID, u))
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

// setGatewayHeaders sets the headers every response of the pipeline carries.
func (x *exchangeState) setGatewayHeaders() {
	h := x.w.Header()
	tr := &x.req.Trace
	h.Set("x-gateway-attempts", strconv.Itoa(len(tr.Attempts)))
	h.Set("x-gateway-fallback-depth", strconv.Itoa(tr.FallbackDepth))
	if tr.Provider != "" {
		h.Set("x-gateway-provider", tr.Provider)
	} else if n := len(tr.Attempts); n > 0 {
		p, _, _ := strings.Cut(tr.Attempts[n-1].Target, "/")
		h.Set("x-gateway-provider", p)
	}
}

// fail answers with an error before anything was committed, in the
// client API's own error shape.
//
// x-should-retry tells the OpenAI and Anthropic SDKs whether their own
// retry could help: never after the gateway already retried or failed
// over, never for a limit or budget refusal (Retry-After says when), and
// never for the caller's own mistakes.
func (x *exchangeState) fail(e *gwerr.Error) {
	x.setGatewayHeaders()
	retry := e.Category.Retryable() && e.Category != gwerr.RateLimited && len(x.req.Trace.Attempts) <= 1
	x.w.Header().Set("x-should-retry", strconv.FormatBool(retry))
	x.rec.Outcome = string(e.Category)
	x.rec.Status = x.in.WriteError(x.w, x.req, e)
}

// finish completes the record: settlement, log line, usage hook. The
// client may be gone; settlement and the record must still happen.
func (x *exchangeState) finish() {
	x.rec.Fill(x.req)
	x.rec.LatencyMillis = exchange.Millis(x.h.opts.Now().Sub(x.req.Start))
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), 5*time.Second)
	defer cancel()
	if x.h.opts.Cost != nil {
		x.rec.CostUSD = x.h.opts.Cost(x.rt.cfg, &x.rec)
	}
	if x.settle != nil {
		x.settle(ctx, &x.rec)
	}
	requestlog.Write(x.h.log, x.r, &x.rec)
	if x.h.opts.Record != nil {
		x.h.opts.Record(ctx, &x.rec)
	}
}

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

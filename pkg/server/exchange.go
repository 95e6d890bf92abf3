package server

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/requestlog"
	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/traceid"
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
	// end is the error that ended the relay: io.EOF after a clean end.
	end error
	// pacing is the profile the response is paced with ("" none).
	pacing string
	// cancel cancels the request's upstream work.
	cancel context.CancelFunc
	// pin is the account a Responses request is pinned to (the owner of
	// its previous_response_id or of the response it acts on), nil if none.
	pin *responsestate.Owner
	// loc is the conversation's place on a cache_locality route, nil when
	// the route has none (locality.go).
	loc *localityState
}

// serve runs one request of any client API through the shared pipeline:
// read, decode, route, admit, fail over, relay, record. The ingress decides
// only the wire formats.
func (h *Handler) serve(in ingress.Ingress, w http.ResponseWriter, r *http.Request, rid string, tc traceid.Context) {
	rt := h.current.Load()
	req := &exchange.Request{ID: rid, TraceID: tc.TraceID, TraceParent: tc.Traceparent(), API: in.API(), Start: h.now(),
		Caller: exchange.CallerFrom(r.Context())}
	x := &exchangeState{h: h, rt: rt, in: in, w: w, r: r, req: req, rec: exchange.NewRecord(req)}
	defer x.finish()
	cfg := rt.cfg

	if gerr := checkContentType(in, r); gerr != nil {
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
	if err := checkBounds(req); err != nil {
		x.fail(err)
		return
	}
	x.betas(cfg.Server.AnthropicBetas)
	if req.Stream && !acceptsStream(r.Header.Get("Accept")) {
		x.fail(gwerr.New(gwerr.InvalidRequest, "a streaming request must accept text/event-stream (Accept: %q)", clip(r.Header.Get("Accept"))).WithCode("not_acceptable"))
		return
	}
	if err := x.route(cfg); err != nil {
		x.fail(err)
		return
	}
	if err := checkToolFees(cfg, req); err != nil {
		x.fail(err)
		return
	}
	if h.front.Admit != nil {
		settle, err := h.front.Admit(r.Context(), req)
		if err != nil {
			x.fail(gwerr.As(err))
			return
		}
		x.settle = settle
	}

	ctx, cancel := requestContext(r.Context(), req.Start, cfg.Server.RequestTimeout.D(), cfg.Server.DeadlineMargin.D())
	defer cancel()
	x.cancel = cancel
	x.generate(ctx)
}

// route reads the feature tag and resolves the route's chain, checking the
// caller may use it.
func (x *exchangeState) route(cfg *config.Config) *gwerr.Error {
	req := x.req
	if t := x.r.Header.Get("X-Gateway-Tag"); t != "" {
		req.Tag = t
	}
	if req.Tag != "" {
		if !validTag(req.Tag) {
			req.Tag = ""
			return gwerr.New(gwerr.InvalidRequest, "feature tag must be 1-64 characters of letters, digits and - _ . : /").WithParam("x-gateway-tag")
		}
		x.w.Header().Set("X-Gateway-Tag", req.Tag)
	}
	req.Route = routeName(x.in, cfg, req.Route)
	steps, route, ok := cfg.Chain(req.Route)
	if !ok {
		return gwerr.New(gwerr.NotFound, "the model %q does not exist; GET /v1/models lists the models this gateway serves", req.Route).
			WithParam("model").WithCode("model_not_found")
	}
	if !req.Caller.MayUse(req.Route) {
		return gwerr.New(gwerr.Permission, "this key may not use the model %q", req.Route).WithParam("model").WithCode("model_not_allowed")
	}
	req.Steps, req.Policy = steps, route.Policy
	if p := x.h.stages.Pacing; p != nil {
		name, err := p.Profile(x.r, req, route.Pacing)
		if err != nil {
			return gwerr.As(err)
		}
		x.pacing = name
	}
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
	return context.WithDeadlineCause(parent, deadline, gwerr.ErrDeadline)
}

// setGatewayHeaders sets the headers every response of the pipeline carries.
func (x *exchangeState) setGatewayHeaders() {
	h := x.w.Header()
	tr := &x.req.Trace
	h.Set("X-Gateway-Attempts", strconv.Itoa(tr.GenerationAttempts()))
	h.Set("X-Gateway-Fallback-Depth", strconv.Itoa(tr.FallbackDepth))
	if tr.Provider != "" {
		h.Set("X-Gateway-Provider", tr.Provider)
	} else {
		for i := len(tr.Attempts) - 1; i >= 0; i-- {
			if tr.Attempts[i].Stage == "" {
				p, _, _ := strings.Cut(tr.Attempts[i].Target, "/")
				h.Set("X-Gateway-Provider", p)
				break
			}
		}
	}
}

// noteDropped says which request features the serving target went without,
// as noted on the trace by target: the features only the client's API
// carries, when the target does not speak it and the route's
// translate_without let them drop (the provider registry's guard), the
// parts of the Prompt a translating adapter could not carry
// (provider.Refuse), and what a near-passthrough adapter left out (Claude
// on Bedrock's InvokeModel). The response carries
// x-gateway-dropped-features and the record lists them.
func (x *exchangeState) noteDropped() {
	req := x.req
	if req.Trace.Target == "" {
		return
	}
	for _, k := range req.Trace.DroppedBy(req.Trace.Target) {
		if !slices.Contains(x.rec.DroppedFeatures, k) {
			x.rec.DroppedFeatures = append(x.rec.DroppedFeatures, k)
		}
	}
	if len(x.rec.DroppedFeatures) > 0 {
		slices.Sort(x.rec.DroppedFeatures)
		x.w.Header().Set("X-Gateway-Dropped-Features", strings.Join(x.rec.DroppedFeatures, ","))
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
	retry := e.Category.Retryable() && e.Category != gwerr.RateLimited && x.req.Trace.GenerationAttempts() <= 1
	x.w.Header().Set("X-Should-Retry", strconv.FormatBool(retry))
	x.rec.Outcome = string(e.Category)
	e.TraceID = x.req.TraceID
	x.rec.Status = x.in.WriteError(x.w, x.req, e)
}

// finish completes the record: settlement, log line, usage hook, through
// Options.AfterResponse when it is set. The client may be gone; settlement
// and the record must still happen, within 5 s and before the request's
// own deadline (on Lambda the invocation's: the environment may be frozen
// right after it).
func (x *exchangeState) finish() {
	x.rec.Fill(x.req)
	x.rec.LatencyMillis = exchange.Millis(x.h.now().Sub(x.req.Start))
	if x.h.report.AfterResponse != nil {
		x.h.report.AfterResponse(x.settleAndRecord)
		return
	}
	x.settleAndRecord()
}

// settleAndRecord is what follows the response: cost, budget settlement,
// the log line and the usage record.
func (x *exchangeState) settleAndRecord() {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), finishTimeout)
	defer cancel()
	if dl, ok := x.r.Context().Deadline(); ok {
		var cancelDL context.CancelFunc
		ctx, cancelDL = context.WithDeadline(ctx, dl)
		defer cancelDL()
	}
	if _, _, tier := config.SplitTargetID(x.rec.Target); x.rec.ServiceTier == "" {
		x.rec.ServiceTier = tier // the response named none: the target's own
	}
	if x.h.report.Cost != nil {
		x.rec.CostUSD = x.h.report.Cost(x.rt.cfg, &x.rec)
	}
	if x.settle != nil {
		x.settle(ctx, &x.rec)
	}
	requestlog.Write(x.h.log, x.r, &x.rec)
	if x.h.report.Record != nil {
		x.h.report.Record(ctx, &x.rec)
	}
	if x.h.report.Observe != nil {
		x.h.report.Observe(ctx, x.req, &x.rec)
	}
}

// finishTimeout bounds what happens after the response: settlement and the
// usage record (its retries, then its spill).
const finishTimeout = 5 * time.Second

// readBody reads the whole body within the size limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, *gwerr.Error) {
	if r.ContentLength > limit {
		return nil, gwerr.New(gwerr.InvalidRequest, "request body is %d bytes; the limit is %d", r.ContentLength, limit).WithCode(ingress.CodeBodyTooLarge)
	}
	body, err := readAll(http.MaxBytesReader(w, r.Body, limit), r.ContentLength)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, gwerr.New(gwerr.InvalidRequest, "request body exceeds the limit of %d bytes", limit).WithCode(ingress.CodeBodyTooLarge)
		}
		return nil, gwerr.New(gwerr.InvalidRequest, "request body could not be read")
	}
	return body, nil
}

// readAll is io.ReadAll into a buffer sized for a body of size bytes
// when size is known (> 0): one allocation instead of io.ReadAll's
// doublings from 512 bytes (11 of them, and as many copies, for 10 KB). A
// body longer than announced still reads whole.
func readAll(r io.Reader, size int64) ([]byte, error) {
	if size <= 0 {
		return io.ReadAll(r)
	}
	b := make([]byte, 0, size+1) // the spare byte takes the read that sees EOF
	for {
		n, err := r.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
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
		case "*/*", "text/*", "text/event-stream", "application/json", "application/*", "application/vnd.amazon.eventstream":
			return true
		}
	}
	return false
}

package server

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/failover"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/responsestate"
	"github.com/llmgw/llmgw/pkg/traceid"
	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/responseswire"
)

// The Responses API's calls on stored state, served for targets that speak
// the Responses API natively (openaicompat with apis: [responses]):
//
//	POST   /v1/responses/compact              compact a conversation (routed by model; pinned
//	                                          to the account of its previous_response_id)
//	GET    /v1/responses/{id}                 the stored response
//	DELETE /v1/responses/{id}                 delete it
//	GET    /v1/responses/{id}/input_items     its input items (query passed on)
//	POST   /v1/responses/{id}/cancel          cancel a background response
//
// Each is authenticated like every endpoint and answers errors in OpenAI's
// shape. The id calls go to the account recorded for the id
// (responses_pin.go), only for the team that created it; an id the gateway
// did not create for the team is a 404 (response_not_found). Each writes
// one usage record (operation responses.<call>); a retrieval or
// cancellation that first sees a background response finished carries
// its settled tokens (docs/responses.md).

// responsesResourcer is an adapter that can call the Responses API's
// stored state (openaicompat.Adapter.ResponsesResource).
type responsesResourcer interface {
	ResponsesResource(ctx context.Context, call *provider.Call, method, path string, query url.Values, body []byte) ([]byte, error)
}

// Operations of the Responses state calls (Record.Operation; the compact
// and state calls' key-ledger slots).
const (
	OperationResponsesCompact  = "responses.compact"
	OperationResponsesRetrieve = "responses.retrieve"
	OperationResponsesDelete   = "responses.delete"
	OperationResponsesInput    = "responses.input_items"
	OperationResponsesCancel   = "responses.cancel"
)

// serveResponsesState serves a Responses state path; false when the path
// is not one.
func (h *Handler) serveResponsesState(w http.ResponseWriter, r *http.Request, rid string, tc traceid.Context) bool {
	rest, ok := strings.CutPrefix(r.URL.Path, "/v1/responses/")
	if !ok {
		rest, ok = strings.CutPrefix(r.URL.Path, "/responses/")
	}
	if !ok || rest == "" {
		return false
	}
	id, sub, _ := strings.Cut(rest, "/")
	var op, allow, path string
	switch {
	case id == "compact" && sub == "":
		op, allow = OperationResponsesCompact, http.MethodPost
	case sub == "" && r.Method == http.MethodDelete:
		op, allow, path = OperationResponsesDelete, "GET, HEAD, DELETE", "/"+url.PathEscape(id)
	case sub == "":
		op, allow, path = OperationResponsesRetrieve, "GET, HEAD, DELETE", "/"+url.PathEscape(id)
	case sub == "input_items":
		op, allow, path = OperationResponsesInput, getMethods, "/"+url.PathEscape(id)+"/input_items"
	case sub == "cancel":
		op, allow, path = OperationResponsesCancel, http.MethodPost, "/"+url.PathEscape(id)+"/cancel"
	default:
		return false
	}
	in := h.ingresses["/v1/responses"]
	rt := h.current.Load()
	req := &exchange.Request{ID: rid, TraceID: tc.TraceID, TraceParent: tc.Traceparent(), API: in.API(), Start: h.now(),
		Caller: exchange.CallerFrom(r.Context())}
	x := &exchangeState{h: h, rt: rt, in: in, w: w, r: r, req: req, rec: exchange.NewRecord(req)}
	x.rec.Operation = op
	if !strings.Contains(allow, r.Method) {
		w.Header().Set("Allow", allow)
		x.fail(gwerr.New(gwerr.InvalidRequest, "method not allowed; use %s", allow).WithCode(ingress.CodeMethodNotAllowed))
		x.finish()
		return true
	}
	defer x.finish()
	cfg := rt.cfg
	ctx, cancel := requestContext(r.Context(), req.Start, cfg.Server.RequestTimeout.D(), cfg.Server.DeadlineMargin.D())
	defer cancel()
	if op == OperationResponsesCompact {
		x.compact(ctx)
		return true
	}
	x.stateCall(ctx, id, op, r.Method, path, r.URL.Query())
	return true
}

// stateCall makes one call on stored response id at the account that
// created it.
func (x *exchangeState) stateCall(ctx context.Context, id, op, method, path string, query url.Values) {
	req := x.req
	x.rec.ResponseID = id
	o, found, err := x.h.up.ResponseOwners.Get(ctx, id)
	switch {
	case err != nil:
		x.fail(gwerr.New(gwerr.Unavailable, "the gateway could not read which account holds response %s; retry later", id).WithCode(CodeResponseAccount))
		return
	case !found || o.Team != req.Caller.Team:
		x.fail(notFound(id))
		return
	case !req.Caller.MayUse(o.Route):
		x.fail(gwerr.New(gwerr.Permission, "this key may not use the model %q that response %s was created with", o.Route, id).WithCode("model_not_allowed"))
		return
	}
	req.Route = o.Route
	steps, route, ok := x.rt.cfg.Chain(o.Route)
	step, inRoute := ownerStep(steps, o)
	if !ok || !inRoute {
		x.fail(gwerr.New(gwerr.Unavailable, "response %s is held by %s, which the gateway's config no longer routes to; no other account holds its state",
			id, o).WithCode(CodeResponseAccount))
		return
	}
	req.Steps, req.Policy = steps[:0:0], route.Policy
	req.Steps = append(req.Steps, step)
	x.pin, x.rt = &o, x.rt.pinned(o)
	body, err := x.callState(ctx, op, method, path, query, nil)
	if err != nil {
		x.answerStateError(err, id)
		return
	}
	switch op {
	case OperationResponsesDelete:
		if err := x.h.up.ResponseOwners.Delete(ctx, id); err != nil {
			x.h.log.WarnContext(ctx, "could not forget a deleted response", "request_id", req.ID, "error", err.Error())
		}
	case OperationResponsesRetrieve, OperationResponsesCancel:
		x.settleBackground(ctx, id, o, body)
	}
	x.writeStateBody(body)
}

// callState calls the pinned (or routed) target's Responses state through
// the failover engine: breaker, key ledger, retry budget, timeouts.
func (x *exchangeState) callState(ctx context.Context, op, method, path string, query url.Values, body []byte) ([]byte, error) {
	x.req.Stream = false
	return x.rt.router.Call(ctx, x.req, failover.Op{Name: op, Post: func(ctx context.Context, call *provider.Call) ([]byte, error) {
		rr, ok := provider.Underlying(x.rt.router.Providers[call.Step.Provider]).(responsesResourcer)
		if !ok {
			return nil, provider.Unsupported(call.Step.ID, "", "the Responses API's stored responses")
		}
		return rr.ResponsesResource(ctx, call, method, path, query, body)
	}})
}

// answerStateError answers a failed state call: the typed account error
// for a pinned call whose account is unavailable, else the error itself.
func (x *exchangeState) answerStateError(err error, id string) {
	x.rec.SetUsage(exchange.TokenUsage{})
	x.setGatewayHeaders()
	if errors.Is(err, gwerr.ErrClientGone) {
		x.rec.Outcome, x.rec.Status = "client_cancelled", 499
		return
	}
	if x.pin != nil {
		err = pinnedError(err, x.pin, id, &x.req.Trace)
	}
	ge := gwerr.As(err)
	if ge.Code == provider.CodeUnsupportedFeature {
		ge = gwerr.New(gwerr.InvalidRequest, "%s; only a target that speaks the Responses API natively keeps stored responses", ge.Message).WithCode(ge.Code)
	}
	x.fail(ge)
}

// writeStateBody sends a state call's answer as the upstream gave it.
func (x *exchangeState) writeStateBody(body []byte) {
	x.setGatewayHeaders()
	h := x.w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.w.WriteHeader(http.StatusOK)
	x.rec.Status = http.StatusOK
	x.w.Write(body)
}

// settleBackground records, once across all instances, the true usage of
// a background response the first time a retrieval or cancellation sees
// it finished: this request's record carries its output tokens and the
// input tokens beyond the estimate its creation recorded.
func (x *exchangeState) settleBackground(ctx context.Context, id string, o responsestate.Owner, body []byte) {
	if !o.Background || o.Settled {
		return
	}
	switch gjson.GetBytes(body, "status").Str {
	case "completed", "incomplete", "failed", "cancelled":
	default:
		return
	}
	first, err := x.h.up.ResponseOwners.Settle(ctx, id, o)
	if err != nil || !first {
		return
	}
	u := responsesTokens(responseswire.ReadUsage(body))
	u.Input = max(u.Input-o.EstimatedInput, 0)
	u.CacheRead = min(u.CacheRead, u.Input)
	x.rec.SetUsage(u)
}

// responsesTokens is a Responses object's usage as the gateway's.
func responsesTokens(t delta.Tokens) exchange.TokenUsage {
	return exchange.TokenUsage{Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite, CacheWrite1h: t.CacheWrite1h,
		Reasoning: t.Reasoning, Tier: t.Tier}
}

// compact serves POST /v1/responses/compact: decoded and validated as a
// Responses request, routed by its model, admitted, pinned to the account
// of its previous_response_id when the gateway recorded one, and sent to
// the first target that speaks the Responses API natively. The compaction
// is recorded as owned by that account, and its usage is priced.
func (x *exchangeState) compact(ctx context.Context) {
	cfg := x.rt.cfg
	if gerr := checkContentType(x.in, x.r); gerr != nil {
		x.fail(gerr)
		return
	}
	body, gerr := readBody(x.w, x.r, cfg.Server.MaxBodyBytes)
	if gerr != nil {
		x.fail(gerr)
		return
	}
	if err := x.in.Decode(x.r, body, x.req); err != nil {
		x.fail(gwerr.As(err))
		return
	}
	if x.req.Stream {
		x.fail(gwerr.New(gwerr.InvalidRequest, "compaction does not stream").WithParam("stream"))
		return
	}
	if err := x.route(cfg); err != nil {
		x.fail(err)
		return
	}
	if !x.pinFollowUp(ctx) {
		return
	}
	if a := x.h.front.Admit; a != nil {
		settle, err := a(x.r.Context(), x.req)
		if err != nil {
			x.fail(gwerr.As(err))
			return
		}
		x.settle = settle
	}
	prev := gjson.GetBytes(body, "previous_response_id").Str
	out, err := x.callState(ctx, OperationResponsesCompact, http.MethodPost, "/compact", nil, x.req.Body)
	if err != nil {
		x.answerStateError(err, prev)
		return
	}
	x.rec.SetUsage(responsesTokens(responseswire.ReadUsage(out)))
	if id := gjson.GetBytes(out, "id").Str; id != "" {
		x.recordOwner(id, exchange.TokenUsage{})
	}
	x.writeStateBody(out)
}

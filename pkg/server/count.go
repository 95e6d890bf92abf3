package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/failover"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/teams"
	"github.com/llmgw/llmgw/pkg/traceid"
)

// count serves a token-count request (POST /v1/messages/count_tokens):
// authenticated, routed and admitted like a generation (the team's rate
// limits apply), then counted through the failover engine (Router.Call:
// the breaker, the key ledger, the retry budget, the route's timeouts and
// fallbacks) by the first target whose adapter counts upstream
// (provider.TokenCounter: Anthropic, for a Messages client). The key
// ledger keeps count_tokens' rate limit apart from generation's
// (keyledger.Slot), so a count's 429 never sets a key aside for Messages
// traffic. When no target can count, or every one fails, the answer is
// the gateway's documented estimate (teams.EstimateInputTokens, the one
// the limiter reserves with), marked as an estimate. One usage record is
// written (operation count_tokens, no tokens: nothing is generated).
func (h *Handler) count(in ingress.Ingress, w http.ResponseWriter, r *http.Request, rid string, tc traceid.Context) {
	rt := h.current.Load()
	cfg := rt.cfg
	req := &exchange.Request{ID: rid, TraceID: tc.TraceID, TraceParent: tc.Traceparent(), API: in.API(), Start: h.now(),
		Caller: exchange.CallerFrom(r.Context())}
	x := &exchangeState{h: h, rt: rt, in: in, w: w, r: r, req: req, rec: exchange.NewRecord(req)}
	x.rec.Operation = exchange.OperationCountTokens
	defer x.finish()
	counter := in.(ingress.Counter)
	if gerr := checkContentType(in, r); gerr != nil {
		x.fail(gerr)
		return
	}
	body, gerr := readBody(w, r, cfg.Server.MaxBodyBytes)
	if gerr != nil {
		x.fail(gerr)
		return
	}
	if err := counter.DecodeCount(r, body, req); err != nil {
		x.fail(gwerr.As(err))
		return
	}
	if err := checkBounds(req); err != nil {
		x.fail(err)
		return
	}
	x.betas(cfg.Server.AnthropicBetas)
	req.Route = routeName(in, cfg, req.Route)
	steps, route, ok := cfg.Chain(req.Route)
	switch {
	case !ok:
		x.fail(gwerr.New(gwerr.NotFound, "the model %q does not exist; GET /v1/models lists the models this gateway serves", req.Route).
			WithParam("model").WithCode("model_not_found"))
		return
	case !req.Caller.MayUse(req.Route):
		x.fail(gwerr.New(gwerr.Permission, "this key may not use the model %q", req.Route).WithParam("model").WithCode("model_not_allowed"))
		return
	}
	req.Steps, req.Policy = steps, route.Policy
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
	n, err := countUpstream(ctx, rt, req)
	x.rec.SetUsage(exchange.TokenUsage{})
	x.setGatewayHeaders()
	switch {
	case errors.Is(err, gwerr.ErrClientGone):
		x.rec.Outcome, x.rec.Status = "client_cancelled", 499
		return
	case err != nil:
		if !errors.Is(err, provider.ErrCannotCount) {
			h.log.LogAttrs(r.Context(), slog.LevelWarn, "token count upstream failed; answering with the estimate",
				slog.String("request_id", rid), slog.String("route", req.Route), slog.String("error", err.Error()))
		}
		x.rec.Estimated = true
		x.rec.Status = counter.WriteCount(w, req, int(teams.EstimateInputTokens(req.Prompt)), true)
		return
	}
	x.rec.Status = counter.WriteCount(w, req, n, false)
}

// countUpstream counts req's input tokens through the failover engine. A
// target whose adapter cannot count this request is passed over like a
// target without a feature the request needs (no network call); when none
// can, the error wraps provider.ErrCannotCount.
func countUpstream(ctx context.Context, rt *runtimeState, req *exchange.Request) (int, error) {
	body, err := rt.router.Call(ctx, req, failover.Op{Name: exchange.OperationCountTokens,
		Post: func(ctx context.Context, call *provider.Call) ([]byte, error) {
			tc, ok := provider.Underlying(rt.router.Providers[call.Step.Provider]).(provider.TokenCounter)
			var n int
			err := provider.ErrCannotCount
			if ok {
				n, err = tc.CountTokens(ctx, call)
			}
			if errors.Is(err, provider.ErrCannotCount) {
				e := provider.Unsupported(call.Step.ID, "", "counting tokens upstream")
				e.Cause = err
				return nil, e
			}
			if err != nil {
				return nil, err
			}
			return strconv.AppendInt(nil, int64(n), 10), nil
		}})
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(string(body))
}

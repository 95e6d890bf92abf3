package server

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/teams"
)

// count serves a token-count request (POST /v1/messages/count_tokens):
// authenticated and routed like a generation, counted by the route's first
// available target (breaker not open, a usable key) when its adapter counts
// upstream (provider.TokenCounter: Anthropic, for a Messages client), else
// estimated with the gateway's documented estimator
// (teams.EstimateInputTokens, the one the limiter reserves with) and marked
// as an estimate. An upstream that fails to count is answered with the
// estimate too. No limits apply and no usage record is written: nothing is
// generated.
func (h *Handler) count(in ingress.Ingress, w http.ResponseWriter, r *http.Request, rid string) {
	rt := h.current.Load()
	cfg := rt.cfg
	req := &exchange.Request{ID: rid, API: in.API(), Start: h.now(), Caller: exchange.CallerFrom(r.Context())}
	if gerr := checkContentType(r); gerr != nil {
		in.WriteError(w, req, gerr)
		return
	}
	body, gerr := readBody(w, r, cfg.Server.MaxBodyBytes)
	if gerr != nil {
		in.WriteError(w, req, gerr)
		return
	}
	if err := in.(ingress.Counter).DecodeCount(r, body, req); err != nil {
		in.WriteError(w, req, gwerr.As(err))
		return
	}
	steps, route, ok := cfg.Chain(req.Route)
	switch {
	case !ok:
		in.WriteError(w, req, gwerr.New(gwerr.NotFound, "the model %q does not exist; GET /v1/models lists the models this gateway serves", req.Route).
			WithParam("model").WithCode("model_not_found"))
		return
	case !req.Caller.MayUse(req.Route):
		in.WriteError(w, req, gwerr.New(gwerr.Permission, "this key may not use the model %q", req.Route).WithParam("model").WithCode("model_not_allowed"))
		return
	}
	req.Steps, req.Policy = steps, route.Policy
	ctx, cancel := context.WithTimeout(r.Context(), route.Policy.ResponseTimeout.D())
	defer cancel()
	n, err := h.countUpstream(ctx, rt, req)
	if err != nil {
		if !errors.Is(err, provider.ErrCannotCount) {
			h.log.LogAttrs(r.Context(), slog.LevelWarn, "token count upstream failed; answering with the estimate",
				slog.String("request_id", rid), slog.String("route", req.Route), slog.String("error", err.Error()))
		}
		in.(ingress.Counter).WriteCount(w, req, int(teams.EstimateInputTokens(req.Prompt)), true)
		return
	}
	w.Header().Set("x-gateway-provider", req.Trace.Provider)
	in.(ingress.Counter).WriteCount(w, req, n, false)
}

// countUpstream asks the route's first available target to count.
func (h *Handler) countUpstream(ctx context.Context, rt *runtimeState, req *exchange.Request) (int, error) {
	for _, step := range req.Steps {
		done, err := h.up.Breakers.Allow(step.ID, breaker.Force(step.Breaker))
		if err != nil {
			continue
		}
		done(breaker.Ignored)
		key, ok := h.up.Keys.Pick(step.Provider, step.Model)
		if !ok {
			continue
		}
		tc, ok := provider.Underlying(rt.router.Providers[step.Provider]).(provider.TokenCounter)
		if !ok {
			return 0, provider.ErrCannotCount
		}
		req.Trace.Provider = step.Provider
		return tc.CountTokens(ctx, &provider.Call{Req: req, Step: step, Key: key,
			OnResponse: func(status int, hd http.Header) { h.up.Keys.Observe(step.Provider, step.Model, key, status, hd) }})
	}
	return 0, provider.ErrCannotCount
}

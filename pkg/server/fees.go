package server

import (
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// checkToolFees refuses, before any upstream call, a request declaring a
// server-side tool that bills per call (web search, web fetch, code
// execution, file search: exchange.FeeKind) when a target of its chain
// has no price for that kind (prices.<target>.tool_calls, or tool_hours
// for code execution; config.Price.Prices): a budget
// cannot bound a fee the gateway cannot price. server.allow_unpriced_tools
// lifts the check.
func checkToolFees(cfg *config.Config, req *exchange.Request) *gwerr.Error {
	if cfg.Server.AllowUnpricedTools || req.Prompt == nil {
		return nil
	}
	kinds, tools := exchange.FeeTools(req.Prompt)
	for i, k := range kinds {
		for _, s := range req.Steps {
			p, _ := cfg.PriceFor(s.Provider, s.Model)
			if !p.Prices(k) {
				return gwerr.New(gwerr.InvalidRequest,
					"the tool %q bills a per-call fee and this gateway has no price for it (prices.%s/%s.tool_calls.%s, or tool_hours for code_execution); remove the tool or ask the operator to price it",
					clip(tools[i].Type), s.Provider, s.Model, k).WithParam("tools").WithCode("unpriced_tool")
			}
		}
	}
	return nil
}

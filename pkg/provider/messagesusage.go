package provider

import (
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// MessagesUsage is an Anthropic Messages usage in the gateway's terms, for
// every adapter that reads one (Anthropic, Bedrock's InvokeModel): Input
// counts every prompt token, cached or not (Anthropic's input_tokens
// excludes them); the billed tool use is server_tool_use's searches and
// fetches and the container the answer ran in, if it ran in one.
func MessagesUsage(u messageswire.Usage, container bool) exchange.TokenUsage {
	containers := 0
	if container {
		containers = 1
	}
	return exchange.TokenUsage{Input: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens,
		Output: u.OutputTokens, CacheRead: u.CacheReadInputTokens, CacheWrite: u.CacheCreationInputTokens,
		CacheWrite1h: u.CacheCreation.Ephemeral1hInputTokens, Tier: u.ServiceTier,
		Tools: exchange.ToolCalls{WebSearch: u.ServerToolUse.WebSearchRequests, WebFetch: u.ServerToolUse.WebFetchRequests,
			Containers: containers}}
}

// MessagesStreamUsage is a Messages stream's usage so far
// (messageswire.StreamState.Figures with exchange.EstimateTokens), with
// reqBytes the upstream request's size and chars the output characters
// seen.
func MessagesStreamUsage(s *messageswire.StreamState, reqBytes, chars int) exchange.TokenUsage {
	u, estimated := s.Figures(reqBytes, chars, exchange.EstimateTokens)
	t := MessagesUsage(u, s.Container)
	t.Estimated = estimated
	return t
}

// MessagesStreamError is the error for what messageswire.StreamState.Apply
// refused (a message_stop before any stop_reason): provider.Interrupted.
func MessagesStreamError(providerID string, err error) error {
	return Interrupted(providerID, err.Error(), nil)
}

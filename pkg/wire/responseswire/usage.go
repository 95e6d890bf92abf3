package responseswire

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// ResponsesUsage is the Responses API usage object's figures.
type ResponsesUsage struct {
	InputTokens     int // input_tokens: every prompt token, cached or not
	OutputTokens    int // output_tokens, reasoning included
	CachedTokens    int // input_tokens_details.cached_tokens
	ReasoningTokens int // output_tokens_details.reasoning_tokens
	// The built-in tool calls of the output, billed per call: its
	// web_search_call, file_search_call and code_interpreter_call items.
	WebSearchCalls, FileSearchCalls, CodeInterpreterCalls int
	// ServiceTier is the response's service_tier: the tier that served it.
	ServiceTier string
}

// tokens is u in the API-neutral form.
func (u ResponsesUsage) tokens() delta.Tokens {
	return delta.Tokens{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CachedTokens, Reasoning: u.ReasoningTokens,
		Tier: u.ServiceTier}
}

// countCall counts item when it is a built-in tool call billed per call.
func (u *ResponsesUsage) countCall(item gjson.Result) {
	switch item.Get("type").Str {
	case "web_search_call":
		u.WebSearchCalls++
	case "file_search_call":
		u.FileSearchCalls++
	case "code_interpreter_call":
		u.CodeInterpreterCalls++
	}
}

// readResponsesUsage reads the usage object of response object resp (and
// its service_tier) into ri.
func readResponsesUsage(resp gjson.Result, ri *ResponsesEventInfo) {
	u := resp.Get("usage")
	if !u.IsObject() {
		return
	}
	ri.HasUsage = true
	// The counts are read raw (jsonb.Int): this runs at a stream's last
	// event, at the deepest point of its stack.
	var in, out, cached, reasoning int64
	jsonb.Members(u.Raw, func(k, v string) bool {
		switch k {
		case "input_tokens":
			in = jsonb.Int(v)
		case "output_tokens":
			out = jsonb.Int(v)
		case "input_tokens_details":
			cached = detail(v, "cached_tokens")
		case "output_tokens_details":
			reasoning = detail(v, "reasoning_tokens")
		}
		return true
	})
	ri.Usage = ResponsesUsage{InputTokens: int(in), OutputTokens: int(out), CachedTokens: int(cached),
		ReasoningTokens: int(reasoning), ServiceTier: strings.Clone(resp.Get("service_tier").Str)}
}

// detail is the count named key in a usage details object.
func detail(obj, key string) int64 {
	var n int64
	jsonb.Members(obj, func(k, v string) bool {
		if k == key {
			n = jsonb.Int(v)
			return false
		}
		return true
	})
	return n
}

// ReadUsage reads the top-level usage of a whole Responses API object (a
// response in any status, a compaction), zero when it has none.
func ReadUsage(body []byte) delta.Tokens {
	var ri ResponsesEventInfo
	readResponsesUsage(gjson.ParseBytes(body), &ri)
	return ri.Usage.tokens()
}

package bedrock

import (
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// completion turns a Converse output into one chat.completion body: text
// blocks joined into message.content (null when there is none), reasoning
// text into message.reasoning_content, toolUse blocks into
// message.tool_calls with their input re-encoded as the arguments string.
// A success with no text, no tool call and no output tokens is
// provider.EmptyResponse. Without bedrock's usage the tokens are estimated
// (reqBytes is the client request's size).
func completion(providerID, id, model string, created int64, out *bedrockruntime.ConverseOutput, reqBytes int) ([]byte, provider.Usage, error) {
	var u provider.Usage
	if out.Usage != nil {
		u = tokenUsage(out.Usage)
	}
	fr, err := finishReason(out.StopReason)
	if err != nil {
		ge := err.(*gwerr.Error)
		ge.Provider = providerID
		return nil, u, ge
	}
	var blocks []types.ContentBlock
	if m, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		blocks = m.Value.Content
	}
	var text, reasoning []byte
	hasText, hasReasoning, nTools, chars := false, false, 0, 0
	for _, b := range blocks {
		switch v := b.(type) {
		case *types.ContentBlockMemberText:
			text, hasText = append(text, v.Value...), true
		case *types.ContentBlockMemberReasoningContent:
			if rt, ok := v.Value.(*types.ReasoningContentBlockMemberReasoningText); ok && rt.Value.Text != nil {
				reasoning, hasReasoning = append(reasoning, *rt.Value.Text...), true
			}
		case *types.ContentBlockMemberToolUse:
			nTools++
		}
	}
	chars = utf8.RuneCount(text) + utf8.RuneCount(reasoning)

	b := make([]byte, 0, 256+len(text)+len(reasoning))
	b = append(b, `{"id":`...)
	b = appendString(b, id)
	b = append(b, `,"object":"chat.completion","created":`...)
	b = appendInt(b, created)
	b = append(b, `,"model":`...)
	b = appendString(b, model)
	b = append(b, `,"choices":[{"index":0,"message":{"role":"assistant","content":`...)
	if hasText {
		b = appendString(b, string(text))
	} else {
		b = append(b, "null"...)
	}
	if hasReasoning {
		b = append(b, `,"reasoning_content":`...)
		b = appendString(b, string(reasoning))
	}
	if nTools > 0 {
		b = append(b, `,"tool_calls":[`...)
		n := 0
		for _, blk := range blocks {
			tu, ok := blk.(*types.ContentBlockMemberToolUse)
			if !ok {
				continue
			}
			args := []byte("{}")
			if tu.Value.Input != nil {
				raw, err := tu.Value.Input.MarshalSmithyDocument()
				if err != nil {
					return nil, u, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned a tool call whose input cannot be encoded", Provider: providerID, Cause: err}
				}
				if len(raw) > 0 && string(raw) != "null" {
					args = raw
				}
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			name := deref(tu.Value.Name)
			chars += len(args) + len(name)
			b = append(b, `{"id":`...)
			b = appendString(b, deref(tu.Value.ToolUseId))
			b = append(b, `,"type":"function","function":{"name":`...)
			b = appendString(b, name)
			b = append(b, `,"arguments":`...)
			b = appendString(b, string(args))
			b = append(b, `}}`...)
		}
		b = append(b, ']')
	}
	b = append(b, `},"finish_reason":`...)
	b = appendString(b, fr)
	b = append(b, `,"logprobs":null}],"usage":`...)
	if out.Usage == nil {
		u = provider.Usage{Input: provider.EstimateTokens(reqBytes), Output: provider.EstimateTokens(chars), Estimated: true}
	}
	b = appendUsage(b, u.Input, u.Output, u.CacheRead, u.CacheWrite)
	b = append(b, '}')
	if chars == 0 && nTools == 0 && u.Output == 0 {
		return nil, u, provider.EmptyResponse(providerID)
	}
	return b, u, nil
}

package bedrock

import (
	"encoding/base64"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// completion turns a Converse output into canonical events, in block
// order: Start{ID: id, Name: model, Created: created}; a text block ->
// Text; reasoning text -> Reasoning then its Signature; redacted reasoning
// -> RedactedReasoning (base64); a toolUse block -> ToolCall{Index, ID,
// Name} then ToolArgs with its input re-encoded as JSON ("{}" when
// absent); stopReason -> Finish (mapped as in streams, see finishReason);
// then Usage. A success with no text, no reasoning, no tool call and no
// output tokens is provider.EmptyResponse. Without bedrock's usage the
// tokens are estimated (reqBytes is the client request's size).
func completion(providerID, id, model string, created int64, out *bedrockruntime.ConverseOutput, reqBytes int) ([]exchange.Event, exchange.TokenUsage, error) {
	fr, err := finishReason(out.StopReason)
	if err != nil {
		ge := err.(*gwerr.Error)
		ge.Provider = providerID
		return nil, exchange.TokenUsage{}, ge
	}
	evs := []exchange.Event{{Kind: exchange.Start, ID: id, Name: model, Created: created}}
	chars, tools := 0, 0
	if m, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, b := range m.Value.Content {
			switch v := b.(type) {
			case *types.ContentBlockMemberText:
				if v.Value != "" {
					chars += utf8.RuneCountInString(v.Value)
					evs = append(evs, exchange.Event{Kind: exchange.Text, Text: v.Value})
				}
			case *types.ContentBlockMemberReasoningContent:
				evs = appendReasoning(evs, v.Value, &chars)
			case *types.ContentBlockMemberToolUse:
				args := "{}"
				if v.Value.Input != nil {
					raw, err := v.Value.Input.MarshalSmithyDocument()
					if err != nil {
						return nil, exchange.TokenUsage{}, &gwerr.Error{Category: gwerr.Unavailable,
							Message: "provider returned a tool call whose input cannot be encoded", Provider: providerID, Cause: err}
					}
					if len(raw) > 0 && string(raw) != "null" {
						args = string(raw)
					}
				}
				name := deref(v.Value.Name)
				chars += len(name) + len(args)
				evs = append(evs, exchange.Event{Kind: exchange.ToolCall, Index: tools, ID: deref(v.Value.ToolUseId), Name: name},
					exchange.Event{Kind: exchange.ToolArgs, Index: tools, Text: args})
				tools++
			}
		}
	}
	var u exchange.TokenUsage
	if out.Usage != nil {
		u = tokenUsage(out.Usage, out.ServiceTier)
	} else {
		u = exchange.TokenUsage{Input: exchange.EstimateTokens(reqBytes), Output: exchange.EstimateTokens(chars), Estimated: true}
	}
	if chars == 0 && tools == 0 && u.Output == 0 {
		return nil, u, provider.EmptyResponse(providerID)
	}
	evs = append(evs, exchange.Event{Kind: exchange.Finish, Finish: fr, Stop: string(out.StopReason)},
		exchange.Event{Kind: exchange.Usage, Usage: u})
	return evs, u, nil
}

// appendReasoning appends the events of a reasoning block.
func appendReasoning(evs []exchange.Event, b types.ReasoningContentBlock, chars *int) []exchange.Event {
	switch r := b.(type) {
	case *types.ReasoningContentBlockMemberReasoningText:
		if t := deref(r.Value.Text); t != "" {
			*chars += utf8.RuneCountInString(t)
			evs = append(evs, exchange.Event{Kind: exchange.Reasoning, Text: t})
		}
		if sig := deref(r.Value.Signature); sig != "" {
			evs = append(evs, exchange.Event{Kind: exchange.Signature, Text: sig})
		}
	case *types.ReasoningContentBlockMemberRedactedContent:
		if len(r.Value) > 0 {
			evs = append(evs, exchange.Event{Kind: exchange.RedactedReasoning, Text: base64.StdEncoding.EncodeToString(r.Value)})
		}
	}
	return evs
}

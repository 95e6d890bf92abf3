package bedrock

import (
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
)

// completion turns a Converse output into one chat.completion body: text
// blocks joined into message.content (null when there is none), reasoning
// text into message.reasoning_content, toolUse blocks into
// message.tool_calls with their input re-encoded as the arguments string,
// stopReason mapped as in streams (finishReason). A success with no text,
// no tool call and no output tokens is provider.EmptyResponse. Without
// bedrock's usage the tokens are estimated (reqBytes is the client
// request's size).
func completion(providerID, id, model string, created int64, out *bedrockruntime.ConverseOutput, reqBytes int) ([]byte, provider.Usage, error) {
	fr, err := finishReason(out.StopReason)
	if err != nil {
		ge := err.(*gwerr.Error)
		ge.Provider = providerID
		return nil, provider.Usage{}, ge
	}
	msg := openaiwire.CompletionMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	hasText, chars := false, 0
	if m, ok := out.Output.(*types.ConverseOutputMemberMessage); ok {
		for _, b := range m.Value.Content {
			switch v := b.(type) {
			case *types.ContentBlockMemberText:
				text.WriteString(v.Value)
				hasText = true
			case *types.ContentBlockMemberReasoningContent:
				if rt, ok := v.Value.(*types.ReasoningContentBlockMemberReasoningText); ok && rt.Value.Text != nil {
					reasoning.WriteString(*rt.Value.Text)
				}
			case *types.ContentBlockMemberToolUse:
				args := "{}"
				if v.Value.Input != nil {
					raw, err := v.Value.Input.MarshalSmithyDocument()
					if err != nil {
						return nil, provider.Usage{}, &gwerr.Error{Category: gwerr.Unavailable,
							Message: "provider returned a tool call whose input cannot be encoded", Provider: providerID, Cause: err}
					}
					if len(raw) > 0 && string(raw) != "null" {
						args = string(raw)
					}
				}
				tc := openaiwire.ToolCall{ID: deref(v.Value.ToolUseId), Type: "function",
					Function: openaiwire.FunctionCall{Name: deref(v.Value.Name), Arguments: args}}
				chars += len(tc.Function.Name) + len(args)
				msg.ToolCalls = append(msg.ToolCalls, tc)
			}
		}
	}
	if hasText {
		s := text.String()
		msg.Content = &s
		chars += utf8.RuneCountInString(s)
	}
	msg.ReasoningContent = reasoning.String()
	chars += utf8.RuneCountInString(msg.ReasoningContent)

	var u provider.Usage
	if out.Usage != nil {
		u = tokenUsage(out.Usage)
	} else {
		u = provider.Usage{Input: provider.EstimateTokens(reqBytes), Output: provider.EstimateTokens(chars), Estimated: true}
	}
	if chars == 0 && len(msg.ToolCalls) == 0 && u.Output == 0 {
		return nil, u, provider.EmptyResponse(providerID)
	}
	c := openaiwire.Completion{ID: id, Object: "chat.completion", Created: created, Model: model, Usage: u.OpenAI(),
		Choices: []openaiwire.CompletionChoice{{Index: 0, Message: msg, FinishReason: fr}}}
	body, err := c.Marshal()
	if err != nil {
		return nil, u, &gwerr.Error{Category: gwerr.Internal, Message: "could not encode the response", Provider: providerID, Cause: err}
	}
	return body, u, nil
}

package anthropic

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/llmgw/llmgw/pkg/anthropicwire"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
)

// translateResponse turns a whole Messages response into one
// chat.completion body: text blocks joined into message.content, tool_use
// blocks into tool_calls (arguments = the input object as compact JSON),
// thinking blocks joined into reasoning_content, stop_reason mapped to
// finish_reason and usage as in the stream. A success with no text, no
// tool call and no output tokens is provider.EmptyResponse.
func translateResponse(prov string, data []byte, created int64) ([]byte, provider.Usage, error) {
	var r anthropicwire.Response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, provider.Usage{}, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: prov, Cause: err}
	}
	if r.Type == anthropicwire.EventError {
		var e anthropicwire.ErrorResponse
		_ = json.Unmarshal(data, &e)
		return nil, provider.Usage{}, provider.InBandError(prov, e.Error.Type)
	}
	var text, reasoning strings.Builder
	var calls []openaiwire.ToolCall
	for _, b := range r.Content {
		switch b.Type {
		case anthropicwire.BlockText:
			text.WriteString(b.Text)
		case anthropicwire.BlockThinking:
			reasoning.WriteString(b.Thinking)
		case anthropicwire.BlockToolUse:
			args := "{}"
			if in := bytes.TrimSpace(b.Input); len(in) > 0 && string(in) != "null" {
				var c bytes.Buffer
				if json.Compact(&c, in) == nil {
					args = c.String()
				}
			}
			calls = append(calls, openaiwire.ToolCall{ID: b.ID, Type: "function", Function: openaiwire.FunctionCall{Name: b.Name, Arguments: args}})
		}
	}
	if text.Len() == 0 && reasoning.Len() == 0 && len(calls) == 0 && r.Usage.OutputTokens == 0 {
		return nil, provider.Usage{}, provider.EmptyResponse(prov)
	}
	msg := openaiwire.CompletionMessage{Role: "assistant", ReasoningContent: reasoning.String(), ToolCalls: calls}
	if text.Len() > 0 || len(calls) == 0 {
		s := text.String()
		msg.Content = &s
	}
	ou := openAIUsage(r.Usage)
	c := openaiwire.Completion{ID: "chatcmpl-" + r.ID, Created: created, Model: r.Model, Usage: &ou,
		Choices: []openaiwire.CompletionChoice{{Message: msg, FinishReason: finishReason(r.StopReason)}}}
	out, err := c.Marshal()
	if err != nil {
		return nil, provider.Usage{}, &gwerr.Error{Category: gwerr.Internal, Message: "could not encode the translated response", Provider: prov, Cause: err}
	}
	return out, providerUsage(r.Usage), nil
}

package anthropic

import (
	"bytes"
	"encoding/json"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// translateResponse turns a whole Messages response into canonical events,
// in the order of its content blocks:
//
//	the message (id, model)    -> Start{ID, Name, Created: created}
//	text block                 -> Text (empty text gives nothing)
//	thinking block             -> Reasoning, then Signature (each when not empty)
//	redacted_thinking block    -> RedactedReasoning{Text: data}
//	tool_use block             -> ToolCall{Index: i, ID, Name}, then ToolArgs{Index: i, Text:
//	                              the input object as compact JSON, "{}" when empty}
//	stop_reason, stop_sequence -> Finish (mapped as in streams, see finishReason)
//	usage                      -> Usage (as in streams)
//
// A success with no text, no reasoning, no tool call and no output tokens
// is provider.EmptyResponse; an error object in the body is
// provider.InBandError.
func translateResponse(prov string, data []byte, created int64) ([]exchange.Event, exchange.TokenUsage, error) {
	var r messageswire.Response
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, exchange.TokenUsage{}, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: prov, Cause: err}
	}
	if r.Type == messageswire.EventError {
		var e messageswire.ErrorResponse
		_ = json.Unmarshal(data, &e)
		return nil, exchange.TokenUsage{}, provider.InBandError(prov, e.Error.Type)
	}
	evs := make([]exchange.Event, 1, len(r.Content)+3)
	evs[0] = exchange.Event{Kind: exchange.Start, ID: r.ID, Name: r.Model, Created: created}
	content, tools := false, 0
	for _, b := range r.Content {
		switch b.Type {
		case messageswire.BlockText:
			if b.Text != "" {
				content = true
				evs = append(evs, exchange.Event{Kind: exchange.Text, Text: b.Text})
			}
		case messageswire.BlockThinking:
			if b.Thinking != "" {
				content = true
				evs = append(evs, exchange.Event{Kind: exchange.Reasoning, Text: b.Thinking})
			}
			if b.Signature != "" {
				evs = append(evs, exchange.Event{Kind: exchange.Signature, Text: b.Signature})
			}
		case messageswire.BlockRedactedThinking:
			if b.Data != "" {
				evs = append(evs, exchange.Event{Kind: exchange.RedactedReasoning, Text: b.Data})
			}
		case messageswire.BlockToolUse:
			content = true
			evs = append(evs, exchange.Event{Kind: exchange.ToolCall, Index: tools, ID: b.ID, Name: b.Name},
				exchange.Event{Kind: exchange.ToolArgs, Index: tools, Text: toolArgs(b.Input)})
			tools++
		}
	}
	if !content && r.Usage.OutputTokens == 0 {
		return nil, exchange.TokenUsage{}, provider.EmptyResponse(prov)
	}
	u := provider.MessagesUsage(r.Usage, messageswire.RanInContainer(data))
	evs = append(evs, finishEvent(r.StopReason, r.StopSequence), exchange.Event{Kind: exchange.Usage, Usage: u})
	return evs, u, nil
}

// toolArgs is a tool_use input as the compact JSON arguments string, "{}"
// when it is empty, null or not JSON.
func toolArgs(in json.RawMessage) string {
	in = bytes.TrimSpace(in)
	if len(in) == 0 || string(in) == "null" {
		return "{}"
	}
	var c bytes.Buffer
	if json.Compact(&c, in) != nil {
		return "{}"
	}
	return c.String()
}

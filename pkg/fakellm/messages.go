package fakellm

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The fake's Anthropic Messages side: a fake provider that lists messages
// in its apis is reached through the real anthropic adapter, so Messages
// requests (Claude Code's: thinking, context_management, tools and all)
// pass through to it and it answers in the Messages wire format, streamed
// or not, with the same script as its Chat Completions side.

const messageID = "msg_fake"

// isMessages reports whether a request path is the Messages API's.
func isMessages(path string) bool { return strings.HasSuffix(path, "/messages") }

// isCountTokens reports whether a request path is Messages count_tokens.
func isCountTokens(path string) bool { return strings.HasSuffix(path, "/messages/count_tokens") }

// countTokensBody is the count_tokens answer: the same estimate the fake
// reports as its input usage.
func countTokensBody(rq request) []byte {
	return fmt.Appendf(nil, `{"input_tokens":%d}`, rq.promptTokens)
}

// messagesEvent writes one Messages SSE frame.
func messagesEvent(w io.Writer, flush func(), typ, data string) error {
	if _, err := io.WriteString(w, "event: "+typ+"\ndata: "+data+"\n\n"); err != nil {
		return err
	}
	flush()
	return nil
}

// writeMessagesStream writes the scripted reply as a Messages event
// stream. It returns errReset when the script cuts the stream.
func writeMessagesStream(ctx context.Context, s *Script, rq request, w io.Writer, flush func()) error {
	model := string(jsonb.AppendString(nil, rq.model))
	if err := sleep(ctx, s.FirstTokenDelay.D()); err != nil {
		return err
	}
	start := fmt.Sprintf(`{"type":"message_start","message":{"id":%q,"type":"message","role":"assistant","model":%s,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":1}}}`,
		messageID, model, rq.promptTokens)
	if err := messagesEvent(w, flush, "message_start", start); err != nil {
		return err
	}
	stop, out := "end_turn", 0
	delta := func(d string) error {
		return messagesEvent(w, flush, "content_block_delta", `{"type":"content_block_delta","index":0,"delta":`+d+`}`)
	}
	switch {
	case s.Fail == "empty":
	case s.ToolCall != nil:
		stop = "tool_use"
		name, _ := json.Marshal(s.ToolCall.Name)
		if err := messagesEvent(w, flush, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_fake_1","name":`+string(name)+`,"input":{}}}`); err != nil {
			return err
		}
		args := s.ToolCall.Arguments
		for i := 0; i < len(args); i += 8 {
			q, _ := json.Marshal(args[i:min(i+8, len(args))])
			if err := delta(`{"type":"input_json_delta","partial_json":` + string(q) + `}`); err != nil {
				return err
			}
			out++
		}
	default:
		if err := messagesEvent(w, flush, "content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`); err != nil {
			return err
		}
		if err := eachChunk(ctx, s, func(q string) error {
			out++
			return delta(`{"type":"text_delta","text":` + q + `}`)
		}); err != nil {
			return err
		}
	}
	if s.Fail != "empty" {
		if err := messagesEvent(w, flush, "content_block_stop", `{"type":"content_block_stop","index":0}`); err != nil {
			return err
		}
	}
	if err := messagesEvent(w, flush, "message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":%d}}`, stop, out)); err != nil {
		return err
	}
	return messagesEvent(w, flush, "message_stop", `{"type":"message_stop"}`)
}

// messagesCompletion returns the non-streaming Messages reply body.
func messagesCompletion(s *Script, rq request) []byte {
	content := []any{}
	stop, out := "end_turn", 0
	switch {
	case s.Fail == "empty":
	case s.ToolCall != nil:
		stop = "tool_use"
		var input any = map[string]any{}
		if s.ToolCall.Arguments != "" {
			input = json.RawMessage(s.ToolCall.Arguments)
		}
		content = append(content, map[string]any{"type": "tool_use", "id": "toolu_fake_1", "name": s.ToolCall.Name, "input": input})
		out = (len(s.ToolCall.Arguments) + 7) / 8
	default:
		cs := chunks(s)
		content = append(content, struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{"text", strings.Join(cs, "")})
		out = len(cs)
	}
	type usage struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	}
	body, _ := json.Marshal(struct { // Anthropic's member order
		ID           string  `json:"id"`
		Type         string  `json:"type"`
		Role         string  `json:"role"`
		Model        string  `json:"model"`
		Content      []any   `json:"content"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
		Usage        usage   `json:"usage"`
	}{messageID, "message", "assistant", rq.model, content, stop, nil, usage{rq.promptTokens, out}})
	return body
}

// messagesErrorBody is a scripted failure in Anthropic's error shape.
func messagesErrorBody(status int) []byte {
	typ := "api_error"
	switch status {
	case 429:
		typ = "rate_limit_error"
	case 503, 529:
		typ = "overloaded_error"
	}
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]any{
		"type": typ, "message": fmt.Sprintf("fake provider failure (status %d)", status)}})
	return b
}

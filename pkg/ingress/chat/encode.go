package chat

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/sse"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Encoding, canonical events -> Chat Completions:
//
//	Raw (chat)      -> the upstream's own bytes (a data frame, or the whole body)
//	Start           -> the role chunk {"role":"assistant","content":""}; id "chatcmpl-<upstream id>"
//	Text            -> delta.content
//	Reasoning       -> delta.reasoning_content
//	ToolCall        -> delta.tool_calls[{index, id, type, function: {name, arguments: ""}}]
//	ToolArgs        -> delta.tool_calls[{index, function: {arguments}}]
//	Finish          -> the finish chunk
//	Usage           -> the include_usage chunk (choices []), only when the client asked
//	Signature, RedactedReasoning -> nothing (Chat Completions has no field for them)
//	Continuation    -> nothing; the stream goes on under its own id, and its
//	                   finish chunk carries "x_gateway_continuation":
//	                   {"cut": <target cut>, "continued_by": [<targets>]}
//	End             -> data: [DONE]
//	Fail            -> one data frame holding the error envelope, and no [DONE]

// randomID is a response id for an upstream that gave none.
func randomID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// chatID is the chat.completion id for an upstream response id.
func chatID(id string) string {
	if strings.HasPrefix(id, "chatcmpl-") {
		return id
	}
	return "chatcmpl-" + id
}

func created(t int64) int64 {
	if t == 0 {
		return time.Now().Unix()
	}
	return t
}

// streamEncoder writes SSE frames. It owns one chunk builder, so the
// translated path allocates nothing per event.
type streamEncoder struct {
	b         chatwire.ChunkBuilder
	started   bool
	wantUsage bool
	model     string // the route, for a stream whose upstream named no model
	// cut and continuedBy describe a mid-stream continuation, marked on
	// the finish chunk.
	cut         string
	continuedBy []string
}

func (e *streamEncoder) ContentType() string { return "text/event-stream; charset=utf-8" }

func (e *streamEncoder) Event(dst []byte, ev *exchange.Event) []byte {
	var data []byte
	switch ev.Kind {
	case exchange.Raw:
		if ev.Flags&exchange.UsageOnly != 0 && !e.wantUsage {
			return dst
		}
		if ev.Flags&exchange.HasFinish != 0 && e.cut != "" {
			return e.appendMarked(dst, ev.Raw)
		}
		return sse.AppendData(dst, ev.Raw)
	case exchange.Continuation:
		if !e.started {
			// A passthrough stream announced itself in its own bytes: go on
			// under the id it gave.
			e.started = true
			id, model := ev.ID, ev.Name
			if id == "" {
				id = randomID()
			}
			if model == "" {
				model = e.model
			}
			e.b.Reset(chatID(id), created(ev.Created), model)
		}
		if e.cut == "" {
			e.cut = ev.Stop
		}
		e.continuedBy = append(e.continuedBy, ev.Text)
		return dst
	case exchange.Start:
		if e.started {
			return dst
		}
		e.started = true
		e.b.Reset(chatID(ev.ID), created(ev.Created), ev.Name)
		data = e.b.Role()
	case exchange.Text:
		dst = e.roleFirst(dst)
		data = e.b.Content(ev.Text)
	case exchange.Reasoning:
		dst = e.roleFirst(dst)
		data = e.b.Reasoning(ev.Text)
	case exchange.ToolCall:
		dst = e.roleFirst(dst)
		data = e.b.ToolCallStart(ev.Index, ev.ID, ev.Name)
	case exchange.ToolArgs:
		dst = e.roleFirst(dst)
		data = e.b.ToolCallArguments(ev.Index, ev.Text)
	case exchange.Finish:
		dst = e.roleFirst(dst)
		data = e.b.Finish(ev.Finish)
		if e.cut != "" {
			return e.appendMarked(dst, data)
		}
	case exchange.Usage:
		if !e.wantUsage {
			return dst
		}
		dst = e.roleFirst(dst)
		data = e.b.Usage(Usage(ev.Usage))
	default:
		return dst
	}
	return sse.AppendData(dst, data)
}

// appendMarked appends the data frame of a finish chunk with the
// continuation's extension field added to its object.
func (e *streamEncoder) appendMarked(dst, chunk []byte) []byte {
	chunk = bytes.TrimRight(chunk, " \t\r\n")
	if len(chunk) < 2 || chunk[len(chunk)-1] != '}' {
		return sse.AppendData(dst, chunk)
	}
	ext, _ := json.Marshal(struct {
		Cut         string   `json:"cut"`
		ContinuedBy []string `json:"continued_by"`
	}{e.cut, e.continuedBy})
	dst = append(dst, "data: "...)
	dst = append(dst, chunk[:len(chunk)-1]...)
	dst = append(dst, `,"x_gateway_continuation":`...)
	dst = append(dst, ext...)
	return append(dst, '}', '\n', '\n')
}

// roleFirst writes the role chunk when an upstream produced output without
// announcing the response first (Bedrock without messageStart): clients
// (openai-node's stream helpers, LangChain) need delta.role on the first
// chunk of every stream.
func (e *streamEncoder) roleFirst(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	e.b.Reset(chatID(randomID()), created(0), e.model)
	return sse.AppendData(dst, e.b.Role())
}

func (e *streamEncoder) End(dst []byte, _ exchange.TokenUsage) []byte {
	return append(dst, sse.Done...)
}

func (e *streamEncoder) Fail(dst []byte, ge *gwerr.Error, rid string, u exchange.TokenUsage) []byte {
	ou := Usage(u)
	return sse.AppendData(dst, chatwire.NewErrorEnvelope(ge, rid, &ou).Marshal())
}

// bodyEncoder builds a non-streaming chat.completion: the upstream's own
// body on passthrough, else one assembled from the events.
type bodyEncoder struct {
	raw       []byte
	c         chatwire.Completion
	text      strings.Builder
	reasoning strings.Builder
	hasText   bool
	calls     []chatwire.ToolCall
	finish    string
	usage     *chatwire.Usage
}

func (e *bodyEncoder) ContentType() string { return "application/json" }

func (e *bodyEncoder) Event(dst []byte, ev *exchange.Event) []byte {
	switch ev.Kind {
	case exchange.Raw:
		e.raw = append(e.raw, ev.Raw...)
	case exchange.Start:
		e.c.ID, e.c.Created, e.c.Model = chatID(ev.ID), created(ev.Created), ev.Name
	case exchange.Text:
		e.hasText = true
		e.text.WriteString(ev.Text)
	case exchange.Reasoning:
		e.reasoning.WriteString(ev.Text)
	case exchange.ToolCall:
		for len(e.calls) <= ev.Index {
			e.calls = append(e.calls, chatwire.ToolCall{Type: "function"})
		}
		e.calls[ev.Index].ID, e.calls[ev.Index].Function.Name = ev.ID, ev.Name
	case exchange.ToolArgs:
		if ev.Index >= 0 && ev.Index < len(e.calls) {
			e.calls[ev.Index].Function.Arguments += ev.Text
		}
	case exchange.Finish:
		e.finish = ev.Finish
	case exchange.Usage:
		ou := Usage(ev.Usage)
		e.usage = &ou
	}
	return dst
}

func (e *bodyEncoder) End(dst []byte, u exchange.TokenUsage) []byte {
	if e.raw != nil {
		return append(dst, e.raw...)
	}
	msg := chatwire.CompletionMessage{Role: "assistant", ReasoningContent: e.reasoning.String(), ToolCalls: e.calls}
	for i := range msg.ToolCalls {
		if msg.ToolCalls[i].Function.Arguments == "" {
			msg.ToolCalls[i].Function.Arguments = "{}"
		}
	}
	if e.hasText || len(e.calls) == 0 {
		s := e.text.String()
		msg.Content = &s
	}
	if e.usage == nil {
		ou := Usage(u)
		e.usage = &ou
	}
	finish := e.finish
	if finish == "" {
		finish = exchange.FinishStop
	}
	e.c.Usage = e.usage
	e.c.Choices = []chatwire.CompletionChoice{{Message: msg, FinishReason: finish}}
	out, err := e.c.Marshal()
	if err != nil { // cannot happen: every field is a plain value
		return dst
	}
	return append(dst, out...)
}

// Fail cannot be reached: the front sends a non-streaming body only whole,
// and answers a failure before it with an error response.
func (e *bodyEncoder) Fail(dst []byte, _ *gwerr.Error, _ string, _ exchange.TokenUsage) []byte {
	return dst
}

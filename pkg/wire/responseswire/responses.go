package responseswire

import (
	"bytes"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// ResponsesEventInfo is what the gateway needs to know about one Responses
// API stream event (or a whole non-streaming response). It holds no
// references into the inspected bytes.
type ResponsesEventInfo struct {
	// Content: the event carries generated output (a text, refusal,
	// reasoning, tool-argument or tool-input delta, a non-message output
	// item starting, or any output item finishing).
	Content bool
	// Chars counts the characters (code points) of a delta, for estimates.
	Chars int
	// Finish: the event is terminal and clean (response.completed or
	// response.incomplete; for a whole body, status completed or
	// incomplete).
	Finish bool
	// FinishReason is the terminal event's reason in the chat vocabulary:
	// stop, or length (incomplete for max_output_tokens) or content_filter.
	FinishReason string
	// Failed: the upstream reports a failure in-band (response.failed, an
	// error event, or a top-level error object); ErrorCode is its code or
	// type.
	Failed    bool
	ErrorCode string // the failure's error code (or type)
	// Created: the event is response.created.
	Created bool
	// Queued: a whole body whose status is queued or in_progress: a
	// background response, accepted and not yet done (no output, no
	// usage yet), polled later with GET /v1/responses/{id}.
	Queued bool
	// HasUsage: the event carries the response's usage, Usage.
	HasUsage bool
	Usage    ResponsesUsage // the usage, when HasUsage
}

// InspectResponsesEvent reads one Responses API SSE frame: event is its
// `event:` field (may be empty: the data's "type" is used then), data its
// JSON. Content and delta frames are read without allocating.
func InspectResponsesEvent(event, data []byte) ResponsesEventInfo {
	ri, _ := readEvent(nil, event, data, false)
	return ri
}

// ReadEvent is the one reader of Responses API stream events:
// InspectResponsesEvent's summary, and the event's parts appended to dst
// (pkg/wire/delta), as the Responses encoder writes them:
//
//	response.created                          -> Start{ID, Name: model, Created: created_at}
//	response.output_text.delta                -> Text
//	response.reasoning_summary_text.delta,
//	response.reasoning_text.delta             -> Reasoning
//	response.refusal.delta                    -> Refusal
//	output_item.added of a function_call      -> ToolCall{Index: output_index, ID: call_id, Name}
//	response.function_call_arguments.delta    -> ToolArgs{Index: output_index}
//	response.completed, response.incomplete   -> Finish (stop, length, content_filter), Usage
//	output items of other types, a reasoning item with encrypted content,
//	annotations, custom tool input, unknown events -> Opaque
//	the lifecycle events (in_progress, content_part.*, *.done of text,
//	arguments and summaries, output_item.done of a message or call)
//	                                          -> nothing
//
// The parts' strings point into data unless they hold escapes.
func ReadEvent(dst []delta.Part, event, data []byte) (ResponsesEventInfo, []delta.Part) {
	return readEvent(dst, event, data, true)
}

func readEvent(dst []delta.Part, event, data []byte, collect bool) (ResponsesEventInfo, []delta.Part) {
	var ri ResponsesEventInfo
	s := jsonb.String(data)
	typ := jsonb.String(event)
	if typ == "" {
		typ = gjson.Get(s, "type").Str
	}
	opaque := func(what string) {
		if collect {
			dst = append(dst, delta.Part{Kind: delta.Opaque, Name: what})
		}
	}
	switch typ {
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta",
		"response.reasoning_summary_text.delta", "response.reasoning_text.delta", "response.custom_tool_call_input.delta":
		ri.Content = true
		raw := deltaRaw(data)
		ri.Chars = jsonb.Chars(raw)
		if !collect {
			break
		}
		p := delta.Part{Text: gjson.Get(s, "delta").Str}
		switch typ {
		case "response.output_text.delta":
			p.Kind = delta.Text
		case "response.refusal.delta":
			p.Kind = delta.Refusal
		case "response.function_call_arguments.delta":
			p.Kind, p.Index = delta.ToolArgs, int(gjson.Get(s, "output_index").Int())
		case "response.custom_tool_call_input.delta":
			p = delta.Part{Kind: delta.Opaque, Name: "custom_tool_call"}
		default:
			p.Kind = delta.Reasoning
		}
		if p.Kind == delta.Opaque || p.Text != "" {
			dst = append(dst, p)
		}
	case "response.output_item.added":
		item := gjson.Get(s, "item")
		switch t := item.Get("type").Str; t {
		case "message", "reasoning":
			// Their deltas (or their done event) carry the output.
		case "function_call":
			ri.Content = true
			ri.Chars = jsonb.Chars(item.Get("name").Raw)
			if collect {
				i := int(gjson.Get(s, "output_index").Int())
				dst = append(dst, delta.Part{Kind: delta.ToolCall, Index: i, ID: item.Get("call_id").Str, Name: item.Get("name").Str})
				if a := item.Get("arguments").Str; a != "" {
					dst = append(dst, delta.Part{Kind: delta.ToolArgs, Index: i, Text: a})
				}
			}
		default:
			ri.Content = true
			opaque(t)
		}
	case "response.output_item.done":
		ri.Content = true
		if collect {
			item := gjson.Get(s, "item")
			switch t := item.Get("type").Str; t {
			case "message", "function_call":
			case "reasoning":
				if item.Get("encrypted_content").Str != "" {
					opaque("encrypted_content")
				}
			default:
				opaque(t)
			}
		}
	case "response.created":
		ri.Created = true
		if collect {
			r := gjson.Get(s, "response")
			dst = append(dst, delta.Part{Kind: delta.Start, ID: r.Get("id").Str, Name: r.Get("model").Str, Created: r.Get("created_at").Int()})
		}
	case "response.completed", "response.incomplete":
		ri.Finish, ri.FinishReason = true, "stop"
		if typ == "response.incomplete" {
			ri.FinishReason = incompleteReason(gjson.Get(s, "response.incomplete_details.reason").Str)
		}
		readResponsesUsage(gjson.Get(s, "response"), &ri)
		gjson.Get(s, "response.output").ForEach(func(_, item gjson.Result) bool {
			ri.Usage.countCall(item)
			return true
		})
		if collect {
			dst = append(dst, delta.Part{Kind: delta.Finish, Finish: ri.FinishReason})
			if ri.HasUsage {
				dst = append(dst, delta.Part{Kind: delta.Usage, Usage: ri.Usage.tokens()})
			}
		}
	case "response.failed":
		ri.Failed = true
		ri.ErrorCode = errorCode(gjson.Get(s, "response.error"))
		readResponsesUsage(gjson.Get(s, "response"), &ri)
		gjson.Get(s, "response.output").ForEach(func(_, item gjson.Result) bool {
			ri.Usage.countCall(item)
			return true
		})
	case "error":
		ri.Failed = true
		doc := gjson.Get(s, "@this")
		if e := doc.Get("error"); e.IsObject() {
			ri.ErrorCode = errorCode(e)
		} else {
			ri.ErrorCode = errorCode(doc)
		}
	case "response.in_progress", "response.queued", "response.content_part.added", "response.content_part.done",
		"response.output_text.done", "response.refusal.done", "response.function_call_arguments.done",
		"response.reasoning_summary_part.added", "response.reasoning_summary_part.done",
		"response.reasoning_summary_text.done", "response.reasoning_text.done":
	default:
		if e := gjson.Get(s, "error"); e.IsObject() && len(typ) == 0 {
			ri.Failed = true
			ri.ErrorCode = errorCode(e)
			break
		}
		opaque(typ) // annotations, tool progress events, ...: not rebuilt
	}
	return ri, dst
}

// InspectResponsesBody reads a whole non-streaming Responses API response.
func InspectResponsesBody(body []byte) ResponsesEventInfo {
	ri, _ := readBody(nil, body, false)
	return ri
}

// ReadBody is ReadEvent for a whole non-streaming response: Start, each
// output item's parts (a message's output_text as Text, its refusal as
// Refusal, a reasoning item's summary as Reasoning, a function_call as
// ToolCall and ToolArgs; other items and encrypted reasoning as Opaque),
// Finish and Usage.
func ReadBody(dst []delta.Part, body []byte) (ResponsesEventInfo, []delta.Part) {
	return readBody(dst, body, true)
}

func readBody(dst []delta.Part, body []byte, collect bool) (ResponsesEventInfo, []delta.Part) {
	var ri ResponsesEventInfo
	doc := gjson.Parse(jsonb.String(body))
	if e := doc.Get("error"); e.IsObject() {
		ri.Failed = true
		ri.ErrorCode = errorCode(e)
		return ri, dst
	}
	switch doc.Get("status").Str {
	case "completed":
		ri.Finish, ri.FinishReason = true, "stop"
	case "incomplete":
		ri.Finish, ri.FinishReason = true, incompleteReason(doc.Get("incomplete_details.reason").Str)
	case "failed", "cancelled":
		ri.Failed = true
		ri.ErrorCode = doc.Get("status").Str
		return ri, dst
	case "queued", "in_progress":
		ri.Queued = true
	}
	if collect {
		dst = append(dst, delta.Part{Kind: delta.Start, ID: doc.Get("id").Str, Name: doc.Get("model").Str, Created: doc.Get("created_at").Int()})
	}
	readResponsesUsage(doc, &ri)
	doc.Get("output").ForEach(func(k, item gjson.Result) bool {
		ri.Content = true
		ri.Chars += len(item.Raw)
		ri.Usage.countCall(item)
		if collect {
			dst = appendItem(dst, int(k.Int()), item)
		}
		return true
	})
	if collect && ri.Finish {
		dst = append(dst, delta.Part{Kind: delta.Finish, Finish: ri.FinishReason})
	}
	if collect && ri.HasUsage {
		dst = append(dst, delta.Part{Kind: delta.Usage, Usage: ri.Usage.tokens()})
	}
	return ri, dst
}

// appendItem appends the parts of one output item of a whole response.
func appendItem(dst []delta.Part, i int, item gjson.Result) []delta.Part {
	switch t := item.Get("type").Str; t {
	case "message":
		item.Get("content").ForEach(func(_, c gjson.Result) bool {
			switch c.Get("type").Str {
			case "output_text":
				if a := c.Get("annotations"); a.IsArray() && len(a.Array()) > 0 {
					dst = append(dst, delta.Part{Kind: delta.Opaque, Name: "annotations"})
				}
				if text := c.Get("text").Str; text != "" {
					dst = append(dst, delta.Part{Kind: delta.Text, Text: text})
				}
			case "refusal":
				dst = append(dst, delta.Part{Kind: delta.Refusal, Text: c.Get("refusal").Str})
			default:
				dst = append(dst, delta.Part{Kind: delta.Opaque, Name: c.Get("type").Str})
			}
			return true
		})
	case "reasoning":
		if item.Get("encrypted_content").Str != "" {
			return append(dst, delta.Part{Kind: delta.Opaque, Name: "encrypted_content"})
		}
		item.Get("summary").ForEach(func(_, p gjson.Result) bool {
			if text := p.Get("text").Str; text != "" {
				dst = append(dst, delta.Part{Kind: delta.Reasoning, Text: text})
			}
			return true
		})
	case "function_call":
		dst = append(dst, delta.Part{Kind: delta.ToolCall, Index: i, ID: item.Get("call_id").Str, Name: item.Get("name").Str})
		if a := item.Get("arguments").Str; a != "" {
			dst = append(dst, delta.Part{Kind: delta.ToolArgs, Index: i, Text: a})
		}
	default:
		dst = append(dst, delta.Part{Kind: delta.Opaque, Name: t})
	}
	return dst
}

// incompleteReason maps incomplete_details.reason to a chat finish reason.
func incompleteReason(r string) string {
	if r == "content_filter" {
		return "content_filter"
	}
	return "length"
}

// errorCode returns an error object's code, else its type, as a copy.
func errorCode(e gjson.Result) string {
	c := e.Get("code").Str
	if c == "" {
		c = e.Get("type").Str
	}
	return string([]byte(c))
}

// deltaRaw returns a delta frame's "delta" string literal (quotes
// included) without decoding it. The key's quotes cannot occur unescaped
// inside a JSON string, so the first match is the member itself.
func deltaRaw(data []byte) string {
	const key = `"delta":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return ""
	}
	s := data[i+len(key)-1:]
	for j := 1; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return jsonb.String(s[:j+1])
		}
	}
	return ""
}

// SequenceNumber returns the "sequence_number" of a Responses API event,
// or -1. It does not allocate.
func SequenceNumber(data []byte) int64 {
	const key = `"sequence_number":`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return -1
	}
	var n int64
	seen := false
	for _, c := range data[i+len(key):] {
		if c == ' ' && !seen {
			continue
		}
		if c < '0' || c > '9' {
			break
		}
		n, seen = n*10+int64(c-'0'), true
	}
	if !seen {
		return -1
	}
	return n
}

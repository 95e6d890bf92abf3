package responseswire

import (
	"bytes"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// ResponsesUsage is the Responses API usage object's figures.
type ResponsesUsage struct {
	InputTokens     int // input_tokens: every prompt token, cached or not
	OutputTokens    int // output_tokens, reasoning included
	CachedTokens    int // input_tokens_details.cached_tokens
	ReasoningTokens int // output_tokens_details.reasoning_tokens
}

// ResponsesEventInfo is what the gateway needs to know about one Responses
// API stream event (or a whole non-streaming response). It holds no
// references into the inspected bytes.
type ResponsesEventInfo struct {
	// Content: the event carries generated output (a text, refusal,
	// reasoning, tool-argument or tool-input delta, a non-message output
	// item starting, or any output item finishing).
	Content bool
	// Chars counts the characters of a delta, for estimates.
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
	// HasUsage: the event carries the response's usage, Usage.
	HasUsage bool
	Usage    ResponsesUsage // the usage, when HasUsage
}

// InspectResponsesEvent reads one Responses API SSE frame: event is its
// `event:` field (may be empty: the data's "type" is used then), data its
// JSON. Content and delta frames are read without allocating.
func InspectResponsesEvent(event, data []byte) ResponsesEventInfo {
	var ri ResponsesEventInfo
	typ := jsonb.String(event)
	if typ == "" {
		typ = gjson.Get(jsonb.String(data), "type").Str
	}
	switch typ {
	case "response.output_text.delta", "response.refusal.delta", "response.function_call_arguments.delta",
		"response.reasoning_summary_text.delta", "response.reasoning_text.delta", "response.custom_tool_call_input.delta":
		ri.Content = true
		ri.Chars = deltaChars(data)
	case "response.output_item.added":
		switch gjson.Get(jsonb.String(data), "item.type").Str {
		case "message", "reasoning":
			// Their deltas (or their done event) carry the output.
		default:
			ri.Content = true
		}
	case "response.output_item.done":
		ri.Content = true
	case "response.created":
		ri.Created = true
	case "response.completed", "response.incomplete":
		ri.Finish, ri.FinishReason = true, "stop"
		if typ == "response.incomplete" {
			ri.FinishReason = incompleteReason(gjson.Get(jsonb.String(data), "response.incomplete_details.reason").Str)
		}
		readResponsesUsage(gjson.Get(jsonb.String(data), "response.usage"), &ri)
	case "response.failed":
		ri.Failed = true
		ri.ErrorCode = errorCode(gjson.Get(jsonb.String(data), "response.error"))
		readResponsesUsage(gjson.Get(jsonb.String(data), "response.usage"), &ri)
	case "error":
		ri.Failed = true
		doc := gjson.Get(jsonb.String(data), "@this")
		if e := doc.Get("error"); e.IsObject() {
			ri.ErrorCode = errorCode(e)
		} else {
			ri.ErrorCode = errorCode(doc)
		}
	default:
		if e := gjson.Get(jsonb.String(data), "error"); e.IsObject() && len(typ) == 0 {
			ri.Failed = true
			ri.ErrorCode = errorCode(e)
		}
	}
	return ri
}

// InspectResponsesBody reads a whole non-streaming Responses API response.
func InspectResponsesBody(body []byte) ResponsesEventInfo {
	var ri ResponsesEventInfo
	s := jsonb.String(body)
	doc := gjson.Parse(s)
	if e := doc.Get("error"); e.IsObject() {
		ri.Failed = true
		ri.ErrorCode = errorCode(e)
		return ri
	}
	switch doc.Get("status").Str {
	case "completed":
		ri.Finish, ri.FinishReason = true, "stop"
	case "incomplete":
		ri.Finish, ri.FinishReason = true, incompleteReason(doc.Get("incomplete_details.reason").Str)
	case "failed", "cancelled":
		ri.Failed = true
		ri.ErrorCode = doc.Get("status").Str
		return ri
	}
	doc.Get("output").ForEach(func(_, item gjson.Result) bool {
		ri.Content = true
		ri.Chars += len(item.Raw)
		return true
	})
	readResponsesUsage(doc.Get("usage"), &ri)
	return ri
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

func readResponsesUsage(u gjson.Result, ri *ResponsesEventInfo) {
	if !u.IsObject() {
		return
	}
	ri.HasUsage = true
	ri.Usage = ResponsesUsage{
		InputTokens:     int(u.Get("input_tokens").Int()),
		OutputTokens:    int(u.Get("output_tokens").Int()),
		CachedTokens:    int(u.Get("input_tokens_details.cached_tokens").Int()),
		ReasoningTokens: int(u.Get("output_tokens_details.reasoning_tokens").Int()),
	}
}

// deltaChars counts the characters of a delta frame's "delta" string
// without decoding it. The key's quotes cannot occur unescaped inside a
// JSON string, so the first match is the member itself.
func deltaChars(data []byte) int {
	const key = `"delta":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return 0
	}
	s := data[i+len(key):]
	for j := 0; j < len(s); j++ {
		switch s[j] {
		case '\\':
			j++
		case '"':
			return utf8.RuneCount(s[:j])
		}
	}
	return utf8.RuneCount(s)
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

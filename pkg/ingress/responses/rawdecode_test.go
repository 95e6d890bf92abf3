package responses

import (
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

func rawEvent(data string) *exchange.Event {
	return &exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Responses, Raw: []byte(data)}
}

// TestDecodeRawReadsResponsesEvents: a Responses upstream's events and
// whole bodies read back into the canonical events the encoder writes
// them from; lifecycle events carry nothing.
func TestDecodeRawReadsResponsesEvents(t *testing.T) {
	cases := []struct {
		name string
		ev   *exchange.Event
		want []exchange.Event
	}{
		{"created", rawEvent(`{"type":"response.created","sequence_number":0,"response":{"id":"resp_1","created_at":7,"model":"gpt-5","output":[]}}`),
			[]exchange.Event{{Kind: exchange.Start, ID: "resp_1", Name: "gpt-5", Created: 7}}},
		{"in progress", rawEvent(`{"type":"response.in_progress","sequence_number":1,"response":{"id":"resp_1"}}`), nil},
		{"message added", rawEvent(`{"type":"response.output_item.added","output_index":0,"item":{"id":"msg_1","type":"message","content":[]}}`), nil},
		{"text", rawEvent(`{"type":"response.output_text.delta","output_index":0,"delta":"caf\u00e9","logprobs":[]}`),
			[]exchange.Event{{Kind: exchange.Text, Text: "café"}}},
		{"summary", rawEvent(`{"type":"response.reasoning_summary_text.delta","output_index":0,"delta":"thinking"}`),
			[]exchange.Event{{Kind: exchange.Reasoning, Text: "thinking"}}},
		{"call", rawEvent(`{"type":"response.output_item.added","output_index":1,"item":{"id":"fc_1","type":"function_call","arguments":"","call_id":"call_1","name":"get"}}`),
			[]exchange.Event{{Kind: exchange.ToolCall, Index: 1, ID: "call_1", Name: "get"}}},
		{"args", rawEvent(`{"type":"response.function_call_arguments.delta","output_index":1,"delta":"{\"a\":1}"}`),
			[]exchange.Event{{Kind: exchange.ToolArgs, Index: 1, Text: `{"a":1}`}}},
		{"done", rawEvent(`{"type":"response.output_item.done","output_index":0,"item":{"id":"msg_1","type":"message","content":[]}}`), nil},
		{"completed", rawEvent(`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":3,"input_tokens_details":{"cached_tokens":1},"output_tokens":2,"output_tokens_details":{"reasoning_tokens":1}}}}`),
			[]exchange.Event{{Kind: exchange.Finish, Finish: "stop"}, {Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 3, Output: 2, CacheRead: 1, Reasoning: 1}}}},
		{"incomplete", rawEvent(`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`),
			[]exchange.Event{{Kind: exchange.Finish, Finish: "length"}}},
		{"body", &exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Responses, Flags: exchange.Whole,
			Raw: []byte(`{"id":"resp_2","created_at":8,"model":"gpt-5","status":"completed","output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"r"}]},{"type":"message","content":[{"type":"output_text","annotations":[],"text":"hi"}]},{"type":"function_call","call_id":"call_2","name":"f","arguments":"{}"}],"usage":{"input_tokens":1,"output_tokens":2}}`)},
			[]exchange.Event{{Kind: exchange.Start, ID: "resp_2", Name: "gpt-5", Created: 8}, {Kind: exchange.Reasoning, Text: "r"}, {Kind: exchange.Text, Text: "hi"},
				{Kind: exchange.ToolCall, Index: 2, ID: "call_2", Name: "f"}, {Kind: exchange.ToolArgs, Index: 2, Text: "{}"},
				{Kind: exchange.Finish, Finish: "stop"}, {Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 1, Output: 2}}}},
	}
	for _, c := range cases {
		got, ok := Ingress{}.DecodeRaw(nil, c.ev)
		if !ok || len(got) != len(c.want) {
			t.Errorf("%s: ok %v, %+v", c.name, ok, got)
			continue
		}
		for i := range got {
			if !reflect.DeepEqual(got[i], c.want[i]) {
				t.Errorf("%s: event %d = %+v, want %+v", c.name, i, got[i], c.want[i])
			}
		}
	}
}

// TestDecodeRawRefusesWhatTheEncoderCannotWrite: refusals, encrypted
// reasoning, annotations, built-in tool items, custom tool input, unknown
// events and failures make an event unreadable (relayed, not cached).
func TestDecodeRawRefusesWhatTheEncoderCannotWrite(t *testing.T) {
	for name, ev := range map[string]*exchange.Event{
		"refusal":    rawEvent(`{"type":"response.refusal.delta","output_index":0,"delta":"no"}`),
		"encrypted":  rawEvent(`{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","summary":[],"encrypted_content":"gAAA"}}`),
		"annotation": rawEvent(`{"type":"response.output_text.annotation.added","output_index":0,"annotation":{"type":"url_citation"}}`),
		"web search": rawEvent(`{"type":"response.output_item.added","output_index":0,"item":{"type":"web_search_call","id":"ws_1"}}`),
		"custom":     rawEvent(`{"type":"response.custom_tool_call_input.delta","output_index":0,"delta":"*** Begin"}`),
		"failed":     rawEvent(`{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error"}}}`),
		"error":      rawEvent(`{"type":"error","code":"rate_limit_exceeded","message":"slow down"}`),
		"body refusal": {Kind: exchange.Raw, RawAPI: exchange.Responses, Flags: exchange.Whole,
			Raw: []byte(`{"id":"r","status":"completed","output":[{"type":"message","content":[{"type":"refusal","refusal":"no"}]}]}`)},
	} {
		if got, ok := (Ingress{}).DecodeRaw(nil, ev); ok {
			t.Errorf("%s: read as %+v", name, got)
		}
	}
}

package messages

import (
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

func rawFrame(event, data string) *exchange.Event {
	return &exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages, Raw: []byte("event: " + event + "\ndata: " + data + "\n\n")}
}

// TestDecodeRawReadsAnthropicFrames: an Anthropic upstream's frames (as the
// adapter relays them, event line included) and whole bodies read back
// into the canonical events the encoder writes them from.
func TestDecodeRawReadsAnthropicFrames(t *testing.T) {
	cases := []struct {
		name string
		ev   *exchange.Event
		want []exchange.Event
	}{
		{"message_start", rawFrame("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"usage":{"input_tokens":5,"output_tokens":1}}}`),
			[]exchange.Event{{Kind: exchange.Start, ID: "msg_1", Name: "claude-x"}}},
		{"empty text block", rawFrame("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`), nil},
		{"text", rawFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"caf\u00e9"}}`),
			[]exchange.Event{{Kind: exchange.Text, Text: "café"}}},
		{"thinking", rawFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"hmm"}}`),
			[]exchange.Event{{Kind: exchange.Reasoning, Text: "hmm"}}},
		{"signature", rawFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQB"}}`),
			[]exchange.Event{{Kind: exchange.Signature, Text: "EqQB"}}},
		{"redacted", rawFrame("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"opaque"}}`),
			[]exchange.Event{{Kind: exchange.RedactedReasoning, Text: "opaque"}}},
		{"tool_use", rawFrame("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"get","input":{}}}`),
			[]exchange.Event{{Kind: exchange.ToolCall, Index: 2, ID: "toolu_1", Name: "get"}}},
		{"input", rawFrame("content_block_delta", `{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`),
			[]exchange.Event{{Kind: exchange.ToolArgs, Index: 2, Text: `{"a":`}}},
		{"stop", rawFrame("message_delta", `{"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"output_tokens":9}}`),
			[]exchange.Event{{Kind: exchange.Finish, Finish: "stop", Stop: "stop_sequence", StopSequence: "END"}}},
		{"ping", rawFrame("ping", `{"type": "ping"}`), nil},
		{"body", &exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages, Flags: exchange.Whole | exchange.HasContent,
			Raw: []byte(`{"id":"msg_2","type":"message","role":"assistant","model":"claude-x","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_2","name":"f","input":{"x":1}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":3,"cache_read_input_tokens":2,"output_tokens":4}}`)},
			[]exchange.Event{{Kind: exchange.Start, ID: "msg_2", Name: "claude-x"}, {Kind: exchange.Reasoning, Text: "t"}, {Kind: exchange.Signature, Text: "s"},
				{Kind: exchange.Text, Text: "hi"}, {Kind: exchange.ToolCall, Index: 2, ID: "toolu_2", Name: "f"}, {Kind: exchange.ToolArgs, Index: 2, Text: `{"x":1}`},
				{Kind: exchange.Finish, Finish: "tool_calls", Stop: "tool_use"}, {Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 5, Output: 4, CacheRead: 2}}}},
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

// TestDecodeRawRefusesWhatTheEncoderCannotWrite: citations, server tools,
// unknown delta types and errors make a frame unreadable (the answer is
// relayed, not cached).
func TestDecodeRawRefusesWhatTheEncoderCannotWrite(t *testing.T) {
	for name, ev := range map[string]*exchange.Event{
		"citation":    rawFrame("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x"}}}`),
		"server tool": rawFrame("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`),
		"result":      rawFrame("content_block_start", `{"type":"content_block_start","index":2,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`),
		"error":       rawFrame("error", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		"not json":    rawFrame("content_block_delta", `{"type":`),
		"other api":   {Kind: exchange.Raw, RawAPI: exchange.Chat, Raw: []byte(`{}`)},
		"body with citations": {Kind: exchange.Raw, RawAPI: exchange.Messages, Flags: exchange.Whole,
			Raw: []byte(`{"id":"m","type":"message","content":[{"type":"text","text":"x","citations":[{"type":"char_location"}]}],"stop_reason":"end_turn"}`)},
	} {
		if got, ok := (Ingress{}).DecodeRaw(nil, ev); ok {
			t.Errorf("%s: read as %+v", name, got)
		}
	}
}

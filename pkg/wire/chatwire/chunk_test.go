package chatwire

import (
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/wire/delta"
)

// TestReadChunkParts: the one chunk reader reports every part a chunk
// carries, in the encoder's order, and marks what the canonical events
// cannot carry (a refusal as Refusal; a second choice, log probabilities,
// audio as Opaque) instead of dropping it.
func TestReadChunkParts(t *testing.T) {
	const head = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":7,"model":"gpt-x","choices":`
	cases := map[string]struct {
		data  string
		start bool
		want  []delta.Part
	}{
		"role": {head + `[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`, false,
			[]delta.Part{{Kind: delta.Start, ID: "chatcmpl-1", Name: "gpt-x", Created: 7}}},
		"forced start": {head + `[{"index":0,"delta":{"content":"hi"}}]}`, true,
			[]delta.Part{{Kind: delta.Start, ID: "chatcmpl-1", Name: "gpt-x", Created: 7}, {Kind: delta.Text, Text: "hi"}}},
		"order": {head + `[{"index":0,"delta":{"content":"a","reasoning_content":"r","tool_calls":[{"index":2,"id":"call_1","function":{"name":"f","arguments":"{\"x\""}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":1},"completion_tokens_details":{"reasoning_tokens":2}}}`, false,
			[]delta.Part{{Kind: delta.Reasoning, Text: "r"}, {Kind: delta.Text, Text: "a"},
				{Kind: delta.ToolCall, Index: 2, ID: "call_1", Name: "f"}, {Kind: delta.ToolArgs, Index: 2, Text: `{"x"`},
				{Kind: delta.Finish, Finish: "tool_calls"}, {Kind: delta.Usage, Usage: delta.Tokens{Input: 3, Output: 4, CacheRead: 1, Reasoning: 2}}}},
		"refusal": {head + `[{"index":0,"delta":{"refusal":"I can't"}}]}`, false,
			[]delta.Part{{Kind: delta.Refusal, Text: "I can't"}}},
		"logprobs": {head + `[{"index":0,"delta":{"content":"a"},"logprobs":{"content":[{"token":"a"}]}}]}`, false,
			[]delta.Part{{Kind: delta.Text, Text: "a"}, {Kind: delta.Opaque, Name: "logprobs"}}},
		"second choice": {head + `[{"index":1,"delta":{"content":"b"}}]}`, false,
			[]delta.Part{{Kind: delta.Opaque, Name: "choices"}}},
		"audio": {head + `[{"index":0,"delta":{"audio":{"id":"a1"}}}]}`, false,
			[]delta.Part{{Kind: delta.Opaque, Name: "audio"}}},
	}
	for name, tc := range cases {
		_, got := ReadChunk(nil, []byte(tc.data), tc.start)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, tc.want)
		}
	}
	ci, parts := ReadResponse(nil, []byte(`{"id":"chatcmpl-2","created":8,"model":"gpt-x","choices":[{"index":0,"message":{"role":"assistant","content":"whole","refusal":null},"finish_reason":"stop"}]}`))
	want := []delta.Part{{Kind: delta.Start, ID: "chatcmpl-2", Name: "gpt-x", Created: 8}, {Kind: delta.Text, Text: "whole"}, {Kind: delta.Finish, Finish: "stop"}}
	if !reflect.DeepEqual(parts, want) || !ci.Finish || ci.Chars != 5 {
		t.Errorf("body: %+v %+v", ci, parts)
	}
}

// TestInspectChunkIsAllocationFree: the relay's summary read allocates
// nothing, escapes and tool arguments included, and counts characters.
func TestInspectChunkIsAllocationFree(t *testing.T) {
	for _, c := range []struct {
		data  []byte
		chars int
	}{
		{benchChunk, len(" world")},
		{[]byte(`{"choices":[{"index":0,"delta":{"content":"caf\u00e9 \"ok\"\n"},"finish_reason":null}]}`), 10},
		{[]byte(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"get","arguments":"{\"city\":"}}]}}]}`), 3 + 8},
	} {
		if ci := InspectChunk(c.data); ci.Chars != c.chars {
			t.Errorf("%s: %d characters, want %d", c.data, ci.Chars, c.chars)
		}
		if n := testing.AllocsPerRun(1000, func() { InspectChunk(c.data) }); n != 0 {
			t.Errorf("%s: %v allocations per chunk", c.data, n)
		}
	}
}

package chatwire

import (
	"encoding/json"
	"testing"
)

func TestChunkBuilder(t *testing.T) {
	var b ChunkBuilder
	b.Reset("chatcmpl-x\"1", 1700000000, "claude-<3>")
	head := `{"id":"chatcmpl-x\"1","object":"chat.completion.chunk","created":1700000000,"model":"claude-<3>",`
	// Results share the builder's buffer: each is checked before the next call.
	check := func(name string, got []byte, want string) {
		t.Helper()
		if string(got) != head+want {
			t.Errorf("%s:\n got %s\nwant %s", name, got, head+want)
		}
		if !json.Valid(got) {
			t.Errorf("%s: invalid JSON", name)
		}
	}
	check("role", b.Role(), `"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
	check("content", b.Content("a\n\"b\""), `"choices":[{"index":0,"delta":{"content":"a\n\"b\""},"finish_reason":null}]}`)
	check("reasoning", b.Reasoning("hm"), `"choices":[{"index":0,"delta":{"reasoning_content":"hm"},"finish_reason":null}]}`)
	check("refusal", b.Refusal("no"), `"choices":[{"index":0,"delta":{"refusal":"no"},"finish_reason":null}]}`)
	check("tool start", b.ToolCallStart(1, "toolu_1", "get_weather"), `"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`)
	check("tool args", b.ToolCallArguments(1, `{"city": "Pa`), `"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":"{\"city\": \"Pa"}}]},"finish_reason":null}]}`)
	check("finish", b.Finish("tool_calls"), `"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
	check("usage cached", b.Usage(Usage{PromptTokens: 10, CompletionTokens: 5, TotalTokens: 15, PromptTokensDetails: &PromptTokensDetails{CachedTokens: 3, CacheCreationTokens: 2}}),
		`"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":3,"cache_creation_tokens":2}}}`)
	check("usage", b.Usage(Usage{PromptTokens: 1, CompletionTokens: 2, TotalTokens: 3}), `"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`)
	// The chunks read back as OpenAI's chunk shape.
	if ci := InspectChunk(b.ToolCallStart(0, "id", "f")); !ci.Content || !ci.ToolCalls {
		t.Errorf("InspectChunk(tool call start) = %+v", ci)
	}
	if ci := InspectChunk(b.Usage(Usage{PromptTokens: 1})); !ci.UsageOnly {
		t.Errorf("InspectChunk(usage) = %+v", ci)
	}
	if ci := InspectChunk(b.Finish("stop")); !ci.Finish || ci.Content {
		t.Errorf("InspectChunk(finish) = %+v", ci)
	}
}

func TestChunkBuilderReusesBuffer(t *testing.T) {
	var b ChunkBuilder
	b.Reset("chatcmpl-1", 1, "m")
	b.Content("warm up the buffer with a reasonably long text")
	allocs := testing.AllocsPerRun(100, func() { b.Content("hello") })
	if allocs != 0 {
		t.Errorf("Content allocates %v times per chunk, want 0", allocs)
	}
}

func TestCompletionMarshal(t *testing.T) {
	text := "hi"
	c := Completion{ID: "chatcmpl-1", Created: 2, Model: "m", Choices: []CompletionChoice{{
		Message: CompletionMessage{Role: "assistant", Content: &text}, FinishReason: "stop"}},
		Usage: &Usage{PromptTokens: 1, CompletionTokens: 1, TotalTokens: 2}}
	b, err := c.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	want := `{"id":"chatcmpl-1","object":"chat.completion","created":2,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi","refusal":null},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
	if ci := InspectResponse(b); !ci.Content || !ci.Finish || !ci.HasUsage {
		t.Errorf("InspectResponse = %+v", ci)
	}
}

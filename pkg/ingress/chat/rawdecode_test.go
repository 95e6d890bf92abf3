package chat

import (
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

func raw(s string, flags exchange.Flags) *exchange.Event {
	return &exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Chat, Raw: []byte(s), Flags: flags}
}

func TestDecodeRawReadsChunksAndBodies(t *testing.T) {
	cases := []struct {
		name  string
		ev    *exchange.Event
		kinds []exchange.Kind
		text  string
	}{
		{"role chunk", raw(`{"id":"c1","model":"gpt","created":5,"choices":[{"index":0,"delta":{"role":"assistant","content":"","refusal":null},"logprobs":null,"finish_reason":null}]}`, 0),
			[]exchange.Kind{exchange.Start}, ""},
		{"content", raw(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}],"usage":null}`, exchange.HasContent),
			[]exchange.Kind{exchange.Text}, "Hi"},
		{"tool call", raw(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]}`, exchange.HasContent),
			[]exchange.Kind{exchange.ToolCall, exchange.ToolArgs}, ""},
		{"finish", raw(`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`, exchange.HasFinish),
			[]exchange.Kind{exchange.Finish}, ""},
		{"usage", raw(`{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":1}}}`, exchange.UsageOnly),
			[]exchange.Kind{exchange.Usage}, ""},
		{"body", raw(`{"id":"c1","model":"gpt","created":5,"choices":[{"index":0,"message":{"role":"assistant","content":"Hello","refusal":null,"annotations":[]},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}`, exchange.Whole|exchange.HasContent),
			[]exchange.Kind{exchange.Start, exchange.Text, exchange.Finish, exchange.Usage}, "Hello"},
	}
	for _, c := range cases {
		out, ok := Ingress{}.DecodeRaw(nil, c.ev)
		if !ok || len(out) != len(c.kinds) {
			t.Fatalf("%s: ok %v, %+v", c.name, ok, out)
		}
		for i, k := range c.kinds {
			if out[i].Kind != k {
				t.Fatalf("%s: event %d is %d, want %d", c.name, i, out[i].Kind, k)
			}
		}
		for _, ev := range out {
			if ev.Kind == exchange.Text && ev.Text != c.text {
				t.Fatalf("%s: text %q, want %q", c.name, ev.Text, c.text)
			}
		}
	}
	out, _ := Ingress{}.DecodeRaw(nil, cases[2].ev)
	if out[0].Index != 1 || out[0].ID != "call_1" || out[0].Name != "f" || out[1].Text != `{"a"` {
		t.Fatalf("tool call: %+v", out)
	}
	out, _ = Ingress{}.DecodeRaw(nil, cases[4].ev)
	if u := out[0].Usage; u.Input != 3 || u.Output != 2 || u.CacheRead != 1 {
		t.Fatalf("usage: %+v", u)
	}
}

func TestDecodeRawRefusesWhatEventsCannotCarry(t *testing.T) {
	for name, s := range map[string]string{
		"logprobs":      `{"choices":[{"index":0,"delta":{"content":"x"},"logprobs":{"content":[{"token":"x"}]}}]}`,
		"second choice": `{"choices":[{"index":0,"delta":{"content":"x"}},{"index":1,"delta":{"content":"y"}}]}`,
		"index 1":       `{"choices":[{"index":1,"delta":{"content":"y"}}]}`,
		"refusal":       `{"choices":[{"index":0,"delta":{"refusal":"no"}}]}`,
		"audio":         `{"choices":[{"index":0,"delta":{"audio":{"id":"a"}}}]}`,
		"error":         `{"error":{"message":"x"}}`,
		"not json":      `{"choices":`,
	} {
		if _, ok := (Ingress{}).DecodeRaw(nil, raw(s, 0)); ok {
			t.Errorf("%s: decoded", name)
		}
	}
	if _, ok := (Ingress{}).DecodeRaw(nil, &exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages, Raw: []byte(`{}`)}); ok {
		t.Error("decoded another API's frame")
	}
}

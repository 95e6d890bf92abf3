package messageswire_test

import (
	"slices"
	"testing"

	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

func TestToBedrockInvoke(t *testing.T) {
	body := `{"model":"claude-opus-4-5", "stream":true,"max_tokens":64000,` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"hi \u00e9","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],` +
		`"thinking":{"type":"adaptive", "display":"omitted","x":1},"output_config":{"effort":"high"},` +
		`"context_management":{"edits":[]},"anthropic_version":"2023-06-01","anthropic_beta":["context-1m-2025-08-07"]}`
	out, dropped, err := messageswire.ToBedrockInvoke([]byte(body), messageswire.BedrockInvoke{MaxTokens: 8000,
		Betas: []string{"claude-code-20250219, interleaved-thinking-2025-05-14", "advanced-tool-use-2025-11-20,context-1m-2025-08-07,,tool-search-tool-2025-10-19"}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"max_tokens":8000,"messages":[{"role":"user","content":[{"type":"text","text":"hi \u00e9","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],` +
		`"thinking":{"type":"adaptive","x":1},` +
		`"anthropic_beta":["context-1m-2025-08-07","interleaved-thinking-2025-05-14","tool-search-tool-2025-10-19"],"anthropic_version":"bedrock-2023-05-31"}`
	if string(out) != want {
		t.Errorf("body\n got %s\nwant %s", out, want)
	}
	if w := []string{"thinking.display", "output_config", "context_management", "anthropic-beta:claude-code-20250219"}; !slices.Equal(dropped, w) {
		t.Errorf("dropped %q, want %q", dropped, w)
	}
	// A message's output_config (a per-turn control) goes; the rest of
	// the messages stays as it was.
	out, dropped, err = messageswire.ToBedrockInvoke([]byte(`{"messages":[{"role":"user","content":"a"},{"role":"user", "content":[{"type":"text","text":"b"}],"output_config":{"effort":"low"}}]}`),
		messageswire.BedrockInvoke{})
	if err != nil || !slices.Equal(dropped, []string{"messages.output_config"}) ||
		string(out) != `{"messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]}],"anthropic_version":"bedrock-2023-05-31"}` {
		t.Errorf("%s %q %v", out, dropped, err)
	}
	// Nothing to drop: nothing named; a count body gets max_tokens.
	out, dropped, err = messageswire.ToBedrockInvoke([]byte(`{"model":"m","messages":[],"thinking":{"type":"enabled","budget_tokens":1024}}`),
		messageswire.BedrockInvoke{DefaultMaxTokens: 1})
	if err != nil || len(dropped) != 0 || string(out) != `{"messages":[],"thinking":{"type":"enabled","budget_tokens":1024},"max_tokens":1,"anthropic_version":"bedrock-2023-05-31"}` {
		t.Errorf("%s %q %v", out, dropped, err)
	}
	if _, _, err := messageswire.ToBedrockInvoke([]byte(`[1]`), messageswire.BedrockInvoke{}); err == nil {
		t.Error("a body that is not an object was taken")
	}
}

func TestBedrockRefuses(t *testing.T) {
	for body, param := range map[string]string{
		`{"tools":[{"name":"a","input_schema":{}},{"type":"web_fetch_20250910","name":"web_fetch"}]}`: "tools[1]",
		`{"container":"c1"}`: "container",
		`{"messages":[{"role":"user","content":"x"},{"role":"user","content":[{"type":"image","source":{"type":"file","file_id":"f"}}]}]}`: "messages[1].content[0].source",
		`{"tools":[{"type":"bash_20250124","name":"bash"}],"messages":[{"role":"user","content":"x"}]}`:                                    "",
	} {
		p, _, ok := messageswire.BedrockRefuses([]byte(body))
		if p != param || ok != (param != "") {
			t.Errorf("%s: %q %v", body, p, ok)
		}
	}
}

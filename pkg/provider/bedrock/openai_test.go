package bedrock_test

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/provider/bedrock"
)

// TestOpenAITargetsSpeakChatAndResponses: which Bedrock targets speak
// OpenAI's APIs natively (so the registry passes those requests through
// and nothing only they carry is refused): OpenAI's models by default at
// bedrock-runtime (chat; Responses for gpt-oss only at mantle, where
// Bedrock offers it), any model whose openai_endpoint says so, none whose
// openai_endpoint is off; Claude keeps Messages.
func TestOpenAITargetsSpeakChatAndResponses(t *testing.T) {
	speaks := bedrock.Descriptor.Config.TargetSpeaks
	for _, tc := range []struct {
		model     string
		opts      map[string]string
		chat, rsp bool
	}{
		{"openai.gpt-oss-120b-1:0", nil, true, false},
		{"us.openai.gpt-oss-20b-1:0", nil, true, false},
		{"openai.gpt-oss-120b", map[string]string{"openai_endpoint": "mantle"}, true, true},
		{"us.openai.gpt-5.4", nil, true, true},
		{"arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/abc", map[string]string{"base_model": "openai.gpt-oss-120b-1:0"}, true, false},
		{"qwen.qwen3-32b-v1:0", nil, false, false},
		{"qwen.qwen3-32b-v1:0", map[string]string{"openai_endpoint": "runtime"}, true, true},
		{"openai.gpt-oss-120b-1:0", map[string]string{"openai_endpoint": "off"}, false, false},
		{"us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil, false, false},
	} {
		if got := speaks("chat", tc.model, tc.opts); got != tc.chat {
			t.Errorf("%s %v speaks chat: %v, want %v", tc.model, tc.opts, got, tc.chat)
		}
		if got := speaks("responses", tc.model, tc.opts); got != tc.rsp {
			t.Errorf("%s %v speaks responses: %v, want %v", tc.model, tc.opts, got, tc.rsp)
		}
	}
	if !speaks("messages", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", nil) || speaks("messages", "openai.gpt-oss-120b-1:0", nil) {
		t.Error("messages: Claude's targets speak it, OpenAI's do not")
	}
}

// TestOpenAIEndpointOption: the option takes runtime, mantle or off.
func TestOpenAIEndpointOption(t *testing.T) {
	_, err := config.Parse([]byte(`providers:
  br: {kind: bedrock, region: us-east-1}
routes:
  m: {targets: [{provider: br, model: openai.gpt-oss-120b, options: {openai_endpoint: mantel}}]}
`))
	if err == nil || !strings.Contains(err.Error(), `"mantel" is not runtime, mantle or off`) {
		t.Errorf("err = %v", err)
	}
}

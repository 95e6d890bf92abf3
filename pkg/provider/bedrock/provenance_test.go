package bedrock_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Earlier turns' reasoning reaches Claude on Bedrock only when Claude made
// it: an OpenAI reasoning item, a Gemini thought signature and unsigned
// thinking are dropped from the history (Bedrock would refuse them).
func TestOnlyClaudesOwnReasoningGoesBackToBedrock(t *testing.T) {
	const model = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
	red := base64.StdEncoding.EncodeToString([]byte("claude-redacted-bytes"))
	user := exchange.Message{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "hi"}}}
	p := &exchange.Prompt{Messages: []exchange.Message{user, {Role: exchange.RoleAssistant, Content: []exchange.Block{
		{Type: exchange.BlockThinking, Text: "claude thought", Signature: "c2lnLWNsYXVkZQ=="},
		{Type: exchange.BlockRedactedThinking, Data: []byte(red)},
		{Type: exchange.BlockThinking, Text: "openai summary", Origin: exchange.ReasoningOpenAI},
		{Type: exchange.BlockRedactedThinking, Data: []byte("b3BlbmFp"), Origin: exchange.ReasoningOpenAI},
		{Type: exchange.BlockThinking, Text: "gemini thought", Signature: exchange.GeminiSignaturePrefix + "Z2VtaW5p"},
		{Type: exchange.BlockThinking, Text: "unsigned thought"},
		{Type: exchange.BlockText, Text: "answer"},
	}}, user}}
	raw, _, err := promptWire(t, model, p)
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	for _, want := range []string{"claude thought", "c2lnLWNsYXVkZQ==", red, "answer"} {
		if !strings.Contains(got, want) {
			t.Errorf("Claude's own reasoning %q was not sent: %s", want, got)
		}
	}
	for _, foreign := range []string{"openai summary", "b3BlbmFp", "gemini thought", "Z2VtaW5p", "unsigned thought"} {
		if strings.Contains(got, foreign) {
			t.Errorf("%q (not Claude's) was sent to Claude on Bedrock: %s", foreign, got)
		}
	}
}

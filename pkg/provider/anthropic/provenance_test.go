package anthropic

import (
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// reasoningHistory is an earlier assistant turn holding reasoning of every
// origin: Claude's signed thinking and redacted thinking, an OpenAI
// Responses reasoning item (summary and encrypted content), a Gemini
// thought signature and unsigned thinking.
func reasoningHistory() *exchange.Prompt {
	user := exchange.Message{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "hi"}}}
	return &exchange.Prompt{Messages: []exchange.Message{user, {Role: exchange.RoleAssistant, Content: []exchange.Block{
		{Type: exchange.BlockThinking, Text: "claude thought", Signature: "c2lnLWNsYXVkZQ=="},
		{Type: exchange.BlockRedactedThinking, Data: []byte("claude-redacted")},
		{Type: exchange.BlockThinking, Text: "openai summary", Origin: exchange.ReasoningOpenAI},
		{Type: exchange.BlockRedactedThinking, Data: []byte("openai-encrypted"), Origin: exchange.ReasoningOpenAI},
		{Type: exchange.BlockThinking, Text: "gemini thought", Signature: exchange.GeminiSignaturePrefix + "Z2VtaW5p"},
		{Type: exchange.BlockThinking, Text: "unsigned thought"},
		{Type: exchange.BlockText, Text: "answer"},
	}}, user}}
}

// Earlier turns' reasoning goes back to Claude only when Claude made it:
// another family's signature or encrypted content (and unsigned thinking)
// would be refused by the upstream, so it is dropped from the history.
func TestOnlyClaudesOwnReasoningGoesBack(t *testing.T) {
	got, _, err := translatePrompt(t, reasoningHistory())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"claude thought", "c2lnLWNsYXVkZQ==", "claude-redacted", "answer"} {
		if !strings.Contains(got, want) {
			t.Errorf("Claude's own reasoning %q was not sent: %s", want, got)
		}
	}
	for _, foreign := range []string{"openai summary", "openai-encrypted", "gemini thought", "Z2VtaW5p", "unsigned thought"} {
		if strings.Contains(got, foreign) {
			t.Errorf("%q (not Claude's) was sent to Claude: %s", foreign, got)
		}
	}
}

package teams_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/teams"
)

// TestEstimateReadsTheWholePrompt: the estimate counts text wherever the
// prompt holds it: a large tool definition (description and schema) and
// an earlier assistant turn, thinking and a tool result count as much as
// the user's own text, whatever the client API the prompt came from.
func TestEstimateReadsTheWholePrompt(t *testing.T) {
	text := func(s string) exchange.Block { return exchange.Block{Type: exchange.BlockText, Text: s} }
	base := func() *exchange.Prompt {
		return &exchange.Prompt{Messages: []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{text("hi")}}}}
	}
	baseline := teams.EstimateInputTokens(base()) // ceil(2/4) + 4 + 3
	if baseline != 8 {
		t.Fatalf("baseline %d, want 8", baseline)
	}
	phrase := strings.Repeat("a", 4000) // 1000 tokens
	for _, c := range []struct {
		name string
		edit func(p *exchange.Prompt)
		want int64
	}{
		{"tool description", func(p *exchange.Prompt) {
			p.Tools = []exchange.Tool{{Kind: exchange.ToolFunction, Name: "look", Description: phrase}}
		}, 1000 + 1}, // 4000 + 4 bytes with "hi": ceil(4006/4) = 1002
		{"tool schema", func(p *exchange.Prompt) {
			p.Tools = []exchange.Tool{{Kind: exchange.ToolFunction, Schema: json.RawMessage(`{"description":"` + phrase[:3984] + `"}`)}}
		}, 1000},
		{"builtin tool definition", func(p *exchange.Prompt) {
			p.Tools = []exchange.Tool{{Kind: exchange.ToolBuiltin, Type: "web_search", Raw: json.RawMessage(`"` + phrase[:3998] + `"`)}}
		}, 1000},
		{"assistant turn", func(p *exchange.Prompt) {
			p.Messages = append(p.Messages, exchange.Message{Role: exchange.RoleAssistant, Content: []exchange.Block{text(phrase)}})
		}, 1000 + 4},
		{"thinking and tool use", func(p *exchange.Prompt) {
			p.Messages = append(p.Messages, exchange.Message{Role: exchange.RoleAssistant, Content: []exchange.Block{
				{Type: exchange.BlockThinking, Text: phrase[:2000], Signature: "sig"},
				{Type: exchange.BlockToolUse, ToolID: "c", ToolName: "f", Input: json.RawMessage(`"` + phrase[:1997] + `"`)}}})
		}, 1000 + 4},
		{"tool result", func(p *exchange.Prompt) {
			p.Messages = append(p.Messages, exchange.Message{Role: exchange.RoleUser, Content: []exchange.Block{
				{Type: exchange.BlockToolResult, ToolID: "c", Content: []exchange.Block{text(phrase[:3999])}}}})
		}, 1000 + 4},
		{"system", func(p *exchange.Prompt) { p.System = []exchange.Block{text(phrase)} }, 1000 + 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := base()
			c.edit(p)
			if got := teams.EstimateInputTokens(p) - baseline; got < c.want || got > c.want+1 {
				t.Errorf("the %s added %d tokens, want %d", c.name, got, c.want)
			}
		})
	}
}

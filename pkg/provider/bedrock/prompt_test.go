package bedrock_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// promptWire sends a Prompt (as an ingress decodes it) through the adapter
// and the real SDK to the fake, for target model m, and returns the
// Converse body on the wire, or the refusal. The request is a Chat
// Completions client's: a Messages client's goes to InvokeModel with its
// own body at a Claude target (invoke_test.go), every other API's prompt
// is translated to Converse.
func promptWire(t *testing.T, m string, p *exchange.Prompt, allow ...string) ([]byte, *exchange.Request, error) {
	t.Helper()
	f := newFake(t, reply{body: okConverse})
	req := &exchange.Request{API: exchange.Chat, Prompt: p, Policy: config.Policy{TranslateWithout: allow}}
	call := &provider.Call{Req: req, Step: config.Step{ID: "br/" + m, Model: m, MaxTokens: 4096}}
	if _, err := newAdapter(t, f).Send(context.Background(), call); err != nil {
		if n := len(f.requests()); n != 0 {
			t.Errorf("%d calls before a refusal", n)
		}
		return nil, req, err
	}
	return f.requests()[0].raw, req, nil
}

// claudeCodePrompt is a Claude Code style prompt: adaptive thinking, an
// earlier turn with signed and redacted thinking and a tool call, a failed
// tool result, a PDF, top_k and cache breakpoints.
func claudeCodePrompt() *exchange.Prompt {
	topK := 40
	text := func(s string) exchange.Block { return exchange.Block{Type: exchange.BlockText, Text: s} }
	eph, hour := &exchange.CacheBreakpoint{}, &exchange.CacheBreakpoint{TTL: "1h"}
	sys := text("You are Claude Code.")
	sys.Cache = hour
	return &exchange.Prompt{
		System: []exchange.Block{sys},
		Messages: []exchange.Message{
			{Role: exchange.RoleUser, Content: []exchange.Block{
				{Type: exchange.BlockDocument, MediaType: "application/pdf", Data: []byte("%PDF-1.4"), Title: "Spec: v2.pdf", Context: "the spec", AskCitations: true},
				{Type: exchange.BlockText, Text: "Read main.go", Cache: eph}}},
			{Role: exchange.RoleAssistant, Content: []exchange.Block{
				{Type: exchange.BlockThinking, Text: "I should read it.", Signature: "EqQBCkYIBxgCKkBsig+/=="},
				{Type: exchange.BlockRedactedThinking, Data: []byte("AAECAwQ=")},
				{Type: exchange.BlockToolUse, ToolID: "toolu_01", ToolName: "Read", Input: json.RawMessage(`{"path":"main.go"}`)}}},
			{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockToolResult, ToolID: "toolu_01", IsError: true,
				Content: []exchange.Block{text("no such file")}}}},
		},
		Tools:    []exchange.Tool{{Kind: exchange.ToolFunction, Name: "Read", Schema: json.RawMessage(`{"type":"object"}`), Cache: eph}},
		Sampling: exchange.Sampling{MaxTokens: 32000, TopK: &topK},
		Output:   exchange.Output{Reasoning: exchange.ReasoningConfig{Mode: "adaptive"}},
	}
}

// Nothing of a Claude Code prompt is lost on the way to Claude on Bedrock:
// the thinking configuration and top_k as additional model request fields,
// the earlier thinking as reasoningContent with its signature, redacted
// thinking as its bytes, the PDF as bytes with a name bedrock accepts, its
// context and citations, the tool error's status and every cache point.
func TestPromptToConverseLosesNothing(t *testing.T) {
	raw, _, err := promptWire(t, model, claudeCodePrompt())
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, raw, `{"system":[{"text":"You are Claude Code."},{"cachePoint":{"type":"default","ttl":"1h"}}],
		"messages":[{"role":"user","content":[
			{"document":{"name":"Spec v2 pdf","format":"pdf","source":{"bytes":"JVBERi0xLjQ="},"context":"the spec","citations":{"enabled":true}}},
			{"text":"Read main.go"},{"cachePoint":{"type":"default"}}]},
		{"role":"assistant","content":[
			{"reasoningContent":{"reasoningText":{"text":"I should read it.","signature":"EqQBCkYIBxgCKkBsig+/=="}}},
			{"reasoningContent":{"redactedContent":"AAECAwQ="}},
			{"toolUse":{"toolUseId":"toolu_01","name":"Read","input":{"path":"main.go"}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_01","content":[{"text":"no such file"}],"status":"error"}}]}],
		"toolConfig":{"tools":[{"toolSpec":{"name":"Read","inputSchema":{"json":{"type":"object"}}}},{"cachePoint":{"type":"default"}}]},
		"inferenceConfig":{"maxTokens":32000},
		"additionalModelRequestFields":{"thinking":{"type":"adaptive"},"top_k":40}}`)

	p := claudeCodePrompt()
	p.Output.Reasoning = exchange.ReasoningConfig{Mode: "enabled", BudgetTokens: 2048}
	p.Sampling.TopK = nil
	raw, _, err = promptWire(t, model, p)
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ AdditionalModelRequestFields json.RawMessage }
	json.Unmarshal(raw, &got)
	assertJSON(t, got.AdditionalModelRequestFields, `{"thinking":{"type":"enabled","budget_tokens":2048}}`)
}

// A model that is not Anthropic's takes neither a thinking configuration
// nor top_k (refused, unless the route drops them), and its history goes
// without the earlier thinking blocks.
func TestPromptToConverseOtherModels(t *testing.T) {
	const nova = "amazon.nova-pro-v1:0"
	_, _, err := promptWire(t, nova, claudeCodePrompt())
	if ge := gwerr.As(err); err == nil || ge.Code != provider.CodeUnsupportedFeature || ge.Param != "top_k" {
		t.Fatalf("err = %v, want top_k refused", err)
	}
	raw, req, err := promptWire(t, nova, claudeCodePrompt(), "top_k", "thinking")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages []struct {
			Content []map[string]any
		}
		AdditionalModelRequestFields any
	}
	json.Unmarshal(raw, &got)
	if len(got.Messages) != 3 || len(got.Messages[1].Content) != 1 || got.Messages[1].Content[0]["toolUse"] == nil || got.AdditionalModelRequestFields != nil {
		t.Errorf("converse request = %s", raw)
	}
	if d := req.Trace.DroppedBy("br/" + nova); len(d) != 2 {
		t.Errorf("dropped %v, want top_k and thinking", d)
	}
}

// A document bedrock cannot take (by URL) is refused, naming the block.
func TestPromptToConverseRefusesDocumentURLs(t *testing.T) {
	p := &exchange.Prompt{Messages: []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{
		{Type: exchange.BlockText, Text: "x"}, {Type: exchange.BlockDocument, URL: "https://example.com/a.pdf"}}}}}
	_, _, err := promptWire(t, model, p)
	if ge := gwerr.As(err); err == nil || ge.Code != provider.CodeUnsupportedFeature || ge.Param != "messages[0].content[1]" {
		t.Errorf("err = %v", err)
	}
	raw, _, err := promptWire(t, model, p, "document_sources")
	if err != nil {
		t.Fatal(err)
	}
	assertJSON(t, raw, `{"messages":[{"role":"user","content":[{"text":"x"}]}],"inferenceConfig":{"maxTokens":4096}}`)
}

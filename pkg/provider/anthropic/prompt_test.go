package anthropic

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// translatePrompt translates a Prompt (as another API's ingress, or the
// failover engine's continuation, makes it) for target anth/claude-x.
func translatePrompt(t *testing.T, p *exchange.Prompt, allow ...string) (string, *exchange.Request, error) {
	t.Helper()
	req := &exchange.Request{API: exchange.Responses, Prompt: p, Policy: config.Policy{TranslateWithout: allow}}
	call := &provider.Call{Req: req, Step: config.Step{ID: "anth/claude-x", Model: "claude-x"}}
	tr := translator{call: call, target: "anth/claude-x", prov: "anth"}
	out, err := tr.translateRequest(call.Prompt(), false, "claude-x", 4096)
	if err != nil {
		return "", req, err
	}
	b, _ := json.Marshal(out)
	return string(b), req, nil
}

// Everything a Prompt says that the Messages API can carry reaches it:
// the reasoning mode, signed and redacted thinking byte-exact, documents
// with their title, context and citations setting, a tool error, cache
// breakpoints with their ttl, top_k, Anthropic's own citations and a final
// assistant message.
func TestPromptTranslatesLosslessly(t *testing.T) {
	topK := 5
	p := &exchange.Prompt{
		System: []exchange.Block{{Type: exchange.BlockText, Text: "sys", Cache: &exchange.CacheBreakpoint{TTL: "1h"}}},
		Messages: []exchange.Message{
			{Role: exchange.RoleUser, Content: []exchange.Block{
				{Type: exchange.BlockDocument, MediaType: "application/pdf", Data: []byte("%PDF-1.4"), Title: "Spec", Context: "ctx", AskCitations: true},
				{Type: exchange.BlockDocument, MediaType: "text/plain", Data: []byte("plain words")},
				{Type: exchange.BlockText, Text: "Read it", Cache: &exchange.CacheBreakpoint{}}}},
			{Role: exchange.RoleAssistant, Content: []exchange.Block{
				{Type: exchange.BlockThinking, Text: "hmm", Signature: "EqQB+/sig=="},
				{Type: exchange.BlockRedactedThinking, Data: []byte("EmwKAh==")},
				{Type: exchange.BlockText, Text: "Cited.", Citations: []exchange.Citation{{Type: "char_location", Raw: json.RawMessage(`{"type":"char_location","cited_text":"p","document_index":0,"start_char_index":0,"end_char_index":1}`)}}},
				{Type: exchange.BlockToolUse, ToolID: "toolu_1", ToolName: "run", Input: json.RawMessage(`{"x":1}`)}}},
			{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockToolResult, ToolID: "toolu_1", IsError: true,
				Content: []exchange.Block{{Type: exchange.BlockText, Text: "boom"}}}}},
			{Role: exchange.RoleAssistant, Content: []exchange.Block{{Type: exchange.BlockText, Text: "So"}}},
		},
		Tools:    []exchange.Tool{{Kind: exchange.ToolFunction, Name: "run", Schema: json.RawMessage(`{"type":"object"}`), Cache: &exchange.CacheBreakpoint{}}},
		Sampling: exchange.Sampling{MaxTokens: 2000, TopK: &topK},
		Output:   exchange.Output{Reasoning: exchange.ReasoningConfig{Mode: "enabled", BudgetTokens: 1024}},
	}
	got, _, err := translatePrompt(t, p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-x","max_tokens":2000,"system":[{"type":"text","text":"sys","cache_control":{"type":"ephemeral","ttl":"1h"}}],"messages":[` +
		`{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQ="},"title":"Spec","context":"ctx","citations":{"enabled":true}},` +
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"plain words"}},{"type":"text","text":"Read it","cache_control":{"type":"ephemeral"}}]},` +
		`{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"EqQB+/sig=="},{"type":"redacted_thinking","data":"EmwKAh=="},` +
		`{"type":"text","text":"Cited.","citations":[{"type":"char_location","cited_text":"p","document_index":0,"start_char_index":0,"end_char_index":1}]},` +
		`{"type":"tool_use","id":"toolu_1","name":"run","input":{"x":1}}]},` +
		`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"boom"}],"is_error":true}]},` +
		`{"role":"assistant","content":[{"type":"text","text":"So"}]}],` +
		`"top_k":5,"tools":[{"name":"run","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],"thinking":{"type":"enabled","budget_tokens":1024}}`
	if !reflect.DeepEqual(canon(t, []byte(got)), canon(t, []byte(want))) {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	p.Output.Reasoning = exchange.ReasoningConfig{Mode: "adaptive"}
	if got, _, _ := translatePrompt(t, p); !reflect.DeepEqual(canon(t, []byte(got)).(map[string]any)["thinking"], map[string]any{"type": "adaptive"}) {
		t.Errorf("adaptive thinking: %s", got)
	}
}

// What Messages cannot carry is refused, unless the route lets it drop;
// a drop is noted for x-gateway-dropped-features and not sent.
func TestPromptRefusesOrDrops(t *testing.T) {
	hi := []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "hi"}}}}
	temp := 1.5
	cases := map[string]struct {
		p          exchange.Prompt
		key, param string
	}{
		"builtin tool": {exchange.Prompt{Messages: hi, Tools: []exchange.Tool{{Kind: exchange.ToolBuiltin, Type: "web_search_preview"}}}, "server_tools", "tools[0].type"},
		"custom tool":  {exchange.Prompt{Messages: hi, Tools: []exchange.Tool{{Kind: exchange.ToolCustom, Name: "grammar"}}}, "custom_tools", "tools[0].type"},
		"effort":       {exchange.Prompt{Messages: hi, Output: exchange.Output{Reasoning: exchange.ReasoningConfig{Effort: "high"}}}, "reasoning_effort", "reasoning_effort"},
		"temperature":  {exchange.Prompt{Messages: hi, Sampling: exchange.Sampling{Temperature: &temp}}, "temperature", "temperature"},
		"choices":      {exchange.Prompt{Messages: hi, Output: exchange.Output{Choices: 3}}, "n", "n"},
		"docx": {exchange.Prompt{Messages: []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockText, Text: "x"},
			{Type: exchange.BlockDocument, MediaType: "application/msword", Data: []byte("x")}}}}}, "document_sources", "messages[0].content[1]"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := translatePrompt(t, &c.p)
			ge := gwerr.As(err)
			if err == nil || ge.Code != provider.CodeUnsupportedFeature || ge.Param != c.param {
				t.Fatalf("err %v, want unsupported_feature at %q", err, c.param)
			}
			got, req, err := translatePrompt(t, &c.p, c.key)
			if err != nil {
				t.Fatalf("translate_without %s: %v", c.key, err)
			}
			if d := req.Trace.DroppedBy("anth/claude-x"); len(d) != 1 || d[0] != c.key {
				t.Errorf("dropped %v", d)
			}
			m := canon(t, []byte(got)).(map[string]any)
			if m["tools"] != nil || m["temperature"] != nil {
				t.Errorf("a dropped feature was sent: %s", got)
			}
		})
	}
}

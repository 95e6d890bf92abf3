package messages

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// A Claude Code style request: adaptive thinking, an earlier assistant turn
// with signed and redacted thinking, tools with cache breakpoints, a PDF,
// an image, a tool result with is_error, top_k and a mid-conversation
// system message.
const claudeCodeBody = `{"model":"claude","max_tokens":32000,"stream":true,"temperature":1,"top_k":40,` +
	`"thinking":{"type":"adaptive"},"metadata":{"user_id":"user_abc"},"stop_sequences":["END"],` +
	`"system":[{"type":"text","text":"You are Claude Code."},{"type":"text","text":"Project rules.","cache_control":{"type":"ephemeral","ttl":"1h"}}],` +
	`"tools":[{"name":"Read","description":"Read a file","input_schema":{"type":"object","properties":{"path":{"type":"string"}}},"strict":true},` +
	`{"name":"Bash","description":"Run","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}},` +
	`{"type":"web_search_20250305","name":"web_search","max_uses":3}],` +
	`"tool_choice":{"type":"auto","disable_parallel_tool_use":true},` +
	`"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0xLjQ="},"title":"Spec","context":"the spec","citations":{"enabled":true}},` +
	`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},{"type":"text","text":"Read main.go"}]},` +
	`{"role":"assistant","content":[{"type":"thinking","thinking":"I should read it.","signature":"EqQBCkYIBxgCKkBsig+/=="},` +
	`{"type":"redacted_thinking","data":"EmwKAhgBEgy3va=="},{"type":"text","text":"Reading.","citations":[{"type":"page_location","cited_text":"x","document_index":0,"document_title":"Spec","start_page_number":1,"end_page_number":2}]},` +
	`{"type":"tool_use","id":"toolu_01","name":"Read","input":{"path": "main.go"}}]},` +
	`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"no such file","is_error":true,"cache_control":{"type":"ephemeral"}}]},` +
	`{"role":"system","content":"Env: linux"},` +
	`{"role":"assistant","content":"The file"}]}`

func TestPromptOfAClaudeCodeRequest(t *testing.T) {
	req, err := decodeBody(t, claudeCodeBody)
	if err != nil {
		t.Fatal(err)
	}
	p := req.Prompt
	one, h1 := 1.0, &exchange.CacheBreakpoint{TTL: "1h"}
	eph := &exchange.CacheBreakpoint{}
	topK, strict := 40, true
	want := &exchange.Prompt{
		System: []exchange.Block{{Type: exchange.BlockText, Text: "You are Claude Code."}, {Type: exchange.BlockText, Text: "Project rules.", Cache: h1}},
		Messages: []exchange.Message{
			{Role: exchange.RoleUser, Content: []exchange.Block{
				{Type: exchange.BlockDocument, MediaType: "application/pdf", Data: []byte("%PDF-1.4"), Title: "Spec", Context: "the spec", AskCitations: true},
				{Type: exchange.BlockImage, MediaType: "image/png", Data: []byte("\x89PNG\r\n\x1a\n")},
				{Type: exchange.BlockText, Text: "Read main.go"}}},
			{Role: exchange.RoleAssistant, Content: []exchange.Block{
				{Type: exchange.BlockThinking, Text: "I should read it.", Signature: "EqQBCkYIBxgCKkBsig+/=="},
				{Type: exchange.BlockRedactedThinking, Data: []byte("EmwKAhgBEgy3va==")},
				{Type: exchange.BlockText, Text: "Reading.", Citations: []exchange.Citation{{Type: "page_location", CitedText: "x", DocumentTitle: "Spec", Start: 1, End: 2,
					Raw: json.RawMessage(`{"type":"page_location","cited_text":"x","document_index":0,"document_title":"Spec","start_page_number":1,"end_page_number":2}`)}}},
				{Type: exchange.BlockToolUse, ToolID: "toolu_01", ToolName: "Read", Input: json.RawMessage(`{"path":"main.go"}`)}}},
			{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockToolResult, ToolID: "toolu_01", IsError: true, Cache: eph,
				Content: []exchange.Block{{Type: exchange.BlockText, Text: "no such file"}}}}},
			{Role: exchange.RoleSystem, Content: []exchange.Block{{Type: exchange.BlockText, Text: "Env: linux"}}},
			{Role: exchange.RoleAssistant, Content: []exchange.Block{{Type: exchange.BlockText, Text: "The file"}}},
		},
		Tools: []exchange.Tool{
			{Kind: exchange.ToolFunction, Name: "Read", Description: "Read a file", Schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`), Strict: &strict},
			{Kind: exchange.ToolFunction, Name: "Bash", Description: "Run", Schema: json.RawMessage(`{"type":"object"}`), Cache: eph},
			{Kind: exchange.ToolBuiltin, Name: "web_search", Type: "web_search_20250305", Raw: json.RawMessage(`{"type":"web_search_20250305","name":"web_search","max_uses":3}`)},
		},
		ToolChoice: exchange.ToolChoice{Mode: exchange.ToolAuto, NoParallel: true},
		Sampling:   exchange.Sampling{MaxTokens: 32000, Temperature: &one, TopK: &topK, Stop: []string{"END"}},
		Output:     exchange.Output{Reasoning: exchange.ReasoningConfig{Mode: "adaptive"}},
		User:       "user_abc",
	}
	if !reflect.DeepEqual(p, want) {
		g, _ := json.MarshalIndent(p, "", " ")
		w, _ := json.MarshalIndent(want, "", " ")
		t.Errorf("prompt\n got %s\nwant %s", g, w)
	}
	if len(req.Untranslated) != 0 {
		t.Errorf("untranslated %q: the Prompt carries all of it", features(req.Untranslated))
	}
}

func TestPromptReasoningConfig(t *testing.T) {
	for body, want := range map[string]exchange.ReasoningConfig{
		`"thinking":{"type":"enabled","budget_tokens":2048}`: {Mode: "enabled", BudgetTokens: 2048},
		`"thinking":{"type":"disabled"}`:                     {Mode: "disabled"},
		`"temperature":0.5`:                                  {},
	} {
		req, err := decodeBody(t, `{"model":"m","max_tokens":9,`+body+`,`+user+`}`)
		if err != nil {
			t.Fatal(err)
		}
		if req.Prompt.Output.Reasoning != want || len(req.Untranslated) != 0 {
			t.Errorf("%s: reasoning %+v untranslated %q", body, req.Prompt.Output.Reasoning, features(req.Untranslated))
		}
	}
}

func TestPromptDocumentsAndImageURLs(t *testing.T) {
	req, err := decodeBody(t, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[`+
		`{"type":"document","source":{"type":"text","media_type":"text/plain","data":"hello"}},`+
		`{"type":"document","source":{"type":"url","url":"https://example.com/a.pdf"}},`+
		`{"type":"image","source":{"type":"url","url":"https://example.com/a.jpg"}}]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	got := req.Prompt.Messages[0].Content
	if len(got) != 3 || string(got[0].Data) != "hello" || got[0].MediaType != "text/plain" || got[1].URL != "https://example.com/a.pdf" ||
		got[1].Type != exchange.BlockDocument || got[2].URL != "https://example.com/a.jpg" || got[2].Type != exchange.BlockImage || len(req.Untranslated) != 0 {
		t.Errorf("blocks %+v, untranslated %q", got, features(req.Untranslated))
	}
	if _, err := decodeBody(t, `{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[`+
		`{"type":"image","source":{"type":"base64","media_type":"image/png","data":"not base64!"}}]}]}`); err == nil ||
		!strings.Contains(err.Error(), "messages[0].content[0].source.data: is not valid base64") {
		t.Errorf("bad base64: %v", err)
	}
}

// What a Prompt cannot hold stays untranslated (only an Anthropic upstream
// can serve it), keyed as a route's translate_without names it.
func TestPromptUntranslated(t *testing.T) {
	cases := map[string]struct{ body, want string }{
		"unknown field":    {`{"model":"m","max_tokens":9,"context_management":{"edits":[]},` + user + `}`, `context_management`},
		"mcp_servers":      {`{"model":"m","max_tokens":9,"mcp_servers":[],` + user + `}`, `mcp_servers`},
		"thinking display": {`{"model":"m","max_tokens":9,"thinking":{"type":"adaptive","display":"omitted"},` + user + `}`, `thinking.display`},
		"defer_loading":    {`{"model":"m","max_tokens":9,"tools":[{"name":"t","input_schema":{"type":"object"},"defer_loading":true}],` + user + `}`, `tools.defer_loading`},
		"file source":      {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"file","file_id":"f"}}]}]}`, `file_sources`},
		"content document": {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"content","content":[]}}]}]}`, `document_sources`},
		"unknown block":    {`{"model":"m","max_tokens":9,"messages":[{"role":"user","content":[{"type":"search_result","source":"s","title":"t","content":[]}]}]}`, `content_types`},
		"cache_control":    {`{"model":"m","max_tokens":9,"system":[{"type":"text","text":"x","cache_control":{"type":"persistent"}}],` + user + `}`, `cache_control`},
		"metadata extra":   {`{"model":"m","max_tokens":9,"metadata":{"user_id":"u","tag":"x"},` + user + `}`, `metadata.tag`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			req, err := decodeBody(t, c.body)
			if err != nil {
				t.Fatal(err)
			}
			if len(req.Untranslated) != 1 || req.Untranslated[0].Key != c.want {
				t.Errorf("untranslated = %+v, want one keyed %q", req.Untranslated, c.want)
			}
		})
	}
}

// features lists fs as "param: what".
func features(fs []exchange.Feature) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Param+": "+f.What)
	}
	return out
}

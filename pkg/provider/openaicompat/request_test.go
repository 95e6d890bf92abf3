package openaicompat_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/provider/openaicompat"
)

const chatAnswer = `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-4.1","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

// chatUpstream is an OpenAI-compatible upstream answering chatAnswer; it
// records the bodies it got.
func chatUpstream(t *testing.T, opts map[string]string) (*openaicompat.Adapter, *[]string) {
	t.Helper()
	var bodies []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, chatAnswer)
	}))
	t.Cleanup(srv.Close)
	a, err := openaicompat.New("oa", &config.Provider{Kind: "openai", BaseURL: srv.URL + "/v1", Options: opts}, srv.Client())
	if err != nil {
		t.Fatal(err)
	}
	return a, &bodies
}

func promptCall(api exchange.API, p *exchange.Prompt) *provider.Call {
	return &provider.Call{Req: &exchange.Request{API: api, Prompt: p}, Step: config.Step{ID: "oa/gpt-4.1", Provider: "oa", Model: "gpt-4.1"}}
}

func txt(s string) exchange.Block { return exchange.Block{Type: exchange.BlockText, Text: s} }

func sameJSON(t *testing.T, got, want string) bool {
	t.Helper()
	var g, w any
	if err := json.Unmarshal([]byte(got), &g); err != nil {
		t.Fatalf("got is not JSON: %s", got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want is not JSON: %s", want)
	}
	return reflect.DeepEqual(g, w)
}

// TestPromptToChatBody checks the chat body built from a Prompt (a client
// of another API), rule by rule.
func TestPromptToChatBody(t *testing.T) {
	user := func(bs ...exchange.Block) exchange.Message {
		return exchange.Message{Role: exchange.RoleUser, Content: bs}
	}
	asst := func(bs ...exchange.Block) exchange.Message {
		return exchange.Message{Role: exchange.RoleAssistant, Content: bs}
	}
	eph := &exchange.CacheBreakpoint{}
	for _, c := range []struct {
		name string
		api  exchange.API
		opts map[string]string
		p    exchange.Prompt
		want string
	}{
		{"system, roles, cache breakpoints", exchange.Messages, nil, exchange.Prompt{
			System: []exchange.Block{{Type: exchange.BlockText, Text: "Long rules", Cache: &exchange.CacheBreakpoint{TTL: "1h"}}},
			Messages: []exchange.Message{user(txt("hi")), asst(txt("hello")), {Role: exchange.RoleSystem, Content: []exchange.Block{txt("now French")}},
				user(exchange.Block{Type: exchange.BlockText, Text: "again", Cache: eph})},
			Tools: []exchange.Tool{{Kind: exchange.ToolFunction, Name: "f", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Cache: eph}}},
			`{"model":"gpt-4.1","messages":[{"role":"system","content":[{"type":"text","text":"Long rules","cache_control":{"type":"ephemeral","ttl":"1h"}}]},` +
				`{"role":"user","content":"hi"},{"role":"assistant","content":"hello"},{"role":"system","content":"now French"},` +
				`{"role":"user","content":[{"type":"text","text":"again","cache_control":{"type":"ephemeral"}}]}],` +
				`"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object"}},"cache_control":{"type":"ephemeral"}}]}`},
		{"media as data URLs, tool turns, thinking dropped", exchange.Responses, nil, exchange.Prompt{Messages: []exchange.Message{
			user(txt("look"), exchange.Block{Type: exchange.BlockImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}, Detail: "low"},
				exchange.Block{Type: exchange.BlockImage, URL: "https://x/cat.jpg"},
				exchange.Block{Type: exchange.BlockDocument, MediaType: "application/pdf", Data: []byte("%PDF"), FileName: "a.pdf"}),
			asst(exchange.Block{Type: exchange.BlockThinking, Text: "hmm", Signature: "sig"}, exchange.Block{Type: exchange.BlockRedactedThinking, Data: []byte("x")},
				txt("Checking."), exchange.Block{Type: exchange.BlockToolUse, ToolID: "c1", ToolName: "get", Input: json.RawMessage(`{"q":1}`)},
				exchange.Block{Type: exchange.BlockToolUse, ToolID: "c2", ToolName: "get"}),
			user(exchange.Block{Type: exchange.BlockToolResult, ToolID: "c1", Content: []exchange.Block{txt("one")}},
				exchange.Block{Type: exchange.BlockToolResult, ToolID: "c2", Content: []exchange.Block{txt("two"), txt("three")}}, txt("thanks"))}},
			`{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"text","text":"look"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw==","detail":"low"}},` +
				`{"type":"image_url","image_url":{"url":"https://x/cat.jpg"}},{"type":"file","file":{"file_data":"data:application/pdf;base64,JVBERg==","filename":"a.pdf"}}]},` +
				`{"role":"assistant","content":"Checking.","tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"q\":1}"}},{"id":"c2","type":"function","function":{"name":"get","arguments":"{}"}}]},` +
				`{"role":"tool","content":"one","tool_call_id":"c1"},{"role":"tool","content":[{"type":"text","text":"two"},{"type":"text","text":"three"}],"tool_call_id":"c2"},` +
				`{"role":"user","content":"thanks"}]}`},
		{"sampling, output, choice", exchange.Responses, nil, exchange.Prompt{Messages: []exchange.Message{user(txt("x"))},
			Tools:      []exchange.Tool{{Kind: exchange.ToolFunction, Name: "f"}},
			ToolChoice: exchange.ToolChoice{Mode: exchange.ToolNamed, Name: "f", NoParallel: true},
			Sampling:   exchange.Sampling{MaxTokens: 300, Temperature: ptr(0.2), TopP: ptr(0.9), Seed: ptr(int64(7)), Stop: []string{"END"}},
			Output:     exchange.Output{Format: "json_schema", SchemaName: "w", Schema: json.RawMessage(`{"type":"object"}`), StrictSchema: true, Reasoning: exchange.ReasoningConfig{Effort: "high", Summary: "auto"}},
			User:       "u1"},
			`{"model":"gpt-4.1","messages":[{"role":"user","content":"x"}],"max_tokens":300,"temperature":0.2,"top_p":0.9,"seed":7,"stop":["END"],` +
				`"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"parallel_tool_calls":false,` +
				`"response_format":{"type":"json_schema","json_schema":{"name":"w","schema":{"type":"object"},"strict":true}},"user":"u1","reasoning_effort":"high"}`},
		{"max_completion_tokens field", exchange.Responses, map[string]string{"max_tokens_field": "max_completion_tokens"}, exchange.Prompt{
			Messages: []exchange.Message{user(txt("x"))}, Sampling: exchange.Sampling{MaxTokens: 50}, ToolChoice: exchange.ToolChoice{NoParallel: true}},
			`{"model":"gpt-4.1","messages":[{"role":"user","content":"x"}],"max_completion_tokens":50}`},
		{"continuation ends with the assistant text", exchange.Prefill, nil, exchange.Prompt{Messages: []exchange.Message{user(txt("say hi")), asst(txt("Hel"))}},
			`{"model":"gpt-4.1","messages":[{"role":"user","content":"say hi"},{"role":"assistant","content":"Hel"}]}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, bodies := chatUpstream(t, c.opts)
			s, err := a.Send(context.Background(), promptCall(c.api, &c.p))
			if err != nil {
				t.Fatalf("Send: %v", err)
			}
			s.Close()
			if !sameJSON(t, (*bodies)[0], c.want) {
				t.Errorf("chat body\n got %s\nwant %s", (*bodies)[0], c.want)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestPromptRefusedBeforeAnyCall: what a chat upstream cannot carry is
// refused (unsupported_feature, no upstream call) unless the route's
// translate_without names it, when it is dropped.
func TestPromptRefusedBeforeAnyCall(t *testing.T) {
	hi := []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{txt("hi")}}}
	k := 5
	for _, c := range []struct {
		name, key, param, dropped string
		p                         exchange.Prompt
	}{
		{"thinking without an effort", "thinking", "thinking", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`,
			exchange.Prompt{Messages: hi, Output: exchange.Output{Reasoning: exchange.ReasoningConfig{Mode: "enabled", BudgetTokens: 1024}}}},
		{"top_k", "top_k", "top_k", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`,
			exchange.Prompt{Messages: hi, Sampling: exchange.Sampling{TopK: &k}}},
		{"builtin tool", "server_tools", "tools[0]", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`,
			exchange.Prompt{Messages: hi, Tools: []exchange.Tool{{Kind: exchange.ToolBuiltin, Type: "web_search", Raw: json.RawMessage(`{"type":"web_search"}`)}}}},
		{"custom tool", "custom_tools", "tools[0]", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`,
			exchange.Prompt{Messages: hi, Tools: []exchange.Tool{{Kind: exchange.ToolCustom, Name: "apply_patch", Raw: json.RawMessage(`{}`)}}}},
		{"prefill", "prefill", "messages[1]", `{"model":"gpt-4.1","messages":[{"role":"user","content":"hi"}]}`,
			exchange.Prompt{Messages: append(hi, exchange.Message{Role: exchange.RoleAssistant, Content: []exchange.Block{txt("{")}})}},
		{"tool result error", "is_error", "messages[0].content[0].is_error",
			`{"model":"gpt-4.1","messages":[{"role":"tool","content":"boom","tool_call_id":"c"}]}`,
			exchange.Prompt{Messages: []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{{Type: exchange.BlockToolResult, ToolID: "c", IsError: true, Content: []exchange.Block{txt("boom")}}}}}}},
		{"text document", "document_sources", "messages[0].content[1]", `{"model":"gpt-4.1","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`,
			exchange.Prompt{Messages: []exchange.Message{{Role: exchange.RoleUser, Content: []exchange.Block{txt("hi"), {Type: exchange.BlockDocument, MediaType: "text/plain", Data: []byte("notes")}}}}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, bodies := chatUpstream(t, nil)
			_, err := a.Send(context.Background(), promptCall(exchange.Messages, &c.p))
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Code != provider.CodeUnsupportedFeature || ge.Param != c.param || len(*bodies) != 0 {
				t.Fatalf("err = %v (param %q), want unsupported_feature on %q before any call", err, ge.Param, c.param)
			}
			call := promptCall(exchange.Messages, &c.p)
			call.Req.Policy.TranslateWithout = []string{c.key}
			s, err := a.Send(context.Background(), call)
			if err != nil {
				t.Fatalf("with translate_without [%s]: %v", c.key, err)
			}
			s.Close()
			if !sameJSON(t, (*bodies)[0], c.dropped) {
				t.Errorf("dropped body\n got %s\nwant %s", (*bodies)[0], c.dropped)
			}
		})
	}
}

package messages

import (
	"encoding/json"
	"fmt"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// The retiring Chat form of a Messages request (exchange.Request.Chat, the
// OpenAI chat shape the adapters not yet building from the Prompt read;
// removed with Request.Chat):
//
//	system (string or text blocks)   -> a leading system message (text parts keep cache_control)
//	a role "system" message          -> a system message at its place in the conversation
//	user text, image, document(PDF)  -> a user message (text / image_url / file parts)
//	user tool_result blocks          -> role tool messages (tool_call_id), placed before the
//	                                    user message holding the turn's other blocks
//	assistant text                   -> assistant content parts
//	assistant tool_use               -> assistant tool_calls (arguments: the input as JSON)
//	tools (client tools)             -> function tools (input_schema -> parameters, cache_control kept)
//	tool_choice auto/any/tool/none   -> auto/required/function/none;
//	  disable_parallel_tool_use      -> parallel_tool_calls false
//	max_tokens, stop_sequences, temperature, top_p, stream -> the same fields
//	metadata.user_id                 -> user
//
// Lost by this form (exchange.Request.ChatLost: an adapter still reading
// it refuses the request, so it is skipped, never served without them,
// unless the route's translate_without lets it drop them): thinking (enabled or adaptive),
// thinking and redacted_thinking blocks, top_k, tool_result is_error,
// server tools, tool fields other than name, description, input_schema and
// cache_control, image file sources, documents other than base64 PDF,
// content block types the gateway does not know, a final assistant message
// (prefill), cache_control on a tool_use block that is not its message's
// last, and every top-level field the gateway does not know
// (context_management, service_tier, mcp_servers, container, ...).

// toCanonical validates the conversation, tools and options and builds the
// Chat form. keys are the body's top-level member names.
func toCanonical(r *request, keys []string) (*chatwire.ChatRequest, []exchange.Feature, error) {
	c := &converter{chat: &chatwire.ChatRequest{Model: r.Model, Stream: r.Stream, MaxTokens: r.MaxTokens,
		Temperature: r.Temperature, TopP: r.TopP}}
	for _, k := range keys {
		if !topLevel[k] {
			c.lose(k, k, "field %q", k)
		}
	}
	if r.TopK != nil {
		c.lose("top_k", "top_k", "top_k")
	}
	if len(r.StopSequences) > 0 {
		c.chat.Stop = r.StopSequences
	}
	if err := c.system(r.System); err != nil {
		return nil, nil, err
	}
	if err := c.metadata(r.Metadata); err != nil {
		return nil, nil, err
	}
	if err := c.thinking(r.Thinking); err != nil {
		return nil, nil, err
	}
	names, err := c.tools(r.Tools)
	if err != nil {
		return nil, nil, err
	}
	if err := c.toolChoice(r.ToolChoice, names); err != nil {
		return nil, nil, err
	}
	for i, m := range r.Messages {
		if err := c.message(i, m, i == len(r.Messages)-1); err != nil {
			return nil, nil, err
		}
	}
	return c.chat, c.lost, nil
}

func (c *converter) add(m chatwire.Message) { c.chat.Messages = append(c.chat.Messages, m) }

// system converts the system prompt: a string or an array of text blocks.
func (c *converter) system(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s != "" {
			c.add(chatwire.Message{Role: "system", Content: chatwire.Content{Text: s}})
		}
		return nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return bad("system", "system: must be a string or an array of text blocks")
	}
	parts := make([]chatwire.ContentPart, 0, len(blocks))
	for i, br := range blocks {
		p := fmt.Sprintf("system[%d]", i)
		var b block
		if json.Unmarshal(br, &b) != nil || b.Type != "text" || b.Text == nil {
			return bad(p, "%s: must be a text block with a text string", p)
		}
		c.extraKeys(p, br, "type", "text", "cache_control")
		parts = append(parts, chatwire.ContentPart{Type: "text", Text: *b.Text, CacheCtl: cacheCtl(b.CacheControl)})
	}
	if len(parts) > 0 {
		c.add(chatwire.Message{Role: "system", Content: chatwire.Content{IsParts: true, Parts: parts}})
	}
	return nil
}

// metadata converts metadata: user_id -> user.
func (c *converter) metadata(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var m struct {
		UserID *string `json:"user_id"`
	}
	if !isObject(raw) || json.Unmarshal(raw, &m) != nil {
		return bad("metadata", "metadata: must be an object whose user_id is a string")
	}
	if m.UserID != nil {
		c.chat.User = *m.UserID
	}
	c.extraKeys("metadata", raw, "user_id")
	return nil
}

// thinking checks the extended-thinking option; the canonical form has no
// equivalent.
func (c *converter) thinking(raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	var t struct {
		Type         string `json:"type"`
		BudgetTokens *int   `json:"budget_tokens"`
	}
	if !isObject(raw) || json.Unmarshal(raw, &t) != nil {
		return bad("thinking", "thinking: must be an object with a type")
	}
	switch t.Type {
	case "enabled":
		if t.BudgetTokens == nil || *t.BudgetTokens < 1 {
			return bad("thinking.budget_tokens", "thinking.budget_tokens: a positive integer is required when thinking is enabled")
		}
		c.lose("thinking", "thinking", "extended thinking (thinking.type \"enabled\")")
	case "adaptive":
		c.lose("thinking", "thinking", "adaptive thinking (thinking.type \"adaptive\")")
	case "disabled":
	default:
		return bad("thinking.type", "thinking.type: must be enabled, adaptive or disabled, got %q", t.Type)
	}
	return nil
}

// tools converts the tool definitions and returns every tool's name.
func (c *converter) tools(tools []json.RawMessage) (map[string]bool, error) {
	names := map[string]bool{}
	for i, raw := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		var t struct {
			Type         string          `json:"type"`
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"input_schema"`
			CacheControl json.RawMessage `json:"cache_control"`
		}
		if !isObject(raw) || json.Unmarshal(raw, &t) != nil {
			return nil, bad(p, "%s: must be a tool object", p)
		}
		if t.Name == "" {
			return nil, bad(p+".name", "%s.name: field required", p)
		}
		if names[t.Name] {
			return nil, bad(p+".name", "%s.name: tool names must be unique, %q appears twice", p, t.Name)
		}
		names[t.Name] = true
		if t.Type != "" && t.Type != "custom" {
			c.lose(p, "server_tools", "server tool %q", t.Type)
			continue
		}
		if !isObject(t.InputSchema) {
			return nil, bad(p+".input_schema", "%s.input_schema: a JSON Schema object is required", p)
		}
		c.extraKeys(p, raw, "type", "name", "description", "input_schema", "cache_control")
		c.chat.Tools = append(c.chat.Tools, chatwire.Tool{Type: "function", CacheCtl: cacheCtl(t.CacheControl),
			Function: chatwire.FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.InputSchema}})
	}
	return names, nil
}

// toolChoice converts tool_choice.
func (c *converter) toolChoice(raw json.RawMessage, names map[string]bool) error {
	if isNull(raw) {
		return nil
	}
	var tc struct {
		Type                   string `json:"type"`
		Name                   string `json:"name"`
		DisableParallelToolUse *bool  `json:"disable_parallel_tool_use"`
	}
	if !isObject(raw) || json.Unmarshal(raw, &tc) != nil {
		return bad("tool_choice", "tool_choice: must be an object with a type")
	}
	ch := &chatwire.ToolChoice{}
	switch tc.Type {
	case "auto":
		ch.Mode = "auto"
	case "none":
		ch.Mode = "none"
	case "any":
		ch.Mode = "required"
	case "tool":
		if !names[tc.Name] {
			return bad("tool_choice.name", "tool_choice.name: %q is not one of the tools", tc.Name)
		}
		ch.Mode, ch.Function = "function", tc.Name
	default:
		return bad("tool_choice.type", "tool_choice.type: must be auto, any, tool or none, got %q", tc.Type)
	}
	if (tc.Type == "any" || tc.Type == "tool") && len(names) == 0 {
		return bad("tool_choice", "tool_choice %q needs tools", tc.Type)
	}
	c.extraKeys("tool_choice", raw, "type", "name", "disable_parallel_tool_use")
	c.chat.ToolChoice = ch
	if tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse {
		no := false
		c.chat.ParallelToolCalls = &no
	}
	return nil
}

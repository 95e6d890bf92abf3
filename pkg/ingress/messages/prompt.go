package messages

import (
	"encoding/json"
	"fmt"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The canonical Prompt of a Messages request (exchange.Request.Prompt, what
// every translating adapter reads), decoded in one hop and losslessly for
// everything a Prompt can hold:
//
//	system (string or text blocks)     -> Prompt.System (cache_control -> Cache)
//	a role "system" message            -> a RoleSystem message at its place
//	user and assistant turns           -> messages of those roles, blocks in order:
//	  text (citations on earlier answers) -> BlockText (Citations, with each one's Raw)
//	  image base64 / url               -> BlockImage: decoded bytes and media type / URL
//	  document base64 (PDF) / text / url -> BlockDocument: bytes and media type / URL,
//	                                      title, context, citations.enabled -> AskCitations
//	  tool_use                         -> BlockToolUse (input as compact JSON)
//	  tool_result                      -> BlockToolResult (content blocks, is_error)
//	  thinking                         -> BlockThinking (thinking, signature byte-exact)
//	  redacted_thinking                -> BlockRedactedThinking (Data: the data string's bytes)
//	  cache_control on any block       -> the block's Cache (ttl kept)
//	tools (client tools)               -> ToolFunction (input_schema, strict, cache_control)
//	tools with a server type           -> ToolBuiltin (Type, Name, Raw: the definition)
//	tool_choice auto/any/tool/none     -> ToolAuto/ToolAny/ToolNamed/ToolNone;
//	  disable_parallel_tool_use        -> NoParallel
//	thinking enabled/adaptive/disabled -> Output.Reasoning.Mode (budget_tokens -> BudgetTokens)
//	max_tokens, temperature, top_p, top_k, stop_sequences -> Sampling
//	metadata.user_id                   -> User
//	a final assistant message          -> the last message (prefill)
//
// Untranslated (exchange.Request.Untranslated: what a Prompt cannot hold; an
// Anthropic upstream gets it in the body, every other target refuses the
// request unless the route's translate_without lets it drop it): every
// top-level field the gateway does not know (context_management,
// service_tier, mcp_servers, container, output_config, ...), unknown
// members of known objects (thinking.display, a tool's defer_loading, a
// block's fields beyond those above), image and document file sources
// (Files API), documents whose source is a content array, content block
// types the gateway does not know (search_result, server tool results,
// ...), and a cache_control other than {"type":"ephemeral"} with an
// optional ttl. What a Prompt holds but a target's API cannot carry, that
// target refuses itself (provider.Refuse).

// promptConv decodes a validated request into a Prompt.
type promptConv struct {
	p *exchange.Prompt
	losses
}

// toPrompt validates the conversation, tools and options and decodes the
// Prompt. keys are the body's top-level member names.
func toPrompt(r *request, keys []string) (*exchange.Prompt, []exchange.Feature, error) {
	c := &promptConv{p: &exchange.Prompt{}}
	for _, k := range keys {
		if !topLevel[k] {
			c.lose(k, k, "field %q", k)
		}
	}
	s := &c.p.Sampling
	if r.MaxTokens != nil {
		s.MaxTokens = *r.MaxTokens
	}
	s.Temperature, s.TopP, s.TopK, s.Stop = r.Temperature, r.TopP, r.TopK, r.StopSequences
	var err error
	if c.p.System, err = c.system(r.System); err != nil {
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
	c.p.Messages = make([]exchange.Message, 0, len(r.Messages))
	for i, m := range r.Messages {
		msg, err := c.message(fmt.Sprintf("messages[%d]", i), m)
		if err != nil {
			return nil, nil, err
		}
		c.p.Messages = append(c.p.Messages, msg)
	}
	return c.p, c.lost, nil
}

// system decodes the system prompt: a string or an array of text blocks.
func (c *promptConv) system(raw json.RawMessage) ([]exchange.Block, error) {
	if isNull(raw) {
		return nil, nil
	}
	if s, ok := jsonb.Unquote(raw); ok {
		if s == "" {
			return nil, nil
		}
		return []exchange.Block{{Type: exchange.BlockText, Text: s}}, nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil {
		return nil, bad("system", "system: must be a string or an array of text blocks")
	}
	out := make([]exchange.Block, 0, len(blocks))
	for i, br := range blocks {
		p := fmt.Sprintf("system[%d]", i)
		var b block
		if json.Unmarshal(br, &b) != nil || b.Type != "text" || b.Text == nil {
			return nil, bad(p, "%s: must be a text block with a text string", p)
		}
		c.extraKeys(p, br, "type", "text", "cache_control")
		out = append(out, exchange.Block{Type: exchange.BlockText, Text: *b.Text, Cache: c.cache(p, b.CacheControl)})
	}
	return out, nil
}

// metadata decodes metadata: user_id -> User.
func (c *promptConv) metadata(raw json.RawMessage) error {
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
		c.p.User = *m.UserID
	}
	c.extraKeys("metadata", raw, "user_id")
	return nil
}

// thinking decodes the extended-thinking option into Output.Reasoning.
func (c *promptConv) thinking(raw json.RawMessage) error {
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
	rc := &c.p.Output.Reasoning
	switch t.Type {
	case "enabled":
		if t.BudgetTokens == nil || *t.BudgetTokens < 1 {
			return bad("thinking.budget_tokens", "thinking.budget_tokens: a positive integer is required when thinking is enabled")
		}
		rc.Mode, rc.BudgetTokens = "enabled", *t.BudgetTokens
		c.extraKeys("thinking", raw, "type", "budget_tokens")
	case "adaptive", "disabled":
		rc.Mode = t.Type
		c.extraKeys("thinking", raw, "type")
	default:
		return bad("thinking.type", "thinking.type: must be enabled, adaptive or disabled, got %q", t.Type)
	}
	return nil
}

// tools decodes the tool definitions and returns every tool's name.
func (c *promptConv) tools(tools []json.RawMessage) (map[string]bool, error) {
	names := map[string]bool{}
	for i, raw := range tools {
		p := fmt.Sprintf("tools[%d]", i)
		var t struct {
			Type         string          `json:"type"`
			Name         string          `json:"name"`
			Description  string          `json:"description"`
			InputSchema  json.RawMessage `json:"input_schema"`
			Strict       *bool           `json:"strict"`
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
			c.p.Tools = append(c.p.Tools, exchange.Tool{Kind: exchange.ToolBuiltin, Type: t.Type, Name: t.Name,
				Raw: cacheCtl(raw), Cache: c.cache(p, t.CacheControl)})
			continue
		}
		if !isObject(t.InputSchema) {
			return nil, bad(p+".input_schema", "%s.input_schema: a JSON Schema object is required", p)
		}
		c.extraKeys(p, raw, "type", "name", "description", "input_schema", "strict", "cache_control")
		c.p.Tools = append(c.p.Tools, exchange.Tool{Kind: exchange.ToolFunction, Name: t.Name, Description: t.Description,
			Schema: cacheCtl(t.InputSchema), Strict: t.Strict, Cache: c.cache(p, t.CacheControl)})
	}
	return names, nil
}

// toolChoice decodes tool_choice.
func (c *promptConv) toolChoice(raw json.RawMessage, names map[string]bool) error {
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
	ch := &c.p.ToolChoice
	switch tc.Type {
	case "auto":
		ch.Mode = exchange.ToolAuto
	case "none":
		ch.Mode = exchange.ToolNone
	case "any":
		ch.Mode = exchange.ToolAny
	case "tool":
		if !names[tc.Name] {
			return bad("tool_choice.name", "tool_choice.name: %q is not one of the tools", tc.Name)
		}
		ch.Mode, ch.Name = exchange.ToolNamed, tc.Name
	default:
		return bad("tool_choice.type", "tool_choice.type: must be auto, any, tool or none, got %q", tc.Type)
	}
	if (tc.Type == "any" || tc.Type == "tool") && len(names) == 0 {
		return bad("tool_choice", "tool_choice %q needs tools", tc.Type)
	}
	c.extraKeys("tool_choice", raw, "type", "name", "disable_parallel_tool_use")
	ch.NoParallel = tc.DisableParallelToolUse != nil && *tc.DisableParallelToolUse
	return nil
}

// cache decodes a cache_control: {"type":"ephemeral"} with an optional
// ttl. Any other value is kept for an Anthropic upstream and listed as
// untranslated.
func (c *promptConv) cache(p string, raw json.RawMessage) *exchange.CacheBreakpoint {
	if isNull(raw) {
		return nil
	}
	var cc struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if !isObject(raw) || json.Unmarshal(raw, &cc) != nil || cc.Type != "ephemeral" {
		c.lose(p+".cache_control", "cache_control", "a cache_control other than {\"type\":\"ephemeral\"}")
		return nil
	}
	c.extraKeys(p+".cache_control", raw, "type", "ttl")
	return &exchange.CacheBreakpoint{TTL: cc.TTL}
}

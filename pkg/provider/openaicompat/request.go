package openaicompat

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Request translation, canonical Prompt -> OpenAI chat body, for requests
// that arrived on another client API (Messages, Responses, the failover
// engine's continuations, moderation checks). A chat client's own bytes
// never come here: they pass through.
//
//	System                      -> a leading system message (one text block without a
//	                               breakpoint: a plain string; else text parts)
//	RoleSystem messages         -> system messages at their place
//	user text, image, document  -> a user message: text parts, image_url parts (bytes
//	                               as a base64 data URL, or the URL, with its detail),
//	                               file parts (a PDF's bytes as a data URL, its filename)
//	tool result blocks          -> role tool messages (tool_call_id), before the user
//	                               message holding the turn's other blocks; text, or
//	                               parts when the result holds media
//	assistant text, refusal     -> content (a refusal as text, as chat clients send it back)
//	assistant tool use          -> tool_calls (arguments: the input as sent)
//	thinking, redacted thinking -> dropped: OpenAI-compatible APIs take no reasoning of
//	                               earlier turns (they cannot verify a signature)
//	cache breakpoints           -> cache_control {"type":"ephemeral"[,"ttl"]} on the part,
//	                               the tool message or the tool (a tool use's on its
//	                               message), as the Messages client's cache_control always
//	                               was; OpenAI ignores it, compatible caches read it
//	function tools              -> function tools (schema -> parameters, strict)
//	tool choice                 -> none / required / a named function (auto: omitted,
//	                               the default); NoParallel -> parallel_tool_calls false
//	Sampling                    -> max_tokens (max_completion_tokens with
//	                               options.max_tokens_field), temperature, top_p,
//	                               presence_penalty, frequency_penalty, seed, stop
//	Output                      -> response_format, n, reasoning_effort
//	User                        -> user
//
// Refused before any network call (provider.Refuse: dropped instead when
// the route's translate_without lists the key): thinking asked for without
// an effort ("thinking": budgets and adaptive thinking have no chat form),
// top_k ("top_k"), a tool result marked as an error ("is_error"),
// documents other than PDF bytes ("document_sources"), documents asking for
// citations ("citations") or carrying a title or context
// ("document_context"), custom and built-in tools ("custom_tools",
// "server_tools"), a final assistant message outside a continuation
// ("prefill"), and a breakpoint on a tool use that is not its message's
// last block ("cache_control_placement"). Ignored: reasoning summaries,
// metadata, message names of roles other than user and assistant.

// chatBody builds the chat request for call's Prompt.
func (a *Adapter) chatBody(call *provider.Call) (*chatwire.ChatRequest, error) {
	p := call.Prompt()
	if p == nil {
		return nil, &gwerr.Error{Category: gwerr.Internal, Message: "request has no canonical form", Provider: a.id}
	}
	b := &builder{call: call, c: &chatwire.ChatRequest{Model: call.Model(), Stream: call.Req.Stream, User: p.User},
		completionField: a.maxTokensField == "max_completion_tokens"}
	steps := []func(*exchange.Prompt) error{b.sampling, b.output, b.tools, b.conversation}
	for _, step := range steps {
		if err := step(p); err != nil {
			return nil, err
		}
	}
	return b.c, nil
}

// builder builds one chat request.
type builder struct {
	call *provider.Call
	c    *chatwire.ChatRequest
	// completionField: the limit goes in max_completion_tokens
	// (options.max_tokens_field), else in max_tokens.
	completionField bool
}

// refuse is provider.Refuse for this call, as an error (nil: drop the
// feature).
func (b *builder) refuse(key, param, what string) error {
	if err := provider.Refuse(b.call, key, param, what); err != nil {
		return err
	}
	return nil
}

func (b *builder) sampling(p *exchange.Prompt) error {
	s := &p.Sampling
	c := b.c
	if n := s.MaxTokens; n > 0 && b.completionField {
		c.MaxCompletionTokens = &n
	} else if n > 0 {
		c.MaxTokens = &n
	}
	c.Temperature, c.TopP = s.Temperature, s.TopP
	c.PresencePenalty, c.FrequencyPenalty, c.Seed = s.PresencePenalty, s.FrequencyPenalty, s.Seed
	if len(s.Stop) > 0 {
		c.Stop = s.Stop
	}
	if s.TopK != nil {
		return b.refuse("top_k", "top_k", "top_k")
	}
	return nil
}

func (b *builder) output(p *exchange.Prompt) error {
	o := &p.Output
	c := b.c
	if o.Choices > 1 {
		n := o.Choices
		c.N = &n
	}
	switch o.Format {
	case "", "text":
	case "json_object":
		c.ResponseFormat = &chatwire.ResponseFormat{Type: "json_object"}
	case "json_schema":
		js := struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema,omitempty"`
			Strict bool            `json:"strict,omitempty"`
		}{o.SchemaName, o.Schema, o.StrictSchema}
		raw, err := json.Marshal(js)
		if err != nil {
			return &gwerr.Error{Category: gwerr.InvalidRequest, Param: "response_format", Message: "the output schema is not valid JSON"}
		}
		c.ResponseFormat = &chatwire.ResponseFormat{Type: "json_schema", JSONSchema: raw}
	default:
		return b.refuse("response_format", "response_format", fmt.Sprintf("output format %q", o.Format))
	}
	r := &o.Reasoning
	c.ReasoningEffort = r.Effort
	if (r.Mode == "enabled" || r.Mode == "adaptive") && r.Effort == "" {
		return b.refuse("thinking", "thinking", r.Mode+" thinking (an OpenAI-compatible API takes only reasoning_effort)")
	}
	return nil
}

// cacheControl is a breakpoint's cache_control object, nil for none.
func cacheControl(bp *exchange.CacheBreakpoint) json.RawMessage {
	if bp == nil {
		return nil
	}
	if bp.TTL == "" {
		return json.RawMessage(`{"type":"ephemeral"}`)
	}
	ttl, _ := json.Marshal(bp.TTL)
	return json.RawMessage(`{"type":"ephemeral","ttl":` + string(ttl) + `}`)
}

func (b *builder) tools(p *exchange.Prompt) error {
	for i := range p.Tools {
		t := &p.Tools[i]
		param := fmt.Sprintf("tools[%d]", i)
		switch t.Kind {
		case exchange.ToolFunction:
			b.c.Tools = append(b.c.Tools, chatwire.Tool{Type: "function", CacheCtl: cacheControl(t.Cache),
				Function: chatwire.FunctionDef{Name: t.Name, Description: t.Description, Parameters: t.Schema, Strict: t.Strict}})
		case exchange.ToolCustom:
			if err := b.refuse("custom_tools", param, "the custom tool "+t.Name); err != nil {
				return err
			}
		default:
			if err := b.refuse("server_tools", param, "the "+t.Type+" tool"); err != nil {
				return err
			}
		}
	}
	tc := p.ToolChoice
	switch tc.Mode {
	case exchange.ToolNone:
		b.c.ToolChoice = &chatwire.ToolChoice{Mode: "none"}
	case exchange.ToolAny:
		b.c.ToolChoice = &chatwire.ToolChoice{Mode: "required"}
	case exchange.ToolNamed:
		b.c.ToolChoice = &chatwire.ToolChoice{Mode: "function", Function: tc.Name}
	}
	if tc.NoParallel && len(b.c.Tools) > 0 {
		no := false
		b.c.ParallelToolCalls = &no
	}
	return nil
}

func (b *builder) add(m chatwire.Message) { b.c.Messages = append(b.c.Messages, m) }

// conversation builds the messages: the system prompt, then every turn.
func (b *builder) conversation(p *exchange.Prompt) error {
	if len(p.System) > 0 {
		ct, err := b.content("system", p.System, false)
		if err != nil {
			return err
		}
		b.add(chatwire.Message{Role: "system", Content: ct})
	}
	for i := range p.Messages {
		m := &p.Messages[i]
		param := fmt.Sprintf("messages[%d]", i)
		var err error
		switch m.Role {
		case exchange.RoleSystem:
			var ct chatwire.Content
			if ct, err = b.content(param, m.Content, false); err == nil {
				b.add(chatwire.Message{Role: "system", Content: ct})
			}
		case exchange.RoleAssistant:
			if i == len(p.Messages)-1 && b.call.Req.API != exchange.Prefill {
				if err := b.refuse("prefill", param, "a final assistant message (prefill)"); err != nil {
					return err
				}
				continue
			}
			err = b.assistant(param, m)
		default:
			err = b.user(param, m)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// user builds a user turn: its tool results as tool messages first, then
// one user message with the other blocks.
func (b *builder) user(param string, m *exchange.Message) error {
	var rest []exchange.Block
	for j := range m.Content {
		blk := &m.Content[j]
		if blk.Type != exchange.BlockToolResult {
			rest = append(rest, *blk)
			continue
		}
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		if blk.IsError {
			if err := b.refuse("is_error", pp+".is_error", "a tool result marked as an error"); err != nil {
				return err
			}
		}
		ct, err := b.content(pp, blk.Content, true)
		if err != nil {
			return err
		}
		b.add(chatwire.Message{Role: "tool", ToolCallID: blk.ToolID, Content: ct, CacheCtl: cacheControl(blk.Cache)})
	}
	if len(rest) == 0 {
		return nil
	}
	ct, err := b.content(param, rest, true)
	if err != nil {
		return err
	}
	b.add(chatwire.Message{Role: "user", Content: ct, Name: m.Name})
	return nil
}

// assistant builds an assistant turn: text (and refusals) as content, tool
// uses as tool_calls; thinking is dropped.
func (b *builder) assistant(param string, m *exchange.Message) error {
	msg := chatwire.Message{Role: "assistant", Name: m.Name}
	var text []exchange.Block
	for j := range m.Content {
		blk := &m.Content[j]
		switch blk.Type {
		case exchange.BlockText, exchange.BlockRefusal:
			text = append(text, exchange.Block{Type: exchange.BlockText, Text: blk.Text, Cache: blk.Cache})
		case exchange.BlockToolUse:
			args := strings.TrimSpace(string(blk.Input))
			if args == "" {
				args = "{}"
			}
			msg.ToolCalls = append(msg.ToolCalls, chatwire.ToolCall{ID: blk.ToolID, Type: "function",
				Function: chatwire.FunctionCall{Name: blk.ToolName, Arguments: args}})
			if blk.Cache != nil {
				if j != len(m.Content)-1 {
					pp := fmt.Sprintf("%s.content[%d]", param, j)
					if err := b.refuse("cache_control_placement", pp+".cache_control", "cache_control on a tool use that is not its message's last block"); err != nil {
						return err
					}
					continue
				}
				msg.CacheCtl = cacheControl(blk.Cache)
			}
		case exchange.BlockThinking, exchange.BlockRedactedThinking:
			// Dropped: see the mapping above.
		default:
			return provider.Unsupported(b.call.Step.ID, fmt.Sprintf("%s.content[%d]", param, j), "a media block in an assistant turn")
		}
	}
	msg.Content = chatwire.Content{Null: true}
	if len(text) > 0 {
		ct, err := b.content(param, text, false)
		if err != nil {
			return err
		}
		msg.Content = ct
	}
	b.add(msg)
	return nil
}

// content builds a message's content from blocks: one text block without
// a breakpoint is a plain string, anything else parts. media allows
// images and documents.
func (b *builder) content(param string, blocks []exchange.Block, media bool) (chatwire.Content, error) {
	if len(blocks) == 1 && blocks[0].Type == exchange.BlockText && blocks[0].Cache == nil {
		return chatwire.Content{Text: blocks[0].Text}, nil
	}
	parts := make([]chatwire.ContentPart, 0, len(blocks))
	for j := range blocks {
		blk := &blocks[j]
		pp := fmt.Sprintf("%s.content[%d]", param, j)
		part := chatwire.ContentPart{CacheCtl: cacheControl(blk.Cache)}
		switch blk.Type {
		case exchange.BlockText, exchange.BlockRefusal:
			part.Type, part.Text = "text", blk.Text
		case exchange.BlockImage, exchange.BlockDocument:
			if !media {
				return chatwire.Content{}, provider.Unsupported(b.call.Step.ID, pp, "an image or document in a system or assistant message")
			}
			ok, err := b.media(pp, blk, &part)
			if err != nil {
				return chatwire.Content{}, err
			}
			if !ok {
				continue
			}
		default:
			return chatwire.Content{}, provider.Unsupported(b.call.Step.ID, pp, "a nested tool use or result")
		}
		parts = append(parts, part)
	}
	return chatwire.Content{IsParts: true, Parts: parts}, nil
}

// dataURL encodes bytes as a base64 data URL.
func dataURL(mediaType string, data []byte) string {
	return "data:" + mediaType + ";base64," + base64.StdEncoding.EncodeToString(data)
}

// media builds an image_url or file part; ok is false for a block the
// route's translate_without lets the request go without.
func (b *builder) media(pp string, blk *exchange.Block, part *chatwire.ContentPart) (bool, error) {
	if blk.Type == exchange.BlockImage {
		u := blk.URL
		if len(blk.Data) > 0 {
			u = dataURL(blk.MediaType, blk.Data)
		}
		part.Type, part.ImageURL = "image_url", &chatwire.ImageURL{URL: u, Detail: blk.Detail}
		return true, nil
	}
	var err error
	switch {
	case len(blk.Data) == 0:
		err = b.refuse("document_sources", pp, "a document at a URL (an OpenAI-compatible API reads PDF bytes only)")
	case blk.MediaType != "application/pdf":
		err = b.refuse("document_sources", pp, "a "+blk.MediaType+" document (an OpenAI-compatible API reads PDF bytes only)")
	case blk.AskCitations:
		err = b.refuse("citations", pp+".citations", "citations on a document")
	case blk.Title != "" || blk.Context != "":
		err = b.refuse("document_context", pp, "a document's title or context")
	}
	if err != nil {
		return false, err
	}
	if len(blk.Data) == 0 || blk.MediaType != "application/pdf" {
		return false, nil // dropped
	}
	name := blk.FileName
	if name == "" {
		name = "document.pdf"
	}
	file, _ := json.Marshal(map[string]string{"filename": name, "file_data": dataURL(blk.MediaType, blk.Data)})
	part.Type, part.File = "file", file
	return true, nil
}

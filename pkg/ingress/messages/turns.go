package messages

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// The conversation's conversion into canonical messages (see canonical.go
// for the mapping).

// message converts one turn. last is true for the final turn.
func (c *converter) message(i int, m message, last bool) error {
	p := fmt.Sprintf("messages[%d]", i)
	switch m.Role {
	case "user", "assistant":
	case "system": // a mid-conversation system message (Claude Code 2.1 sends them)
		return c.midSystem(p, m.Content)
	default:
		return bad(p+".role", "%s.role: must be user, assistant or system, got %q", p, m.Role)
	}
	if m.Role == "assistant" && last {
		c.lose(p, "prefill", "a final assistant message (prefill)")
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		c.add(chatwire.Message{Role: m.Role, Content: chatwire.Content{Text: s}})
		return nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(m.Content, &blocks) != nil {
		return bad(p+".content", "%s.content: must be a string or an array of content blocks", p)
	}
	if len(blocks) == 0 {
		return bad(p+".content", "%s.content: must not be empty", p)
	}
	if m.Role == "user" {
		return c.user(p, blocks)
	}
	return c.assistant(p, blocks)
}

// midSystem converts a system message inside the conversation (text only)
// into a canonical system message at the same place.
func (c *converter) midSystem(p string, raw json.RawMessage) error {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		c.add(chatwire.Message{Role: "system", Content: chatwire.Content{Text: s}})
		return nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(raw, &blocks) != nil || len(blocks) == 0 {
		return bad(p+".content", "%s.content: must be a string or a non-empty array of text blocks", p)
	}
	parts := make([]chatwire.ContentPart, 0, len(blocks))
	for j, br := range blocks {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		b, err := decodeBlock(pp, br)
		if err != nil {
			return err
		}
		if b.Type != "text" {
			return bad(pp+".type", "%s: a system message carries text blocks only, got %q", pp, b.Type)
		}
		part, _, err := c.media(pp, br, b)
		if err != nil {
			return err
		}
		parts = append(parts, part)
	}
	c.add(chatwire.Message{Role: "system", Content: chatwire.Content{IsParts: true, Parts: parts}})
	return nil
}

// user converts a user turn: tool results become tool messages, placed
// first as the canonical form requires, then one user message with the
// other blocks.
func (c *converter) user(p string, blocks []json.RawMessage) error {
	var parts []chatwire.ContentPart
	for j, raw := range blocks {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		b, err := decodeBlock(pp, raw)
		if err != nil {
			return err
		}
		switch b.Type {
		case "tool_result":
			msg, err := c.toolResult(pp, raw, b)
			if err != nil {
				return err
			}
			c.add(msg)
			continue
		case "tool_use", "thinking", "redacted_thinking":
			return bad(pp+".type", "%s: only assistant messages carry %s blocks", pp, b.Type)
		}
		part, ok, err := c.media(pp, raw, b)
		if err != nil {
			return err
		}
		if ok {
			parts = append(parts, part)
		}
	}
	if len(parts) > 0 {
		c.add(chatwire.Message{Role: "user", Content: chatwire.Content{IsParts: true, Parts: parts}})
	}
	return nil
}

// media converts a text, image or document block into a content part; ok
// is false for a block the canonical form cannot carry (recorded as lost).
func (c *converter) media(p string, raw json.RawMessage, b block) (chatwire.ContentPart, bool, error) {
	part := chatwire.ContentPart{CacheCtl: cacheCtl(b.CacheControl)}
	switch b.Type {
	case "text":
		if b.Text == nil {
			return part, false, bad(p+".text", "%s.text: field required", p)
		}
		c.extraKeys(p, raw, "type", "text", "cache_control")
		part.Type, part.Text = "text", *b.Text
		return part, true, nil
	case "image":
		var src source
		if json.Unmarshal(b.Source, &src) != nil {
			return part, false, bad(p+".source", "%s.source: field required", p)
		}
		c.extraKeys(p, raw, "type", "source", "cache_control")
		switch src.Type {
		case "base64":
			if !imageTypes[src.MediaType] || src.Data == "" {
				return part, false, bad(p+".source", "%s.source: base64 images need media_type image/jpeg, image/png, image/gif or image/webp and data", p)
			}
			part.Type, part.ImageURL = "image_url", &chatwire.ImageURL{URL: "data:" + src.MediaType + ";base64," + src.Data}
		case "url":
			if src.URL == "" {
				return part, false, bad(p+".source.url", "%s.source.url: field required", p)
			}
			part.Type, part.ImageURL = "image_url", &chatwire.ImageURL{URL: src.URL}
		case "file":
			c.lose(p, "file_sources", "an image with a file source (Files API)")
			return part, false, nil
		default:
			return part, false, bad(p+".source.type", "%s.source.type: must be base64, url or file, got %q", p, src.Type)
		}
		return part, true, nil
	case "document":
		var src source
		if json.Unmarshal(b.Source, &src) != nil || src.Type == "" {
			return part, false, bad(p+".source", "%s.source: field required", p)
		}
		c.extraKeys(p, raw, "type", "source", "cache_control")
		if src.Type != "base64" || src.MediaType != "application/pdf" {
			c.lose(p, "document_sources", "a document with a %q source", src.Type+" "+src.MediaType)
			return part, false, nil
		}
		file, _ := json.Marshal(map[string]string{"filename": "document.pdf", "file_data": "data:application/pdf;base64," + src.Data})
		part.Type, part.File = "file", file
		return part, true, nil
	}
	c.lose(p, "content_types", "content block type %q", b.Type)
	return part, false, nil
}

// toolResult converts a tool_result block into a tool message.
func (c *converter) toolResult(p string, raw json.RawMessage, b block) (chatwire.Message, error) {
	msg := chatwire.Message{Role: "tool", ToolCallID: b.ToolUseID, CacheCtl: cacheCtl(b.CacheControl)}
	if b.ToolUseID == "" {
		return msg, bad(p+".tool_use_id", "%s.tool_use_id: field required", p)
	}
	c.extraKeys(p, raw, "type", "tool_use_id", "content", "is_error", "cache_control")
	if b.IsError != nil && *b.IsError {
		c.lose(p+".is_error", "is_error", "a tool_result with is_error")
	}
	if isNull(b.Content) {
		return msg, nil
	}
	if json.Unmarshal(b.Content, &msg.Content.Text) == nil {
		return msg, nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(b.Content, &blocks) != nil {
		return msg, bad(p+".content", "%s.content: must be a string or an array of content blocks", p)
	}
	msg.Content.IsParts = true
	for k, braw := range blocks {
		pp := fmt.Sprintf("%s.content[%d]", p, k)
		bb, err := decodeBlock(pp, braw)
		if err != nil {
			return msg, err
		}
		part, ok, err := c.media(pp, braw, bb)
		if err != nil {
			return msg, err
		}
		if ok {
			msg.Content.Parts = append(msg.Content.Parts, part)
		}
	}
	return msg, nil
}

// assistant converts an assistant turn: text parts and tool calls.
func (c *converter) assistant(p string, blocks []json.RawMessage) error {
	msg := chatwire.Message{Role: "assistant"}
	var parts []chatwire.ContentPart
	for j, raw := range blocks {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		b, err := decodeBlock(pp, raw)
		if err != nil {
			return err
		}
		switch b.Type {
		case "text":
			part, _, err := c.media(pp, raw, b)
			if err != nil {
				return err
			}
			parts = append(parts, part)
		case "tool_use":
			tc, err := c.toolUse(pp, raw, b)
			if err != nil {
				return err
			}
			if cc := cacheCtl(b.CacheControl); cc != nil {
				if j == len(blocks)-1 {
					msg.CacheCtl = cc
				} else {
					c.lose(pp+".cache_control", "cache_control_placement", "cache_control on a tool_use block that is not its message's last")
				}
			}
			msg.ToolCalls = append(msg.ToolCalls, tc)
		case "thinking":
			if b.Thinking == nil || b.Signature == nil {
				return bad(pp, "%s: a thinking block needs thinking and signature strings", pp)
			}
			c.lose(pp, "thinking_blocks", "a thinking block")
		case "redacted_thinking":
			if b.Data == nil {
				return bad(pp+".data", "%s.data: field required", pp)
			}
			c.lose(pp, "thinking_blocks", "a redacted_thinking block")
		case "image", "document", "tool_result":
			return bad(pp+".type", "%s: only user messages carry %s blocks", pp, b.Type)
		default:
			c.lose(pp, "content_types", "content block type %q", b.Type)
		}
	}
	if len(parts) > 0 {
		msg.Content = chatwire.Content{IsParts: true, Parts: parts}
	} else {
		msg.Content = chatwire.Content{Null: true}
	}
	c.add(msg)
	return nil
}

// toolUse converts a tool_use block into a tool call.
func (c *converter) toolUse(p string, raw json.RawMessage, b block) (chatwire.ToolCall, error) {
	if b.ID == "" || b.Name == "" {
		return chatwire.ToolCall{}, bad(p, "%s: a tool_use block needs an id and a name", p)
	}
	c.extraKeys(p, raw, "type", "id", "name", "input", "cache_control")
	args := []byte("{}")
	if !isNull(b.Input) {
		if !isObject(b.Input) {
			return chatwire.ToolCall{}, bad(p+".input", "%s.input: must be an object", p)
		}
		var buf bytes.Buffer
		if json.Compact(&buf, b.Input) == nil {
			args = buf.Bytes()
		}
	}
	return chatwire.ToolCall{ID: b.ID, Type: "function", Function: chatwire.FunctionCall{Name: b.Name, Arguments: string(args)}}, nil
}

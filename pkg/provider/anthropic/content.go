package anthropic

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// The conversation's translation (see request.go for what is translated,
// refused and ignored): the Prompt's messages into turns of content blocks,
// and the system prompt.

// cacheControl is the cache_control of a breakpoint, nil for none.
func cacheControl(c *exchange.CacheBreakpoint) json.RawMessage {
	if c == nil {
		return nil
	}
	if c.TTL == "" {
		return json.RawMessage(`{"type":"ephemeral"}`)
	}
	return json.RawMessage(`{"type":"ephemeral","ttl":` + strconv.Quote(c.TTL) + `}`)
}

// messages translates the conversation and the system prompt.
func (t *translator) messages(out *messageswire.Request, p *exchange.Prompt) error {
	sys, err := t.blocks("system", p.System, false)
	if err != nil {
		return err
	}
	out.System = sys
	for i, m := range p.Messages {
		pm := fmt.Sprintf("messages[%d]", i)
		var role string
		switch m.Role {
		case exchange.RoleSystem:
			blocks, err := t.blocks(pm, m.Content, false)
			if err != nil {
				return err
			}
			out.System = append(out.System, blocks...)
			continue
		case exchange.RoleUser:
			role = messageswire.RoleUser
		case exchange.RoleAssistant:
			role = messageswire.RoleAssistant
		default:
			return t.invalid(pm+".role", "%s.role %q is not a canonical role", pm, m.Role)
		}
		blocks, err := t.blocks(pm, m.Content, true)
		if err != nil {
			return err
		}
		if len(blocks) == 0 {
			return t.invalid(pm+".content", "%s has no content; Anthropic requires every message to have non-empty content", pm)
		}
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			continue
		}
		out.Messages = append(out.Messages, messageswire.Message{Role: role, Content: blocks})
	}
	if len(out.Messages) == 0 {
		return t.invalid("messages", "messages has only system or developer messages; Anthropic needs at least one user message")
	}
	for i := range out.Messages {
		if out.Messages[i].Role == messageswire.RoleUser {
			toolResultsFirst(out.Messages[i].Content)
		}
	}
	return nil
}

// toolResultsFirst moves tool_result blocks before the other blocks of a
// user turn, keeping both groups' order: the API requires tool results to
// lead the turn that answers the tool calls.
func toolResultsFirst(blocks []messageswire.ContentBlock) {
	seenOther := false
	for _, b := range blocks {
		if b.Type != messageswire.BlockToolResult {
			seenOther = true
		} else if seenOther {
			goto reorder
		}
	}
	return
reorder:
	sorted := make([]messageswire.ContentBlock, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == messageswire.BlockToolResult {
			sorted = append(sorted, b)
		}
	}
	for _, b := range blocks {
		if b.Type != messageswire.BlockToolResult {
			sorted = append(sorted, b)
		}
	}
	copy(blocks, sorted)
}

// blocks translates content blocks. Empty text is dropped (the API
// rejects empty text blocks). turn is false for the system prompt, which
// takes text only.
func (t *translator) blocks(p string, in []exchange.Block, turn bool) ([]messageswire.ContentBlock, error) {
	out := make([]messageswire.ContentBlock, 0, len(in))
	for j := range in {
		b := &in[j]
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		if p == "system" {
			pp = fmt.Sprintf("system[%d]", j)
		}
		if !turn && b.Type != exchange.BlockText && b.Type != exchange.BlockRefusal {
			if e := t.unsupported("system_media", pp, "an image or file in a system message"); e != nil {
				return nil, e
			}
			continue
		}
		w := messageswire.ContentBlock{CacheControl: cacheControl(b.Cache)}
		switch b.Type {
		case exchange.BlockText, exchange.BlockRefusal:
			if b.Text == "" {
				continue
			}
			w.Type, w.Text, w.Citations = messageswire.BlockText, b.Text, citations(b.Citations)
		case exchange.BlockImage:
			src, err := t.source(pp, b, false)
			if err != nil {
				return nil, err
			}
			w.Type, w.Source = messageswire.BlockImage, src
		case exchange.BlockDocument:
			src, err := t.source(pp, b, true)
			if err != nil {
				return nil, err
			}
			if src == nil { // dropped
				continue
			}
			w.Type, w.Source, w.Title, w.Context = messageswire.BlockDocument, src, b.Title, b.Context
			if b.AskCitations {
				w.Citations = json.RawMessage(`{"enabled":true}`)
			}
		case exchange.BlockToolUse:
			if b.ToolID == "" || b.ToolName == "" {
				return nil, t.invalid(pp, "%s: a tool call needs an id and a name", pp)
			}
			w.Type, w.ID, w.Name, w.Input = messageswire.BlockToolUse, b.ToolID, b.ToolName, b.Input
			if len(bytes.TrimSpace(w.Input)) == 0 {
				w.Input = json.RawMessage("{}")
			}
		case exchange.BlockToolResult:
			content, err := t.blocks(pp, b.Content, true)
			if err != nil {
				return nil, err
			}
			w.Type, w.ToolUseID, w.Content, w.IsError = messageswire.BlockToolResult, b.ToolID, content, b.IsError
		case exchange.BlockThinking:
			if !b.SendsToClaude() {
				continue // another family's reasoning (or unsigned): Claude cannot verify it
			}
			w.Type, w.Thinking, w.Signature = messageswire.BlockThinking, b.Text, b.Signature
		case exchange.BlockRedactedThinking:
			if !b.SendsToClaude() {
				continue
			}
			w.Type, w.Data = messageswire.BlockRedactedThinking, string(b.Data)
		default:
			return nil, t.invalid(pp, "%s: unknown block type %d", pp, b.Type)
		}
		out = append(out, w)
	}
	return out, nil
}

// citations are an earlier answer's citations, sent back when each one is
// Anthropic's own (it has its Raw form); nil otherwise (the text is kept).
func citations(cs []exchange.Citation) json.RawMessage {
	if len(cs) == 0 {
		return nil
	}
	out := []byte{'['}
	for i, c := range cs {
		if len(c.Raw) == 0 {
			return nil
		}
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, c.Raw...)
	}
	return append(out, ']')
}

// source is the source of an image or document block: bytes as base64 (a
// document's text/plain bytes as a text source), an http(s) URL as a url
// source. A document of another media type is refused (nil, nil when the
// route lets it drop).
func (t *translator) source(p string, b *exchange.Block, doc bool) (*messageswire.Source, error) {
	if b.URL != "" {
		if l := strings.ToLower(b.URL); strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") {
			return &messageswire.Source{Type: "url", URL: b.URL}, nil
		}
		return nil, t.invalid(p+".url", "%s: the URL must be http(s) or the bytes inline", p)
	}
	switch {
	case !doc:
		return &messageswire.Source{Type: "base64", MediaType: b.MediaType, Data: base64.StdEncoding.EncodeToString(b.Data)}, nil
	case b.MediaType == "application/pdf":
		return &messageswire.Source{Type: "base64", MediaType: b.MediaType, Data: base64.StdEncoding.EncodeToString(b.Data)}, nil
	case b.MediaType == "text/plain":
		return &messageswire.Source{Type: "text", MediaType: b.MediaType, Data: string(b.Data)}, nil
	}
	if e := t.unsupported("document_sources", p, fmt.Sprintf("a %q document (Anthropic takes PDF and plain text)", b.MediaType)); e != nil {
		return nil, e
	}
	return nil, nil
}

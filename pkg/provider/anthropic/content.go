package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// The conversation's translation (see request.go for what is translated,
// rejected and ignored): messages into turns of content blocks, and the
// system prompt.

// cacheCtl returns a cache_control value, nil when absent or null.
func cacheCtl(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// markLast puts a message-level cache_control on the last block, unless
// that block has its own.
func markLast(blocks []messageswire.ContentBlock, cc json.RawMessage) {
	if cc = cacheCtl(cc); cc == nil || len(blocks) == 0 {
		return
	}
	if b := &blocks[len(blocks)-1]; b.CacheControl == nil {
		b.CacheControl = cc
	}
}

// messages translates the conversation and the system prompt.
func (t *translator) messages(out *messageswire.Request, msgs []chatwire.Message) error {
	for i, m := range msgs {
		p := fmt.Sprintf("messages[%d]", i)
		var role string
		var blocks []messageswire.ContentBlock
		var err error
		switch m.Role {
		case "system", "developer":
			blocks, err = t.parts(p, m.Content, false)
			if err != nil {
				return err
			}
			markLast(blocks, m.CacheCtl)
			out.System = append(out.System, blocks...)
			continue
		case "user":
			role = messageswire.RoleUser
			blocks, err = t.parts(p, m.Content, true)
		case "assistant":
			role = messageswire.RoleAssistant
			blocks, err = t.assistant(p, m)
		case "tool":
			role = messageswire.RoleUser
			blocks, err = t.toolResult(p, m)
		default:
			return t.unsupported(p+".role", fmt.Sprintf("role %q (legacy function calling; use tools)", m.Role))
		}
		if err != nil {
			return err
		}
		if len(blocks) == 0 {
			return t.invalid(p+".content", "%s has no content; Anthropic requires every message to have non-empty content", p)
		}
		if m.Role != "tool" {
			markLast(blocks, m.CacheCtl)
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

// parts translates a message's content. Empty text is dropped (the API
// rejects empty text blocks). media allows images and files.
func (t *translator) parts(p string, c chatwire.Content, media bool) ([]messageswire.ContentBlock, error) {
	if !c.IsParts {
		if c.Text == "" {
			return nil, nil
		}
		return []messageswire.ContentBlock{{Type: messageswire.BlockText, Text: c.Text}}, nil
	}
	blocks := make([]messageswire.ContentBlock, 0, len(c.Parts))
	for j, part := range c.Parts {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		b := messageswire.ContentBlock{CacheControl: cacheCtl(part.CacheCtl)}
		switch part.Type {
		case "text", "refusal":
			b.Type, b.Text = messageswire.BlockText, part.Text
			if part.Type == "refusal" {
				b.Text = part.Refusal
			}
			if b.Text == "" {
				continue
			}
		case "image_url":
			if !media {
				return nil, t.unsupported(pp, "an image in a system message")
			}
			src, err := t.imageSource(pp, part.ImageURL.URL)
			if err != nil {
				return nil, err
			}
			b.Type, b.Source = messageswire.BlockImage, src
		case "file":
			if !media {
				return nil, t.unsupported(pp, "a file in a system message")
			}
			src, err := t.fileSource(pp, part.File)
			if err != nil {
				return nil, err
			}
			b.Type, b.Source = messageswire.BlockDocument, src
		case "input_audio":
			return nil, t.unsupported(pp, "input_audio content")
		default:
			return nil, t.unsupported(pp, fmt.Sprintf("content part type %q", part.Type))
		}
		blocks = append(blocks, b)
	}
	return blocks, nil
}

// imageSource translates an image URL: a base64 data URL becomes inline
// data, an http(s) URL a url source.
func (t *translator) imageSource(p, u string) (*messageswire.Source, error) {
	if strings.HasPrefix(u, "data:") {
		mt, data, ok := parseDataURL(u)
		if !ok {
			return nil, t.invalid(p+".image_url.url", "%s.image_url.url is a data URL that is not base64 (want data:<media type>;base64,<data>)", p)
		}
		return &messageswire.Source{Type: "base64", MediaType: mt, Data: data}, nil
	}
	if l := strings.ToLower(u); strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") {
		return &messageswire.Source{Type: "url", URL: u}, nil
	}
	return nil, t.invalid(p+".image_url.url", "%s.image_url.url must be an http(s) URL or a base64 data URL", p)
}

// fileSource translates a file part: only PDF given inline as a data URL.
func (t *translator) fileSource(p string, raw json.RawMessage) (*messageswire.Source, error) {
	var f struct {
		FileData string `json:"file_data"`
		FileID   string `json:"file_id"`
	}
	_ = json.Unmarshal(raw, &f)
	if f.FileData == "" {
		return nil, t.unsupported(p+".file", "a file part without file_data (file_id)")
	}
	mt, data, ok := parseDataURL(f.FileData)
	if !ok || mt != "application/pdf" {
		return nil, t.unsupported(p+".file.file_data", "a file part other than a base64 PDF data URL")
	}
	return &messageswire.Source{Type: "base64", MediaType: mt, Data: data}, nil
}

// parseDataURL splits data:<media type>[;params];base64,<data>.
func parseDataURL(u string) (mediaType, data string, ok bool) {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		return "", "", false
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return "", "", false
	}
	params := strings.Split(meta, ";")
	if len(params) < 2 || !strings.EqualFold(params[len(params)-1], "base64") || params[0] == "" {
		return "", "", false
	}
	return strings.ToLower(params[0]), data, true
}

// assistant translates an assistant turn: its text, then its tool calls as
// tool_use blocks whose input is the parsed arguments.
func (t *translator) assistant(p string, m chatwire.Message) ([]messageswire.ContentBlock, error) {
	blocks, err := t.parts(p, m.Content, false)
	if err != nil {
		return nil, err
	}
	if m.Refusal != nil && *m.Refusal != "" && len(blocks) == 0 {
		blocks = append(blocks, messageswire.ContentBlock{Type: messageswire.BlockText, Text: *m.Refusal})
	}
	for j, tc := range m.ToolCalls {
		pp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
		if tc.Type != "" && tc.Type != "function" {
			return nil, t.unsupported(pp+".type", fmt.Sprintf("tool call type %q", tc.Type))
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, t.invalid(pp, "%s needs an id and a function name", pp)
		}
		args := bytes.TrimSpace([]byte(tc.Function.Arguments))
		if len(args) == 0 {
			args = []byte("{}")
		}
		if !json.Valid(args) || args[0] != '{' {
			return nil, t.invalid(pp+".function.arguments", "%s.function.arguments is not a JSON object", pp)
		}
		blocks = append(blocks, messageswire.ContentBlock{Type: messageswire.BlockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: args})
	}
	return blocks, nil
}

// toolResult translates a tool message into a tool_result block; the
// message's cache_control goes on the block itself.
func (t *translator) toolResult(p string, m chatwire.Message) ([]messageswire.ContentBlock, error) {
	content, err := t.parts(p, m.Content, true)
	if err != nil {
		return nil, err
	}
	return []messageswire.ContentBlock{{Type: messageswire.BlockToolResult, ToolUseID: m.ToolCallID,
		Content: content, CacheControl: cacheCtl(m.CacheCtl)}}, nil
}

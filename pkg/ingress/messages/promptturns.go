package messages

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The conversation's decoding into Prompt messages (see prompt.go for the
// mapping).

// message decodes one turn.
func (c *promptConv) message(p string, m message) (exchange.Message, error) {
	var role exchange.Role
	switch m.Role {
	case "user":
		role = exchange.RoleUser
	case "assistant":
		role = exchange.RoleAssistant
	case "system": // a mid-conversation system message (Claude Code 2.1 sends them)
		role = exchange.RoleSystem
	default:
		return exchange.Message{}, bad(p+".role", "%s.role: must be user, assistant or system, got %q", p, m.Role)
	}
	msg := exchange.Message{Role: role}
	if s, ok := jsonb.Unquote(m.Content); ok {
		msg.Content = []exchange.Block{{Type: exchange.BlockText, Text: s}}
		return msg, nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(m.Content, &blocks) != nil {
		if role == exchange.RoleSystem {
			return msg, bad(p+".content", "%s.content: must be a string or a non-empty array of text blocks", p)
		}
		return msg, bad(p+".content", "%s.content: must be a string or an array of content blocks", p)
	}
	if len(blocks) == 0 {
		if role == exchange.RoleSystem {
			return msg, bad(p+".content", "%s.content: must be a string or a non-empty array of text blocks", p)
		}
		return msg, bad(p+".content", "%s.content: must not be empty", p)
	}
	msg.Content = make([]exchange.Block, 0, len(blocks))
	for j, raw := range blocks {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		b, err := decodeBlock(pp, raw)
		if err != nil {
			return msg, err
		}
		if err := checkPlace(pp, role, b.Type); err != nil {
			return msg, err
		}
		out, ok, err := c.block(pp, raw, b)
		if err != nil {
			return msg, err
		}
		if ok {
			msg.Content = append(msg.Content, out)
		}
	}
	return msg, nil
}

// checkPlace refuses a block in a turn whose role never carries it.
func checkPlace(p string, role exchange.Role, typ string) error {
	switch {
	case role == exchange.RoleSystem && typ != "text":
		return bad(p+".type", "%s: a system message carries text blocks only, got %q", p, typ)
	case role == exchange.RoleUser && (typ == "tool_use" || typ == "thinking" || typ == "redacted_thinking"):
		return bad(p+".type", "%s: only assistant messages carry %s blocks", p, typ)
	case role == exchange.RoleAssistant && (typ == "image" || typ == "document" || typ == "tool_result"):
		return bad(p+".type", "%s: only user messages carry %s blocks", p, typ)
	}
	return nil
}

// block decodes one content block; ok is false for a block a Prompt cannot
// hold (recorded as lost).
func (c *promptConv) block(p string, raw json.RawMessage, b block) (exchange.Block, bool, error) {
	out := exchange.Block{Cache: c.cache(p, b.CacheControl)}
	switch b.Type {
	case "text":
		if b.Text == nil {
			return out, false, bad(p+".text", "%s.text: field required", p)
		}
		c.extraKeys(p, raw, "type", "text", "citations", "cache_control")
		out.Type, out.Text = exchange.BlockText, *b.Text
		cites, err := c.citations(p+".citations", b.Citations)
		out.Citations = cites
		return out, true, err
	case "image":
		return c.image(p, raw, b, out)
	case "document":
		return c.document(p, raw, b, out)
	case "tool_use":
		if b.ID == "" || b.Name == "" {
			return out, false, bad(p, "%s: a tool_use block needs an id and a name", p)
		}
		c.extraKeys(p, raw, "type", "id", "name", "input", "cache_control")
		out.Type, out.ToolID, out.ToolName, out.Input = exchange.BlockToolUse, b.ID, b.Name, json.RawMessage("{}")
		if !isNull(b.Input) {
			if !isObject(b.Input) {
				return out, false, bad(p+".input", "%s.input: must be an object", p)
			}
			var buf bytes.Buffer
			if json.Compact(&buf, b.Input) == nil {
				out.Input = buf.Bytes()
			}
		}
		return out, true, nil
	case "tool_result":
		return c.toolResult(p, raw, b, out)
	case "thinking":
		if b.Thinking == nil || b.Signature == nil {
			return out, false, bad(p, "%s: a thinking block needs thinking and signature strings", p)
		}
		c.extraKeys(p, raw, "type", "thinking", "signature", "cache_control")
		out.Type, out.Text, out.Signature = exchange.BlockThinking, *b.Thinking, *b.Signature
		return out, true, nil
	case "redacted_thinking":
		if b.Data == nil {
			return out, false, bad(p+".data", "%s.data: field required", p)
		}
		c.extraKeys(p, raw, "type", "data", "cache_control")
		out.Type, out.Data = exchange.BlockRedactedThinking, []byte(*b.Data)
		return out, true, nil
	}
	c.lose(p, "content_types", "content block type %q", b.Type)
	return out, false, nil
}

// image decodes an image block: base64 bytes or a URL.
func (c *promptConv) image(p string, raw json.RawMessage, b block, out exchange.Block) (exchange.Block, bool, error) {
	var src source
	if json.Unmarshal(b.Source, &src) != nil {
		return out, false, bad(p+".source", "%s.source: field required", p)
	}
	c.extraKeys(p, raw, "type", "source", "cache_control")
	out.Type = exchange.BlockImage
	switch src.Type {
	case "base64":
		if !imageTypes[src.MediaType] || src.Data == "" {
			return out, false, bad(p+".source", "%s.source: base64 images need media_type image/jpeg, image/png, image/gif or image/webp and data", p)
		}
		data, err := decode64(p+".source.data", src.Data)
		out.MediaType, out.Data = src.MediaType, data
		return out, err == nil, err
	case "url":
		if src.URL == "" {
			return out, false, bad(p+".source.url", "%s.source.url: field required", p)
		}
		out.URL = src.URL
		return out, true, nil
	case "file":
		c.lose(p, "file_sources", "an image with a file source (Files API)")
		return out, false, nil
	}
	return out, false, bad(p+".source.type", "%s.source.type: must be base64, url or file, got %q", p, src.Type)
}

// document decodes a document block: base64 bytes (a PDF), plain text, or
// a URL, with its title, context and citations setting.
func (c *promptConv) document(p string, raw json.RawMessage, b block, out exchange.Block) (exchange.Block, bool, error) {
	var src source
	if json.Unmarshal(b.Source, &src) != nil || src.Type == "" {
		return out, false, bad(p+".source", "%s.source: field required", p)
	}
	c.extraKeys(p, raw, "type", "source", "title", "context", "citations", "cache_control")
	var d struct {
		Title     *string `json:"title"`
		Context   *string `json:"context"`
		Citations *struct {
			Enabled bool `json:"enabled"`
		} `json:"citations"`
	}
	if json.Unmarshal(raw, &d) != nil {
		return out, false, bad(p, "%s: title and context must be strings and citations an object", p)
	}
	out.Type = exchange.BlockDocument
	if d.Title != nil {
		out.Title = *d.Title
	}
	if d.Context != nil {
		out.Context = *d.Context
	}
	out.AskCitations = d.Citations != nil && d.Citations.Enabled
	switch {
	case src.Type == "base64" && src.MediaType == "application/pdf":
		data, err := decode64(p+".source.data", src.Data)
		out.MediaType, out.Data = src.MediaType, data
		return out, err == nil, err
	case src.Type == "text" && src.MediaType == "text/plain":
		out.MediaType, out.Data = src.MediaType, []byte(src.Data)
		return out, true, nil
	case src.Type == "url" && src.URL != "":
		out.URL = src.URL
		return out, true, nil
	case src.Type == "file":
		c.lose(p, "file_sources", "a document with a file source (Files API)")
		return out, false, nil
	}
	c.lose(p, "document_sources", "a document with a %q source", src.Type+" "+src.MediaType)
	return out, false, nil
}

// toolResult decodes a tool_result block: its content (a string or text,
// image and document blocks) and is_error.
func (c *promptConv) toolResult(p string, raw json.RawMessage, b block, out exchange.Block) (exchange.Block, bool, error) {
	if b.ToolUseID == "" {
		return out, false, bad(p+".tool_use_id", "%s.tool_use_id: field required", p)
	}
	c.extraKeys(p, raw, "type", "tool_use_id", "content", "is_error", "cache_control")
	out.Type, out.ToolID, out.IsError = exchange.BlockToolResult, b.ToolUseID, b.IsError != nil && *b.IsError
	if isNull(b.Content) {
		return out, true, nil
	}
	if s, ok := jsonb.Unquote(b.Content); ok {
		if s != "" {
			out.Content = []exchange.Block{{Type: exchange.BlockText, Text: s}}
		}
		return out, true, nil
	}
	var blocks []json.RawMessage
	if json.Unmarshal(b.Content, &blocks) != nil {
		return out, false, bad(p+".content", "%s.content: must be a string or an array of content blocks", p)
	}
	for k, braw := range blocks {
		pp := fmt.Sprintf("%s.content[%d]", p, k)
		bb, err := decodeBlock(pp, braw)
		if err != nil {
			return out, false, err
		}
		if bb.Type != "text" && bb.Type != "image" && bb.Type != "document" {
			c.lose(pp, "content_types", "content block type %q in a tool_result", bb.Type)
			continue
		}
		inner, ok, err := c.block(pp, braw, bb)
		if err != nil {
			return out, false, err
		}
		if ok {
			out.Content = append(out.Content, inner)
		}
	}
	return out, true, nil
}

// citation is one citation of an earlier answer's text block.
type citation struct {
	Type           string `json:"type"`
	CitedText      string `json:"cited_text"`
	DocumentIndex  int    `json:"document_index"`
	DocumentTitle  string `json:"document_title"`
	StartCharIndex *int   `json:"start_char_index"`
	EndCharIndex   *int   `json:"end_char_index"`
	StartPage      *int   `json:"start_page_number"`
	EndPage        *int   `json:"end_page_number"`
	StartBlock     *int   `json:"start_block_index"`
	EndBlock       *int   `json:"end_block_index"`
	URL            string `json:"url"`
	Title          string `json:"title"`
}

// citations decodes a text block's citations, each with its Raw form.
func (c *promptConv) citations(p string, raw json.RawMessage) ([]exchange.Citation, error) {
	if isNull(raw) {
		return nil, nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil, bad(p, "%s: must be an array of citation objects", p)
	}
	out := make([]exchange.Citation, 0, len(list))
	for i, r := range list {
		var ci citation
		if !isObject(r) || json.Unmarshal(r, &ci) != nil || ci.Type == "" {
			return nil, bad(fmt.Sprintf("%s[%d]", p, i), "%s[%d]: must be a citation object with a type", p, i)
		}
		x := exchange.Citation{Type: ci.Type, CitedText: ci.CitedText, DocumentIndex: ci.DocumentIndex,
			DocumentTitle: ci.DocumentTitle, URL: ci.URL, Raw: cacheCtl(r)}
		if x.DocumentTitle == "" {
			x.DocumentTitle = ci.Title
		}
		for _, se := range [][2]*int{{ci.StartCharIndex, ci.EndCharIndex}, {ci.StartPage, ci.EndPage}, {ci.StartBlock, ci.EndBlock}} {
			if se[0] != nil && se[1] != nil {
				x.Start, x.End = *se[0], *se[1]
			}
		}
		out = append(out, x)
	}
	return out, nil
}

// decode64 decodes base64 data (standard alphabet, padded or not).
func decode64(p, s string) ([]byte, error) {
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		if b, err = base64.RawStdEncoding.DecodeString(s); err != nil {
			return nil, bad(p, "%s: is not valid base64", p)
		}
	}
	return b, nil
}

package bedrock

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// The messages' translation (see the package comment): system blocks,
// content blocks, tool calls and results, images and cache points.

// systemBlocks translates a system or developer message. Bedrock's system
// prompt is one list, so system messages anywhere in the conversation are
// gathered there in order.
func systemBlocks(m *chatwire.Message, p, target string) ([]types.SystemContentBlock, error) {
	var out []types.SystemContentBlock
	addCache := func(raw json.RawMessage, param string) error {
		cp, err := cachePoint(raw, param)
		if cp != nil {
			out = append(out, &types.SystemContentBlockMemberCachePoint{Value: *cp})
		}
		return err
	}
	if !m.Content.IsParts {
		if m.Content.Text != "" {
			out = append(out, &types.SystemContentBlockMemberText{Value: m.Content.Text})
		}
	} else {
		for j, part := range m.Content.Parts {
			pp := fmt.Sprintf("%s.content[%d]", p, j)
			if part.Type != "text" {
				return nil, unsupported(target, pp+".type", part.Type+" parts in system messages", "system messages take text only")
			}
			if part.Text != "" {
				out = append(out, &types.SystemContentBlockMemberText{Value: part.Text})
			}
			if err := addCache(part.CacheCtl, pp+".cache_control"); err != nil {
				return nil, err
			}
		}
	}
	if err := addCache(m.CacheCtl, p+".cache_control"); err != nil {
		return nil, err
	}
	return out, nil
}

// contentBlocks translates user (and assistant) content. Empty text is
// skipped: bedrock refuses blank text blocks.
func contentBlocks(c chatwire.Content, p, target string) ([]types.ContentBlock, error) {
	if !c.IsParts {
		if c.Text == "" {
			return nil, nil
		}
		return []types.ContentBlock{&types.ContentBlockMemberText{Value: c.Text}}, nil
	}
	out := make([]types.ContentBlock, 0, len(c.Parts))
	for j := range c.Parts {
		part := &c.Parts[j]
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		switch part.Type {
		case "text", "refusal":
			text := part.Text
			if part.Type == "refusal" {
				text = part.Refusal
			}
			if text != "" {
				out = append(out, &types.ContentBlockMemberText{Value: text})
			}
		case "image_url":
			img, err := imageBlock(part.ImageURL.URL, pp+".image_url.url", target)
			if err != nil {
				return nil, err
			}
			out = append(out, &types.ContentBlockMemberImage{Value: img})
		case "input_audio":
			return nil, unsupported(target, pp+".type", "audio input", "")
		case "file":
			return nil, unsupported(target, pp+".type", "file content parts", "")
		default:
			return nil, unsupported(target, pp+".type", part.Type+" content parts", "")
		}
		var err error
		if out, err = withCachePoint(out, part.CacheCtl, pp); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// assistantBlocks translates an assistant message: its text (or refusal),
// then one toolUse block per tool call.
func assistantBlocks(m *chatwire.Message, p, target string) ([]types.ContentBlock, error) {
	blocks, err := contentBlocks(m.Content, p, target)
	if err != nil {
		return nil, err
	}
	if m.Refusal != nil && *m.Refusal != "" {
		blocks = append(blocks, &types.ContentBlockMemberText{Value: *m.Refusal})
	}
	for k, tc := range m.ToolCalls {
		tp := fmt.Sprintf("%s.tool_calls[%d]", p, k)
		if tc.Type != "" && tc.Type != "function" {
			return nil, unsupported(target, tp+".type", fmt.Sprintf("tool call type %q", tc.Type), "")
		}
		if tc.ID == "" || tc.Function.Name == "" {
			return nil, invalid(tp, "%s needs an id and a function name", tp)
		}
		input, err := argumentsDocument(tc.Function.Arguments)
		if err != nil {
			return nil, invalid(tp+".function.arguments", "%s.function.arguments is not a JSON object: %v", tp, err)
		}
		id := toolUseID(tc.ID)
		blocks = append(blocks, &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{
			ToolUseId: &id, Name: &tc.Function.Name, Input: input,
		}})
	}
	return withCachePoint(blocks, m.CacheCtl, p)
}

// toolResult translates a tool message into a toolResult block.
func toolResult(m *chatwire.Message, p, target string) (types.ContentBlock, error) {
	content := []types.ToolResultContentBlock{}
	if !m.Content.IsParts {
		if m.Content.Text != "" {
			content = append(content, &types.ToolResultContentBlockMemberText{Value: m.Content.Text})
		}
	} else {
		for j := range m.Content.Parts {
			part := &m.Content.Parts[j]
			pp := fmt.Sprintf("%s.content[%d]", p, j)
			switch part.Type {
			case "text":
				if part.Text != "" {
					content = append(content, &types.ToolResultContentBlockMemberText{Value: part.Text})
				}
			case "image_url":
				img, err := imageBlock(part.ImageURL.URL, pp+".image_url.url", target)
				if err != nil {
					return nil, err
				}
				content = append(content, &types.ToolResultContentBlockMemberImage{Value: img})
			default:
				return nil, unsupported(target, pp+".type", part.Type+" parts in tool messages", "")
			}
			if len(part.CacheCtl) > 0 && string(part.CacheCtl) != "null" {
				return nil, unsupported(target, pp+".cache_control", "cache_control inside a tool result",
					"put cache_control on the tool message itself")
			}
		}
	}
	id := toolUseID(m.ToolCallID)
	return &types.ContentBlockMemberToolResult{Value: types.ToolResultBlock{ToolUseId: &id, Content: content}}, nil
}

// toolUseID returns a tool call id in the form bedrock accepts (1-64 of
// [a-zA-Z0-9_-]). Ids bedrock itself issued pass unchanged; any other id
// (another provider's, a client's own) that does not fit is replaced by a
// hash of it, the same in the assistant's toolUse and in the tool's
// toolResult, so the pair still matches.
func toolUseID(id string) string {
	ok := len(id) >= 1 && len(id) <= 64
	for i := 0; ok && i < len(id); i++ {
		c := id[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
	}
	if ok {
		return id
	}
	sum := sha256.Sum256([]byte(id))
	return "call_" + hex.EncodeToString(sum[:12])
}

// imageBlock translates an image URL. Data URLs carry the bytes; s3://
// URLs become S3 locations (the model's account must be able to read
// them). Bedrock cannot fetch http(s) URLs, so those are refused.
func imageBlock(u, param, target string) (types.ImageBlock, error) {
	switch {
	case strings.HasPrefix(u, "data:"):
		meta, data, ok := strings.Cut(u[len("data:"):], ",")
		if !ok || !strings.HasSuffix(meta, ";base64") {
			return types.ImageBlock{}, invalid(param, "%s: a data URL must be data:<image type>;base64,<data>", param)
		}
		mime, _, _ := strings.Cut(meta, ";")
		format, ok := imageFormat(strings.ToLower(strings.TrimPrefix(mime, "image/")))
		if !strings.HasPrefix(mime, "image/") || !ok {
			return types.ImageBlock{}, unsupported(target, param, "image type "+mime, "bedrock takes png, jpeg, gif and webp")
		}
		raw, err := base64.StdEncoding.DecodeString(data)
		if err != nil {
			if raw, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(data, "=")); err != nil {
				return types.ImageBlock{}, invalid(param, "%s: the data URL's base64 data is invalid", param)
			}
		}
		return types.ImageBlock{Format: format, Source: &types.ImageSourceMemberBytes{Value: raw}}, nil
	case strings.HasPrefix(u, "s3://"):
		ext := u[strings.LastIndexByte(u, '.')+1:]
		format, ok := imageFormat(strings.ToLower(ext))
		if !ok {
			return types.ImageBlock{}, invalid(param, "%s: an s3:// image must end in .png, .jpg, .jpeg, .gif or .webp", param)
		}
		return types.ImageBlock{Format: format, Source: &types.ImageSourceMemberS3Location{Value: types.S3Location{Uri: &u}}}, nil
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
		return types.ImageBlock{}, unsupported(target, param, "image URLs",
			"bedrock cannot fetch URLs; send the image as a base64 data URL")
	}
	return types.ImageBlock{}, invalid(param, "%s must be a data: URL (or an s3:// URL)", param)
}

func imageFormat(s string) (types.ImageFormat, bool) {
	switch s {
	case "png":
		return types.ImageFormatPng, true
	case "jpeg", "jpg":
		return types.ImageFormatJpeg, true
	case "gif":
		return types.ImageFormatGif, true
	case "webp":
		return types.ImageFormatWebp, true
	}
	return "", false
}

// cachePoint reads a cache_control object: {"type":"ephemeral"} with an
// optional "ttl" of "5m" or "1h". Bedrock caches the prompt up to a
// cachePoint block, so a cache_control on a part, a message, a system
// message or a tool becomes a cachePoint right after it.
func cachePoint(raw json.RawMessage, param string) (*types.CachePointBlock, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	var cc struct {
		Type string `json:"type"`
		TTL  string `json:"ttl"`
	}
	if err := json.Unmarshal(raw, &cc); err != nil || cc.Type != "ephemeral" {
		return nil, invalid(param, "%s must be {\"type\":\"ephemeral\"} with an optional ttl", param)
	}
	cp := &types.CachePointBlock{Type: types.CachePointTypeDefault}
	switch cc.TTL {
	case "":
	case "5m", "1h":
		cp.Ttl = types.CacheTTL(cc.TTL)
	default:
		return nil, invalid(param+".ttl", "%s.ttl must be \"5m\" or \"1h\"", param)
	}
	return cp, nil
}

// withCachePoint appends a cachePoint block for raw, if it asks for one.
func withCachePoint(blocks []types.ContentBlock, raw json.RawMessage, p string) ([]types.ContentBlock, error) {
	cp, err := cachePoint(raw, p+".cache_control")
	if err != nil || cp == nil {
		return blocks, err
	}
	if len(blocks) == 0 {
		return nil, invalid(p+".cache_control", "%s: cache_control needs content before it", p)
	}
	return append(blocks, &types.ContentBlockMemberCachePoint{Value: *cp}), nil
}

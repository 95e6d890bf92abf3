package bedrock

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"path"
	"strconv"
	"strings"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// The messages' translation (see the package comment): system blocks,
// content blocks, tool calls and results, reasoning, images, documents and
// cache points.

// systemBlocks translates the system prompt or a system message. Bedrock's
// system prompt is one list, so system messages anywhere in the
// conversation are gathered there in order.
func (t *converter) systemBlocks(in []exchange.Block, p string) ([]types.SystemContentBlock, error) {
	var out []types.SystemContentBlock
	for j := range in {
		b := &in[j]
		pp := blockParam(p, j)
		if b.Type != exchange.BlockText && b.Type != exchange.BlockRefusal {
			if e := t.unsupported("system_media", pp+".type", "image and file parts in system messages", "system messages take text only"); e != nil {
				return nil, e
			}
			continue
		}
		if b.Text != "" {
			out = append(out, &types.SystemContentBlockMemberText{Value: b.Text})
		}
		cp, err := cachePoint(b.Cache, pp+".cache_control")
		if err != nil {
			return nil, err
		}
		if cp != nil && t.cacheMessages {
			out = append(out, &types.SystemContentBlockMemberCachePoint{Value: *cp})
		}
	}
	return out, nil
}

// blockParam names block j of p ("system[0]", "messages[1].content[2]").
func blockParam(p string, j int) string {
	if p == "system" {
		return fmt.Sprintf("system[%d]", j)
	}
	return fmt.Sprintf("%s.content[%d]", p, j)
}

// contentBlocks translates a user or assistant turn; tools is true when it
// holds tool calls or results. Empty text is skipped: bedrock refuses
// blank text blocks.
func (t *converter) contentBlocks(in []exchange.Block, p string) (out []types.ContentBlock, tools bool, err error) {
	out = make([]types.ContentBlock, 0, len(in))
	for j := range in {
		b := &in[j]
		pp := blockParam(p, j)
		var cb types.ContentBlock
		switch b.Type {
		case exchange.BlockText, exchange.BlockRefusal:
			if b.Text != "" {
				cb = &types.ContentBlockMemberText{Value: b.Text}
			}
		case exchange.BlockImage:
			img, err := t.imageBlock(b, pp)
			if err != nil {
				return nil, false, err
			}
			if img != nil { // nil: dropped
				cb = &types.ContentBlockMemberImage{Value: *img}
			}
		case exchange.BlockDocument:
			doc, err := t.documentBlock(b, pp)
			if err != nil {
				return nil, false, err
			}
			if doc != nil { // nil: dropped
				cb = &types.ContentBlockMemberDocument{Value: *doc}
			}
		case exchange.BlockToolUse:
			if b.ToolID == "" || b.ToolName == "" {
				return nil, false, invalid(pp, "%s needs an id and a function name", pp)
			}
			input, err := argumentsDocument(string(b.Input))
			if err != nil {
				return nil, false, invalid(pp+".input", "%s: the tool call's arguments are not a JSON object: %v", pp, err)
			}
			id := toolUseID(b.ToolID)
			cb, tools = &types.ContentBlockMemberToolUse{Value: types.ToolUseBlock{ToolUseId: &id, Name: &b.ToolName, Input: input}}, true
		case exchange.BlockToolResult:
			res, err := t.toolResult(b, pp)
			if err != nil {
				return nil, false, err
			}
			cb, tools = res, true
		case exchange.BlockThinking, exchange.BlockRedactedThinking:
			if cb, err = t.reasoning(b, pp); err != nil {
				return nil, false, err
			}
		default:
			return nil, false, invalid(pp, "%s: unknown block type %d", pp, b.Type)
		}
		if cb != nil {
			out = append(out, cb)
		}
		cp, err := cachePoint(b.Cache, pp+".cache_control")
		if err != nil {
			return nil, false, err
		}
		if cp != nil && t.cacheMessages && len(out) > 0 {
			out = append(out, &types.ContentBlockMemberCachePoint{Value: *cp})
		}
	}
	return out, tools, nil
}

// reasoning translates an earlier turn's thinking into a reasoningContent
// block, byte-exact: the text with its signature, or redacted thinking's
// bytes (Data holds them in base64, as the stream sent them). Only
// Anthropic's models take them back; for other models they are dropped
// from the history (nil), as every OpenAI-compatible API expects.
func (t *converter) reasoning(b *exchange.Block, p string) (types.ContentBlock, error) {
	if !t.claude || !b.SendsToClaude() {
		return nil, nil // another family's reasoning (or unsigned): Claude cannot verify it
	}
	if b.Type == exchange.BlockThinking {
		text, sig := b.Text, b.Signature
		rt := types.ReasoningTextBlock{Text: &text}
		if sig != "" {
			rt.Signature = &sig
		}
		return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberReasoningText{Value: rt}}, nil
	}
	raw, err := base64.StdEncoding.DecodeString(string(b.Data))
	if err != nil {
		if e := t.unsupported("thinking_blocks", p, "redacted thinking whose data is not base64", "bedrock takes the bytes it sent"); e != nil {
			return nil, e
		}
		return nil, nil
	}
	return &types.ContentBlockMemberReasoningContent{Value: &types.ReasoningContentBlockMemberRedactedContent{Value: raw}}, nil
}

// toolResult translates a tool result into a toolResult block (status
// error for a failure). Cache points inside a result are refused: bedrock
// takes them after the result only.
func (t *converter) toolResult(b *exchange.Block, p string) (types.ContentBlock, error) {
	content := []types.ToolResultContentBlock{}
	for j := range b.Content {
		c := &b.Content[j]
		pp := blockParam(p, j)
		switch c.Type {
		case exchange.BlockText:
			if c.Text != "" {
				content = append(content, &types.ToolResultContentBlockMemberText{Value: c.Text})
			}
		case exchange.BlockImage:
			img, err := t.imageBlock(c, pp)
			if err != nil {
				return nil, err
			}
			if img != nil {
				content = append(content, &types.ToolResultContentBlockMemberImage{Value: *img})
			}
		case exchange.BlockDocument:
			doc, err := t.documentBlock(c, pp)
			if err != nil {
				return nil, err
			}
			if doc != nil {
				content = append(content, &types.ToolResultContentBlockMemberDocument{Value: *doc})
			}
		default:
			return nil, invalid(pp+".type", "%s: a tool result holds text, images and documents", pp)
		}
		if c.Cache != nil {
			if e := t.unsupported("cache_control_placement", pp+".cache_control", "cache_control inside a tool result",
				"put cache_control on the tool message itself"); e != nil {
				return nil, e
			}
		}
	}
	id := toolUseID(b.ToolID)
	res := types.ToolResultBlock{ToolUseId: &id, Content: content}
	if b.IsError {
		res.Status = types.ToolResultStatusError
	}
	return &types.ContentBlockMemberToolResult{Value: res}, nil
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

// imageBlock translates an image: bytes (png, jpeg, gif, webp), or an
// s3:// URL as an S3 location (the model's account must be able to read
// it). Bedrock cannot fetch http(s) URLs, so those are refused (nil, nil
// when the route lets them drop).
func (t *converter) imageBlock(b *exchange.Block, p string) (*types.ImageBlock, error) {
	switch u := b.URL; {
	case u == "":
		mime := b.MediaType
		format, ok := imageFormat(strings.TrimPrefix(mime, "image/"))
		if !strings.HasPrefix(mime, "image/") || !ok {
			if e := t.unsupported("image_types", p, "image type "+mime, "bedrock takes png, jpeg, gif and webp"); e != nil {
				return nil, e
			}
			return nil, nil
		}
		return &types.ImageBlock{Format: format, Source: &types.ImageSourceMemberBytes{Value: b.Data}}, nil
	case strings.HasPrefix(u, "s3://"):
		format, ok := imageFormat(strings.ToLower(u[strings.LastIndexByte(u, '.')+1:]))
		if !ok {
			return nil, invalid(p, "%s: an s3:// image must end in .png, .jpg, .jpeg, .gif or .webp", p)
		}
		return &types.ImageBlock{Format: format, Source: &types.ImageSourceMemberS3Location{Value: types.S3Location{Uri: &u}}}, nil
	case strings.HasPrefix(u, "http://"), strings.HasPrefix(u, "https://"):
		if e := t.unsupported("image_urls", p, "image URLs", "bedrock cannot fetch URLs; send the image's bytes"); e != nil {
			return nil, e
		}
		return nil, nil
	}
	return nil, invalid(p, "%s must be the image's bytes or an s3:// URL", p)
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

// documentFormats maps a document's media type to bedrock's format.
var documentFormats = map[string]types.DocumentFormat{
	"application/pdf": types.DocumentFormatPdf, "text/plain": types.DocumentFormatTxt, "text/markdown": types.DocumentFormatMd,
	"text/html": types.DocumentFormatHtml, "text/csv": types.DocumentFormatCsv, "application/msword": types.DocumentFormatDoc,
	"application/vnd.openxmlformats-officedocument.wordprocessingml.document": types.DocumentFormatDocx,
	"application/vnd.ms-excel": types.DocumentFormatXls,
	"application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": types.DocumentFormatXlsx,
}

// documentBlock translates a document: its bytes with their format, its
// name (the title or file name, reduced to the characters bedrock allows;
// else document-N), its context and whether citations are asked for. A
// document by URL or of another media type is refused (nil, nil when the
// route lets it drop).
func (t *converter) documentBlock(b *exchange.Block, p string) (*types.DocumentBlock, error) {
	format, ok := documentFormats[b.MediaType]
	if b.URL != "" || !ok {
		what := "a document of type " + b.MediaType
		if b.URL != "" {
			what = "a document by URL"
		}
		if e := t.unsupported("document_sources", p, what, "bedrock takes pdf, csv, doc, docx, xls, xlsx, html, txt and md bytes"); e != nil {
			return nil, e
		}
		return nil, nil
	}
	t.docs++
	name := documentName(b.Title, b.FileName, t.docs)
	d := &types.DocumentBlock{Name: &name, Format: format, Source: &types.DocumentSourceMemberBytes{Value: b.Data}}
	if b.Context != "" {
		d.Context = &b.Context
	}
	if b.AskCitations {
		d.Citations = &types.CitationsConfig{Enabled: new(true)}
	}
	return d, nil
}

// documentName is a document's name as bedrock takes it: letters, digits,
// single spaces, hyphens, parentheses and square brackets; the title,
// else the file name without its extension, else document-n.
func documentName(title, file string, n int) string {
	src := title
	if src == "" {
		src = strings.TrimSuffix(file, path.Ext(file))
	}
	var sb strings.Builder
	space := false
	for _, r := range src {
		ok := unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("-()[]", r)
		switch {
		case ok:
			sb.WriteRune(r)
			space = false
		case !space && sb.Len() > 0:
			sb.WriteByte(' ')
			space = true
		}
	}
	if name := strings.TrimSpace(sb.String()); name != "" {
		return name
	}
	return "document-" + strconv.Itoa(n)
}

// cachePoint reads a cache breakpoint: an optional ttl of "5m" or "1h".
// Bedrock caches the prompt up to a cachePoint block, so a breakpoint on a
// block, a system block or a tool becomes a cachePoint right after it, for
// the models that take them (converter.cacheMessages, cacheTools; for
// any other model it is dropped, never a 4xx).
func cachePoint(c *exchange.CacheBreakpoint, param string) (*types.CachePointBlock, error) {
	if c == nil {
		return nil, nil
	}
	cp := &types.CachePointBlock{Type: types.CachePointTypeDefault}
	switch c.TTL {
	case "":
	case "5m", "1h":
		cp.Ttl = types.CacheTTL(c.TTL)
	default:
		return nil, invalid(param+".ttl", "%s.ttl must be \"5m\" or \"1h\"", param)
	}
	return cp, nil
}

package chat

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The canonical form of a chat request (exchange.Prompt):
//
//	system and developer messages    -> Prompt.System while they lead the conversation,
//	                                    RoleSystem messages at their place after that
//	user content (string or parts)   -> a user message: text, image (data URL -> bytes
//	                                    and media type; other URLs kept), file (file_data
//	                                    -> document bytes), refusal blocks
//	assistant content and tool_calls -> an assistant message: text, refusal, tool use
//	                                    (arguments as a JSON object)
//	role tool messages               -> tool result blocks of one user message (a run
//	                                    of them is one turn)
//	cache_control (part or message)  -> the block's cache breakpoint (a message's on its
//	                                    last block)
//	tools, tool_choice, parallel_tool_calls -> Tools (function or custom), ToolChoice
//	max_tokens / max_completion_tokens, temperature, top_p, top_k, penalties, seed,
//	stop                             -> Sampling
//	response_format, reasoning_effort, n -> Output
//	user, metadata                   -> User, Metadata
//
// Untranslated (only an OpenAI-compatible upstream gets them, in the body):
// logprobs, top_logprobs, logit_bias, audio output and non-text modalities,
// input_audio parts, files by file_id, tool call arguments that are not a
// JSON object, legacy function calling and every top-level field the
// gateway does not know.

// known are the top-level fields the canonical form carries (or that a
// translating target may ignore: stream_options, store, service_tier,
// prompt_cache_key).
var known = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "n": true,
	"max_tokens": true, "max_completion_tokens": true, "temperature": true, "top_p": true, "top_k": true,
	"presence_penalty": true, "frequency_penalty": true, "seed": true, "stop": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "response_format": true, "user": true,
	"logprobs": true, "top_logprobs": true, "logit_bias": true, "modalities": true, "audio": true,
	"metadata": true, "reasoning_effort": true, "store": true, "service_tier": true, "prompt_cache_key": true,
}

// ToPrompt builds the canonical form of a parsed chat request; body is the
// client's bytes (read for the fields ChatRequest does not decode: top_k
// and unknown members). It returns what the form cannot carry, for
// Request.Untranslated. A malformed data URL is the client's error.
func ToPrompt(r *chatwire.ChatRequest, body []byte) (*exchange.Prompt, []exchange.Feature, error) {
	c := &toPrompt{p: &exchange.Prompt{User: r.User, Metadata: r.Metadata}}
	c.unknownFields(body)
	c.sampling(r, body)
	c.output(r)
	c.tools(r)
	for i := range r.Messages {
		if err := c.message(i, &r.Messages[i]); err != nil {
			return nil, nil, err
		}
	}
	return c.p, c.lost, nil
}

type toPrompt struct {
	p    *exchange.Prompt
	lost []exchange.Feature
	// inTurn is true while the last message is a user turn made of tool
	// results, which the next tool message joins.
	inTurn bool
}

func (c *toPrompt) lose(param, what string) {
	c.lost = append(c.lost, exchange.Feature{Param: param, What: what, Key: exchange.FeatureKey(param)})
}

func (c *toPrompt) unknownFields(body []byte) {
	_ = chatwire.Members(body, func(k string, _ []byte) bool {
		switch {
		case k == "functions" || k == "function_call":
			c.lose(k, "legacy function calling ("+k+"; use tools)")
		case !known[k]:
			c.lose(k, fmt.Sprintf("field %q", k))
		}
		return true
	})
}

func (c *toPrompt) sampling(r *chatwire.ChatRequest, body []byte) {
	s := &c.p.Sampling
	s.MaxTokens = r.MaxOutputTokens()
	s.Temperature, s.TopP = r.Temperature, r.TopP
	s.PresencePenalty, s.FrequencyPenalty, s.Seed = r.PresencePenalty, r.FrequencyPenalty, r.Seed
	s.Stop = r.Stop
	if k := gjson.Get(jsonb.String(body), "top_k"); k.Type == gjson.Number {
		n := int(k.Int())
		s.TopK = &n
	}
	switch {
	case r.Logprobs != nil && *r.Logprobs:
		c.lose("logprobs", "logprobs")
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		c.lose("top_logprobs", "top_logprobs")
	}
	if len(r.LogitBias) > 0 {
		c.lose("logit_bias", "logit_bias")
	}
	if a := bytes.TrimSpace(r.Audio); len(a) > 0 && string(a) != "null" {
		c.lose("audio", "audio output")
	}
	for _, m := range r.Modalities {
		if m != "text" {
			c.lose("modalities", fmt.Sprintf("output modality %q", m))
			break
		}
	}
}

func (c *toPrompt) output(r *chatwire.ChatRequest) {
	o := &c.p.Output
	if r.N != nil {
		o.Choices = *r.N
	}
	o.Reasoning.Effort = r.ReasoningEffort
	if f := r.ResponseFormat; f != nil {
		o.Format = f.Type
		if f.Type == "json_schema" && len(f.JSONSchema) > 0 {
			js := gjson.ParseBytes(f.JSONSchema)
			o.SchemaName, o.StrictSchema = js.Get("name").Str, js.Get("strict").Bool()
			o.SchemaDescription = js.Get("description").Str
			if s := js.Get("schema"); s.Exists() {
				o.Schema = json.RawMessage(s.Raw)
			}
		}
	}
}

func (c *toPrompt) tools(r *chatwire.ChatRequest) {
	for _, t := range r.Tools {
		switch t.Type {
		case "function", "":
			c.p.Tools = append(c.p.Tools, exchange.Tool{Kind: exchange.ToolFunction, Name: t.Function.Name,
				Description: t.Function.Description, Schema: t.Function.Parameters, Strict: t.Function.Strict,
				Cache: breakpoint(t.CacheCtl)})
		case "custom":
			ct := gjson.ParseBytes(t.Raw).Get("custom")
			c.p.Tools = append(c.p.Tools, exchange.Tool{Kind: exchange.ToolCustom, Name: ct.Get("name").Str,
				Description: ct.Get("description").Str, Type: t.Type, Raw: t.Raw})
		default:
			c.p.Tools = append(c.p.Tools, exchange.Tool{Kind: exchange.ToolBuiltin, Type: t.Type, Raw: t.Raw})
		}
	}
	if tc := r.ToolChoice; tc != nil {
		switch tc.Mode {
		case "none":
			c.p.ToolChoice.Mode = exchange.ToolNone
		case "required":
			c.p.ToolChoice.Mode = exchange.ToolAny
		case "function":
			c.p.ToolChoice = exchange.ToolChoice{Mode: exchange.ToolNamed, Name: tc.Function}
		case "auto", "":
		default:
			c.lose("tool_choice", fmt.Sprintf("tool_choice of type %q", tc.Mode))
		}
	}
	if r.ParallelToolCalls != nil && !*r.ParallelToolCalls {
		c.p.ToolChoice.NoParallel = true
	}
}

// breakpoint reads a cache_control value: nil when absent or null.
func breakpoint(raw json.RawMessage) *exchange.CacheBreakpoint {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return &exchange.CacheBreakpoint{TTL: gjson.GetBytes(raw, "ttl").Str}
}

func (c *toPrompt) message(i int, m *chatwire.Message) error {
	p := fmt.Sprintf("messages[%d]", i)
	var blocks []exchange.Block
	var err error
	if m.Role != "tool" {
		if blocks, err = c.content(p, m.Content); err != nil {
			return err
		}
	}
	switch m.Role {
	case "system", "developer":
		markLast(blocks, m.CacheCtl)
		if len(c.p.Messages) == 0 {
			c.p.System = append(c.p.System, blocks...)
		} else {
			c.add(exchange.Message{Role: exchange.RoleSystem, Content: blocks, Name: m.Name})
		}
		return nil
	case "tool":
		content, err := c.content(p, m.Content)
		if err != nil {
			return err
		}
		res := exchange.Block{Type: exchange.BlockToolResult, ToolID: m.ToolCallID, Content: content, Cache: breakpoint(m.CacheCtl)}
		if c.inTurn {
			last := &c.p.Messages[len(c.p.Messages)-1]
			last.Content = append(last.Content, res)
			return nil
		}
		c.add(exchange.Message{Role: exchange.RoleUser, Content: []exchange.Block{res}})
		c.inTurn = true
		return nil
	case "assistant":
		if m.Refusal != nil && *m.Refusal != "" {
			blocks = append(blocks, exchange.Block{Type: exchange.BlockRefusal, Text: *m.Refusal})
		}
		for j, tc := range m.ToolCalls {
			pp := fmt.Sprintf("%s.tool_calls[%d]", p, j)
			if tc.Type != "" && tc.Type != "function" {
				c.lose(pp+".type", fmt.Sprintf("tool call type %q", tc.Type))
				continue
			}
			args := bytes.TrimSpace([]byte(tc.Function.Arguments))
			if len(args) == 0 {
				args = []byte("{}")
			}
			if !json.Valid(args) || args[0] != '{' {
				c.lose(pp+".function.arguments", "tool call arguments that are not a JSON object")
				args = nil
			}
			blocks = append(blocks, exchange.Block{Type: exchange.BlockToolUse, ToolID: tc.ID, ToolName: tc.Function.Name, Input: args})
		}
		markLast(blocks, m.CacheCtl)
		c.add(exchange.Message{Role: exchange.RoleAssistant, Content: blocks, Name: m.Name})
		return nil
	}
	if m.Role == "function" { // legacy function calling: a result with no call id to pair with
		c.lose(p+".role", "legacy function messages (role function; use tools)")
		return nil
	}
	markLast(blocks, m.CacheCtl)
	c.add(exchange.Message{Role: exchange.RoleUser, Content: blocks, Name: m.Name})
	return nil
}

func (c *toPrompt) add(m exchange.Message) {
	c.p.Messages = append(c.p.Messages, m)
	c.inTurn = false
}

// markLast puts a message-level cache_control on its last block, unless
// that block has its own.
func markLast(blocks []exchange.Block, cc json.RawMessage) {
	if bp := breakpoint(cc); bp != nil && len(blocks) > 0 && blocks[len(blocks)-1].Cache == nil {
		blocks[len(blocks)-1].Cache = bp
	}
}

// content converts a message's content: a string, or parts.
func (c *toPrompt) content(p string, ct chatwire.Content) ([]exchange.Block, error) {
	if !ct.IsParts {
		if ct.Text == "" {
			return nil, nil
		}
		return []exchange.Block{{Type: exchange.BlockText, Text: ct.Text}}, nil
	}
	out := make([]exchange.Block, 0, len(ct.Parts))
	for j := range ct.Parts {
		part := &ct.Parts[j]
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		b := exchange.Block{Cache: breakpoint(part.CacheCtl)}
		switch part.Type {
		case "text":
			b.Type, b.Text = exchange.BlockText, part.Text
		case "refusal":
			b.Type, b.Text = exchange.BlockRefusal, part.Refusal
		case "image_url":
			if part.ImageURL == nil {
				return nil, invalid(pp+".image_url", "%s.image_url: must be an object with a url", pp)
			}
			b.Type, b.Detail = exchange.BlockImage, part.ImageURL.Detail
			if err := Media(&b, part.ImageURL.URL, pp+".image_url.url"); err != nil {
				return nil, err
			}
		case "file":
			f := gjson.ParseBytes(part.File)
			if id := f.Get("file_id"); id.Exists() && !f.Get("file_data").Exists() {
				c.lose(pp+".file.file_id", "a file by file_id (an upload only OpenAI holds)")
				continue
			}
			b.Type, b.FileName = exchange.BlockDocument, f.Get("filename").Str
			if err := Media(&b, f.Get("file_data").Str, pp+".file.file_data"); err != nil {
				return nil, err
			}
		default:
			c.lose(pp+".type", fmt.Sprintf("content parts of type %q", part.Type))
			continue
		}
		out = append(out, b)
	}
	return out, nil
}

// Media fills an image or document block from a URL: a base64 data URL
// becomes bytes and a media type, any other URL is kept for the upstream
// to fetch. It is the gateway's one data-URL parser.
func Media(b *exchange.Block, u, param string) error {
	rest, ok := strings.CutPrefix(u, "data:")
	if !ok {
		if u == "" {
			return invalid(param, "%s: must not be empty", param)
		}
		b.URL = u
		return nil
	}
	meta, data, ok := strings.Cut(rest, ",")
	params := strings.Split(meta, ";")
	if !ok || len(params) < 2 || !strings.EqualFold(params[len(params)-1], "base64") || params[0] == "" {
		return invalid(param, "%s: a data URL must be data:<media type>;base64,<data>", param)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		if raw, err = base64.RawStdEncoding.DecodeString(data); err != nil {
			return invalid(param, "%s: the data URL's data is not valid base64", param)
		}
	}
	b.MediaType, b.Data = strings.ToLower(params[0]), raw
	return nil
}

func invalid(param, format string, args ...any) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param, Message: fmt.Sprintf(format, args...)}
}

package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/anthropicwire"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Request translation, OpenAI Chat Completions -> Anthropic Messages.
//
// Translated: system and developer messages (wherever they appear) become
// the top-level system text blocks, in order; user, assistant and tool
// messages become content blocks, consecutive turns of one role merged and
// tool results sent as user-role tool_result blocks placed before any other
// content of that turn, as the API requires; images (data URLs as base64,
// http(s) URLs as url sources); PDF file parts given as data URLs
// (document blocks); tools, tool_choice and parallel_tool_calls; assistant
// tool calls (tool_use blocks); stop, temperature (0..1 only), top_p,
// top_k (a common extension), max_completion_tokens / max_tokens (else the
// target's default), user (metadata.user_id) and cache_control on
// messages, content parts and tools.
//
// response_format json_object and json_schema are translated into a final
// system instruction asking for JSON only (with the schema for
// json_schema): Anthropic has no JSON mode on this API version, so the
// output is best-effort JSON, not constrained decoding.
//
// Rejected with invalid_request before any network call (Anthropic cannot
// honour them): temperature, top_p and top_k when the provider is
// configured with anthropic_version 2026-10-21 or later (that version
// removed them; the default 2023-06-01 has them), n > 1, logprobs, top_logprobs > 0, audio output
// (audio, modalities with "audio"), input_audio parts, file parts other
// than PDF data URLs, non-zero presence_penalty / frequency_penalty,
// logit_bias, temperature above 1, reasoning_effort, legacy function
// calling (functions, function_call, role function), and any top-level
// field this translator does not know.
//
// Ignored, by documented choice: seed (OpenAI itself gives no determinism
// guarantee), store and metadata (OpenAI-side storage), service_tier,
// prompt_cache_key (Anthropic caches by cache_control), message names,
// image detail, a tool's strict flag, and parallel_tool_calls when there
// are no tools. presence_penalty / frequency_penalty of exactly 0 and n=1
// are accepted: they ask for the default.

// topLevel lists the request fields the translator knows: translated,
// validated or deliberately ignored. Any other field is rejected.
var topLevel = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "n": true,
	"max_tokens": true, "max_completion_tokens": true, "temperature": true, "top_p": true, "top_k": true,
	"presence_penalty": true, "frequency_penalty": true, "seed": true, "stop": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "response_format": true, "user": true,
	"logprobs": true, "top_logprobs": true, "logit_bias": true, "modalities": true, "audio": true,
	"metadata": true, "reasoning_effort": true, "store": true, "service_tier": true, "prompt_cache_key": true,
}

// samplingRemoved is the first anthropic-version that rejects temperature,
// top_p and top_k (with a 400, even at their defaults).
const samplingRemoved = "2026-10-21"

// translator builds one Anthropic request and names the target in errors.
type translator struct {
	target     string // provider id and model, for error messages
	prov       string
	noSampling bool // the configured anthropic-version has no sampling parameters
}

// unsupported is the error for a feature the target cannot honour.
func (t *translator) unsupported(param, feature string) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param, Code: provider.CodeUnsupportedFeature,
		Message: fmt.Sprintf("%s is not supported by target %s (Anthropic Messages API)", feature, t.target)}
}

// invalid is the error for a request the translator cannot make sense of.
func (t *translator) invalid(param, format string, args ...any) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param,
		Message: fmt.Sprintf(format, args...) + " (target " + t.target + ")"}
}

// translateRequest returns the Anthropic request for a request's canonical
// form (req.Chat); a Chat Completions client's raw body is also checked for
// fields the translator does not know (see chatBody). defaultMax is the
// output limit when the client gives none: the target's max_tokens,
// lowered to the admitted cap (provider.Call.MaxTokens).
func (t *translator) translateRequest(req *exchange.Request, model string, defaultMax int) (*anthropicwire.Request, error) {
	r, body := req.Chat, chatBody(req)
	if err := t.checkUnsupported(r, body); err != nil {
		return nil, err
	}
	out := &anthropicwire.Request{Model: model, Stream: req.Stream, Temperature: r.Temperature, TopP: r.TopP}
	out.MaxTokens = r.MaxOutputTokens()
	if out.MaxTokens == 0 {
		out.MaxTokens = defaultMax
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = 4096
	}
	if len(r.Stop) > 0 {
		out.StopSequences = r.Stop
	}
	if r.User != "" {
		out.Metadata = &anthropicwire.Metadata{UserID: r.User}
	}
	if err := t.topK(out, body); err != nil {
		return nil, err
	}
	if err := t.messages(out, r.Messages); err != nil {
		return nil, err
	}
	if err := t.responseFormat(out, r.ResponseFormat); err != nil {
		return nil, err
	}
	if err := t.tools(out, r); err != nil {
		return nil, err
	}
	return out, nil
}

// chatBody is the client's raw body when it is a Chat Completions request
// (the zero API counts as one), else nil: the body of another API says
// nothing about the canonical form's fields.
func chatBody(req *exchange.Request) []byte {
	if req.API == exchange.Chat || req.API == "" {
		return req.Body
	}
	return nil
}

// checkUnsupported rejects what Anthropic cannot honour.
func (t *translator) checkUnsupported(r *openaiwire.ChatRequest, body []byte) error {
	if len(body) > 0 {
		var top map[string]json.RawMessage
		if err := json.Unmarshal(body, &top); err == nil {
			for k := range top {
				switch {
				case k == "functions" || k == "function_call":
					return t.unsupported(k, "legacy function calling ("+k+"; use tools)")
				case !topLevel[k]:
					return t.unsupported(k, fmt.Sprintf("field %q", k))
				}
			}
		}
	}
	switch {
	case r.N != nil && *r.N > 1:
		return t.unsupported("n", fmt.Sprintf("n=%d (several choices)", *r.N))
	case r.Logprobs != nil && *r.Logprobs:
		return t.unsupported("logprobs", "logprobs")
	case r.TopLogprobs != nil && *r.TopLogprobs > 0:
		return t.unsupported("top_logprobs", "top_logprobs")
	case len(r.Audio) > 0 && string(bytes.TrimSpace(r.Audio)) != "null":
		return t.unsupported("audio", "audio output")
	case r.PresencePenalty != nil && *r.PresencePenalty != 0:
		return t.unsupported("presence_penalty", "presence_penalty")
	case r.FrequencyPenalty != nil && *r.FrequencyPenalty != 0:
		return t.unsupported("frequency_penalty", "frequency_penalty")
	case len(r.LogitBias) > 0:
		return t.unsupported("logit_bias", "logit_bias")
	case t.noSampling && r.Temperature != nil:
		return t.unsupported("temperature", "temperature (anthropic-version "+samplingRemoved+" and later have no sampling parameters)")
	case t.noSampling && r.TopP != nil:
		return t.unsupported("top_p", "top_p (anthropic-version "+samplingRemoved+" and later have no sampling parameters)")
	case r.Temperature != nil && *r.Temperature > 1:
		return t.unsupported("temperature", fmt.Sprintf("temperature %g (Anthropic accepts 0 to 1)", *r.Temperature))
	case r.ReasoningEffort != "":
		return t.unsupported("reasoning_effort", "reasoning_effort")
	}
	for _, m := range r.Modalities {
		if m != "text" {
			return t.unsupported("modalities", fmt.Sprintf("output modality %q", m))
		}
	}
	return nil
}

// topK carries top_k, an Anthropic sampling parameter some OpenAI clients send.
func (t *translator) topK(out *anthropicwire.Request, body []byte) error {
	if !bytes.Contains(body, []byte(`"top_k"`)) {
		return nil
	}
	var v struct {
		TopK *int `json:"top_k"`
	}
	if err := json.Unmarshal(body, &v); err != nil || (v.TopK != nil && *v.TopK < 0) {
		return t.invalid("top_k", "top_k must be a non-negative integer")
	}
	if t.noSampling && v.TopK != nil {
		return t.unsupported("top_k", "top_k (anthropic-version "+samplingRemoved+" and later have no sampling parameters)")
	}
	out.TopK = v.TopK
	return nil
}

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
func markLast(blocks []anthropicwire.ContentBlock, cc json.RawMessage) {
	if cc = cacheCtl(cc); cc == nil || len(blocks) == 0 {
		return
	}
	if b := &blocks[len(blocks)-1]; b.CacheControl == nil {
		b.CacheControl = cc
	}
}

// messages translates the conversation and the system prompt.
func (t *translator) messages(out *anthropicwire.Request, msgs []openaiwire.Message) error {
	for i, m := range msgs {
		p := fmt.Sprintf("messages[%d]", i)
		var role string
		var blocks []anthropicwire.ContentBlock
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
			role = anthropicwire.RoleUser
			blocks, err = t.parts(p, m.Content, true)
		case "assistant":
			role = anthropicwire.RoleAssistant
			blocks, err = t.assistant(p, m)
		case "tool":
			role = anthropicwire.RoleUser
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
		out.Messages = append(out.Messages, anthropicwire.Message{Role: role, Content: blocks})
	}
	if len(out.Messages) == 0 {
		return t.invalid("messages", "messages has only system or developer messages; Anthropic needs at least one user message")
	}
	for i := range out.Messages {
		if out.Messages[i].Role == anthropicwire.RoleUser {
			toolResultsFirst(out.Messages[i].Content)
		}
	}
	return nil
}

// toolResultsFirst moves tool_result blocks before the other blocks of a
// user turn, keeping both groups' order: the API requires tool results to
// lead the turn that answers the tool calls.
func toolResultsFirst(blocks []anthropicwire.ContentBlock) {
	seenOther := false
	for _, b := range blocks {
		if b.Type != anthropicwire.BlockToolResult {
			seenOther = true
		} else if seenOther {
			goto reorder
		}
	}
	return
reorder:
	sorted := make([]anthropicwire.ContentBlock, 0, len(blocks))
	for _, b := range blocks {
		if b.Type == anthropicwire.BlockToolResult {
			sorted = append(sorted, b)
		}
	}
	for _, b := range blocks {
		if b.Type != anthropicwire.BlockToolResult {
			sorted = append(sorted, b)
		}
	}
	copy(blocks, sorted)
}

// parts translates a message's content. Empty text is dropped (the API
// rejects empty text blocks). media allows images and files.
func (t *translator) parts(p string, c openaiwire.Content, media bool) ([]anthropicwire.ContentBlock, error) {
	if !c.IsParts {
		if c.Text == "" {
			return nil, nil
		}
		return []anthropicwire.ContentBlock{{Type: anthropicwire.BlockText, Text: c.Text}}, nil
	}
	blocks := make([]anthropicwire.ContentBlock, 0, len(c.Parts))
	for j, part := range c.Parts {
		pp := fmt.Sprintf("%s.content[%d]", p, j)
		b := anthropicwire.ContentBlock{CacheControl: cacheCtl(part.CacheCtl)}
		switch part.Type {
		case "text", "refusal":
			b.Type, b.Text = anthropicwire.BlockText, part.Text
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
			b.Type, b.Source = anthropicwire.BlockImage, src
		case "file":
			if !media {
				return nil, t.unsupported(pp, "a file in a system message")
			}
			src, err := t.fileSource(pp, part.File)
			if err != nil {
				return nil, err
			}
			b.Type, b.Source = anthropicwire.BlockDocument, src
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
func (t *translator) imageSource(p, u string) (*anthropicwire.Source, error) {
	if strings.HasPrefix(u, "data:") {
		mt, data, ok := parseDataURL(u)
		if !ok {
			return nil, t.invalid(p+".image_url.url", "%s.image_url.url is a data URL that is not base64 (want data:<media type>;base64,<data>)", p)
		}
		return &anthropicwire.Source{Type: "base64", MediaType: mt, Data: data}, nil
	}
	if l := strings.ToLower(u); strings.HasPrefix(l, "https://") || strings.HasPrefix(l, "http://") {
		return &anthropicwire.Source{Type: "url", URL: u}, nil
	}
	return nil, t.invalid(p+".image_url.url", "%s.image_url.url must be an http(s) URL or a base64 data URL", p)
}

// fileSource translates a file part: only PDF given inline as a data URL.
func (t *translator) fileSource(p string, raw json.RawMessage) (*anthropicwire.Source, error) {
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
	return &anthropicwire.Source{Type: "base64", MediaType: mt, Data: data}, nil
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
func (t *translator) assistant(p string, m openaiwire.Message) ([]anthropicwire.ContentBlock, error) {
	blocks, err := t.parts(p, m.Content, false)
	if err != nil {
		return nil, err
	}
	if m.Refusal != nil && *m.Refusal != "" && len(blocks) == 0 {
		blocks = append(blocks, anthropicwire.ContentBlock{Type: anthropicwire.BlockText, Text: *m.Refusal})
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
		blocks = append(blocks, anthropicwire.ContentBlock{Type: anthropicwire.BlockToolUse, ID: tc.ID, Name: tc.Function.Name, Input: args})
	}
	return blocks, nil
}

// toolResult translates a tool message into a tool_result block; the
// message's cache_control goes on the block itself.
func (t *translator) toolResult(p string, m openaiwire.Message) ([]anthropicwire.ContentBlock, error) {
	content, err := t.parts(p, m.Content, true)
	if err != nil {
		return nil, err
	}
	return []anthropicwire.ContentBlock{{Type: anthropicwire.BlockToolResult, ToolUseID: m.ToolCallID,
		Content: content, CacheControl: cacheCtl(m.CacheCtl)}}, nil
}

// defaultSchema is the input_schema of a tool defined without parameters.
var defaultSchema = json.RawMessage(`{"type":"object"}`)

// tools translates tools, tool_choice and parallel_tool_calls.
func (t *translator) tools(out *anthropicwire.Request, r *openaiwire.ChatRequest) error {
	for _, tl := range r.Tools {
		schema := bytes.TrimSpace(tl.Function.Parameters)
		if len(schema) == 0 || string(schema) == "null" || string(schema) == "{}" {
			schema = defaultSchema
		}
		out.Tools = append(out.Tools, anthropicwire.Tool{Name: tl.Function.Name, Description: tl.Function.Description,
			InputSchema: schema, CacheControl: cacheCtl(tl.CacheCtl)})
	}
	noParallel := r.ParallelToolCalls != nil && !*r.ParallelToolCalls
	mode := ""
	if r.ToolChoice != nil {
		mode = r.ToolChoice.Mode
	}
	if len(r.Tools) == 0 {
		if mode == "required" || mode == "function" {
			return t.invalid("tool_choice", "tool_choice %q needs tools", mode)
		}
		return nil
	}
	var tc anthropicwire.ToolChoice
	switch mode {
	case "":
		if !noParallel {
			return nil
		}
		tc.Type = "auto"
	case "auto":
		tc.Type = "auto"
	case "none":
		out.ToolChoice = &anthropicwire.ToolChoice{Type: "none"}
		return nil
	case "required":
		tc.Type = "any"
	case "function":
		tc.Type, tc.Name = "tool", r.ToolChoice.Function
	default:
		return t.invalid("tool_choice", "unknown tool_choice %q", mode)
	}
	tc.DisableParallelToolUse = noParallel
	out.ToolChoice = &tc
	return nil
}

// JSON instructions for response_format (see the package comment).
const (
	jsonObjectInstruction = "Respond with a single valid JSON object and nothing else: no prose before or after it, no Markdown code fences."
	jsonSchemaInstruction = "Respond with a single valid JSON value that conforms to the JSON Schema below, and nothing else: no prose before or after it, no Markdown code fences."
)

// responseFormat turns json_object / json_schema into a final system
// instruction.
func (t *translator) responseFormat(out *anthropicwire.Request, rf *openaiwire.ResponseFormat) error {
	if rf == nil {
		return nil
	}
	var text string
	switch rf.Type {
	case "", "text":
		return nil
	case "json_object":
		text = jsonObjectInstruction
	case "json_schema":
		var js struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(rf.JSONSchema, &js); err != nil || len(bytes.TrimSpace(js.Schema)) == 0 {
			return t.invalid("response_format.json_schema", "response_format.json_schema must be an object with a schema")
		}
		var sb strings.Builder
		sb.WriteString(jsonSchemaInstruction)
		if js.Name != "" {
			sb.WriteString("\nSchema name: " + js.Name)
		}
		if js.Description != "" {
			sb.WriteString("\nSchema description: " + js.Description)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, js.Schema); err != nil {
			return t.invalid("response_format.json_schema.schema", "response_format.json_schema.schema is not valid JSON")
		}
		sb.WriteString("\nJSON Schema: ")
		sb.Write(compact.Bytes())
		text = sb.String()
	default:
		return t.unsupported("response_format.type", fmt.Sprintf("response_format %q", rf.Type))
	}
	out.System = append(out.System, anthropicwire.ContentBlock{Type: anthropicwire.BlockText, Text: text})
	return nil
}

package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
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

// translateRequest returns the Anthropic request for the canonical form r
// of req (provider.Call.Chat: req.Chat with the target's variant); a Chat
// Completions client's raw body is also checked for fields the translator
// does not know (see chatBody). defaultMax is the
// output limit when the client gives none: the target's max_tokens,
// lowered to the admitted cap (provider.Call.MaxTokens).
func (t *translator) translateRequest(req *exchange.Request, r *chatwire.ChatRequest, model string, defaultMax int) (*messageswire.Request, error) {
	body := chatBody(req)
	if err := t.checkUnsupported(r, body); err != nil {
		return nil, err
	}
	out := &messageswire.Request{Model: model, Stream: req.Stream, Temperature: r.Temperature, TopP: r.TopP}
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
		out.Metadata = &messageswire.Metadata{UserID: r.User}
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
func (t *translator) checkUnsupported(r *chatwire.ChatRequest, body []byte) error {
	if param, what, ok := provider.UnknownChatField(body, topLevel); ok {
		return t.unsupported(param, what)
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
func (t *translator) topK(out *messageswire.Request, body []byte) error {
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

// defaultSchema is the input_schema of a tool defined without parameters.
var defaultSchema = json.RawMessage(`{"type":"object"}`)

// tools translates tools, tool_choice and parallel_tool_calls.
func (t *translator) tools(out *messageswire.Request, r *chatwire.ChatRequest) error {
	if r.ToolChoice != nil && !r.ToolChoice.Known() {
		return t.unsupported("tool_choice", fmt.Sprintf("tool_choice type %q", r.ToolChoice.Mode))
	}
	for i, tl := range r.Tools {
		if tl.Type != "function" {
			return t.unsupported(fmt.Sprintf("tools[%d].type", i), fmt.Sprintf("tool type %q", tl.Type))
		}
		schema := bytes.TrimSpace(tl.Function.Parameters)
		if len(schema) == 0 || string(schema) == "null" || string(schema) == "{}" {
			schema = defaultSchema
		}
		out.Tools = append(out.Tools, messageswire.Tool{Name: tl.Function.Name, Description: tl.Function.Description,
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
	var tc messageswire.ToolChoice
	switch mode {
	case "":
		if !noParallel {
			return nil
		}
		tc.Type = "auto"
	case "auto":
		tc.Type = "auto"
	case "none":
		out.ToolChoice = &messageswire.ToolChoice{Type: "none"}
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
func (t *translator) responseFormat(out *messageswire.Request, rf *chatwire.ResponseFormat) error {
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
	out.System = append(out.System, messageswire.ContentBlock{Type: messageswire.BlockText, Text: text})
	return nil
}

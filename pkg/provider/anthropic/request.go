package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// Request translation, canonical Prompt -> Anthropic Messages (for clients
// of every other API; a Messages client is passed through).
//
// Translated: the system prompt and system messages (wherever they appear)
// become the top-level system text blocks, in order; user and assistant
// turns become content blocks, consecutive turns of one role merged and
// tool results placed before any other content of their turn, as the API
// requires; images (bytes as base64, http(s) URLs as url sources);
// documents (PDF bytes as base64, text/plain as text sources, http(s) URLs
// as url sources; title, context and citations.enabled); tool use and tool
// results (with is_error); thinking blocks with their signatures and
// redacted thinking, byte-exact; an earlier answer's citations when they
// came from Anthropic (each citation's Raw); refusals as text; a final
// assistant message (prefill); tools, tool choice and no-parallel; stop,
// temperature (0..1 only), top_p, top_k, the output limit (else the
// target's default), user (metadata.user_id), the reasoning mode
// (thinking enabled with its budget, adaptive, disabled) and every cache
// breakpoint (cache_control with its ttl).
//
// response_format json_object and json_schema are translated into a final
// system instruction asking for JSON only (with the schema for
// json_schema): Anthropic has no JSON mode on this API version, so the
// output is best-effort JSON, not constrained decoding.
//
// Refused before any network call (provider.Refuse: unsupported_feature,
// unless the route's translate_without lets the feature drop): temperature,
// top_p and top_k when the provider is configured with anthropic_version
// 2026-10-21 or later (that version removed them; the default 2023-06-01
// has them), several choices (n > 1), non-zero presence / frequency
// penalties, temperature above 1, a reasoning effort (reasoning_effort),
// custom and built-in tools, and documents of other media types. What the
// client's API can say but a Prompt cannot hold (logprobs, audio, legacy
// function calling, unknown fields, ...) is refused by the registry's guard
// (exchange.Request.Untranslated).
//
// Ignored, by documented choice: seed (OpenAI itself gives no determinism
// guarantee), request metadata (OpenAI-side storage), message names, image
// detail, a document's file name, a tool's strict flag, reasoning summary
// settings, citations of an earlier answer that did not come from
// Anthropic (the text is kept), and no-parallel when there are no tools.

// samplingRemoved is the first anthropic-version that rejects temperature,
// top_p and top_k (with a 400, even at their defaults).
const samplingRemoved = "2026-10-21"

// translator builds one Anthropic request and names the target in errors.
type translator struct {
	call       *provider.Call
	target     string // provider id and model, for error messages
	prov       string
	noSampling bool // the configured anthropic-version has no sampling parameters
}

// unsupported is the refusal of a feature the target cannot honour, nil
// when the route lets it drop (provider.Refuse).
func (t *translator) unsupported(key, param, feature string) *gwerr.Error {
	if e := provider.Refuse(t.call, key, param, feature); e != nil {
		e.Message = fmt.Sprintf("%s is not supported by target %s (Anthropic Messages API)", feature, t.target)
		return e
	}
	return nil
}

// invalid is the error for a request the translator cannot make sense of.
func (t *translator) invalid(param, format string, args ...any) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param,
		Message: fmt.Sprintf(format, args...) + " (target " + t.target + ")"}
}

// translateRequest returns the Anthropic request for the canonical prompt
// p (provider.Call.Prompt: the request's Prompt with the target's variant)
// for model. defaultMax is the output limit when the client gives none:
// the target's max_tokens, lowered to the admitted cap
// (provider.Call.MaxTokens).
func (t *translator) translateRequest(p *exchange.Prompt, stream bool, model string, defaultMax int) (*messageswire.Request, error) {
	out := &messageswire.Request{Model: model, Stream: stream, MaxTokens: p.Sampling.MaxTokens, StopSequences: p.Sampling.Stop,
		ServiceTier: t.call.Step.ServiceTier}
	if err := t.sampling(out, p); err != nil {
		return nil, err
	}
	if out.MaxTokens == 0 {
		out.MaxTokens = defaultMax
	}
	if out.MaxTokens <= 0 {
		out.MaxTokens = 4096
	}
	if p.User != "" {
		out.Metadata = &messageswire.Metadata{UserID: p.User}
	}
	switch r := p.Output.Reasoning; r.Mode {
	case "enabled":
		out.Thinking = &messageswire.Thinking{Type: r.Mode, BudgetTokens: r.BudgetTokens}
	case "adaptive", "disabled":
		out.Thinking = &messageswire.Thinking{Type: r.Mode}
	}
	if err := t.messages(out, p); err != nil {
		return nil, err
	}
	if err := t.responseFormat(out, &p.Output); err != nil {
		return nil, err
	}
	if err := t.tools(out, p); err != nil {
		return nil, err
	}
	return out, nil
}

// sampling sets temperature, top_p and top_k, and refuses the settings
// Anthropic cannot honour (a dropped one is not sent).
func (t *translator) sampling(out *messageswire.Request, p *exchange.Prompt) error {
	s, removed := &p.Sampling, " (anthropic-version "+samplingRemoved+" and later have no sampling parameters)"
	if s.TopK != nil && *s.TopK < 0 {
		return t.invalid("top_k", "top_k must be a non-negative integer")
	}
	out.Temperature, out.TopP, out.TopK = s.Temperature, s.TopP, s.TopK
	checks := []struct {
		bad              bool
		key, param, what string
		clear            func()
	}{
		{p.Output.Choices > 1, "n", "n", fmt.Sprintf("n=%d (several choices)", p.Output.Choices), nil},
		{s.PresencePenalty != nil && *s.PresencePenalty != 0, "presence_penalty", "presence_penalty", "presence_penalty", nil},
		{s.FrequencyPenalty != nil && *s.FrequencyPenalty != 0, "frequency_penalty", "frequency_penalty", "frequency_penalty", nil},
		{t.noSampling && s.Temperature != nil, "temperature", "temperature", "temperature" + removed, func() { out.Temperature = nil }},
		{t.noSampling && s.TopP != nil, "top_p", "top_p", "top_p" + removed, func() { out.TopP = nil }},
		{t.noSampling && s.TopK != nil, "top_k", "top_k", "top_k" + removed, func() { out.TopK = nil }},
		{out.Temperature != nil && *out.Temperature > 1, "temperature", "temperature",
			fmt.Sprintf("temperature %g (Anthropic accepts 0 to 1)", deref(out.Temperature)), func() { out.Temperature = nil }},
		{p.Output.Reasoning.Effort != "" && p.Output.Reasoning.Mode == "", "reasoning_effort", "reasoning_effort", "reasoning_effort", nil},
	}
	for _, c := range checks {
		if !c.bad {
			continue
		}
		if e := t.unsupported(c.key, c.param, c.what); e != nil {
			return e
		}
		if c.clear != nil {
			c.clear()
		}
	}
	return nil
}

// deref is *f, 0 for nil.
func deref(f *float64) float64 {
	if f == nil {
		return 0
	}
	return *f
}

// defaultSchema is the input_schema of a tool defined without parameters.
var defaultSchema = json.RawMessage(`{"type":"object"}`)

// tools translates tools, tool choice and no-parallel.
func (t *translator) tools(out *messageswire.Request, p *exchange.Prompt) error {
	for i, tl := range p.Tools {
		if tl.Kind != exchange.ToolFunction {
			key, what := "server_tools", "the "+tl.Type+" tool"
			if tl.Kind == exchange.ToolCustom {
				key, what = "custom_tools", "the custom tool "+tl.Name
			}
			if e := t.unsupported(key, fmt.Sprintf("tools[%d].type", i), what); e != nil {
				return e
			}
			continue
		}
		schema := bytes.TrimSpace(tl.Schema)
		if len(schema) == 0 || string(schema) == "null" || string(schema) == "{}" {
			schema = defaultSchema
		}
		out.Tools = append(out.Tools, messageswire.Tool{Name: tl.Name, Description: tl.Description,
			InputSchema: schema, CacheControl: cacheControl(tl.Cache)})
	}
	tc := p.ToolChoice
	if len(out.Tools) == 0 {
		if tc.Mode == exchange.ToolAny || tc.Mode == exchange.ToolNamed {
			return t.invalid("tool_choice", "tool_choice %q needs tools", toolChoiceName(tc.Mode))
		}
		return nil
	}
	var wtc messageswire.ToolChoice
	switch tc.Mode {
	case exchange.ToolAuto:
		if !tc.NoParallel {
			return nil
		}
		wtc.Type = "auto"
	case exchange.ToolNone:
		out.ToolChoice = &messageswire.ToolChoice{Type: "none"}
		return nil
	case exchange.ToolAny:
		wtc.Type = "any"
	case exchange.ToolNamed:
		wtc.Type, wtc.Name = "tool", tc.Name
	}
	wtc.DisableParallelToolUse = tc.NoParallel
	out.ToolChoice = &wtc
	return nil
}

// toolChoiceName names a tool choice mode in the chat API's words, for
// errors.
func toolChoiceName(m exchange.ToolChoiceMode) string {
	if m == exchange.ToolNamed {
		return "function"
	}
	return "required"
}

// JSON instructions for response_format (see the package comment).
const (
	jsonObjectInstruction = "Respond with a single valid JSON object and nothing else: no prose before or after it, no Markdown code fences."
	jsonSchemaInstruction = "Respond with a single valid JSON value that conforms to the JSON Schema below, and nothing else: no prose before or after it, no Markdown code fences."
)

// responseFormat turns json_object / json_schema into a final system
// instruction.
func (t *translator) responseFormat(out *messageswire.Request, o *exchange.Output) error {
	var text string
	switch o.Format {
	case "", "text":
		return nil
	case "json_object":
		text = jsonObjectInstruction
	case "json_schema":
		if len(bytes.TrimSpace(o.Schema)) == 0 {
			return t.invalid("response_format.json_schema", "response_format.json_schema must be an object with a schema")
		}
		var sb strings.Builder
		sb.WriteString(jsonSchemaInstruction)
		if o.SchemaName != "" {
			sb.WriteString("\nSchema name: " + o.SchemaName)
		}
		if o.SchemaDescription != "" {
			sb.WriteString("\nSchema description: " + o.SchemaDescription)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, o.Schema); err != nil {
			return t.invalid("response_format.json_schema.schema", "response_format.json_schema.schema is not valid JSON")
		}
		sb.WriteString("\nJSON Schema: ")
		sb.Write(compact.Bytes())
		text = sb.String()
	default:
		if e := t.unsupported("response_format", "response_format.type", fmt.Sprintf("response_format %q", o.Format)); e != nil {
			return e
		}
		return nil
	}
	out.System = append(out.System, messageswire.ContentBlock{Type: messageswire.BlockText, Text: text})
	return nil
}

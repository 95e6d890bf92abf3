package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Request translation, canonical (OpenAI chat) -> Gemini generateContent.
//
// Translated: system and developer messages (wherever they appear) become
// systemInstruction text parts, in order; user turns become role "user",
// assistant turns role "model", consecutive turns of one role merged;
// images given as base64 data URLs (inlineData), Files API URIs
// (fileData), input_audio parts (inlineData audio/<format>) and file parts
// given as data URLs (inlineData, e.g. PDF); tools (functionDeclarations,
// the JSON Schema converted, see schema.go); assistant tool calls
// (functionCall parts) and tool messages (functionResponse parts in a user
// turn, named after the call they answer: a JSON-object result is sent as
// it is, anything else as {"result": text}); tool_choice (auto, none,
// required, a named function -> functionCallingConfig AUTO, NONE, ANY, ANY
// with allowedFunctionNames); response_format json_object and json_schema
// (responseMimeType application/json, with responseSchema for a schema);
// stop (stopSequences), max_completion_tokens / max_tokens
// (maxOutputTokens, else the admitted output cap when there is one),
// temperature, top_p, top_k (a common extension), seed, presence_penalty,
// frequency_penalty, and reasoning_effort (thinkingConfig with thought
// summaries: a thinkingLevel on gemini-3 models, a thinkingBudget on
// others).
//
// Thought signatures: Gemini 3 models reject an earlier turn's function
// call without the thoughtSignature it was sent with, and OpenAI clients
// have no field to send it back in. The first function call of every
// model turn is sent with the API's documented placeholder signature
// (skipSignature), which asks the API not to validate it.
//
// Rejected with invalid_request before any network call: n > 1, logprobs,
// top_logprobs > 0, logit_bias, audio output (audio, modalities other than
// text), parallel_tool_calls false (Gemini cannot be told to call one
// function at a time), anything but text in a tool result, images at
// http(s) URLs other than the Files API
// (Gemini does not fetch them), file parts without inline data, legacy
// function calling, a schema keyword Gemini cannot express, and any
// top-level field the translator does not know.
//
// Ignored, by documented choice: user, store, metadata, service_tier,
// prompt_cache_key, stream_options (usage is always reported), message
// names, image detail, cache_control (Gemini caches implicitly or through
// cachedContents) and a tool's strict flag.

// skipSignature is the placeholder thoughtSignature the Gemini API accepts
// on replayed function calls whose real signature is unknown.
const skipSignature = "skip_thought_signature_validator"

// topLevel lists the chat fields the translator knows; any other is rejected.
var topLevel = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true, "n": true,
	"max_tokens": true, "max_completion_tokens": true, "temperature": true, "top_p": true, "top_k": true,
	"presence_penalty": true, "frequency_penalty": true, "seed": true, "stop": true, "tools": true,
	"tool_choice": true, "parallel_tool_calls": true, "response_format": true, "user": true,
	"logprobs": true, "top_logprobs": true, "logit_bias": true, "modalities": true, "audio": true,
	"metadata": true, "reasoning_effort": true, "store": true, "service_tier": true, "prompt_cache_key": true,
}

// translator builds one Gemini request and names the target in errors.
type translator struct {
	target string // provider id and model, for error messages
	model  string
}

func (t *translator) unsupported(param, feature string) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param, Code: provider.CodeUnsupportedFeature,
		Message: fmt.Sprintf("%s is not supported by target %s (Gemini API)", feature, t.target)}
}

func (t *translator) invalid(param, format string, args ...any) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param,
		Message: fmt.Sprintf(format, args...) + " (target " + t.target + ")"}
}

// translateRequest returns the Gemini request for req's canonical form r
// (provider.Call.Chat: req.Chat with the target's variant). outputCap is
// the output limit to send when the client gives none (0: none; Gemini
// does not require one).
func (t *translator) translateRequest(req *exchange.Request, r *chatwire.ChatRequest, outputCap int) (*request, error) {
	var body []byte
	if req.API == exchange.Chat || req.API == "" {
		body = req.Body
	}
	if err := t.checkUnsupported(r, body); err != nil {
		return nil, err
	}
	out := &request{}
	if err := t.messages(out, r.Messages); err != nil {
		return nil, err
	}
	gc, err := t.generationConfig(r, body, outputCap)
	if err != nil {
		return nil, err
	}
	if b, _ := json.Marshal(gc); string(b) != "{}" {
		out.GenerationConfig = gc
	}
	if err := t.tools(out, r); err != nil {
		return nil, err
	}
	return out, nil
}

// checkUnsupported rejects what Gemini cannot honour.
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
	case len(r.LogitBias) > 0:
		return t.unsupported("logit_bias", "logit_bias")
	case len(r.Audio) > 0 && string(bytes.TrimSpace(r.Audio)) != "null":
		return t.unsupported("audio", "audio output")
	case len(r.Tools) > 0 && r.ParallelToolCalls != nil && !*r.ParallelToolCalls:
		return t.unsupported("parallel_tool_calls", "parallel_tool_calls false (Gemini may always call several functions at once)")
	}
	for _, m := range r.Modalities {
		if m != "text" {
			return t.unsupported("modalities", fmt.Sprintf("output modality %q", m))
		}
	}
	return nil
}

// thinkingBudgets are the thinking budgets sent to models before Gemini 3
// for each reasoning_effort (the values of Google's own OpenAI
// compatibility layer).
var thinkingBudgets = map[string]int{"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576}

// generationConfig translates sampling, limits, output format and thinking.
func (t *translator) generationConfig(r *chatwire.ChatRequest, body []byte, outputCap int) (*generationConfig, error) {
	gc := &generationConfig{Temperature: r.Temperature, TopP: r.TopP, Seed: r.Seed,
		PresencePenalty: r.PresencePenalty, FrequencyPenalty: r.FrequencyPenalty}
	if len(r.Stop) > 0 {
		gc.StopSequences = r.Stop
	}
	if n := r.MaxOutputTokens(); n > 0 {
		gc.MaxOutputTokens = &n
	} else if outputCap > 0 {
		gc.MaxOutputTokens = &outputCap
	}
	if bytes.Contains(body, []byte(`"top_k"`)) {
		var v struct {
			TopK *int `json:"top_k"`
		}
		if err := json.Unmarshal(body, &v); err != nil || (v.TopK != nil && *v.TopK < 1) {
			return nil, t.invalid("top_k", "top_k must be a positive integer")
		}
		gc.TopK = v.TopK
	}
	if e := r.ReasoningEffort; e != "" {
		budget, ok := thinkingBudgets[e]
		if !ok {
			return nil, t.invalid("reasoning_effort", "reasoning_effort %q is not none, minimal, low, medium or high", e)
		}
		tc := &thinkingConfig{IncludeThoughts: budget > 0}
		switch {
		case strings.HasPrefix(strings.TrimPrefix(t.model, "models/"), "gemini-3"):
			tc.ThinkingLevel = "HIGH"
			if budget <= thinkingBudgets["low"] {
				tc.ThinkingLevel = "LOW"
			}
		default:
			tc.ThinkingBudget = &budget
		}
		gc.ThinkingConfig = tc
	}
	if rf := r.ResponseFormat; rf != nil {
		switch rf.Type {
		case "", "text":
		case "json_object":
			gc.ResponseMimeType = "application/json"
		case "json_schema":
			var js struct {
				Schema json.RawMessage `json:"schema"`
			}
			if err := json.Unmarshal(rf.JSONSchema, &js); err != nil || len(bytes.TrimSpace(js.Schema)) == 0 {
				return nil, t.invalid("response_format.json_schema", "response_format.json_schema must be an object with a schema")
			}
			s, err := t.convertSchema("response_format.json_schema.schema", js.Schema)
			if err != nil {
				return nil, err
			}
			gc.ResponseMimeType, gc.ResponseSchema = "application/json", s
		default:
			return nil, t.unsupported("response_format.type", fmt.Sprintf("response_format %q", rf.Type))
		}
	}
	return gc, nil
}

// tools translates tools and tool_choice.
func (t *translator) tools(out *request, r *chatwire.ChatRequest) error {
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
	decls := make([]functionDeclaration, 0, len(r.Tools))
	for i, tl := range r.Tools {
		d := functionDeclaration{Name: tl.Function.Name, Description: tl.Function.Description}
		params := bytes.TrimSpace(tl.Function.Parameters)
		if len(params) > 0 && string(params) != "null" && string(params) != "{}" {
			s, err := t.convertSchema(fmt.Sprintf("tools[%d].function.parameters", i), params)
			if err != nil {
				return err
			}
			if s.Type != "OBJECT" || len(s.Properties) > 0 {
				d.Parameters = s
			}
		}
		decls = append(decls, d)
	}
	out.Tools = []tool{{FunctionDeclarations: decls}}
	var fc functionCallingConfig
	switch mode {
	case "":
		return nil
	case "auto":
		fc.Mode = "AUTO"
	case "none":
		fc.Mode = "NONE"
	case "required":
		fc.Mode = "ANY"
	case "function":
		fc.Mode, fc.AllowedFunctionNames = "ANY", []string{r.ToolChoice.Function}
	default:
		return t.invalid("tool_choice", "unknown tool_choice %q", mode)
	}
	out.ToolConfig = &toolConfig{FunctionCallingConfig: fc}
	return nil
}

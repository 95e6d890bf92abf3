package gemini

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// Request translation, canonical Prompt -> Gemini generateContent.
//
// Translated: the system prompt and system messages (wherever they
// appear) become systemInstruction text parts, in order; user turns become
// role "user", assistant turns role "model", consecutive turns of one role
// merged; images and documents given as bytes (inlineData, base64), or at
// a Files API URI (fileData); tools (functionDeclarations, the JSON Schema
// converted, see schema.go); tool uses (functionCall parts) and tool
// results (functionResponse parts in a user turn, named after the call
// they answer: a JSON-object result is sent as it is, anything else as
// {"result": text}, or {"error": text} for a result marked as an error);
// thinking blocks (thought parts; see thought signatures below); the tool
// choice (auto, none, any, a named tool -> functionCallingConfig AUTO
// (the default, omitted), NONE, ANY, ANY with allowedFunctionNames); the
// output format json_object and json_schema (responseMimeType
// application/json, with responseSchema for a schema); stop
// (stopSequences), the output limit (maxOutputTokens, else the admitted
// output cap when there is one), temperature, top_p, top_k, seed, the
// penalties; and reasoning (thinkingConfig with thought summaries: an
// effort as a thinkingLevel on gemini-3 models and a thinkingBudget on
// others; a thinking budget as it is; adaptive thinking as the dynamic
// budget -1; disabled thinking as budget 0).
//
// Thought signatures: Gemini 3 models reject an earlier turn's function
// call without the thoughtSignature it was sent with. A signature Gemini
// made reaches the client as the signature of a thinking block, marked
// with SignaturePrefix (see response.go); sent back, it goes on the part
// that follows its thinking block in the model turn, byte-exact, the
// marker removed. The first function call of a model turn that carries no
// Gemini signature is sent with the API's documented placeholder
// (skipSignature), which asks the API not to validate it. Thinking blocks
// signed by another provider, and redacted thinking, are dropped (Gemini
// cannot read them).
//
// Refused before any network call (provider.Refuse: dropped instead when
// the route's translate_without lists the key): several choices ("n"),
// several tool calls forbidden ("parallel_tool_calls": Gemini cannot be
// told to call one function at a time), custom and built-in tools
// ("custom_tools", "server_tools") but Gemini's own google_search
// (grounding with Google Search, sent as {"googleSearch": {}}), documents asking for citations
// ("citations") or with a title or context ("document_context"). Rejected
// as unsupported: anything but text in a tool result or in a system
// message, images and documents at URLs other than the Files API (Gemini
// does not fetch them), media in an assistant turn, and a schema keyword
// Gemini cannot express. What a Prompt cannot carry at all (logprobs,
// audio output, unknown fields) the ingress listed in
// Request.Untranslated, which the provider registry refuses.
//
// Ignored, by documented choice: user, metadata, message names, image
// detail, cache breakpoints (Gemini caches implicitly or through
// cachedContents), reasoning summaries' style and a tool's strict flag.

// skipSignature is the placeholder thoughtSignature the Gemini API accepts
// on replayed function calls whose real signature is unknown.
const skipSignature = "skip_thought_signature_validator"

// translator builds one Gemini request and names the target in errors.
type translator struct {
	call   *provider.Call
	target string // provider id and model, for error messages
	model  string
}

func (t *translator) unsupported(param, feature string) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param, Code: provider.CodeUnsupportedFeature,
		Message: fmt.Sprintf("%s is not supported by target %s (Gemini API)", feature, t.target)}
}

// refuse is provider.Refuse for this attempt, as an error (nil: drop it).
func (t *translator) refuse(key, param, feature string) error {
	if t.call == nil {
		return t.unsupported(param, feature)
	}
	if err := provider.Refuse(t.call, key, param, feature+" (Gemini API)"); err != nil {
		return err
	}
	return nil
}

func (t *translator) invalid(param, format string, args ...any) *gwerr.Error {
	return &gwerr.Error{Category: gwerr.InvalidRequest, Param: param,
		Message: fmt.Sprintf(format, args...) + " (target " + t.target + ")"}
}

// translateRequest returns the Gemini request for the canonical form p
// (provider.Call.Prompt: the request's Prompt with the target's variant).
// outputCap is the output limit to send when the client gives none (0:
// none; Gemini does not require one).
func (t *translator) translateRequest(p *exchange.Prompt, outputCap int) (*request, error) {
	if p == nil {
		return nil, &gwerr.Error{Category: gwerr.Internal, Message: "request has no canonical form (target " + t.target + ")"}
	}
	if p.Output.Choices > 1 {
		if err := t.refuse("n", "n", fmt.Sprintf("n=%d (several choices)", p.Output.Choices)); err != nil {
			return nil, err
		}
	}
	out := &request{}
	if err := t.messages(out, p); err != nil {
		return nil, err
	}
	gc, err := t.generationConfig(p, outputCap)
	if err != nil {
		return nil, err
	}
	if b, _ := json.Marshal(gc); string(b) != "{}" {
		out.GenerationConfig = gc
	}
	if err := t.tools(out, p); err != nil {
		return nil, err
	}
	return out, nil
}

// thinkingBudgets are the thinking budgets sent to models before Gemini 3
// for each reasoning_effort (the values of Google's own OpenAI
// compatibility layer).
var thinkingBudgets = map[string]int{"none": 0, "minimal": 512, "low": 1024, "medium": 8192, "high": 24576}

// generationConfig translates sampling, limits, output format and thinking.
func (t *translator) generationConfig(p *exchange.Prompt, outputCap int) (*generationConfig, error) {
	sm := &p.Sampling
	gc := &generationConfig{Temperature: sm.Temperature, TopP: sm.TopP, Seed: sm.Seed,
		PresencePenalty: sm.PresencePenalty, FrequencyPenalty: sm.FrequencyPenalty}
	if len(sm.Stop) > 0 {
		gc.StopSequences = sm.Stop
	}
	if n := sm.MaxTokens; n > 0 {
		gc.MaxOutputTokens = &n
	} else if outputCap > 0 {
		gc.MaxOutputTokens = &outputCap
	}
	if k := sm.TopK; k != nil {
		if *k < 1 {
			return nil, t.invalid("top_k", "top_k must be a positive integer")
		}
		v := *k
		gc.TopK = &v
	}
	tc, err := t.thinking(&p.Output.Reasoning)
	if err != nil {
		return nil, err
	}
	gc.ThinkingConfig = tc
	switch o := &p.Output; o.Format {
	case "", "text":
	case "json_object":
		gc.ResponseMimeType = "application/json"
	case "json_schema":
		if len(bytes.TrimSpace(o.Schema)) == 0 {
			return nil, t.invalid("response_format.json_schema", "response_format.json_schema must be an object with a schema")
		}
		s, err := t.convertSchema("response_format.json_schema.schema", o.Schema)
		if err != nil {
			return nil, err
		}
		gc.ResponseMimeType, gc.ResponseSchema = "application/json", s
	default:
		return nil, t.unsupported("response_format.type", fmt.Sprintf("response_format %q", o.Format))
	}
	return gc, nil
}

// thinking translates the reasoning asked for: an effort (as Google's own
// OpenAI compatibility layer does), else a budget, adaptive (dynamic) or
// disabled thinking; nil when the client asked nothing.
func (t *translator) thinking(r *exchange.ReasoningConfig) (*thinkingConfig, error) {
	gemini3 := strings.HasPrefix(strings.TrimPrefix(t.model, "models/"), "gemini-3")
	budget := 0
	switch {
	case r.Effort != "":
		b, ok := thinkingBudgets[r.Effort]
		if !ok {
			return nil, t.invalid("reasoning_effort", "reasoning_effort %q is not none, minimal, low, medium or high", r.Effort)
		}
		budget = b
	case r.Mode == "enabled":
		budget = r.BudgetTokens
	case r.Mode == "adaptive":
		budget = -1 // dynamic: the model decides
	case r.Mode == "disabled":
		budget = 0
	default:
		return nil, nil
	}
	tc := &thinkingConfig{IncludeThoughts: budget != 0}
	switch {
	case gemini3 && budget < 0:
	case gemini3:
		tc.ThinkingLevel = "HIGH"
		if budget <= thinkingBudgets["low"] {
			tc.ThinkingLevel = "LOW"
		}
	default:
		tc.ThinkingBudget = &budget
	}
	return tc, nil
}

// tools translates tools and the tool choice.
func (t *translator) tools(out *request, p *exchange.Prompt) error {
	tc := p.ToolChoice
	decls := make([]functionDeclaration, 0, len(p.Tools))
	search := false
	for i := range p.Tools {
		tl := &p.Tools[i]
		param := fmt.Sprintf("tools[%d]", i)
		switch tl.Kind {
		case exchange.ToolFunction:
		case exchange.ToolBuiltin:
			if tl.Type == googleSearchTool {
				search = true // Gemini's own grounding tool: {"googleSearch": {}}
				continue
			}
			if err := t.refuse("server_tools", param, "the "+tl.Type+" tool"); err != nil {
				return err
			}
			continue
		case exchange.ToolCustom:
			if err := t.refuse("custom_tools", param, "the custom tool "+tl.Name); err != nil {
				return err
			}
			continue
		default:
			if err := t.refuse("server_tools", param, "the "+tl.Type+" tool"); err != nil {
				return err
			}
			continue
		}
		d := functionDeclaration{Name: tl.Name, Description: tl.Description}
		params := bytes.TrimSpace(tl.Schema)
		if len(params) > 0 && string(params) != "null" && string(params) != "{}" {
			s, err := t.convertSchema(param+".function.parameters", params)
			if err != nil {
				return err
			}
			if s.Type != "OBJECT" || len(s.Properties) > 0 {
				d.Parameters = s
			}
		}
		decls = append(decls, d)
	}
	if search {
		out.Tools = append(out.Tools, tool{GoogleSearch: &googleSearch{}})
	}
	if len(decls) == 0 {
		if tc.Mode == exchange.ToolAny || tc.Mode == exchange.ToolNamed {
			return t.invalid("tool_choice", "a tool choice that forces a tool needs tools")
		}
		return nil
	}
	if tc.NoParallel {
		if err := t.refuse("parallel_tool_calls", "parallel_tool_calls", "parallel_tool_calls false (Gemini may always call several functions at once)"); err != nil {
			return err
		}
	}
	out.Tools = append([]tool{{FunctionDeclarations: decls}}, out.Tools...)
	var fc functionCallingConfig
	switch tc.Mode {
	case exchange.ToolAuto:
		return nil
	case exchange.ToolNone:
		fc.Mode = "NONE"
	case exchange.ToolAny:
		fc.Mode = "ANY"
	case exchange.ToolNamed:
		fc.Mode, fc.AllowedFunctionNames = "ANY", []string{tc.Name}
	}
	out.ToolConfig = &toolConfig{FunctionCallingConfig: fc}
	return nil
}

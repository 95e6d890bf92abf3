package bedrock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/document"
	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	smithydocument "github.com/aws/smithy-go/document"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// request is the translated Converse request: the fields Converse and
// ConverseStream share.
type request struct {
	modelID    string
	system     []types.SystemContentBlock
	messages   []types.Message
	inference  *types.InferenceConfiguration
	tools      *types.ToolConfiguration
	output     *types.OutputConfig
	additional document.Interface
	// tier is the target's service tier (serviceTier.type), nil for none.
	tier *types.ServiceTier
}

func (r *request) converseInput() *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{ModelId: &r.modelID, System: r.system, Messages: r.messages,
		InferenceConfig: r.inference, ToolConfig: r.tools, OutputConfig: r.output, AdditionalModelRequestFields: r.additional,
		ServiceTier: r.tier}
}

func (r *request) streamInput() *bedrockruntime.ConverseStreamInput {
	return &bedrockruntime.ConverseStreamInput{ModelId: &r.modelID, System: r.system, Messages: r.messages,
		InferenceConfig: r.inference, ToolConfig: r.tools, OutputConfig: r.output, AdditionalModelRequestFields: r.additional,
		ServiceTier: r.tier}
}

// serviceTier is a target's service tier as Converse takes it
// (serviceTier: {type}), nil when the target asks for none.
func serviceTier(call *provider.Call) *types.ServiceTier {
	if call.Step.ServiceTier == "" {
		return nil
	}
	return &types.ServiceTier{Type: types.ServiceTierType(call.Step.ServiceTier)}
}

// servedTier is the tier a Bedrock response says served it ("" when it
// does not say).
func servedTier(t *types.ServiceTier) string {
	if t == nil {
		return ""
	}
	return string(t.Type)
}

// translator errors ---------------------------------------------------------

// unsupported is the refusal of a feature the target cannot honour (key as
// a route's translate_without names it), nil when the route lets it drop
// (provider.Refuse). It names the feature and the target, and is returned
// before any call is made.
func (t *converter) unsupported(key, param, feature, why string) *gwerr.Error {
	e := provider.Refuse(t.call, key, param, feature)
	if e == nil {
		return nil
	}
	e.Message = feature + " is not supported by target " + t.target + " (Bedrock Converse)"
	if why != "" {
		e.Message += ": " + why
	}
	return e
}

func invalid(param, format string, args ...any) *gwerr.Error {
	return gwerr.New(gwerr.InvalidRequest, format, args...).WithParam(param)
}

// converter builds one Converse request from a Prompt.
type converter struct {
	call   *provider.Call
	target string // "provider/model", for errors
	// claude is true for Anthropic's models, which take thinking, signed
	// reasoning and top_k (additionalModelRequestFields).
	claude bool
	// cacheMessages and cacheTools say where the model takes cache points.
	cacheMessages, cacheTools bool
	docs                      int // documents named so far
}

// translateRequest turns the canonical Prompt p (provider.Call.Prompt: the
// request's Prompt with the target's variant) into a Converse request for
// model. maxTokens is the output limit when the client gives none: the
// target's default lowered to the admitted cap (provider.Call.MaxTokens).
// Every feature Converse cannot honour is refused here, before any call.
func (t *converter) translateRequest(p *exchange.Prompt, model string, maxTokens int) (*request, error) {
	if err := t.refuseSettings(p); err != nil {
		return nil, err
	}
	r := &request{modelID: model, tier: serviceTier(t.call)}
	sys, err := t.systemBlocks(p.System, "system")
	if err != nil {
		return nil, err
	}
	r.system = sys
	hasToolBlocks := false
	for i := range p.Messages {
		m := &p.Messages[i]
		pm := fmt.Sprintf("messages[%d]", i)
		if m.Role == exchange.RoleSystem {
			blocks, err := t.systemBlocks(m.Content, pm)
			if err != nil {
				return nil, err
			}
			r.system = append(r.system, blocks...)
			continue
		}
		blocks, tools, err := t.contentBlocks(m.Content, pm)
		if err != nil {
			return nil, err
		}
		hasToolBlocks = hasToolBlocks || tools
		role := types.ConversationRoleUser
		if m.Role == exchange.RoleAssistant {
			role = types.ConversationRoleAssistant
		}
		if err := r.add(role, blocks, pm); err != nil {
			return nil, err
		}
	}
	if len(r.messages) == 0 {
		return nil, invalid("messages", "messages must contain at least one user, assistant or tool message; bedrock takes system messages separately")
	}
	if r.tools, err = t.toolConfig(p, hasToolBlocks); err != nil {
		return nil, err
	}
	r.inference = inferenceConfig(&p.Sampling, maxTokens)
	if r.output, err = t.outputConfig(&p.Output); err != nil {
		return nil, err
	}
	r.additional = t.additionalFields(p)
	return r, nil
}

// add appends blocks as a message of role, merged into the previous
// message when it has the same role (Converse requires alternation; tool
// results are user-role blocks, so consecutive tool messages and the user
// message after them become one user message).
func (r *request) add(role types.ConversationRole, blocks []types.ContentBlock, param string) error {
	if len(blocks) == 0 {
		return invalid(param+".content", "%s has no content: bedrock does not accept empty messages", param)
	}
	if n := len(r.messages); n > 0 && r.messages[n-1].Role == role {
		r.messages[n-1].Content = append(r.messages[n-1].Content, blocks...)
		return nil
	}
	r.messages = append(r.messages, types.Message{Role: role, Content: blocks})
	return nil
}

// refuseSettings refuses the request-level settings Converse has no
// equivalent for (what a Prompt cannot hold at all, the registry's guard
// refuses: exchange.Request.Untranslated).
func (t *converter) refuseSettings(p *exchange.Prompt) error {
	s := &p.Sampling
	checks := []struct {
		bad                   bool
		key, param, what, why string
	}{
		{p.Output.Choices > 1, "n", "n", "n>1 (several choices)", "bedrock returns one choice per call"},
		{s.PresencePenalty != nil && *s.PresencePenalty != 0, "presence_penalty", "presence_penalty", "presence_penalty", ""},
		{s.FrequencyPenalty != nil && *s.FrequencyPenalty != 0, "frequency_penalty", "frequency_penalty", "frequency_penalty", ""},
		{s.Seed != nil, "seed", "seed", "seed", "bedrock has no sampling seed"},
		{p.ToolChoice.NoParallel && len(p.Tools) > 0, "parallel_tool_calls", "parallel_tool_calls", "parallel_tool_calls=false", "bedrock cannot forbid parallel tool calls"},
		{p.Output.Format == "json_object", "response_format", "response_format", "response_format json_object",
			"bedrock structured output needs a schema; use response_format json_schema"},
		{s.TopK != nil && !t.claude, "top_k", "top_k", "top_k", "only Anthropic's models on bedrock take top_k"},
		{reasons(p.Output.Reasoning.Mode) && !t.claude, "thinking", "thinking", "thinking (" + p.Output.Reasoning.Mode + ")",
			"only Anthropic's models on bedrock take a thinking configuration"},
	}
	for _, c := range checks {
		if c.bad {
			if e := t.unsupported(c.key, c.param, c.what, c.why); e != nil {
				return e
			}
		}
	}
	return nil
}

// reasons reports whether a reasoning mode asks for thinking.
func reasons(mode string) bool { return mode == "enabled" || mode == "adaptive" }

// additionalFields are the model-specific request fields: for Anthropic's
// models, the thinking configuration and top_k, as the Messages API names
// them.
func (t *converter) additionalFields(p *exchange.Prompt) document.Interface {
	if !t.claude {
		return nil
	}
	f := map[string]any{}
	switch r := p.Output.Reasoning; r.Mode {
	case "enabled":
		f["thinking"] = map[string]any{"type": "enabled", "budget_tokens": r.BudgetTokens}
	case "adaptive", "disabled":
		f["thinking"] = map[string]any{"type": r.Mode}
	}
	if k := p.Sampling.TopK; k != nil {
		f["top_k"] = *k
	}
	if len(f) == 0 {
		return nil
	}
	return document.NewLazyDocument(f)
}

// toolConfig translates tools and tool_choice.
//
// Bedrock has no tool_choice "none", and it requires the tool definitions
// whenever the conversation holds toolUse or toolResult blocks. So "none"
// is honoured by sending no tools when the history has no tool blocks (the
// model cannot call what it does not know), and refused when it has.
func (t *converter) toolConfig(p *exchange.Prompt, hasToolBlocks bool) (*types.ToolConfiguration, error) {
	var specs []*exchange.Tool
	for i := range p.Tools {
		tl := &p.Tools[i]
		if tl.Kind == exchange.ToolFunction {
			specs = append(specs, tl)
			continue
		}
		key, what := "server_tools", "the "+tl.Type+" tool"
		if tl.Kind == exchange.ToolCustom {
			key, what = "custom_tools", "the custom tool "+tl.Name
		}
		if e := t.unsupported(key, fmt.Sprintf("tools[%d].type", i), what, ""); e != nil {
			return nil, e
		}
	}
	mode := p.ToolChoice.Mode
	if mode == exchange.ToolNone {
		if hasToolBlocks && len(specs) > 0 {
			if e := t.unsupported("tool_choice", "tool_choice", "tool_choice \"none\" with tool calls in the conversation",
				"bedrock then requires the tool definitions and has no way to forbid calling them"); e != nil {
				return nil, e
			}
		}
		if !hasToolBlocks {
			return nil, nil
		}
	}
	if len(specs) == 0 {
		switch {
		case hasToolBlocks:
			return nil, invalid("tools", "the conversation has tool calls or results but tools is empty; bedrock requires the tool definitions")
		case mode == exchange.ToolAny || mode == exchange.ToolNamed:
			return nil, invalid("tool_choice", "tool_choice %q needs tools", map[exchange.ToolChoiceMode]string{exchange.ToolAny: "required", exchange.ToolNamed: "function"}[mode])
		}
		return nil, nil
	}
	tc := &types.ToolConfiguration{Tools: make([]types.Tool, 0, len(specs))}
	for i, tl := range specs {
		pt := fmt.Sprintf("tools[%d]", i)
		params := bytes.TrimSpace(tl.Schema)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		schema, err := jsonDocument(params, true)
		if err != nil {
			return nil, invalid(pt+".function.parameters", "%s.function.parameters must be a JSON schema object", pt)
		}
		spec := types.ToolSpecification{Name: &tl.Name, InputSchema: &types.ToolInputSchemaMemberJson{Value: schema}, Strict: tl.Strict}
		if tl.Description != "" {
			spec.Description = &tl.Description
		}
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		cp, err := cachePoint(tl.Cache, pt+".cache_control")
		if err != nil {
			return nil, err
		}
		if cp != nil && t.cacheTools {
			tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: *cp})
		}
	}
	switch mode {
	case exchange.ToolAny:
		tc.ToolChoice = &types.ToolChoiceMemberAny{}
	case exchange.ToolNamed:
		name := p.ToolChoice.Name
		tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: &name}}
	}
	return tc, nil
}

// inferenceConfig translates the output limit, temperature, top_p and
// stop. Values pass through unscaled: bedrock validates them per model
// (Anthropic models, for one, take temperature 0-1).
func inferenceConfig(s *exchange.Sampling, maxTokens int) *types.InferenceConfiguration {
	ic := &types.InferenceConfiguration{}
	set := false
	if s.MaxTokens > 0 {
		maxTokens = s.MaxTokens
	}
	if maxTokens > 0 {
		v := int32(min(maxTokens, math.MaxInt32))
		ic.MaxTokens, set = &v, true
	}
	if s.Temperature != nil {
		v := float32(*s.Temperature)
		ic.Temperature, set = &v, true
	}
	if s.TopP != nil {
		v := float32(*s.TopP)
		ic.TopP, set = &v, true
	}
	if len(s.Stop) > 0 {
		ic.StopSequences, set = s.Stop, true
	}
	if !set {
		return nil
	}
	return ic
}

// outputConfig translates a json_schema output format into bedrock's
// structured output (outputConfig.textFormat), and a reasoning effort
// into outputConfig.effort.
func (t *converter) outputConfig(o *exchange.Output) (*types.OutputConfig, error) {
	var oc types.OutputConfig
	set := false
	if o.Format == "json_schema" {
		if !gjson.ValidBytes(o.Schema) || !bytes.HasPrefix(bytes.TrimSpace(o.Schema), []byte("{")) {
			return nil, invalid("response_format.json_schema", "response_format.json_schema must be an object with a name and a schema object")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, o.Schema); err != nil {
			return nil, invalid("response_format.json_schema.schema", "response_format.json_schema.schema is not valid JSON")
		}
		def := types.JsonSchemaDefinition{Schema: new(compact.String())}
		if o.SchemaName != "" {
			def.Name = &o.SchemaName
		}
		if o.SchemaDescription != "" {
			def.Description = &o.SchemaDescription
		}
		oc.TextFormat = &types.OutputFormat{Type: types.OutputFormatTypeJsonSchema,
			Structure: &types.OutputFormatStructureMemberJsonSchema{Value: def}}
		set = true
	}
	switch e := o.Reasoning.Effort; e {
	case "", "none": // bedrock models do not reason unless asked to
	case "low", "medium", "high", "xhigh":
		oc.Effort, set = &e, true
	default:
		if err := t.unsupported("reasoning_effort", "reasoning_effort", "reasoning_effort "+e, "bedrock takes low, medium, high or xhigh"); err != nil {
			return nil, err
		}
	}
	if !set {
		return nil, nil
	}
	return &oc, nil
}

// argumentsDocument parses a tool call's arguments (a JSON object; empty
// means no arguments) into a document.
func argumentsDocument(args string) (document.Interface, error) {
	if strings.TrimSpace(args) == "" {
		return document.NewLazyDocument(map[string]any{}), nil
	}
	return jsonDocument([]byte(args), true)
}

// jsonDocument parses JSON into a document, keeping numbers exact.
func jsonDocument(raw []byte, wantObject bool) (document.Interface, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("trailing data after the JSON value")
	}
	if _, ok := v.(map[string]any); wantObject && !ok {
		return nil, fmt.Errorf("not an object")
	}
	return document.NewLazyDocument(exactNumbers(v)), nil
}

// exactNumbers replaces json.Number (which the document encoder would
// write as a string) with the document's own number type.
func exactNumbers(v any) any {
	switch x := v.(type) {
	case json.Number:
		return smithydocument.Number(x)
	case map[string]any:
		for k, e := range x {
			x[k] = exactNumbers(e)
		}
	case []any:
		for i, e := range x {
			x[i] = exactNumbers(e)
		}
	}
	return v
}

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
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// request is the translated Converse request: the fields Converse and
// ConverseStream share.
type request struct {
	modelID   string
	system    []types.SystemContentBlock
	messages  []types.Message
	inference *types.InferenceConfiguration
	tools     *types.ToolConfiguration
	output    *types.OutputConfig
}

func (r *request) converseInput() *bedrockruntime.ConverseInput {
	return &bedrockruntime.ConverseInput{ModelId: &r.modelID, System: r.system, Messages: r.messages,
		InferenceConfig: r.inference, ToolConfig: r.tools, OutputConfig: r.output}
}

func (r *request) streamInput() *bedrockruntime.ConverseStreamInput {
	return &bedrockruntime.ConverseStreamInput{ModelId: &r.modelID, System: r.system, Messages: r.messages,
		InferenceConfig: r.inference, ToolConfig: r.tools, OutputConfig: r.output}
}

// unsupportedFields are request fields the validated view does not decode
// but whose meaning Converse cannot honour; they are looked for in the raw
// body so that they are refused rather than lost.
var unsupportedFields = []struct{ field, feature string }{
	{"functions", "legacy functions (use tools)"},
	{"function_call", "legacy function_call (use tool_choice)"},
	{"prediction", "predicted outputs"},
	{"web_search_options", "web search"},
}

// translator errors ---------------------------------------------------------

// unsupported is the invalid_request for a feature the target cannot
// honour. It names the feature and the target, and is returned before any
// call is made.
func unsupported(target, param, feature, why string) *gwerr.Error {
	msg := feature + " is not supported by bedrock target " + target
	if why != "" {
		msg += ": " + why
	}
	e := gwerr.New(gwerr.InvalidRequest, "%s", msg).WithCode(provider.CodeUnsupportedFeature)
	if param != "" {
		e.Param = param
	}
	return e
}

func invalid(param, format string, args ...any) *gwerr.Error {
	return gwerr.New(gwerr.InvalidRequest, format, args...).WithParam(param)
}

// translateRequest turns a request's canonical form req (provider.Call.Chat:
// rq.Chat with the target's variant) into a
// Converse request for model. maxTokens is the output limit when the
// client gives none: the target's default lowered to the admitted cap
// (provider.Call.MaxTokens). target ("provider/model") names the target in
// errors. Every feature Converse cannot honour is refused here, before any
// call.
func translateRequest(rq *exchange.Request, req *chatwire.ChatRequest, model string, maxTokens int, target string) (*request, error) {
	if err := checkUnsupported(req, chatBody(rq), target); err != nil {
		return nil, err
	}
	r := &request{modelID: model}
	hasToolBlocks := false
	for i := range req.Messages {
		m := &req.Messages[i]
		p := fmt.Sprintf("messages[%d]", i)
		switch m.Role {
		case "system", "developer":
			blocks, err := systemBlocks(m, p, target)
			if err != nil {
				return nil, err
			}
			r.system = append(r.system, blocks...)
		case "user":
			blocks, err := contentBlocks(m.Content, p, target)
			if err != nil {
				return nil, err
			}
			if blocks, err = withCachePoint(blocks, m.CacheCtl, p); err != nil {
				return nil, err
			}
			if err := r.add(types.ConversationRoleUser, blocks, p); err != nil {
				return nil, err
			}
		case "assistant":
			blocks, err := assistantBlocks(m, p, target)
			if err != nil {
				return nil, err
			}
			hasToolBlocks = hasToolBlocks || len(m.ToolCalls) > 0
			if err := r.add(types.ConversationRoleAssistant, blocks, p); err != nil {
				return nil, err
			}
		case "tool":
			block, err := toolResult(m, p, target)
			if err != nil {
				return nil, err
			}
			blocks, err := withCachePoint([]types.ContentBlock{block}, m.CacheCtl, p)
			if err != nil {
				return nil, err
			}
			hasToolBlocks = true
			if err := r.add(types.ConversationRoleUser, blocks, p); err != nil {
				return nil, err
			}
		default: // "function": the legacy role, which carries no call id to pair with
			return nil, unsupported(target, p+".role", "legacy function messages", "use tool messages with tool_call_id")
		}
	}
	if len(r.messages) == 0 {
		return nil, invalid("messages", "messages must contain at least one user, assistant or tool message; bedrock takes system messages separately")
	}
	var err error
	if r.tools, err = toolConfig(req, hasToolBlocks, target); err != nil {
		return nil, err
	}
	r.inference = inferenceConfig(req, maxTokens)
	if r.output, err = outputConfig(req, target); err != nil {
		return nil, err
	}
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

// chatBody is the client's raw body when it is a Chat Completions request
// (the zero API counts as one), else nil: the body of another API says
// nothing about the canonical form's fields.
func chatBody(rq *exchange.Request) []byte {
	if rq.API == exchange.Chat || rq.API == "" {
		return rq.Body
	}
	return nil
}

// checkUnsupported refuses the request-level features Converse has no
// equivalent for.
func checkUnsupported(req *chatwire.ChatRequest, body []byte, target string) error {
	switch {
	case req.N != nil && *req.N > 1:
		return unsupported(target, "n", "n>1 (several choices)", "bedrock returns one choice per call")
	case req.Logprobs != nil && *req.Logprobs, req.TopLogprobs != nil && *req.TopLogprobs > 0:
		return unsupported(target, "logprobs", "logprobs", "bedrock does not return token log probabilities")
	case len(req.LogitBias) > 0:
		return unsupported(target, "logit_bias", "logit_bias", "")
	case len(bytes.TrimSpace(req.Audio)) > 0 && string(bytes.TrimSpace(req.Audio)) != "null":
		return unsupported(target, "audio", "audio output", "")
	case req.PresencePenalty != nil && *req.PresencePenalty != 0:
		return unsupported(target, "presence_penalty", "presence_penalty", "")
	case req.FrequencyPenalty != nil && *req.FrequencyPenalty != 0:
		return unsupported(target, "frequency_penalty", "frequency_penalty", "")
	case req.Seed != nil:
		return unsupported(target, "seed", "seed", "bedrock has no sampling seed")
	case req.ParallelToolCalls != nil && !*req.ParallelToolCalls && len(req.Tools) > 0:
		return unsupported(target, "parallel_tool_calls", "parallel_tool_calls=false", "bedrock cannot forbid parallel tool calls")
	}
	for _, m := range req.Modalities {
		if m != "text" {
			return unsupported(target, "modalities", m+" output", "bedrock chat returns text only")
		}
	}
	if req.ResponseFormat != nil && req.ResponseFormat.Type == "json_object" {
		return unsupported(target, "response_format", "response_format json_object",
			"bedrock structured output needs a schema; use response_format json_schema")
	}
	if len(body) > 0 {
		for _, f := range unsupportedFields {
			if v := gjson.GetBytes(body, f.field); v.Exists() && v.Type != gjson.Null {
				return unsupported(target, f.field, f.feature, "")
			}
		}
	}
	return nil
}

// toolConfig translates tools and tool_choice.
//
// Bedrock has no tool_choice "none", and it requires the tool definitions
// whenever the conversation holds toolUse or toolResult blocks. So "none"
// is honoured by sending no tools when the history has no tool blocks (the
// model cannot call what it does not know), and refused when it has.
func toolConfig(req *chatwire.ChatRequest, hasToolBlocks bool, target string) (*types.ToolConfiguration, error) {
	mode := ""
	if req.ToolChoice != nil {
		mode = req.ToolChoice.Mode
		if !req.ToolChoice.Known() {
			return nil, unsupported(target, "tool_choice", fmt.Sprintf("tool_choice type %q", mode), "")
		}
	}
	for i := range req.Tools {
		if typ := req.Tools[i].Type; typ != "function" {
			return nil, unsupported(target, fmt.Sprintf("tools[%d].type", i), fmt.Sprintf("tool type %q", typ), "")
		}
	}
	if mode == "none" {
		if hasToolBlocks && len(req.Tools) > 0 {
			return nil, unsupported(target, "tool_choice", "tool_choice \"none\" with tool calls in the conversation",
				"bedrock then requires the tool definitions and has no way to forbid calling them")
		}
		if !hasToolBlocks {
			return nil, nil
		}
	}
	if len(req.Tools) == 0 {
		switch {
		case hasToolBlocks:
			return nil, invalid("tools", "the conversation has tool calls or results but tools is empty; bedrock requires the tool definitions")
		case mode == "auto" || mode == "required" || mode == "function":
			return nil, invalid("tool_choice", "tool_choice %q needs tools", mode)
		}
		return nil, nil
	}
	tc := &types.ToolConfiguration{Tools: make([]types.Tool, 0, len(req.Tools))}
	for i := range req.Tools {
		t := &req.Tools[i]
		p := fmt.Sprintf("tools[%d]", i)
		params := bytes.TrimSpace(t.Function.Parameters)
		if len(params) == 0 || string(params) == "null" {
			params = []byte(`{"type":"object","properties":{}}`)
		}
		schema, err := jsonDocument(params, true)
		if err != nil {
			return nil, invalid(p+".function.parameters", "%s.function.parameters must be a JSON schema object", p)
		}
		spec := types.ToolSpecification{Name: &t.Function.Name, InputSchema: &types.ToolInputSchemaMemberJson{Value: schema},
			Strict: t.Function.Strict}
		if t.Function.Description != "" {
			spec.Description = &t.Function.Description
		}
		tc.Tools = append(tc.Tools, &types.ToolMemberToolSpec{Value: spec})
		cp, err := cachePoint(t.CacheCtl, p+".cache_control")
		if err != nil {
			return nil, err
		}
		if cp != nil {
			tc.Tools = append(tc.Tools, &types.ToolMemberCachePoint{Value: *cp})
		}
	}
	switch mode {
	case "auto":
		tc.ToolChoice = &types.ToolChoiceMemberAuto{}
	case "required":
		tc.ToolChoice = &types.ToolChoiceMemberAny{}
	case "function":
		name := req.ToolChoice.Function
		tc.ToolChoice = &types.ToolChoiceMemberTool{Value: types.SpecificToolChoice{Name: &name}}
	}
	return tc, nil
}

// inferenceConfig translates max tokens, temperature, top_p and stop.
// Values pass through unscaled: bedrock validates them per model (Anthropic
// models, for one, take temperature 0-1).
func inferenceConfig(req *chatwire.ChatRequest, maxTokens int) *types.InferenceConfiguration {
	ic := &types.InferenceConfiguration{}
	set := false
	if n := req.MaxOutputTokens(); n > 0 {
		maxTokens = n
	}
	if maxTokens > 0 {
		v := int32(min(maxTokens, math.MaxInt32))
		ic.MaxTokens, set = &v, true
	}
	if req.Temperature != nil {
		v := float32(*req.Temperature)
		ic.Temperature, set = &v, true
	}
	if req.TopP != nil {
		v := float32(*req.TopP)
		ic.TopP, set = &v, true
	}
	if len(req.Stop) > 0 {
		ic.StopSequences, set = []string(req.Stop), true
	}
	if !set {
		return nil
	}
	return ic
}

// outputConfig translates response_format json_schema into bedrock's
// structured output (outputConfig.textFormat), and reasoning_effort into
// outputConfig.effort.
func outputConfig(req *chatwire.ChatRequest, target string) (*types.OutputConfig, error) {
	var oc types.OutputConfig
	set := false
	if rf := req.ResponseFormat; rf != nil && rf.Type == "json_schema" {
		var js struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			Schema      json.RawMessage `json:"schema"`
		}
		if err := json.Unmarshal(rf.JSONSchema, &js); err != nil || !gjson.ValidBytes(js.Schema) || !bytes.HasPrefix(bytes.TrimSpace(js.Schema), []byte("{")) {
			return nil, invalid("response_format.json_schema", "response_format.json_schema must be an object with a name and a schema object")
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, js.Schema); err != nil {
			return nil, invalid("response_format.json_schema.schema", "response_format.json_schema.schema is not valid JSON")
		}
		def := types.JsonSchemaDefinition{Schema: new(compact.String())}
		if js.Name != "" {
			def.Name = &js.Name
		}
		if js.Description != "" {
			def.Description = &js.Description
		}
		oc.TextFormat = &types.OutputFormat{Type: types.OutputFormatTypeJsonSchema,
			Structure: &types.OutputFormatStructureMemberJsonSchema{Value: def}}
		set = true
	}
	switch e := req.ReasoningEffort; e {
	case "", "none": // bedrock models do not reason unless asked to
	case "low", "medium", "high", "xhigh":
		oc.Effort, set = &e, true
	default:
		return nil, unsupported(target, "reasoning_effort", "reasoning_effort "+e, "bedrock takes low, medium, high or xhigh")
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

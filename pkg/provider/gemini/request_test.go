package gemini

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
)

// TestTranslateRequest checks OpenAI chat -> generateContent on the wire,
// case by case.
func TestTranslateRequest(t *testing.T) {
	const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather now",
		"parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string","enum":["c","f"]}},"required":["city"],"additionalProperties":false},"strict":true}}`
	const weatherDecl = `{"name":"get_weather","description":"Weather now","parameters":{"type":"OBJECT",
		"properties":{"city":{"type":"STRING"},"unit":{"type":"STRING","enum":["c","f"]}},"propertyOrdering":["city","unit"],"required":["city"]}}`
	const hi = `"messages":[{"role":"user","content":"Hi"}]`
	const hiWire = `"contents":[{"role":"user","parts":[{"text":"Hi"}]}]`
	cases := []struct{ name, req, want string }{
		{"text", `{"model":"m",` + hi + `}`, `{` + hiWire + `}`},
		{"system", `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},
			{"role":"developer","content":[{"type":"text","text":"Answer in French."}]}]}`,
			`{"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Answer in French."}]},` + hiWire + `}`},
		{"multi_turn_roles_merged", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]},
			{"role":"assistant","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"a"},{"text":"b"}]},{"role":"model","parts":[{"text":"c"},{"text":"d"}]},
			{"role":"user","parts":[{"text":"e"}]}]}`},
		{"images_inline_and_files_api", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"data:image/PNG;base64,iVBORw0KGgo=","detail":"high"}},
			{"type":"image_url","image_url":{"url":"https://generativelanguage.googleapis.com/v1beta/files/abc123"}}]}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"What is this?"},{"inlineData":{"mimeType":"image/png","data":"iVBORw0KGgo="}},
			{"fileData":{"fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc123"}}]}]}`},
		{"pdf_inline", `{"model":"m","messages":[{"role":"user","content":[
			{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0="}}]}]}`,
			`{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"JVBERi0="}}]}]}`},
		{"tools_definition", `{"model":"m","tools":[` + weatherTool + `,{"type":"function","function":{"name":"get_time","parameters":{"type":"object","properties":{}}}}],` + hi + `}`,
			`{` + hiWire + `,"tools":[{"functionDeclarations":[` + weatherDecl + `,{"name":"get_time"}]}]}`},
		{"tool_choice_auto_is_the_default", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":"auto",` + hi + `}`,
			`{` + hiWire + `,"tools":[{"functionDeclarations":[` + weatherDecl + `]}]}`},
		{"tool_choice_none", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":"none",` + hi + `}`,
			`{` + hiWire + `,"tools":[{"functionDeclarations":[` + weatherDecl + `]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`},
		{"tool_choice_required_is_any", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":"required",` + hi + `}`,
			`{` + hiWire + `,"tools":[{"functionDeclarations":[` + weatherDecl + `]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`},
		{"tool_choice_function_forced", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"parallel_tool_calls":true,` + hi + `}`,
			`{` + hiWire + `,"tools":[{"functionDeclarations":[` + weatherDecl + `]}],
			"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}}`},
		{"tool_calls_and_results", `{"model":"m","tools":[` + weatherTool + `],"messages":[{"role":"user","content":"Paris and Oslo?"},
			{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"call_2","type":"function","function":{"name":"get_weather","arguments":""}}]},
			{"role":"tool","tool_call_id":"call_1","content":"{\"temp\":18}"},
			{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"4C"}]},
			{"role":"user","content":"Thanks"}]}`,
			`{"contents":[{"role":"user","parts":[{"text":"Paris and Oslo?"}]},
			{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"skip_thought_signature_validator"},
				{"functionCall":{"name":"get_weather","args":{}}}]},
			{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp":18}}},
				{"functionResponse":{"name":"get_weather","response":{"result":"4C"}}},{"text":"Thanks"}]}],
			"tools":[{"functionDeclarations":[` + weatherDecl + `]}]}`},
		{"cache_control_dropped", `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"Long context","cache_control":{"type":"ephemeral"}}]},
			{"role":"user","content":"Hi","cache_control":{"type":"ephemeral"}}]}`,
			`{"systemInstruction":{"parts":[{"text":"Long context"}]},` + hiWire + `}`},
		{"json_object", `{"model":"m","response_format":{"type":"json_object"},` + hi + `}`,
			`{` + hiWire + `,"generationConfig":{"responseMimeType":"application/json"}}`},
		{"json_schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"person","strict":true,"schema":{
			"type":"object","properties":{"name":{"type":"string","description":"Full name"},"age":{"type":["integer","null"],"minimum":0},
			"pet":{"$ref":"#/$defs/pet"},"tags":{"type":"array","items":{"type":"string"},"maxItems":3}},
			"required":["name","age","pet","tags"],"additionalProperties":false,
			"$defs":{"pet":{"anyOf":[{"type":"object","properties":{"kind":{"const":"cat"}},"required":["kind"]},{"type":"null"}]}}}}},` + hi + `}`,
			`{` + hiWire + `,"generationConfig":{"responseMimeType":"application/json","responseSchema":{"type":"OBJECT",
			"properties":{"name":{"type":"STRING","description":"Full name"},"age":{"type":"INTEGER","nullable":true,"minimum":0},
			"pet":{"type":"OBJECT","nullable":true,"properties":{"kind":{"type":"STRING","enum":["cat"]}},"required":["kind"]},
			"tags":{"type":"ARRAY","items":{"type":"STRING"},"maxItems":3}},
			"propertyOrdering":["name","age","pet","tags"],"required":["name","age","pet","tags"]}}}`},
		{"stop_string", `{"model":"m","stop":"END",` + hi + `}`, `{` + hiWire + `,"generationConfig":{"stopSequences":["END"]}}`},
		{"max_completion_tokens_wins", `{"model":"m","max_tokens":50,"max_completion_tokens":70,` + hi + `}`,
			`{` + hiWire + `,"generationConfig":{"maxOutputTokens":70}}`},
		{"temperature_top_p_top_k_seed_penalties", `{"model":"m","temperature":1.5,"top_p":0.9,"top_k":40,"seed":7,"presence_penalty":0.5,"frequency_penalty":-0.5,"user":"u1",` + hi + `}`,
			`{` + hiWire + `,"generationConfig":{"temperature":1.5,"topP":0.9,"topK":40,"seed":7,"presencePenalty":0.5,"frequencyPenalty":-0.5}}`},
		{"reasoning_effort_budget", `{"model":"m","reasoning_effort":"medium",` + hi + `}`,
			`{` + hiWire + `,"generationConfig":{"thinkingConfig":{"includeThoughts":true,"thinkingBudget":8192}}}`},
		{"reasoning_effort_none", `{"model":"m","reasoning_effort":"none",` + hi + `}`,
			`{` + hiWire + `,"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := wire(t, c.req)
			if !jsonEqual(t, got, []byte(c.want)) {
				t.Errorf("wire body\n got %s\nwant %s", got, compact([]byte(c.want)))
			}
		})
	}
}

// TestTranslateRequestTargetSpecifics covers what depends on the target:
// thinking levels on gemini-3 models and the admitted output cap.
func TestTranslateRequestTargetSpecifics(t *testing.T) {
	tr := translator{target: "g/gemini-3-pro-preview", model: "gemini-3-pro-preview"}
	call := newCall(t, `{"model":"m","reasoning_effort":"low","messages":[{"role":"user","content":"Hi"}]}`)
	out, err := tr.translateRequest(call.Req.Prompt, 0)
	if err != nil {
		t.Fatal(err)
	}
	if tc := out.GenerationConfig.ThinkingConfig; tc == nil || tc.ThinkingLevel != "LOW" || tc.ThinkingBudget != nil || !tc.IncludeThoughts {
		t.Errorf("gemini-3 thinking config = %+v", tc)
	}
	call = newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)
	call.Req.OutputCap = 300
	f := newFakeAPI(t, serveJSON(200, okResponse))
	if _, err := newTestAdapter(t, f).Send(context.Background(), call); err != nil {
		t.Fatal(err)
	}
	if body := string(f.requests()[0].body); !strings.Contains(body, `"generationConfig":{"maxOutputTokens":300}`) {
		t.Errorf("capped request = %s", body)
	}
	// No cap, no client limit: no maxOutputTokens (the target default of
	// 4096 would cut thinking models short).
	if body := string(wire(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)); strings.Contains(body, "maxOutputTokens") {
		t.Errorf("uncapped request = %s", body)
	}
}

// TestTranslateRejects checks that what Gemini cannot honour is an
// unsupported_feature naming the field and the target, before any call.
func TestTranslateRejects(t *testing.T) {
	const hi = `"messages":[{"role":"user","content":"Hi"}]`
	const tool = `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string"}}}}}]`
	cases := []struct{ name, req, param string }{
		{"n", `{"model":"m","n":2,` + hi + `}`, "n"},
		{"logprobs", `{"model":"m","logprobs":true,` + hi + `}`, "logprobs"},
		{"logit_bias", `{"model":"m","logit_bias":{"1":2},` + hi + `}`, "logit_bias"},
		{"audio_output", `{"model":"m","audio":{"voice":"alloy","format":"wav"},"modalities":["text","audio"],` + hi + `}`, "audio"},
		{"unknown_field", `{"model":"m","prediction":{"type":"content","content":"x"},` + hi + `}`, "prediction"},
		{"legacy_functions", `{"model":"m","functions":[{"name":"f"}],` + hi + `}`, "functions"},
		{"parallel_tool_calls_false", `{"model":"m",` + tool + `,"parallel_tool_calls":false,` + hi + `}`, "parallel_tool_calls"},
		// Params name the canonical Prompt's place (its system prompt apart,
		// a turn's tool results as blocks of the turn).
		{"image_http_url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`, "messages[0].content[0]"},
		{"file_id", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0].file.file_id"},
		{"audio_input", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGRg==","format":"wav"}}]}]}`, "messages[0].content[0].type"},
		{"system_image", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]},{"role":"user","content":"Hi"}]}`, "system[0]"},
		{"tool_result_image", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"seen"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA=="}}]}]}`, "messages[2].content[0].content[1]"},
		{"schema_oneOf", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"oneOf":[{"type":"string"},{"type":"integer"}]}}},` + hi + `}`, "response_format.json_schema.schema.oneOf"},
		{"schema_additional_properties_schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object","properties":{"a":{"type":"string"}},"additionalProperties":{"type":"integer"}}}},` + hi + `}`, "response_format.json_schema.schema.additionalProperties"},
		{"schema_recursive_ref", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"$ref":"#/$defs/n","$defs":{"n":{"type":"object","properties":{"next":{"$ref":"#/$defs/n"}}}}}}},` + hi + `}`, "response_format.json_schema.schema.properties.next.$ref"},
		{"tool_free_form_object_param", `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"meta":{"type":"object"}}}}}],` + hi + `}`, "tools[0].function.parameters.properties.meta"},
		{"schema_integer_enum", `{"model":"m","tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"n":{"type":"integer","enum":[1,2]}}}}}],` + hi + `}`, "tools[0].function.parameters.properties.n.enum"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeAPI(t, serveJSON(200, okResponse))
			_, err := send(newTestAdapter(t, f), newCall(t, c.req))
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest || ge.Code != provider.CodeUnsupportedFeature || ge.Param != c.param || !strings.Contains(ge.Message, "g/gemini-test") {
				t.Fatalf("err = %#v, want unsupported_feature with param %q naming the target", err, c.param)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d upstream calls, want none", n)
			}
		})
	}
}

// TestTranslateInvalid checks requests that make no sense for Gemini.
func TestTranslateInvalid(t *testing.T) {
	for name, req := range map[string]string{
		"tool_result_without_call": `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"tool","tool_call_id":"call_9","content":"x"}]}`,
		"only_system":              `{"model":"m","messages":[{"role":"system","content":"Be brief."}]}`,
		"empty_assistant":          `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":""}]}`,
		"bad_arguments":            `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
	} {
		t.Run(name, func(t *testing.T) {
			tr := translator{target: "g/gemini-test", model: "gemini-test"}
			c := newCall(t, req)
			if name == "bad_arguments" {
				// Arguments that are not an object (as a Responses client may send them back).
				c.Req.Prompt.Messages[1].Content[0].Input = []byte("[1]")
			}
			_, err := tr.translateRequest(c.Req.Prompt, 0)
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest || ge.Code == provider.CodeUnsupportedFeature {
				t.Fatalf("err = %v, want a plain invalid_request", err)
			}
		})
	}
}

// TestSendRequestShape checks the method URL, the key header and the
// alt=sse query of a stream.
func TestSendRequestShape(t *testing.T) {
	f := newFakeAPI(t, serveSSE(fixture(t, "text.sse")))
	a, err := New("g", &config.Provider{Kind: "gemini", BaseURL: f.URL + "/v1beta?x=1", Headers: map[string]string{"X-Static": "yes"}}, f.Client())
	if err != nil {
		t.Fatal(err)
	}
	call := newCall(t, `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
	call.Step.Model = "models/gemini-2.5-flash"
	call.Req.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	s, err := a.Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	collect(t, s)
	r := f.requests()[0]
	if r.path != "/v1beta/models/gemini-2.5-flash:streamGenerateContent" || r.query != "alt=sse&x=1" {
		t.Errorf("path %q query %q", r.path, r.query)
	}
	if r.header.Get("x-goog-api-key") != testKey || r.header.Get("Authorization") != "" || r.header.Get("X-Static") != "yes" ||
		r.header.Get("traceparent") != call.Req.TraceParent {
		t.Errorf("headers = %v", r.header)
	}
	f2 := newFakeAPI(t, serveJSON(200, okResponse))
	if _, err := newTestAdapter(t, f2).Send(context.Background(), newCall(t, `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)); err != nil {
		t.Fatal(err)
	}
	if r := f2.requests()[0]; r.path != "/v1beta/models/gemini-test:generateContent" || r.query != "" {
		t.Errorf("non-streaming path %q query %q", r.path, r.query)
	}
}

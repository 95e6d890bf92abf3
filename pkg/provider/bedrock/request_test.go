package bedrock_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

const okConverse = `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn",
	"usage":{"inputTokens":1,"outputTokens":1,"totalTokens":2},"metrics":{"latencyMs":1}}`

// wire sends an OpenAI request through the adapter and the real SDK to the
// fake, and returns the Converse JSON body that went on the wire.
func wire(t *testing.T, body string) []byte {
	t.Helper()
	f := newFake(t, reply{body: okConverse})
	if _, err := newAdapter(t, f).Send(context.Background(), newCall(t, body)); err != nil {
		t.Fatalf("Send: %v", err)
	}
	reqs := f.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	return reqs[0].raw
}

// TestTranslateRequest checks OpenAI -> Converse on the wire, case by case.
func TestTranslateRequest(t *testing.T) {
	const weatherTool = `{"type":"function","function":{"name":"get_weather","description":"Weather now",
		"parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}}`
	const weatherSpec = `{"toolSpec":{"name":"get_weather","description":"Weather now","strict":true,
		"inputSchema":{"json":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}}}`
	cases := []struct {
		name, req, want string
	}{
		{"text", `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":4096}}`},
		{"system", `{"model":"m","messages":[{"role":"system","content":"Be brief."},
			{"role":"developer","content":[{"type":"text","text":"Answer in French."}]},{"role":"user","content":"Hi"}]}`,
			`{"system":[{"text":"Be brief."},{"text":"Answer in French."}],
			"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":4096}}`},
		{"multi_turn_merged", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":[{"type":"text","text":"b"}]},
			{"role":"assistant","content":"c"},{"role":"assistant","content":"d"},{"role":"user","content":"e"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"a"},{"text":"b"}]},{"role":"assistant","content":[{"text":"c"},{"text":"d"}]},
			{"role":"user","content":[{"text":"e"}]}],"inferenceConfig":{"maxTokens":4096}}`},
		{"images", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"What is this?"},
			{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}},
			{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/4A=="}},
			{"type":"image_url","image_url":{"url":"data:image/gif;base64,R0lGODlh"}},
			{"type":"image_url","image_url":{"url":"data:image/webp;base64,UklGRg=="}},
			{"type":"image_url","image_url":{"url":"s3://bucket/cat.JPG"}}]}]}`,
			`{"messages":[{"role":"user","content":[{"text":"What is this?"},
			{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}},
			{"image":{"format":"jpeg","source":{"bytes":"/9j/4A=="}}},
			{"image":{"format":"gif","source":{"bytes":"R0lGODlh"}}},
			{"image":{"format":"webp","source":{"bytes":"UklGRg=="}}},
			{"image":{"format":"jpeg","source":{"s3Location":{"uri":"s3://bucket/cat.JPG"}}}}]}],"inferenceConfig":{"maxTokens":4096}}`},
		{"tools_and_results", `{"model":"m","tools":[` + weatherTool + `,{"type":"function","function":{"name":"get_time"}}],
			"messages":[{"role":"user","content":"Weather and time in Paris?"},
			{"role":"assistant","content":null,"tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\",\"n\":12345678901234567890}"}},
				{"id":"call_2","type":"function","function":{"name":"get_time","arguments":""}}]},
			{"role":"tool","tool_call_id":"call_1","content":"18C"},
			{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"12:00"}]},
			{"role":"user","content":"Thanks"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Weather and time in Paris?"}]},
			{"role":"assistant","content":[
				{"toolUse":{"toolUseId":"call_1","name":"get_weather","input":{"city":"Paris","n":12345678901234567890}}},
				{"toolUse":{"toolUseId":"call_2","name":"get_time","input":{}}}]},
			{"role":"user","content":[
				{"toolResult":{"toolUseId":"call_1","content":[{"text":"18C"}]}},
				{"toolResult":{"toolUseId":"call_2","content":[{"text":"12:00"}]}},
				{"text":"Thanks"}]}],
			"toolConfig":{"tools":[` + weatherSpec + `,{"toolSpec":{"name":"get_time","inputSchema":{"json":{"type":"object","properties":{}}}}}]},
			"inferenceConfig":{"maxTokens":4096}}`},
		// auto is the Prompt's default and bedrock's: no toolChoice is sent
		{"tool_choice_auto", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":"auto","messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"toolConfig":{"tools":[` + weatherSpec + `]},"inferenceConfig":{"maxTokens":4096}}`},
		{"tool_choice_required", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":"required","messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"toolConfig":{"tools":[` + weatherSpec + `],"toolChoice":{"any":{}}},"inferenceConfig":{"maxTokens":4096}}`},
		{"tool_choice_function", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"get_weather"}},"messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"toolConfig":{"tools":[` + weatherSpec + `],"toolChoice":{"tool":{"name":"get_weather"}}},"inferenceConfig":{"maxTokens":4096}}`},
		{"tool_choice_none_without_history", `{"model":"m","tools":[` + weatherTool + `],"tool_choice":"none","messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":4096}}`},
		{"inference", `{"model":"m","max_completion_tokens":100,"max_tokens":50,"temperature":0.5,"top_p":0.25,"stop":["END","STOP"],
			"presence_penalty":0,"parallel_tool_calls":false,"user":"u1","messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":100,"temperature":0.5,"topP":0.25,"stopSequences":["END","STOP"]}}`},
		{"stop_string_and_max_tokens", `{"model":"m","max_tokens":50,"stop":"END","messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":50,"stopSequences":["END"]}}`},
		{"cache_control", `{"model":"m","tools":[{"type":"function","function":{"name":"get_time"},"cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"system","content":"Long rules.","cache_control":{"type":"ephemeral"}},
			{"role":"user","content":[{"type":"text","text":"Big doc","cache_control":{"type":"ephemeral","ttl":"1h"}},{"type":"text","text":"Question"}]},
			{"role":"assistant","content":"Answer"},
			{"role":"user","content":"More","cache_control":{"type":"ephemeral","ttl":"5m"}}]}`,
			`{"system":[{"text":"Long rules."},{"cachePoint":{"type":"default"}}],
			"messages":[{"role":"user","content":[{"text":"Big doc"},{"cachePoint":{"type":"default","ttl":"1h"}},{"text":"Question"}]},
			{"role":"assistant","content":[{"text":"Answer"}]},
			{"role":"user","content":[{"text":"More"},{"cachePoint":{"type":"default","ttl":"5m"}}]}],
			"toolConfig":{"tools":[{"toolSpec":{"name":"get_time","inputSchema":{"json":{"type":"object","properties":{}}}}},{"cachePoint":{"type":"default"}}]},
			"inferenceConfig":{"maxTokens":4096}}`},
		{"json_schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"weather","description":"A forecast",
			"schema":{"type":"object","properties":{"temp":{"type":"number"}},"required":["temp"],"additionalProperties":false},"strict":true}},
			"messages":[{"role":"user","content":"Forecast?"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Forecast?"}]}],"inferenceConfig":{"maxTokens":4096},
			"outputConfig":{"textFormat":{"type":"json_schema","structure":{"jsonSchema":{"name":"weather","description":"A forecast",
			"schema":"{\"type\":\"object\",\"properties\":{\"temp\":{\"type\":\"number\"}},\"required\":[\"temp\"],\"additionalProperties\":false}"}}}}}`},
		{"response_format_text_and_effort", `{"model":"m","response_format":{"type":"text"},"reasoning_effort":"high","messages":[{"role":"user","content":"Hi"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":4096},"outputConfig":{"effort":"high"}}`},
		{"tool_ids_bedrock_cannot_take", `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"q"},
			{"role":"assistant","tool_calls":[{"id":"call:1/x","type":"function","function":{"name":"f","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"call:1/x","content":"r"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"q"}]},
			{"role":"assistant","content":[{"toolUse":{"toolUseId":"call_31391c7f37e278a6f06c784b","name":"f","input":{}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"call_31391c7f37e278a6f06c784b","content":[{"text":"r"}]}}]}],
			"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{"type":"object","properties":{}}}}}]},"inferenceConfig":{"maxTokens":4096}}`},
		{"tool_result_parts", `{"model":"m","tools":[{"type":"function","function":{"name":"snap"}}],"messages":[{"role":"user","content":"q"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"snap","arguments":"{}"}}]},
			{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"a photo"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}],
			 "cache_control":{"type":"ephemeral"}}]}`,
			`{"messages":[{"role":"user","content":[{"text":"q"}]},
			{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"snap","input":{}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"a photo"},{"image":{"format":"png","source":{"bytes":"iVBORw0KGgo="}}}]}},
			{"cachePoint":{"type":"default"}}]}],
			"toolConfig":{"tools":[{"toolSpec":{"name":"snap","inputSchema":{"json":{"type":"object","properties":{}}}}}]},"inferenceConfig":{"maxTokens":4096}}`},
		{"assistant_refusal", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"refusal":"I can't."},{"role":"user","content":"ok"}]}`,
			`{"messages":[{"role":"user","content":[{"text":"x"}]},{"role":"assistant","content":[{"text":"I can't."}]},{"role":"user","content":[{"text":"ok"}]}],"inferenceConfig":{"maxTokens":4096}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := wire(t, c.req)
			assertJSON(t, raw, c.want)
			if c.name == "tools_and_results" && !strings.Contains(string(raw), `"n":12345678901234567890`) {
				t.Errorf("tool arguments lost number precision: %s", raw)
			}
		})
	}
}

// TestTranslateRejects: features bedrock cannot honour are refused as
// invalid_request naming the feature and the target, before any call: by
// the adapter, or (what a Prompt cannot hold) by the registry's guard.
func TestTranslateRejects(t *testing.T) {
	const tool = `{"type":"function","function":{"name":"f"}}`
	const toolHistory = `{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}`
	cases := []struct {
		name, req, feature string
	}{
		{"n", `{"model":"m","n":2,"messages":[{"role":"user","content":"Hi"}]}`, "n>1"},
		{"logprobs", `{"model":"m","logprobs":true,"messages":[{"role":"user","content":"Hi"}]}`, "logprobs"},
		{"top_logprobs", `{"model":"m","top_logprobs":3,"messages":[{"role":"user","content":"Hi"}]}`, "logprobs"},
		{"logit_bias", `{"model":"m","logit_bias":{"50256":-100},"messages":[{"role":"user","content":"Hi"}]}`, "logit_bias"},
		{"audio_output", `{"model":"m","audio":{"voice":"alloy","format":"wav"},"messages":[{"role":"user","content":"Hi"}]}`, "audio"},
		{"audio_modality", `{"model":"m","modalities":["text","audio"],"messages":[{"role":"user","content":"Hi"}]}`, "audio"},
		{"audio_input", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}]}`, `content parts of type "input_audio"`},
		{"file_input", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"f1"}}]}]}`, "a file by file_id"},
		{"json_object", `{"model":"m","response_format":{"type":"json_object"},"messages":[{"role":"user","content":"Hi"}]}`, "json_object"},
		{"image_http_url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/cat.png"}}]}]}`, "image URLs"},
		{"image_type", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/bmp;base64,Qk0="}}]}]}`, "image type image/bmp"},
		{"presence_penalty", `{"model":"m","presence_penalty":0.5,"messages":[{"role":"user","content":"Hi"}]}`, "presence_penalty"},
		{"frequency_penalty", `{"model":"m","frequency_penalty":-1,"messages":[{"role":"user","content":"Hi"}]}`, "frequency_penalty"},
		{"seed", `{"model":"m","seed":42,"messages":[{"role":"user","content":"Hi"}]}`, "seed"},
		{"parallel_tool_calls_false", `{"model":"m","parallel_tool_calls":false,"tools":[` + tool + `],"messages":[{"role":"user","content":"Hi"}]}`, "parallel_tool_calls"},
		{"legacy_functions", `{"model":"m","functions":[{"name":"f"}],"messages":[{"role":"user","content":"Hi"}]}`, "legacy function calling"},
		{"legacy_function_message", `{"model":"m","messages":[{"role":"user","content":"Hi"},{"role":"function","name":"f","content":"r"}]}`, "legacy function messages"},
		{"tool_choice_none_with_history", `{"model":"m","tool_choice":"none","tools":[` + tool + `],"messages":[` + toolHistory + `]}`, `tool_choice "none"`},
		{"reasoning_effort_minimal", `{"model":"m","reasoning_effort":"minimal","messages":[{"role":"user","content":"Hi"}]}`, "reasoning_effort minimal"},
		{"cache_control_inside_tool_result", `{"model":"m","tools":[` + tool + `],"messages":[{"role":"user","content":"q"},{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":[{"type":"text","text":"r","cache_control":{"type":"ephemeral"}}]}]}`, "cache_control inside a tool result"},
		{"system_image", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]},{"role":"user","content":"Hi"}]}`, "image and file parts in system messages"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, reply{body: okConverse})
			_, err := guarded(newAdapter(t, f), newCall(t, c.req))
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest {
				t.Fatalf("err = %v, want invalid_request", err)
			}
			msg := gwerr.ClientMessage(ge)
			if !strings.Contains(msg, c.feature) || !strings.Contains(msg, "target br/"+model) {
				t.Errorf("message %q must name %q and the target", msg, c.feature)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d calls made; a refusal must come before any call", n)
			}
		})
	}
}

// TestTranslateInvalid: malformed input the client must fix, before any call.
func TestTranslateInvalid(t *testing.T) {
	cases := []struct {
		name, req, param string
	}{
		{"tool_arguments_not_json", `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"q"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{not json"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"messages[1].tool_calls[0].function.arguments"},
		{"tool_arguments_not_object", `{"model":"m","tools":[{"type":"function","function":{"name":"f"}}],"messages":[{"role":"user","content":"q"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"[1]"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"messages[1].tool_calls[0].function.arguments"},
		{"tool_history_without_tools", `{"model":"m","messages":[{"role":"user","content":"q"},
			{"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c1","content":"r"}]}`,
			"tools"},
		{"cache_control_ttl", `{"model":"m","messages":[{"role":"user","content":"Hi","cache_control":{"type":"ephemeral","ttl":"2h"}}]}`, "messages[0].content[0].cache_control.ttl"},
		{"bad_data_url", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,rawbytes"}}]}]}`, "messages[0].content[0].image_url.url"},
		{"empty_message", `{"model":"m","messages":[{"role":"user","content":""}]}`, "messages[0].content"},
		{"only_system", `{"model":"m","messages":[{"role":"system","content":"rules"}]}`, "messages"},
		{"json_schema_without_schema", `{"model":"m","response_format":{"type":"json_schema","json_schema":{"name":"x"}},"messages":[{"role":"user","content":"Hi"}]}`, "response_format.json_schema"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFake(t, reply{body: okConverse})
			call, err := tryCall(c.req) // a malformed data URL is the chat ingress's 400
			if err == nil {
				_, err = guarded(newAdapter(t, f), call)
			}
			var ge *gwerr.Error
			if !errors.As(err, &ge) || ge.Category != gwerr.InvalidRequest || ge.Param != c.param {
				t.Fatalf("err = %v (param %q), want invalid_request on %s", err, paramOf(ge), c.param)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d calls made; want none", n)
			}
		})
	}
}

func paramOf(e *gwerr.Error) string {
	if e == nil {
		return ""
	}
	return e.Param
}

// TestOutputCap: without a client max tokens, maxTokens is the target's
// default lowered to the admitted output cap.
func TestOutputCap(t *testing.T) {
	f := newFake(t, reply{events: concat(textEvents("ok"), stopEvents("end_turn", 1, 1))})
	call := newCall(t, streamHi)
	call.Req.OutputCap = 100
	s, err := newAdapter(t, f).Send(context.Background(), call)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := drain(t, s); err != io.EOF {
		t.Fatal(err)
	}
	assertJSON(t, f.requests()[0].raw, `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":100}}`)
}

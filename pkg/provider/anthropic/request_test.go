package anthropic

import (
	"encoding/json"
	"errors"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/chat"
	"github.com/llmgw/llmgw/pkg/provider"
)

// canon decodes JSON into generic values for a comparison that ignores
// member order and formatting.
func canon(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("invalid JSON %s: %v", b, err)
	}
	return v
}

// translate runs the request translator on an OpenAI request body, as the
// gateway does: the chat ingress's canonical Prompt, the registry guard's
// refusal of what the Prompt cannot hold (Untranslated), then the
// translation, with target "anth/claude-x" and a default max_tokens of
// 4096.
func translate(t *testing.T, body string) ([]byte, error) {
	t.Helper()
	call, err := promptCall(t, body)
	if err != nil {
		return nil, err
	}
	if e := provider.RefuseUntranslated(call.Req, "anth/claude-x", false); e != nil {
		return nil, e
	}
	tr := translator{call: call, target: "anth/claude-x", prov: "anth"}
	out, err := tr.translateRequest(call.Prompt(), call.Req.Stream, "claude-x", 4096)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	return b, nil
}

// promptCall decodes an OpenAI request body through the chat ingress into a
// Call for model claude-x (default max_tokens 1024); the error is the
// ingress's (a malformed request).
func promptCall(t *testing.T, body string) (*provider.Call, error) {
	t.Helper()
	rq := &exchange.Request{API: exchange.Chat}
	if err := (chat.Ingress{}).Decode(httptest.NewRequest("POST", "/v1/chat/completions", nil), []byte(body), rq); err != nil {
		return nil, err
	}
	return &provider.Call{Req: rq, Step: config.Step{ID: "anth/claude-x", Model: "claude-x", MaxTokens: 1024}}, nil
}

func TestTranslateRequest(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"text",
			`{"model":"m","messages":[{"role":"user","content":"Hello"}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`},
		{"streaming",
			`{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`,
			`{"model":"claude-x","max_tokens":4096,"stream":true,"messages":[{"role":"user","content":[{"type":"text","text":"Hello"}]}]}`},
		{"system_and_developer_to_system_keeping_cache_control",
			`{"model":"m","messages":[
				{"role":"system","content":"You are terse."},
				{"role":"developer","content":[{"type":"text","text":"Long policy","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More"}]},
				{"role":"user","content":"Hi"},
				{"role":"system","content":"Late rule","cache_control":{"type":"ephemeral","ttl":"1h"}}]}`,
			`{"model":"claude-x","max_tokens":4096,
			  "system":[{"type":"text","text":"You are terse."},{"type":"text","text":"Long policy","cache_control":{"type":"ephemeral"}},{"type":"text","text":"More"},
			            {"type":"text","text":"Late rule","cache_control":{"type":"ephemeral","ttl":"1h"}}],
			  "messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`},
		{"multi_turn_consecutive_same_role_merged",
			`{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"assistant","content":"c"},{"role":"assistant","content":[{"type":"text","text":"d"}]},{"role":"user","content":"e"}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[
				{"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]},
				{"role":"assistant","content":[{"type":"text","text":"c"},{"type":"text","text":"d"}]},
				{"role":"user","content":[{"type":"text","text":"e"}]}]}`},
		{"images_data_url_and_https_url",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"Compare"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo=","detail":"high"}},
				{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"},"cache_control":{"type":"ephemeral"}}]}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Compare"},
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
				{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"},"cache_control":{"type":"ephemeral"}}]}]}`},
		{"pdf_file_part_to_document",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERi0x"}},{"type":"text","text":"Summarise"}]}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"document","source":{"type":"base64","media_type":"application/pdf","data":"JVBERi0x"}},{"type":"text","text":"Summarise"}]}]}`},
		{"tools_definition_default_schema_and_cache_control",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[
				{"type":"function","function":{"name":"get_weather","description":"Weather now","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]},"strict":true}},
				{"type":"function","function":{"name":"ping"},"cache_control":{"type":"ephemeral"}}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[
				{"name":"get_weather","description":"Weather now","input_schema":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
				{"name":"ping","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}]}`},
		{"tool_choice_auto_is_the_default", // the Prompt has no unset tool choice: auto is Anthropic's default
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"auto"}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}]}`},
		{"tool_choice_none",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"none","parallel_tool_calls":false}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"}}`},
		{"tool_choice_required_is_any",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required"}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`},
		{"tool_choice_function_forced",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}},{"type":"function","function":{"name":"g"}}],"tool_choice":{"type":"function","function":{"name":"g"}}}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}},{"name":"g","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"g"}}`},
		{"parallel_tool_calls_false_without_tool_choice",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"parallel_tool_calls":false}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`},
		{"parallel_tool_calls_false_with_forced_tool",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":"required","parallel_tool_calls":false}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"any","disable_parallel_tool_use":true}}`},
		{"tool_calls_and_tool_results_merged_into_user_turn",
			`{"model":"m","messages":[
				{"role":"user","content":"Weather in Paris and Oslo?"},
				{"role":"assistant","content":null,"tool_calls":[
					{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
					{"id":"toolu_2","type":"function","function":{"name":"get_weather","arguments":""}}]},
				{"role":"tool","tool_call_id":"toolu_1","content":"18C"},
				{"role":"tool","tool_call_id":"toolu_2","content":[{"type":"text","text":"9C"}],"cache_control":{"type":"ephemeral"}},
				{"role":"user","content":"Which is warmer?"}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[
				{"role":"user","content":[{"type":"text","text":"Weather in Paris and Oslo?"}]},
				{"role":"assistant","content":[
					{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}},
					{"type":"tool_use","id":"toolu_2","name":"get_weather","input":{}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"18C"}]},
					{"type":"tool_result","tool_use_id":"toolu_2","content":[{"type":"text","text":"9C"}],"cache_control":{"type":"ephemeral"}},
					{"type":"text","text":"Which is warmer?"}]}]}`},
		{"tool_results_moved_before_user_text",
			`{"model":"m","messages":[
				{"role":"user","content":"go"},
				{"role":"assistant","content":"Calling.","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{}"}}]},
				{"role":"user","content":"also this"},
				{"role":"tool","tool_call_id":"t1","content":""}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[
				{"role":"user","content":[{"type":"text","text":"go"}]},
				{"role":"assistant","content":[{"type":"text","text":"Calling."},{"type":"tool_use","id":"t1","name":"f","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1"},{"type":"text","text":"also this"}]}]}`},
		{"stop_temperature_top_p_top_k_user",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":["END","###"],"temperature":0.3,"top_p":0.9,"top_k":40,"user":"user-123"}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop_sequences":["END","###"],"temperature":0.3,"top_p":0.9,"top_k":40,"metadata":{"user_id":"user-123"}}`},
		{"stop_string",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"stop":"END"}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"stop_sequences":["END"]}`},
		{"max_completion_tokens_wins_over_max_tokens",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50,"max_completion_tokens":70}`,
			`{"model":"claude-x","max_tokens":70,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"max_tokens",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"max_tokens":50}`,
			`{"model":"claude-x","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"message_cache_control_goes_on_last_block",
			`{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"doc"},{"type":"text","text":"question"}],"cache_control":{"type":"ephemeral"}},
				{"role":"assistant","content":"ok","cache_control":{"type":"ephemeral"}}]}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"doc"},{"type":"text","text":"question","cache_control":{"type":"ephemeral"}}]},
				{"role":"assistant","content":[{"type":"text","text":"ok","cache_control":{"type":"ephemeral"}}]}]}`},
		{"response_format_json_object_becomes_system_instruction",
			`{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}],"response_format":{"type":"json_object"}}`,
			`{"model":"claude-x","max_tokens":4096,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"` + jsonObjectInstruction + `"}],
			  "messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"response_format_json_schema_becomes_system_instruction_with_schema",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_schema","json_schema":{"name":"answer","strict":true,"schema":{"type":"object", "properties":{"a":{"type":"string"}}}}}}`,
			`{"model":"claude-x","max_tokens":4096,"system":[{"type":"text","text":"` + jsonSchemaInstruction + `\nSchema name: answer\nJSON Schema: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}"}],
			  "messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"response_format_text_is_default",
			`{"model":"m","messages":[{"role":"user","content":"hi"}],"response_format":{"type":"text"}}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
		{"defaults_accepted_and_documented_ignores",
			`{"model":"m","messages":[{"role":"user","content":"hi","name":"bob"}],"n":1,"presence_penalty":0,"frequency_penalty":0,"logprobs":false,"top_logprobs":0,"seed":7,"store":false,"metadata":{"k":"v"},"modalities":["text"],"audio":null,"service_tier":"auto"}`,
			`{"model":"claude-x","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := translate(t, c.in)
			if err != nil {
				t.Fatalf("translate: %v", err)
			}
			if g, w := canon(t, got), canon(t, []byte(c.want)); !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", got, compact(t, c.want))
			}
		})
	}
}

func compact(t *testing.T, s string) string {
	b, err := json.Marshal(canon(t, []byte(s)))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rejectCases are requests Anthropic cannot honour: each must be refused
// with invalid_request naming the field (param) and the feature.
var rejectCases = []struct {
	name, body, param, mentions string
}{
	{"n_greater_than_1", `{"model":"m","messages":[{"role":"user","content":"hi"}],"n":2}`, "n", "n=2"},
	{"logprobs", `{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true}`, "logprobs", "logprobs"},
	{"top_logprobs", `{"model":"m","messages":[{"role":"user","content":"hi"}],"logprobs":true,"top_logprobs":3}`, "logprobs", "logprobs"},
	{"top_logprobs_alone", `{"model":"m","messages":[{"role":"user","content":"hi"}],"top_logprobs":3}`, "top_logprobs", "top_logprobs"},
	{"audio_output", `{"model":"m","messages":[{"role":"user","content":"hi"}],"audio":{"voice":"alloy","format":"wav"}}`, "audio", "audio"},
	{"modalities_audio", `{"model":"m","messages":[{"role":"user","content":"hi"}],"modalities":["text","audio"]}`, "modalities", "audio"},
	{"input_audio_part", `{"model":"m","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"UklGR","format":"wav"}}]}]}`, "messages[0].content[0].type", "input_audio"},
	{"presence_penalty", `{"model":"m","messages":[{"role":"user","content":"hi"}],"presence_penalty":0.5}`, "presence_penalty", "presence_penalty"},
	{"frequency_penalty", `{"model":"m","messages":[{"role":"user","content":"hi"}],"frequency_penalty":-1}`, "frequency_penalty", "frequency_penalty"},
	{"logit_bias", `{"model":"m","messages":[{"role":"user","content":"hi"}],"logit_bias":{"50256":-100}}`, "logit_bias", "logit_bias"},
	{"temperature_above_1", `{"model":"m","messages":[{"role":"user","content":"hi"}],"temperature":1.5}`, "temperature", "temperature 1.5"},
	{"reasoning_effort", `{"model":"m","messages":[{"role":"user","content":"hi"}],"reasoning_effort":"high"}`, "reasoning_effort", "reasoning_effort"},
	{"legacy_functions", `{"model":"m","messages":[{"role":"user","content":"hi"}],"functions":[{"name":"f"}]}`, "functions", "legacy function calling"},
	{"legacy_function_role", `{"model":"m","messages":[{"role":"function","name":"f","content":"x"}]}`, "messages[0].role", "function"},
	{"unknown_field", `{"model":"m","messages":[{"role":"user","content":"hi"}],"prediction":{"type":"content","content":"x"}}`, "prediction", `"prediction"`},
	{"invalid_tool_arguments_json", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]},{"role":"tool","tool_call_id":"t1","content":"x"}]}`, "messages[1].tool_calls[0].function.arguments", "not a JSON object"},
	{"non_object_tool_arguments", `{"model":"m","messages":[{"role":"user","content":"hi"},{"role":"assistant","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"[1]"}}]}]}`, "messages[1].tool_calls[0].function.arguments", "not a JSON object"},
	{"empty_user_content", `{"model":"m","messages":[{"role":"user","content":""}]}`, "messages[0].content", "no content"},
	{"image_in_system", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x/y.png"}}]},{"role":"user","content":"hi"}]}`, "system[0]", "system"},
	{"image_url_scheme", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].url", "http(s)"},
	{"file_id_part", `{"model":"m","messages":[{"role":"user","content":[{"type":"file","file":{"file_id":"file-abc"}}]}]}`, "messages[0].content[0].file.file_id", "file_id"},
	{"only_system_messages", `{"model":"m","messages":[{"role":"system","content":"hi"}]}`, "messages", "at least one user message"},
	{"tool_choice_required_without_tools", `{"model":"m","messages":[{"role":"user","content":"hi"}],"tool_choice":"required"}`, "tool_choice", "needs tools"},
}

func TestTranslateRequestRejects(t *testing.T) {
	for _, c := range rejectCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := translate(t, c.body)
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("want a rejection, got %v", err)
			}
			if ge.Category != gwerr.InvalidRequest || ge.Param != c.param {
				t.Errorf("got category %s param %q, want invalid_request param %q", ge.Category, ge.Param, c.param)
			}
			msg := gwerr.ClientMessage(ge)
			if !strings.Contains(msg, c.mentions) || !strings.Contains(msg, "anth/claude-x") {
				t.Errorf("message %q does not name the feature %q and the target", msg, c.mentions)
			}
		})
	}
}

package responses_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress/responses"
)

func decode(t *testing.T, body string) (*exchange.Request, error) {
	t.Helper()
	req := &exchange.Request{ID: "req_0123"}
	err := responses.Ingress{}.Decode(nil, []byte(body), req)
	return req, err
}

func TestDecodeFillsTheRequest(t *testing.T) {
	body := `{"model":"fast","input":"hi","stream":true,"metadata":{"tag":"search"},"unknown_field":{"kept":1}}`
	req, err := decode(t, body)
	if err != nil {
		t.Fatal(err)
	}
	if req.Route != "fast" || !req.Stream || !req.WantsUsage || req.Tag != "search" || string(req.Body) != body {
		t.Errorf("request = route %q stream %v usage %v tag %q body %s", req.Route, req.Stream, req.WantsUsage, req.Tag, req.Body)
	}
}

// TestDecodeMarksNativeOnlyFeatures: features a translation cannot honour
// are not an error at decode (a native upstream may serve them) but are
// named on the request, so that translating targets refuse the attempt.
func TestDecodeMarksNativeOnlyFeatures(t *testing.T) {
	for _, tc := range []struct{ name, in, param, feature string }{
		{"tool inside a namespace", `{"model":"m","input":"x","tools":[{"type":"namespace","name":"ns","tools":[{"type":"web_search"}]}]}`, "tools[0].tools[0]", "the web_search tool"},
		{"previous_response_id", `{"model":"m","previous_response_id":"resp_1","input":"x"}`, "previous_response_id", "does not store conversations"},
		{"previous_response_id without input", `{"model":"m","previous_response_id":"resp_1"}`, "previous_response_id", "previous_response_id"},
		{"conversation", `{"model":"m","conversation":"conv_1","input":"x"}`, "conversation", "does not store conversations"},
		{"background", `{"model":"m","background":true,"input":"x"}`, "background", "background"},
		{"item_reference", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"item_reference","id":"msg_1"}]}`, "input[1]", "item_reference"},
		{"unknown item type", `{"model":"m","input":[{"role":"user","content":"x"},{"type":"custom_tool_call","call_id":"c","name":"n","input":"i"}]}`, "input[1]", "custom_tool_call"},
		{"image by file id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","file_id":"file_1"}]}]}`, "input[0].content[0]", "file_id"},
		{"built-in tool choice", `{"model":"m","input":"x","tool_choice":{"type":"web_search_preview"}}`, "tool_choice", "web_search_preview"},
		{"allowed_tools choice", `{"model":"m","input":"x","tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]}}`, "tool_choice", "allowed_tools"},
		{"file by file id", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_id":"file_1"}]}]}`, "input[0].content[0]", "file_id"},
		{"file id in tool output", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":[{"type":"input_image","file_id":"f"}]}]}`, "input[0].output[0]", "file_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := decode(t, tc.in)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(req.Untranslated) == 0 {
				t.Fatal("Untranslated not set")
			}
			f := req.Untranslated[0]
			if f.Param != tc.param || !strings.Contains(f.What+" "+f.Why, tc.feature) {
				t.Errorf("Untranslated[0] = %+v, want param %q naming %q", f, tc.param, tc.feature)
			}
		})
	}
}

func TestDecodeRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ name, in, param, msg string }{
		{"empty", ``, "", "empty"},
		{"not an object", `[1]`, "", "JSON object"},
		{"invalid json", `{"model":`, "", "not valid JSON"},
		// One pass checks the syntax and decodes: a syntax error wins over
		// keys, and the key checks win over a type error.
		{"invalid json, dup keys", `{"model":"a","model":"b",`, "", "not valid JSON"},
		{"dup nested key, type error", `{"model":3,"input":"x","metadata":{"a":"1","a":"2"}}`, "metadata.a", "more than once"},
		{"case-folded key, type error", `{"model":3,"INPUT":"x","input":"x"}`, "input", "case-sensitive"},
		{"redirect field, type error", `{"model":3,"input":"x","base_url":"http://evil"}`, "base_url", "not accepted"},
		{"duplicate model", `{"model":"a","model":"b","input":"x"}`, "model", "more than once"},
		{"case-folded model", `{"MODEL":"a","input":"x"}`, "MODEL", "case-sensitive"},
		{"redirect field", `{"model":"a","input":"x","base_url":"http://evil"}`, "base_url", "not accepted"},
		{"no model", `{"input":"x"}`, "model", "model is required"},
		{"model not a string", `{"model":3,"input":"x"}`, "model", "wrong type"},
		{"no input", `{"model":"m"}`, "input", "input is required"},
		{"input a number", `{"model":"m","input":3}`, "input", "string or an array"},
		{"item not an object", `{"model":"m","input":["x"]}`, "input[0]", "must be an object"},
		{"bad role", `{"model":"m","input":[{"role":"robot","content":"x"}]}`, "input[0].role", "not one of"},
		{"message without role", `{"model":"m","input":[{"type":"message","content":"x"}]}`, "input[0].role", "needs role"},
		{"content a number", `{"model":"m","input":[{"role":"user","content":5}]}`, "input[0].content", "string or an array"},
		{"text part without text", `{"model":"m","input":[{"role":"user","content":[{"type":"input_text"}]}]}`, "input[0].content[0].text", "needs text"},
		{"image without url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image"}]}]}`, "input[0].content[0].image_url", "needs image_url"},
		{"image bad data url", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/png,AAAA"}]}]}`, "input[0].content[0].image_url", "data URL"},
		{"file bad base64", `{"model":"m","input":[{"role":"user","content":[{"type":"input_file","file_data":"%%%","filename":"a.pdf"}]}]}`, "input[0].content[0].file_data", "base64"},
		{"custom tool without name", `{"model":"m","input":"x","tools":[{"type":"custom"}]}`, "tools[0].name", "needs name"},
		{"tool_choice unknown custom", `{"model":"m","input":"x","tool_choice":{"type":"custom","name":"g"},"tools":[{"type":"function","name":"g"}]}`, "tool_choice", "not in tools"},
		{"function_call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id", "call_id"},
		{"function_call without name", `{"model":"m","input":[{"type":"function_call","call_id":"c"}]}`, "input[0].name", "name"},
		{"output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id", "call_id"},
		{"output missing", `{"model":"m","input":[{"type":"function_call_output","call_id":"c"}]}`, "input[0].output", "output"},
		{"only reasoning", `{"model":"m","input":[{"type":"reasoning","summary":[]}]}`, "input", "no message"},
		{"function tool without name", `{"model":"m","input":"x","tools":[{"type":"function"}]}`, "tools[0].name", "needs name"},
		{"tool without type", `{"model":"m","input":"x","tools":[{"name":"f"}]}`, "tools[0].type", "needs type"},
		{"tool_choice unknown mode", `{"model":"m","input":"x","tool_choice":"sometimes"}`, "tool_choice", "not none, auto, required"},
		{"tool_choice unknown function", `{"model":"m","input":"x","tool_choice":{"type":"function","name":"g"},"tools":[{"type":"function","name":"f"}]}`, "tool_choice", "not in tools"},
		{"format unknown", `{"model":"m","input":"x","text":{"format":{"type":"yaml"}}}`, "text.format.type", "not text, json_object or json_schema"},
		{"json_schema without name", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","schema":{}}}}`, "text.format.name", "needs name"},
		{"json_schema without schema", `{"model":"m","input":"x","text":{"format":{"type":"json_schema","name":"n"}}}`, "text.format.schema", "needs schema"},
		{"bad verbosity", `{"model":"m","input":"x","text":{"verbosity":"loud"}}`, "text.verbosity", "not one of"},
		{"bad effort", `{"model":"m","input":"x","reasoning":{"effort":"max"}}`, "reasoning.effort", "not one of"},
		{"max_output_tokens zero", `{"model":"m","input":"x","max_output_tokens":0}`, "max_output_tokens", "between 1"},
		{"temperature too high", `{"model":"m","input":"x","temperature":3}`, "temperature", "between 0 and 2"},
		{"top_p too high", `{"model":"m","input":"x","top_p":1.5}`, "top_p", "between 0 and 1"},
		{"stream not a bool", `{"model":"m","input":"x","stream":"yes"}`, "stream", "wrong type"},
		{"store not a bool", `{"model":"m","input":"x","store":"no"}`, "store", "wrong type"},
		{"metadata value not a string", `{"model":"m","input":"x","metadata":{"a":1}}`, "metadata", "wrong type"},
		{"metadata too long", `{"model":"m","input":"x","metadata":{"k":"` + strings.Repeat("v", 513) + `"}}`, "metadata", "at most"},
		{"instructions not a string", `{"model":"m","input":"x","instructions":["a"]}`, "instructions", "wrong type"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decode(t, tc.in)
			var ge *gwerr.Error
			if !errors.As(err, &ge) {
				t.Fatalf("err = %v, want a *gwerr.Error", err)
			}
			if ge.Category != gwerr.InvalidRequest || ge.Param != tc.param || !strings.Contains(ge.Message, tc.msg) {
				t.Errorf("err = %s (param %q), want invalid_request on %q mentioning %q", ge.Message, ge.Param, tc.param, tc.msg)
			}
		})
	}
}

package responses_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
)

func txt(s string) exchange.Block { return exchange.Block{Type: exchange.BlockText, Text: s} }

func ptr[T any](v T) *T { return &v }

// TestDecodeToPrompt checks Responses -> canonical Prompt, case by case:
// what a translating adapter reads.
func TestDecodeToPrompt(t *testing.T) {
	user := func(bs ...exchange.Block) exchange.Message {
		return exchange.Message{Role: exchange.RoleUser, Content: bs}
	}
	asst := func(bs ...exchange.Block) exchange.Message {
		return exchange.Message{Role: exchange.RoleAssistant, Content: bs}
	}
	for _, tc := range []struct {
		name, in string
		want     exchange.Prompt
	}{
		{"instructions, leading developer message, string input",
			`{"model":"m","instructions":"Be brief.","input":[{"role":"developer","content":"dev rules"},{"role":"user","content":"hi"},{"role":"system","content":"late"}]}`,
			exchange.Prompt{System: []exchange.Block{txt("Be brief."), txt("dev rules")},
				Messages: []exchange.Message{user(txt("hi")), {Role: exchange.RoleSystem, Content: []exchange.Block{txt("late")}}}}},
		{"media as bytes and URLs",
			`{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"look"},` +
				`{"type":"input_image","image_url":"data:image/png;base64,iVBORw==","detail":"low"},{"type":"input_image","image_url":"https://x/cat.jpg"},` +
				`{"type":"input_file","filename":"a.pdf","file_data":"data:application/pdf;base64,JVBERg=="},{"type":"input_file","file_url":"https://x/b.pdf"}]}]}`,
			exchange.Prompt{Messages: []exchange.Message{user(txt("look"),
				exchange.Block{Type: exchange.BlockImage, MediaType: "image/png", Data: []byte{0x89, 'P', 'N', 'G'}, Detail: "low"},
				exchange.Block{Type: exchange.BlockImage, URL: "https://x/cat.jpg"},
				exchange.Block{Type: exchange.BlockDocument, MediaType: "application/pdf", Data: []byte("%PDF"), FileName: "a.pdf"},
				exchange.Block{Type: exchange.BlockDocument, URL: "https://x/b.pdf"})}}},
		{"reasoning opens the assistant turn; calls join it; outputs share a user turn",
			`{"model":"m","input":[{"role":"user","content":"weather?"},` +
				`{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"Plan."},{"type":"summary_text","text":"Check."}],"encrypted_content":"gAAAAB+x/="},` +
				`{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Checking."},{"type":"refusal","refusal":"not that"}]},` +
				`{"type":"function_call","call_id":"call_1","name":"get_weather","arguments":"{\"city\":\"Paris\"}"},` +
				`{"type":"function_call","call_id":"call_2","namespace":"ns","name":"get_time","arguments":""},` +
				`{"type":"function_call_output","call_id":"call_1","output":"18C"},` +
				`{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"noon"},{"type":"input_image","image_url":"https://x/clock.png"}]}]}`,
			exchange.Prompt{Messages: []exchange.Message{user(txt("weather?")),
				asst(exchange.Block{Type: exchange.BlockThinking, Text: "Plan.\n\nCheck.", Origin: exchange.ReasoningOpenAI},
					exchange.Block{Type: exchange.BlockRedactedThinking, Data: []byte("gAAAAB+x/="), Origin: exchange.ReasoningOpenAI},
					txt("Checking."), exchange.Block{Type: exchange.BlockRefusal, Text: "not that"},
					exchange.Block{Type: exchange.BlockToolUse, ToolID: "call_1", ToolName: "get_weather", Input: json.RawMessage(`{"city":"Paris"}`)},
					exchange.Block{Type: exchange.BlockToolUse, ToolID: "call_2", ToolName: "ns__get_time", Input: json.RawMessage(`{}`)}),
				user(exchange.Block{Type: exchange.BlockToolResult, ToolID: "call_1", Content: []exchange.Block{txt("18C")}},
					exchange.Block{Type: exchange.BlockToolResult, ToolID: "call_2", Content: []exchange.Block{txt("noon"), {Type: exchange.BlockImage, URL: "https://x/clock.png"}}})}}},
		{"tools of every kind, choice, format, sampling",
			`{"model":"m","input":"x","stream":true,"max_output_tokens":256,"temperature":0.5,"top_p":0.9,"user":"u1","parallel_tool_calls":false,` +
				`"reasoning":{"effort":"high","summary":"auto"},"metadata":{"tag":"search"},` +
				`"tools":[{"type":"function","name":"get_weather","description":"d","parameters":{"type":"object"},"strict":true},` +
				`{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar"}},{"type":"web_search","search_context_size":"low"}],` +
				`"tool_choice":{"type":"custom","name":"apply_patch"},` +
				`"text":{"format":{"type":"json_schema","name":"w","schema":{"type":"object"},"strict":true},"verbosity":"low"}}`,
			exchange.Prompt{Messages: []exchange.Message{user(txt("x"))},
				Tools: []exchange.Tool{
					{Kind: exchange.ToolFunction, Name: "get_weather", Description: "d", Schema: json.RawMessage(`{"type":"object"}`), Strict: ptr(true)},
					{Kind: exchange.ToolCustom, Name: "apply_patch", Description: "patch", Raw: json.RawMessage(`{"type":"custom","name":"apply_patch","description":"patch","format":{"type":"grammar"}}`)},
					{Kind: exchange.ToolBuiltin, Type: "web_search", Raw: json.RawMessage(`{"type":"web_search","search_context_size":"low"}`)}},
				ToolChoice: exchange.ToolChoice{Mode: exchange.ToolNamed, Name: "apply_patch", NoParallel: true},
				Sampling:   exchange.Sampling{MaxTokens: 256, Temperature: ptr(0.5), TopP: ptr(0.9)},
				Output: exchange.Output{Format: "json_schema", Schema: json.RawMessage(`{"type":"object"}`), SchemaName: "w", StrictSchema: true,
					Reasoning: exchange.ReasoningConfig{Effort: "high", Summary: "auto"}},
				User: "u1", Metadata: map[string]string{"tag": "search"}}},
		{"required", `{"model":"m","input":"x","tool_choice":"required","text":{"format":{"type":"json_object"}}}`,
			exchange.Prompt{Messages: []exchange.Message{user(txt("x"))}, ToolChoice: exchange.ToolChoice{Mode: exchange.ToolAny}, Output: exchange.Output{Format: "json_object"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := decode(t, tc.in)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if len(req.Untranslated) != 0 {
				t.Errorf("Untranslated = %+v, want none: the Prompt carries all of it", req.Untranslated)
			}
			if !reflect.DeepEqual(*req.Prompt, tc.want) {
				got, _ := json.Marshal(req.Prompt)
				want, _ := json.Marshal(tc.want)
				t.Errorf("prompt\n got %s\nwant %s", got, want)
			}
		})
	}
}

package anthropic

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

func TestTranslateResponse(t *testing.T) {
	cases := []struct {
		name, in, want string
		usage          exchange.TokenUsage
	}{
		{"text",
			`{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Hello"},{"type":"text","text":" there"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":3}}`,
			`{"id":"chatcmpl-msg_01","object":"chat.completion","created":1700000000,"model":"claude-sonnet-4-5","choices":[{"index":0,"message":{"role":"assistant","content":"Hello there","refusal":null},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":10,"completion_tokens":3,"total_tokens":13}}`,
			exchange.TokenUsage{Input: 10, Output: 3}},
		{"tool_use",
			`{"id":"msg_02","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[{"type":"text","text":"Checking."},{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city": "Paris"}},{"type":"tool_use","id":"toolu_2","name":"now","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":100,"output_tokens":40}}`,
			`{"id":"chatcmpl-msg_02","object":"chat.completion","created":1700000000,"model":"claude-sonnet-4-5","choices":[{"index":0,"message":{"role":"assistant","content":"Checking.","refusal":null,"tool_calls":[
				{"id":"toolu_1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}},
				{"id":"toolu_2","type":"function","function":{"name":"now","arguments":"{}"}}]},"finish_reason":"tool_calls","logprobs":null}],"usage":{"prompt_tokens":100,"completion_tokens":40,"total_tokens":140}}`,
			exchange.TokenUsage{Input: 100, Output: 40}},
		{"only_tool_use_has_null_content",
			`{"id":"msg_03","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"f","input":{}}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":2}}`,
			`{"id":"chatcmpl-msg_03","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}`,
			exchange.TokenUsage{Input: 1, Output: 2}},
		{"cached_usage_and_max_tokens",
			`{"id":"msg_04","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"Cut"}],"stop_reason":"max_tokens","usage":{"input_tokens":5,"cache_creation_input_tokens":100,"cache_read_input_tokens":900,"output_tokens":1}}`,
			`{"id":"chatcmpl-msg_04","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"Cut","refusal":null},"finish_reason":"length","logprobs":null}],"usage":{"prompt_tokens":1005,"completion_tokens":1,"total_tokens":1006,"prompt_tokens_details":{"cached_tokens":900,"cache_creation_tokens":100}}}`,
			exchange.TokenUsage{Input: 1005, Output: 1, CacheRead: 900, CacheWrite: 100}},
		{"thinking_to_reasoning_content_and_refusal",
			`{"id":"msg_05","type":"message","role":"assistant","model":"m","content":[{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},{"type":"text","text":"No."}],"stop_reason":"refusal","usage":{"input_tokens":5,"output_tokens":9}}`,
			`{"id":"chatcmpl-msg_05","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"No.","reasoning_content":"hmm","refusal":null},"finish_reason":"content_filter","logprobs":null}],"usage":{"prompt_tokens":5,"completion_tokens":9,"total_tokens":14}}`,
			exchange.TokenUsage{Input: 5, Output: 9}},
		{"stop_sequence",
			`{"id":"msg_06","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"a"}],"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":1,"output_tokens":1}}`,
			`{"id":"chatcmpl-msg_06","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"a","refusal":null},"finish_reason":"stop","logprobs":null}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`,
			exchange.TokenUsage{Input: 1, Output: 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			evs, u, err := translateResponse("anth", []byte(c.in), testCreated)
			if err != nil {
				t.Fatal(err)
			}
			if evs[0].Kind != exchange.Start || evs[0].Created != testCreated || strings.HasPrefix(evs[0].ID, "chatcmpl-") {
				t.Errorf("first event %+v, want Start with the upstream id", evs[0])
			}
			if last := evs[len(evs)-1]; last.Kind != exchange.Usage || last.Usage != c.usage {
				t.Errorf("last event %+v, want the usage", last)
			}
			got := chatCompletion(t, evs, u)
			if !reflect.DeepEqual(canon(t, got), canon(t, []byte(c.want))) {
				t.Errorf("got  %s\nwant %s", got, compact(t, c.want))
			}
			if u != c.usage {
				t.Errorf("usage = %+v, want %+v", u, c.usage)
			}
		})
	}
}

// TestTranslateResponseEvents checks the events of a response with every
// kind of block, in block order: the signature and the redacted data are
// kept, tool input becomes compact JSON arguments, the stop reason and
// sequence ride on Finish.
func TestTranslateResponseEvents(t *testing.T) {
	in := `{"id":"msg_07","type":"message","role":"assistant","model":"m","content":[
		{"type":"thinking","thinking":"hmm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},
		{"type":"text","text":"a"},{"type":"tool_use","id":"toolu_1","name":"f","input":{ "k" : [1, 2] }},
		{"type":"tool_use","id":"toolu_2","name":"g","input":null},{"type":"text","text":"b"}],
		"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":3,"cache_read_input_tokens":2,"output_tokens":4}}`
	evs, u, err := translateResponse("anth", []byte(in), testCreated)
	if err != nil {
		t.Fatal(err)
	}
	wantU := exchange.TokenUsage{Input: 5, Output: 4, CacheRead: 2}
	want := []exchange.Event{
		{Kind: exchange.Start, ID: "msg_07", Name: "m", Created: testCreated},
		{Kind: exchange.Reasoning, Text: "hmm"},
		{Kind: exchange.Signature, Text: "sig"},
		{Kind: exchange.RedactedReasoning, Text: "xx"},
		{Kind: exchange.Text, Text: "a"},
		{Kind: exchange.ToolCall, Index: 0, ID: "toolu_1", Name: "f"},
		{Kind: exchange.ToolArgs, Index: 0, Text: `{"k":[1,2]}`},
		{Kind: exchange.ToolCall, Index: 1, ID: "toolu_2", Name: "g"},
		{Kind: exchange.ToolArgs, Index: 1, Text: "{}"},
		{Kind: exchange.Text, Text: "b"},
		{Kind: exchange.Finish, Finish: exchange.FinishStop, Stop: "stop_sequence", StopSequence: "END"},
		{Kind: exchange.Usage, Usage: wantU},
	}
	if !reflect.DeepEqual(evs, want) || u != wantU {
		t.Errorf("events\n got %+v\nwant %+v\nusage %+v", evs, want, u)
	}
}

func TestTranslateResponseEmptyIsEmptyResponse(t *testing.T) {
	for _, body := range []string{
		`{"id":"msg_e","type":"message","role":"assistant","model":"m","content":[],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":0}}`,
		`{"id":"msg_e","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":""}],"stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":0}}`,
	} {
		_, _, err := translateResponse("anth", []byte(body), testCreated)
		var ge *gwerr.Error
		if !errors.As(err, &ge) || ge.Code != "empty_response" {
			t.Errorf("%s: err = %v, want provider.EmptyResponse", body, err)
		}
	}
}

package messageswire

import (
	"encoding/json"
	"testing"
)

func TestStreamEventDecoding(t *testing.T) {
	var ev StreamEvent
	if err := json.Unmarshal([]byte(`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":89}}`), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Type != EventMessageDelta || ev.Delta.StopReason != StopToolUse || ev.Usage.OutputTokens == nil || *ev.Usage.OutputTokens != 89 ||
		ev.Usage.InputTokens != nil || ev.Usage.CacheReadInputTokens != nil {
		t.Errorf("message_delta decoded as %+v %+v", ev.Delta, ev.Usage)
	}
	ev = StreamEvent{}
	if err := json.Unmarshal([]byte(`{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}`), &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Index != 2 || ev.ContentBlock.Type != BlockToolUse || ev.ContentBlock.ID != "toolu_1" || ev.ContentBlock.Name != "f" {
		t.Errorf("content_block_start decoded as %+v", ev.ContentBlock)
	}
	ev = StreamEvent{}
	if err := json.Unmarshal([]byte(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"model":"claude-x","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":3,"cache_read_input_tokens":4,"output_tokens":1}}}`), &ev); err != nil {
		t.Fatal(err)
	}
	if m := ev.Message; m.ID != "msg_1" || m.Model != "claude-x" || m.Usage != (Usage{InputTokens: 25, OutputTokens: 1, CacheCreationInputTokens: 3, CacheReadInputTokens: 4}) {
		t.Errorf("message_start decoded as %+v", m)
	}
	var e ErrorResponse
	if err := json.Unmarshal([]byte(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_1"}`), &e); err != nil {
		t.Fatal(err)
	}
	if e.Type != EventError || e.Error.Type != "overloaded_error" || e.Error.Message != "Overloaded" {
		t.Errorf("error decoded as %+v", e)
	}
}

func TestRequestEncodingOmitsUnsetFields(t *testing.T) {
	b, err := json.Marshal(Request{Model: "claude-x", MaxTokens: 10, Messages: []Message{{Role: RoleUser, Content: []ContentBlock{{Type: BlockText, Text: "hi"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude-x","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`
	if string(b) != want {
		t.Errorf("got  %s\nwant %s", b, want)
	}
}

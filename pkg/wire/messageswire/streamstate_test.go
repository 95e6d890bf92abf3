package messageswire

import (
	"errors"
	"testing"
)

// TestStreamState: message_start's usage is kept (a repeated one
// ignored), message_delta's cumulative figures merged, the first
// stop_reason reported once, message_stop before any stop_reason refused,
// a container noted from any event, and the figures estimated until the
// upstream gave them.
func TestStreamState(t *testing.T) {
	est := func(n int) int { return (n + 3) / 4 }
	var s StreamState
	if u, estimated := s.Figures(40, 8, est); !estimated || u.InputTokens != 10 || u.OutputTokens != 2 {
		t.Errorf("before message_start: %+v %v, want estimates 10 and 2", u, estimated)
	}
	apply := func(event, data string) (bool, error) {
		ei := InspectEvent([]byte(event), []byte(data))
		return s.Apply(&ei)
	}
	if _, err := apply("message_stop", `{"type":"message_stop"}`); !errors.Is(err, ErrStopWithoutReason) {
		t.Errorf("message_stop first: %v", err)
	}
	apply("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":7,"output_tokens":1}}}`)
	apply("message_start", `{"type":"message_start","message":{"usage":{"input_tokens":99,"output_tokens":1}}}`)
	if u, estimated := s.Figures(40, 80, est); !estimated || u.InputTokens != 7 || u.OutputTokens != 20 {
		t.Errorf("after message_start: %+v %v, want input 7 and the output estimate 20", u, estimated)
	}
	apply("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"s","name":"web_search","input":{}}}`)
	if s.Container {
		t.Error("a web search block counted as a container")
	}
	first, _ := apply("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","container":{"id":"container_1"}},"usage":{"output_tokens":3,"server_tool_use":{"web_search_requests":2}}}`)
	again, _ := apply("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":4}}`)
	if !first || again {
		t.Errorf("first stop %v, second %v: want true then false", first, again)
	}
	if _, err := apply("message_stop", `{"type":"message_stop"}`); err != nil || !s.Stopped {
		t.Errorf("message_stop after the stop_reason: %v, stopped %v", err, s.Stopped)
	}
	u, estimated := s.Figures(40, 80, est)
	if estimated || u.InputTokens != 7 || u.OutputTokens != 4 || u.ServerToolUse.WebSearchRequests != 2 || !s.Container {
		t.Errorf("final: %+v estimated %v container %v", u, estimated, s.Container)
	}
}

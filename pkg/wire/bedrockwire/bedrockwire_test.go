package bedrockwire

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

func TestFramesDecodeWithValidCRCs(t *testing.T) {
	var b []byte
	b = AppendEvent(b, EventContentBlockDelta, AppendDelta(nil, 0, DeltaText, "hi \"x\""))
	b = AppendException(b, StreamModelStreamError, "cut")
	b = AppendEvent(b, EventChunk, AppendChunk(nil, []byte(`{"type":"message_stop"}`)))
	r := bytes.NewReader(b)
	dec := eventstream.NewDecoder()
	want := []struct{ msgType, typeHeader, typ string }{
		{"event", ":event-type", EventContentBlockDelta},
		{"exception", ":exception-type", StreamModelStreamError},
		{"event", ":event-type", EventChunk},
	}
	var payloads [][]byte
	for i, w := range want {
		m, err := dec.Decode(r, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got := m.Headers.Get(":message-type").String(); got != w.msgType {
			t.Errorf("frame %d :message-type %q, want %q", i, got, w.msgType)
		}
		if got := m.Headers.Get(w.typeHeader).String(); got != w.typ {
			t.Errorf("frame %d %s %q, want %q", i, w.typeHeader, got, w.typ)
		}
		if got := m.Headers.Get(":content-type").String(); got != "application/json" {
			t.Errorf("frame %d :content-type %q", i, got)
		}
		payloads = append(payloads, append([]byte(nil), m.Payload...))
	}
	if r.Len() != 0 {
		t.Fatalf("%d bytes left over", r.Len())
	}
	var d struct {
		Delta struct {
			Text string `json:"text"`
		} `json:"delta"`
		Index *int `json:"contentBlockIndex"`
	}
	if err := json.Unmarshal(payloads[0], &d); err != nil || d.Delta.Text != "hi \"x\"" || d.Index == nil {
		t.Errorf("delta payload %s: %v", payloads[0], err)
	}
	if string(payloads[1]) != `{"message":"cut"}` {
		t.Errorf("exception payload %s", payloads[1])
	}
	var c struct {
		Bytes []byte `json:"bytes"`
	}
	if err := json.Unmarshal(payloads[2], &c); err != nil || string(c.Bytes) != `{"type":"message_stop"}` {
		t.Errorf("chunk payload %s: %v", payloads[2], err)
	}
	// A flipped payload byte fails the message CRC.
	bad := AppendEvent(nil, EventMessageStop, AppendMessageStop(nil, StopEndTurn))
	bad[len(bad)-6] ^= 1
	if _, err := dec.Decode(bytes.NewReader(bad), nil); err == nil {
		t.Error("a corrupted frame decoded")
	}
}

func TestParsePath(t *testing.T) {
	for _, c := range []struct {
		path, id string
		op       Operation
		ok       bool
	}{
		{"/model/us.anthropic.claude-sonnet-4-5-20250929-v1:0/converse", "us.anthropic.claude-sonnet-4-5-20250929-v1:0", Converse, true},
		{"/model/arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.x/invoke-with-response-stream", "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.x", InvokeModelWithResponseStream, true},
		{"/model/demo/count-tokens", "demo", CountTokens, true},
		{"/model/demo/explode", "", "", false},
		{"/model//converse", "", "", false},
		{"/v1/messages", "", "", false},
	} {
		id, op, ok := ParsePath(c.path)
		if id != c.id || op != c.op || ok != c.ok {
			t.Errorf("ParsePath(%q) = %q %q %v, want %q %q %v", c.path, id, op, ok, c.id, c.op, c.ok)
		}
	}
}

func TestUsageAndResponseShapes(t *testing.T) {
	body := AppendConverseResponse(nil, AppendTextBlock(nil, "ok"), StopEndTurn, Usage{Input: 3, Output: 2, CacheRead: 5}, 7)
	var v map[string]any
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	want := `{"output":{"message":{"role":"assistant","content":[{"text":"ok"}]}},"stopReason":"end_turn","usage":{"inputTokens":3,"outputTokens":2,"totalTokens":10,"cacheReadInputTokens":5,"cacheWriteInputTokens":0},"metrics":{"latencyMs":7}}`
	if string(body) != want {
		t.Errorf("got  %s\nwant %s", body, want)
	}
}

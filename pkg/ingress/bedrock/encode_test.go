package bedrock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// frame is one decoded event-stream message.
type frame struct {
	kind, typ string // :message-type, and :event-type or :exception-type
	payload   string
}

func decodeFrames(t *testing.T, b []byte) []frame {
	t.Helper()
	var out []frame
	r := bytes.NewReader(b)
	for r.Len() > 0 {
		m, err := eventstream.NewDecoder().Decode(r, nil)
		if err != nil {
			t.Fatalf("frame %d: %v", len(out), err)
		}
		f := frame{kind: m.Headers.Get(":message-type").String(), payload: string(m.Payload)}
		if f.kind == "event" {
			f.typ = m.Headers.Get(":event-type").String()
		} else {
			f.typ = m.Headers.Get(":exception-type").String()
		}
		out = append(out, f)
	}
	return out
}

// answer is a response with reasoning, text and a tool call.
var answer = []exchange.Event{
	{Kind: exchange.Start, ID: "msg_1", Name: "m"},
	{Kind: exchange.Reasoning, Text: "think"},
	{Kind: exchange.Signature, Text: "sig"},
	{Kind: exchange.Text, Text: "Hi"},
	{Kind: exchange.Text, Text: " there"},
	{Kind: exchange.ToolCall, Index: 0, ID: "t1", Name: "get"},
	{Kind: exchange.ToolArgs, Index: 0, Text: `{"a":`},
	{Kind: exchange.ToolArgs, Index: 0, Text: `1}`},
	{Kind: exchange.Finish, Finish: exchange.FinishToolCalls, Stop: "tool_use"},
	{Kind: exchange.Usage, Usage: exchange.TokenUsage{Input: 10, Output: 5, CacheRead: 4}},
}

func TestConverseBody(t *testing.T) {
	enc := newConverseEncoder(&exchange.Request{Start: time.Now()})
	for i := range answer {
		enc.Event(nil, &answer[i])
	}
	body := enc.End(nil, exchange.TokenUsage{})
	var got struct {
		Output struct {
			Message struct {
				Role    string
				Content []map[string]json.RawMessage
			}
		}
		StopReason string
		Usage      map[string]int
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	c := got.Output.Message.Content
	if len(c) != 3 || string(c[0]["reasoningContent"]) != `{"reasoningText":{"text":"think","signature":"sig"}}` ||
		string(c[1]["text"]) != `"Hi there"` || string(c[2]["toolUse"]) != `{"toolUseId":"t1","name":"get","input":{"a":1}}` {
		t.Errorf("content %s", body)
	}
	if got.StopReason != "tool_use" || got.Usage["inputTokens"] != 6 || got.Usage["cacheReadInputTokens"] != 4 || got.Usage["totalTokens"] != 15 {
		t.Errorf("stop %q usage %v", got.StopReason, got.Usage)
	}
}

func TestConverseStreamFrames(t *testing.T) {
	enc := newConverseEncoder(&exchange.Request{Stream: true, Start: time.Now()})
	var b []byte
	for i := range answer {
		b = enc.Event(b, &answer[i])
	}
	b = enc.End(b, exchange.TokenUsage{})
	var types []string
	fs := decodeFrames(t, b)
	for _, f := range fs {
		types = append(types, f.typ)
	}
	want := "messageStart,contentBlockDelta,contentBlockDelta,contentBlockStop,contentBlockDelta,contentBlockDelta,contentBlockStop," +
		"contentBlockStart,contentBlockDelta,contentBlockDelta,contentBlockStop,messageStop,metadata"
	if got := strings.Join(types, ","); got != want {
		t.Fatalf("events %s\nwant   %s", got, want)
	}
	for i, want := range map[int]string{
		2:  `{"delta":{"reasoningContent":{"signature":"sig"}},"contentBlockIndex":0}`,
		4:  `{"delta":{"text":"Hi"},"contentBlockIndex":1}`,
		7:  `{"start":{"toolUse":{"toolUseId":"t1","name":"get"}},"contentBlockIndex":2}`,
		8:  `{"delta":{"toolUse":{"input":"{\"a\":"}},"contentBlockIndex":2}`,
		11: `{"stopReason":"tool_use"}`,
	} {
		if fs[i].payload != want {
			t.Errorf("frame %d %s, want %s", i, fs[i].payload, want)
		}
	}
}

func TestConverseStreamFailIsAnExceptionFrame(t *testing.T) {
	enc := newConverseEncoder(&exchange.Request{Stream: true})
	b := enc.Event(nil, &exchange.Event{Kind: exchange.Text, Text: "Hel"})
	b = enc.Fail(b, gwerr.New(gwerr.Interrupted, "the upstream broke off"), "req_1", exchange.TokenUsage{})
	fs := decodeFrames(t, b)
	last := fs[len(fs)-1]
	if last.kind != "exception" || last.typ != bedrockwire.StreamModelStreamError || !strings.Contains(last.payload, "broke off") {
		t.Errorf("last frame %+v", last)
	}
	for _, f := range fs {
		if f.typ == bedrockwire.EventMessageStop || f.typ == bedrockwire.EventMetadata {
			t.Errorf("a failed stream has %s", f.typ)
		}
	}
}

// rawFrames are an Anthropic upstream's frames as the passthrough relays
// them (one Raw event each).
var rawFrames = []string{
	"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"usage\":{\"input_tokens\":3}}}\n\n",
	"event: ping\ndata: {\"type\": \"ping\"}\n\n",
	"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
	"event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
}

func chunks(t *testing.T, b []byte) ([]string, frame) {
	t.Helper()
	var out []string
	fs := decodeFrames(t, b)
	for _, f := range fs {
		if f.typ != bedrockwire.EventChunk {
			continue
		}
		var c struct{ Bytes string }
		json.Unmarshal([]byte(f.payload), &c)
		raw, err := base64.StdEncoding.DecodeString(c.Bytes)
		if err != nil {
			t.Fatalf("chunk %s: %v", f.payload, err)
		}
		out = append(out, string(raw))
	}
	return out, fs[len(fs)-1]
}

func TestInvokeStreamReframesPassthroughFrames(t *testing.T) {
	in := Ingress{Op: bedrockwire.InvokeModelWithResponseStream}
	enc := in.NewEncoder(&exchange.Request{Stream: true, API: exchange.Messages, Route: "claude", Start: time.Now()})
	if enc.ContentType() != bedrockwire.EventStreamType {
		t.Errorf("content type %s", enc.ContentType())
	}
	var b []byte
	for _, f := range rawFrames {
		b = enc.Event(b, &exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages, Raw: []byte(f)})
	}
	b = enc.End(b, exchange.TokenUsage{Input: 3, Output: 1})
	got, _ := chunks(t, b)
	if len(got) != 3 || !strings.HasPrefix(got[0], `{"type":"message_start"`) || !strings.Contains(got[1], `"text":"Hi"`) {
		t.Fatalf("chunks %q", got)
	}
	var stop struct {
		Type    string
		Metrics struct{ InputTokenCount, OutputTokenCount int } `json:"amazon-bedrock-invocationMetrics"`
	}
	if err := json.Unmarshal([]byte(got[2]), &stop); err != nil || stop.Type != "message_stop" || stop.Metrics.InputTokenCount != 3 || stop.Metrics.OutputTokenCount != 1 {
		t.Errorf("last chunk %s: %v", got[2], err)
	}
}

func TestInvokeStreamTranslatedAndFailed(t *testing.T) {
	in := Ingress{Op: bedrockwire.InvokeModelWithResponseStream}
	enc := in.NewEncoder(&exchange.Request{Stream: true, API: exchange.Messages, Route: "claude"})
	b := enc.Event(nil, &exchange.Event{Kind: exchange.Text, Text: "Hi"})
	b = enc.Fail(b, gwerr.New(gwerr.Interrupted, "cut"), "req_1", exchange.TokenUsage{})
	got, last := chunks(t, b)
	if len(got) != 3 || !strings.HasPrefix(got[0], `{"type":"message_start"`) || !strings.Contains(got[2], `"text_delta","text":"Hi"`) {
		t.Errorf("chunks %q", got)
	}
	if last.kind != "exception" || last.typ != bedrockwire.StreamModelStreamError {
		t.Errorf("last frame %+v", last)
	}
}

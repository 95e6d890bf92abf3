package anthropic

import (
	"encoding/json"
	"testing"

	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// benchTranslator returns a translator past message_start with a text
// block at index 0 and a tool_use block at index 1.
func benchTranslator(b *testing.B) *streamTranslator {
	t := &streamTranslator{prov: "anth", created: testCreated}
	for _, ev := range [][2]string{
		{"message_start", `{"type":"message_start","message":{"id":"msg_014p7gG3wDgGV9EUtLvnow3U","type":"message","role":"assistant","content":[],"model":"claude-sonnet-4-5-20250929","stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"output_tokens":2}}}`},
		{"content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`},
		{"content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_01T1x1fJ34qAmk2tNTrN7Up6","name":"get_weather","input":{}}}`},
	} {
		if _, err := t.event([]byte(ev[0]), []byte(ev[1])); err != nil {
			b.Fatal(err)
		}
	}
	return t
}

var (
	benchDeltaEvent   = []byte("content_block_delta")
	benchTextDelta    = []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"The quick brown fox jumps over the lazy dog"}}`)
	benchEscapedDelta = []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"line one\nline \"two\"\tcaf\u00e9"}}`)
	benchJSONDelta    = []byte(`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"location\": \"San Fra"}}`)
)

func benchEvent(b *testing.B, data []byte) {
	t := benchTranslator(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	b.ResetTimer()
	for b.Loop() {
		ev, err := t.event(benchDeltaEvent, data)
		if err != nil || ev.Text == "" {
			b.Fatal("no event")
		}
	}
}

// BenchmarkTextDelta translates one text_delta event into one Text event.
func BenchmarkTextDelta(b *testing.B) { benchEvent(b, benchTextDelta) }

// BenchmarkTextDeltaEscaped is a text_delta whose text holds JSON escapes.
func BenchmarkTextDeltaEscaped(b *testing.B) { benchEvent(b, benchEscapedDelta) }

// BenchmarkInputJSONDelta translates one input_json_delta event.
func BenchmarkInputJSONDelta(b *testing.B) { benchEvent(b, benchJSONDelta) }

// BenchmarkTextDeltaUnmarshal is the alternative measured against the hot
// path: decoding the event with encoding/json into the wire struct to get
// the same text.
func BenchmarkTextDeltaUnmarshal(b *testing.B) {
	b.ReportAllocs()
	b.SetBytes(int64(len(benchTextDelta)))
	for b.Loop() {
		var ev messageswire.StreamEvent
		if err := json.Unmarshal(benchTextDelta, &ev); err != nil {
			b.Fatal(err)
		}
		if ev.Delta.Text == "" {
			b.Fatal("no text")
		}
	}
}

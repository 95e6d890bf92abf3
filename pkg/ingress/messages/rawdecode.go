package messages

import (
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/sse"
	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

var _ ingress.RawDecoder = Ingress{}

// DecodeRaw implements ingress.RawDecoder: it reads an Anthropic upstream's
// passthrough frame (a whole SSE frame, event line included) or whole
// Message body back into canonical events through the Messages wire reader
// (messageswire.ReadEvent, messageswire.ReadMessage): Start, text,
// thinking and its signature, redacted thinking, tool calls (numbered by
// their content block index) and their input, the finish with its
// stop_reason and stop_sequence; a body's usage too (a stream's usage is
// only whole at its end: the stream's own figures stand for it).
//
// Only what the stream encoder can write back is accepted: an error, a
// citation, a server tool's block or any other block or delta type the
// canonical events do not carry is refused (ok false).
func (Ingress) DecodeRaw(dst []exchange.Event, ev *exchange.Event) ([]exchange.Event, bool) {
	if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Messages {
		return dst, false
	}
	var ei messageswire.EventInfo
	var parts []delta.Part
	if ev.Flags&exchange.Whole != 0 {
		if !gjson.ValidBytes(ev.Raw) {
			return dst, false
		}
		ei, parts = messageswire.ReadMessage(nil, ev.Raw)
	} else {
		f := sse.ParseFrame(ev.Raw)
		if !gjson.ValidBytes(f.Data) {
			return dst, false
		}
		ei, parts = messageswire.ReadEvent(nil, f.Event, f.Data)
	}
	if ei.Error {
		return dst, false
	}
	return exchange.AppendParts(dst, parts)
}

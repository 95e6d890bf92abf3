package bedrock

import (
	"bytes"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/ingress/messages"
	"github.com/llmgw/llmgw/pkg/sse"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
	"github.com/llmgw/llmgw/pkg/wire/delta"
)

// chunkEncoder writes an InvokeModelWithResponseStream answer for a Claude
// body: the Messages encoder makes the Anthropic stream (an Anthropic
// upstream's own frames relayed untouched, or events built from any other
// upstream's), and each of its server-sent events becomes one `chunk`
// event whose bytes are the event's JSON, as Bedrock sends Claude's
// stream. ping events are dropped (Bedrock sends none); message_stop is
// held until the end and carries amazon-bedrock-invocationMetrics, as
// Bedrock's last chunk does. A failure is one exception frame
// (streamException), never a clean end: an Anthropic error event is never
// passed on as a chunk.
type chunkEncoder struct {
	inner ingress.Encoder
	start time.Time
	first time.Time // when the first chunk was written

	sse     []byte // the inner encoder's bytes not yet split into events
	scratch []byte
	stop    []byte // the held message_stop event's JSON
}

func (e *chunkEncoder) ContentType() string { return bedrockwire.EventStreamType }

func (e *chunkEncoder) Event(dst []byte, ev *exchange.Event) []byte {
	e.scratch = e.inner.Event(e.scratch[:0], ev)
	return e.reframe(dst, e.scratch)
}

// reframe splits the Anthropic stream bytes b into events and appends a
// chunk for each complete one.
func (e *chunkEncoder) reframe(dst, b []byte) []byte {
	e.sse = append(e.sse, b...)
	for {
		i := bytes.Index(e.sse, []byte("\n\n"))
		if i < 0 {
			return dst
		}
		f := sse.ParseFrame(e.sse[:i+1])
		dst = e.chunk(dst, f)
		e.sse = e.sse[:copy(e.sse, e.sse[i+2:])]
	}
}

// chunk appends the chunk of one Anthropic event.
func (e *chunkEncoder) chunk(dst []byte, f sse.Frame) []byte {
	data := bytes.TrimSpace(f.Data)
	if len(data) == 0 {
		return dst
	}
	typ := string(f.Event)
	if typ == "" {
		typ = gjson.GetBytes(data, "type").String()
	}
	switch typ {
	case "ping":
		return dst
	case "error":
		msg := gjson.GetBytes(data, "error.message").String()
		if msg == "" {
			msg = "the model's stream failed"
		}
		return bedrockwire.AppendException(dst, bedrockwire.StreamModelStreamError, msg)
	case "message_stop":
		e.stop = append(e.stop[:0], data...)
		return dst
	}
	if e.first.IsZero() {
		e.first = time.Now()
	}
	return bedrockwire.AppendEvent(dst, bedrockwire.EventChunk, bedrockwire.AppendChunk(nil, data))
}

func (e *chunkEncoder) End(dst []byte, u exchange.TokenUsage) []byte {
	e.scratch = e.inner.End(e.scratch[:0], u)
	dst = e.reframe(dst, e.scratch)
	stop := e.stop
	if len(stop) == 0 || stop[len(stop)-1] != '}' {
		stop = []byte(`{"type":"message_stop"}`)
	}
	m := bedrockwire.InvocationMetrics{InputTokens: max(0, u.Input-u.CacheRead-u.CacheWrite), OutputTokens: u.Output,
		CacheRead: u.CacheRead, CacheWrite: u.CacheWrite, LatencyMs: time.Since(e.start).Milliseconds()}
	if !e.first.IsZero() {
		m.FirstByteLatencyMs = e.first.Sub(e.start).Milliseconds()
	}
	last := append([]byte(nil), stop[:len(stop)-1]...)
	last = append(last, `,"`+bedrockwire.InvocationMetricsMember+`":`...)
	last = bedrockwire.AppendInvocationMetrics(last, m)
	last = append(last, '}')
	return bedrockwire.AppendEvent(dst, bedrockwire.EventChunk, bedrockwire.AppendChunk(nil, last))
}

func (e *chunkEncoder) Fail(dst []byte, ge *gwerr.Error, _ string, _ exchange.TokenUsage) []byte {
	return bedrockwire.AppendException(dst, streamException(ge, true), message(ge))
}

var _ ingress.RawDecoder = Ingress{}

// DecodeRaw implements ingress.RawDecoder (for the response cache and
// pacing): for InvokeModel's Claude bodies an Anthropic upstream's
// passthrough frames are the Messages API's, read back by its decoder;
// for Converse a Bedrock upstream's frames (or whole body) are read by
// bedrockwire.ReadEvent (bedrockwire.ReadResponse). A frame holding what
// the canonical events cannot carry (citations, images, an unknown event)
// is refused (ok false).
func (i Ingress) DecodeRaw(dst []exchange.Event, ev *exchange.Event) ([]exchange.Event, bool) {
	if i.invoke() {
		return messages.Ingress{}.DecodeRaw(dst, ev)
	}
	if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Converse {
		return dst, false
	}
	var parts []delta.Part
	if ev.Flags&exchange.Whole != 0 {
		if !gjson.ValidBytes(ev.Raw) {
			return dst, false
		}
		_, parts = bedrockwire.ReadResponse(nil, ev.Raw)
	} else {
		fr, err := bedrockwire.ParseFrame(ev.Raw)
		if err != nil || fr.Exception {
			return dst, false
		}
		_, parts = bedrockwire.ReadEvent(nil, fr.Type, fr.Payload)
	}
	return exchange.AppendParts(dst, parts)
}

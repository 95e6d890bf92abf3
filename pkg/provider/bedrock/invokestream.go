package bedrock

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"io"
	"sync"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// metricsKey is the member Bedrock adds to the last chunk of a stream.
const metricsKey = "amazon-bedrock-invocationMetrics"

// invokeEvents is what invokeStream reads:
// *bedrockruntime.InvokeModelWithResponseStreamEventStream.
type invokeEvents interface {
	Events() <-chan types.ResponseStream
	Close() error
	Err() error
}

// invokeStream relays an InvokeModelWithResponseStream response: each
// chunk's bytes are one Anthropic stream event, relayed as the SSE frame
// Anthropic sends for it ("event: <type>\ndata: <json>\n\n"; one Raw
// event, RawAPI exchange.Messages), with the flags the Anthropic adapter's
// passthrough gives it (messageswire.InspectEvent: HasContent for output,
// HasFinish with the stop_reason of message_delta). Bedrock's
// amazon-bedrock-invocationMetrics member is taken off the frame (an
// Anthropic client never sees it) and read for the usage the events did
// not give. message_stop is the last event, then io.EOF; a stream that
// ends before it, or reaches it without a stop_reason, is interrupted;
// an error event is provider.InBandError; an exception inside the stream
// is classified by streamError (before the first content the failover
// engine may retry it). A chunk that is not valid JSON is skipped and
// counted on the trace (MalformedFrames).
type invokeStream struct {
	id       string
	ctx      context.Context
	es       invokeEvents
	reqBytes int
	trace    *exchange.Trace
	// malformed counts the outer frames the body filter dropped.
	malformed *atomic.Int64
	counted   int64
	frame     []byte
	closeOnce sync.Once

	st    messageswire.StreamState
	chars int
	// tier is the service tier the response header names.
	tier string
}

// Next implements provider.Stream.
func (s *invokeStream) Next() (exchange.Event, error) {
	for {
		if s.st.Stopped {
			return exchange.Event{}, io.EOF
		}
		var ev types.ResponseStream
		var ok bool
		select {
		case ev, ok = <-s.es.Events():
		case <-s.ctx.Done():
			s.Close()
			return exchange.Event{}, provider.TransportError(s.ctx, s.id, s.ctx.Err())
		}
		s.countMalformed()
		if !ok {
			return exchange.Event{}, s.ended()
		}
		chunk, isChunk := ev.(*types.ResponseStreamMemberChunk)
		if !isChunk || len(chunk.Value.Bytes) == 0 {
			continue
		}
		out, skip, err := s.relay(chunk.Value.Bytes)
		if err != nil {
			s.Close()
			return exchange.Event{}, err
		}
		if !skip {
			return out, nil
		}
	}
}

// relay turns one chunk's event into the Raw event of its SSE frame; skip
// is set for a chunk that gives nothing.
func (s *invokeStream) relay(data []byte) (exchange.Event, bool, error) {
	if !gjson.ValidBytes(data) {
		s.trace.MalformedFrames++
		return exchange.Event{}, true, nil
	}
	if m := gjson.GetBytes(data, metricsKey); m.Exists() {
		s.metrics(m)
		data = withoutMetrics(data)
	}
	typ := gjson.GetBytes(data, "type").String()
	ei := messageswire.InspectEvent([]byte(typ), data)
	ev := exchange.Event{Kind: exchange.Raw, RawAPI: exchange.Messages}
	if ei.Content {
		ev.Flags |= exchange.HasContent
	}
	s.chars += ei.Chars
	if ei.Type == messageswire.EventError {
		return exchange.Event{}, false, provider.InBandError(s.id, ei.ErrorType)
	}
	if _, err := s.st.Apply(&ei); err != nil {
		return exchange.Event{}, false, provider.MessagesStreamError(s.id, err)
	}
	if ei.Type == messageswire.EventMessageDelta && ei.StopReason != "" {
		ev.Flags |= exchange.HasFinish
		ev.Finish, ev.Stop, ev.StopSequence = messageswire.FinishReason(ei.StopReason), ei.StopReason, ei.StopSequence
	}
	ev.Raw = s.sse(typ, data)
	return ev, false, nil
}

// sse writes the frame Anthropic sends for an event, into one reused
// buffer. Bedrock's chunks are compact JSON; one holding a line break
// (only possible between tokens) is compacted so the frame has one data
// line.
func (s *invokeStream) sse(typ string, data []byte) []byte {
	b := append(s.frame[:0], "event: "...)
	b = append(b, typ...)
	b = append(b, "\ndata: "...)
	if bytes.ContainsAny(data, "\r\n") {
		var c bytes.Buffer
		if json.Compact(&c, data) == nil {
			data = c.Bytes()
		}
	}
	b = append(b, data...)
	s.frame = append(b, "\n\n"...)
	return s.frame
}

// metrics reads amazon-bedrock-invocationMetrics for the figures the
// events did not give: the prompt's before message_start, the output
// before a message_delta with output_tokens.
func (s *invokeStream) metrics(m gjson.Result) {
	if !s.st.Started {
		s.st.Started = true
		s.st.Usage = messageswire.Usage{InputTokens: int(m.Get("inputTokenCount").Int()),
			CacheReadInputTokens: int(m.Get("cacheReadInputTokenCount").Int()), CacheCreationInputTokens: int(m.Get("cacheWriteInputTokenCount").Int())}
	}
	if out := m.Get("outputTokenCount"); !s.st.GotDelta && out.Exists() {
		s.st.Usage.OutputTokens = int(out.Int())
		s.st.GotDelta = true
	}
}

// withoutMetrics returns an event's JSON without Bedrock's metrics member,
// every other member's bytes kept.
func withoutMetrics(data []byte) []byte {
	out := []byte{'{'}
	err := chatwire.Members(data, func(k string, v []byte) bool {
		if k == metricsKey {
			return true
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(jsonb.AppendString(out, k), ':')
		out = append(out, v...)
		return true
	})
	if err != nil {
		return data
	}
	return append(out, '}')
}

// ended is the error for an event channel that closed before message_stop.
func (s *invokeStream) ended() error {
	s.Close()
	if s.ctx.Err() != nil {
		return provider.TransportError(s.ctx, s.id, s.ctx.Err())
	}
	if err := s.es.Err(); err != nil {
		return streamError(s.id, err)
	}
	return provider.Interrupted(s.id, "ended before message_stop", nil)
}

// countMalformed adds the frames dropped since the last call to the trace.
func (s *invokeStream) countMalformed() {
	if s.malformed == nil || s.trace == nil {
		return
	}
	if n := s.malformed.Load(); n != s.counted {
		s.trace.MalformedFrames += int(n - s.counted)
		s.counted = n
	}
}

// Usage implements provider.Stream: the events' figures (and the
// invocation metrics'), the output estimated from the characters seen
// when neither gave it, everything estimated before either.
func (s *invokeStream) Usage() exchange.TokenUsage {
	u := provider.MessagesStreamUsage(&s.st, s.reqBytes, s.chars)
	u.Tier = cmp.Or(s.tier, u.Tier) // Bedrock bills by its own tier, the header's
	return u
}

// Close implements provider.Stream.
func (s *invokeStream) Close() error {
	s.closeOnce.Do(func() { s.es.Close() })
	return nil
}

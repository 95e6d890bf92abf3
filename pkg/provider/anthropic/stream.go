package anthropic

import (
	"io"
	"strings"
	"unicode/utf8"
	"unsafe"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/sse"
	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// Stream translation, Anthropic server-sent events (read by the one
// Messages reader, messageswire.ReadEvent) -> canonical events
// (exchange.Event). One Anthropic event gives at most one canonical event
// (a thinking block that starts with both text and a signature gives two):
//
//	message_start                  -> Start{ID: message id, Name: model, Created: time of the call}
//	content_block_start text       -> nothing (or Text, when its text is not empty)
//	content_block_delta text_delta -> Text
//	content_block_start tool_use   -> ToolCall{Index: i, ID, Name}, where i counts
//	                                  tool_use blocks 0, 1, 2... (not Anthropic block indices)
//	content_block_delta input_json_delta -> ToolArgs{Index: i, Text: partial_json}
//	content_block_start thinking, thinking_delta -> Reasoning (Signature for a start's signature)
//	content_block_delta signature_delta -> Signature
//	content_block_start redacted_thinking -> RedactedReasoning{Text: data}
//	content_block_stop, ping, server tool blocks, unknown events -> nothing
//	message_delta with a stop_reason -> Finish{Finish: finishReason(stop_reason),
//	                                  Stop: stop_reason, StopSequence: stop_sequence}
//	message_stop                   -> Usage (the stream's final figures), then io.EOF
//	error                          -> provider.InBandError with the error's type
//	any other frame whose data is not JSON -> nothing: skipped and counted
//	                                  (exchange.Trace.MalformedFrames)
//
// Deltas with empty text, partial_json, thinking or signature carry nothing
// and give no event. Text, reasoning and arguments point into the read
// buffer (valid until the next Next) unless they hold JSON escapes. A
// stream that ends before message_stop, or reaches message_stop without a
// stop_reason, is provider.Interrupted.

// finishReason maps an Anthropic stop_reason to the canonical finish reason.
func finishReason(stop string) string { return messageswire.FinishReason(stop) }

// Kinds of content block, by Anthropic block index; a tool_use block is
// recorded as its tool call index (>= 0).
const (
	blockText     = -1
	blockThinking = -2
	blockOther    = -3
)

// streamTranslator is the state of one stream.
type streamTranslator struct {
	prov     string
	created  int64
	reqBytes int // the upstream request's size, for an estimate

	// st: message_start, the usage, the stop_reason and message_stop
	// seen, and the container.
	st    messageswire.StreamState
	chars int // generated characters, for an estimate when the stream is cut

	blocks []int // by Anthropic block index: blockText, blockThinking, blockOther or a tool call index
	tools  int   // tool_use blocks seen

	pending exchange.Event // a second event from one Anthropic event (Kind 0: none)
	parts   []delta.Part   // the frame's parts (messageswire.ReadEvent), reused
}

// bytesString views b as a string without copying; the string must not
// outlive b's contents.
func bytesString(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// event translates one SSE frame, read by messageswire.ReadEvent. An event
// of Kind 0 means the frame gives nothing.
func (t *streamTranslator) event(name, data []byte) (exchange.Event, error) {
	if t.st.Stopped {
		return exchange.Event{}, nil
	}
	ei, parts := messageswire.ReadEvent(t.parts[:0], name, data)
	t.parts = parts
	typ := ei.Type
	switch typ {
	case messageswire.EventContentBlockDelta: // the hot path: no allocation for plain text
		if !t.st.Started {
			return exchange.Event{}, provider.Interrupted(t.prov, "sent content_block_delta before message_start", nil)
		}
		return t.delta(&ei, parts), nil
	case messageswire.EventPing, messageswire.EventContentBlockStop:
		return exchange.Event{}, nil
	case messageswire.EventError:
		return exchange.Event{}, provider.InBandError(t.prov, ei.ErrorType)
	case messageswire.EventMessageStart, messageswire.EventContentBlockStart, messageswire.EventMessageDelta, messageswire.EventMessageStop:
	default:
		return exchange.Event{}, nil // unknown events are skipped, as Anthropic's versioning policy asks
	}
	if typ != messageswire.EventMessageStart && !t.st.Started {
		return exchange.Event{}, provider.Interrupted(t.prov, "sent "+typ+" before message_start", nil)
	}
	switch typ {
	case messageswire.EventMessageStart:
		return t.messageStart(&ei, parts), nil
	case messageswire.EventContentBlockStart:
		return t.blockStart(&ei, parts)
	case messageswire.EventMessageDelta:
		return t.messageDelta(&ei), nil
	default: // message_stop
		if _, err := t.st.Apply(&ei); err != nil {
			return exchange.Event{}, provider.MessagesStreamError(t.prov, err)
		}
		return exchange.Event{Kind: exchange.Usage, Usage: t.usage()}, nil
	}
}

func (t *streamTranslator) messageStart(ei *messageswire.EventInfo, parts []delta.Part) exchange.Event {
	if t.st.Started || len(parts) == 0 {
		return exchange.Event{} // a repeated message_start, or one without its message
	}
	_, _ = t.st.Apply(ei) // a message_start is never refused
	return exchange.Event{Kind: exchange.Start, ID: strings.Clone(parts[0].ID), Name: strings.Clone(parts[0].Name), Created: t.created}
}

// part returns the first part of kind k.
func part(parts []delta.Part, k delta.Kind) (delta.Part, bool) {
	for _, p := range parts {
		if p.Kind == k {
			return p, true
		}
	}
	return delta.Part{}, false
}

func (t *streamTranslator) blockStart(ei *messageswire.EventInfo, parts []delta.Part) (exchange.Event, error) {
	i := ei.Index
	if ei.Block == "" || i < 0 || i > 1<<16 {
		return exchange.Event{}, provider.Interrupted(t.prov, "sent a malformed content_block_start", nil)
	}
	for len(t.blocks) <= i {
		t.blocks = append(t.blocks, blockOther)
	}
	_, _ = t.st.Apply(ei) // a code-execution block: the answer ran in a container
	switch ei.Block {
	case messageswire.BlockText:
		t.blocks[i] = blockText
		if p, ok := part(parts, delta.Text); ok {
			return t.text(exchange.Text, strings.Clone(p.Text)), nil
		}
	case messageswire.BlockThinking:
		t.blocks[i] = blockThinking
		sig, signed := part(parts, delta.Signature)
		sigEv := exchange.Event{Kind: exchange.Signature, Text: strings.Clone(sig.Text)}
		if p, ok := part(parts, delta.Reasoning); ok {
			if signed {
				t.pending = sigEv
			}
			return t.text(exchange.Reasoning, strings.Clone(p.Text)), nil
		}
		if signed {
			return sigEv, nil
		}
	case messageswire.BlockRedactedThinking:
		t.blocks[i] = blockOther
		if p, ok := part(parts, delta.RedactedReasoning); ok && p.Text != "" {
			return exchange.Event{Kind: exchange.RedactedReasoning, Text: strings.Clone(p.Text)}, nil
		}
	case messageswire.BlockToolUse:
		p, _ := part(parts, delta.ToolCall)
		n := t.tools
		t.tools++
		t.blocks[i] = n
		t.chars += len(p.Name)
		return exchange.Event{Kind: exchange.ToolCall, Index: n, ID: strings.Clone(p.ID), Name: strings.Clone(p.Name)}, nil
	}
	return exchange.Event{}, nil
}

// text returns a Text or Reasoning event, counting its characters.
func (t *streamTranslator) text(k exchange.Kind, s string) exchange.Event {
	t.chars += utf8.RuneCountInString(s)
	return exchange.Event{Kind: k, Text: s}
}

// delta translates a content_block_delta's part: its strings point into
// the frame unless they hold escapes.
func (t *streamTranslator) delta(ei *messageswire.EventInfo, parts []delta.Part) exchange.Event {
	if len(parts) == 0 {
		return exchange.Event{}
	}
	p := parts[0]
	switch p.Kind {
	case delta.Text:
		return t.text(exchange.Text, p.Text)
	case delta.ToolArgs:
		i := ei.Index
		if i < 0 || i >= len(t.blocks) || t.blocks[i] < 0 {
			return exchange.Event{} // a server tool's input: not a client tool call
		}
		t.chars += len(p.Text)
		return exchange.Event{Kind: exchange.ToolArgs, Index: t.blocks[i], Text: p.Text}
	case delta.Reasoning:
		return t.text(exchange.Reasoning, p.Text)
	case delta.Signature:
		return exchange.Event{Kind: exchange.Signature, Text: p.Text}
	}
	return exchange.Event{}
}

func (t *streamTranslator) messageDelta(ei *messageswire.EventInfo) exchange.Event {
	if first, _ := t.st.Apply(ei); !first {
		return exchange.Event{}
	}
	return exchange.Event{Kind: exchange.Finish, Finish: finishReason(ei.StopReason), Stop: strings.Clone(ei.StopReason), StopSequence: strings.Clone(ei.StopSequence)}
}

// finishEvent is the Finish event for a stop_reason and stop_sequence.
func finishEvent(stop string, seq *string) exchange.Event {
	ev := exchange.Event{Kind: exchange.Finish, Finish: finishReason(stop), Stop: stop}
	if seq != nil {
		ev.StopSequence = *seq
	}
	return ev
}

// usage returns the figures counted so far.
func (t *streamTranslator) usage() exchange.TokenUsage {
	return provider.MessagesStreamUsage(&t.st, t.reqBytes, t.chars)
}

// sseStream reads an Anthropic SSE response and yields canonical events.
type sseStream struct {
	body io.ReadCloser
	r    *sse.Reader
	t    streamTranslator
	// malformed counts the frames skipped as invalid JSON; trace, when
	// set, is the request's trace, which counts them too.
	malformed int
	trace     *exchange.Trace
}

func newSSEStream(prov string, body io.ReadCloser, reqBytes int, created int64) *sseStream {
	s := &sseStream{body: body, r: sse.NewReader(body, 0)}
	s.t.prov, s.t.created, s.t.reqBytes = prov, created, reqBytes
	return s
}

// Next implements provider.Stream.
func (s *sseStream) Next() (exchange.Event, error) {
	if ev := s.t.pending; ev.Kind != 0 {
		s.t.pending = exchange.Event{}
		return ev, nil
	}
	for {
		if s.t.st.Stopped {
			return exchange.Event{}, io.EOF
		}
		f, err := s.r.Next()
		if err != nil {
			if err == io.EOF {
				return exchange.Event{}, provider.Interrupted(s.t.prov, "ended before message_stop", nil)
			}
			return exchange.Event{}, provider.Interrupted(s.t.prov, "broke off", err)
		}
		if len(f.Data) == 0 && len(f.Event) == 0 {
			continue
		}
		if len(f.Data) > 0 && string(f.Event) != messageswire.EventError && !gjson.ValidBytes(f.Data) {
			// A malformed frame is never translated: skip it, count it, and
			// keep the stream if it otherwise completes (message_stop).
			s.malformed++
			if s.trace != nil {
				s.trace.MalformedFrames++
			}
			continue
		}
		ev, err := s.t.event(f.Event, f.Data)
		if err != nil {
			return exchange.Event{}, err
		}
		if ev.Kind != 0 {
			return ev, nil
		}
	}
}

// Usage implements provider.Stream.
func (s *sseStream) Usage() exchange.TokenUsage { return s.t.usage() }

// Close implements provider.Stream.
func (s *sseStream) Close() error { return s.body.Close() }

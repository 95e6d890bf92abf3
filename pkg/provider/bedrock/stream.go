package bedrock

import (
	"context"
	"io"
	"sync"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/openaiwire"
	"github.com/llmgw/llmgw/pkg/provider"
)

// translator turns the events of one ConverseStream response into OpenAI
// chat.completion.chunk JSON. It is small, per response and stateful: it
// numbers tool calls, remembers the finish reason and the usage, and writes
// every chunk with openaiwire.ChunkBuilder into one reused buffer.
//
// Event by event:
//   - messageStart: the first chunk, delta {"role":"assistant","content":""}.
//   - contentBlockStart with toolUse: delta.tool_calls[{index, id, type,
//     function{name, arguments:""}}], where index counts tool-use blocks
//     (0, 1, ...), not bedrock's block indices.
//   - contentBlockDelta text: delta.content.
//   - contentBlockDelta toolUse.input: an arguments fragment at that tool's index.
//   - contentBlockDelta reasoningContent.text: delta.reasoning_content (the
//     field DeepSeek-style clients read); signatures and redacted reasoning
//     are dropped, so reasoning cannot be sent back to bedrock.
//   - contentBlockStop, and deltas of other kinds (citations, images): nothing.
//   - messageStop: a chunk with the mapped finish_reason (see finishReason).
//   - metadata: the usage; the include_usage chunk (choices: []) is written
//     once both messageStop and metadata have arrived.
type translator struct {
	cb     openaiwire.ChunkBuilder
	tools  []toolSlot
	nTools int

	started bool
	stopped bool // messageStop seen
	meta    bool // metadata seen
	usage   provider.Usage
	chars   int // generated characters, for estimates
}

// toolSlot maps a bedrock content block index to an OpenAI tool index.
type toolSlot struct {
	block int32
	tool  int
}

func newTranslator(id, model string, created int64) *translator {
	t := &translator{}
	t.cb.Reset(id, created, model)
	return t
}

// event translates one event. A zero Frame (nil Data) means the event
// produces no chunk.
func (t *translator) event(ev types.ConverseStreamOutput) (provider.Frame, error) {
	switch e := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		return t.delta(&e.Value)
	case *types.ConverseStreamOutputMemberContentBlockStart:
		tu, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse)
		if !ok {
			return provider.Frame{}, nil
		}
		idx := t.nTools
		t.nTools++
		t.tools = append(t.tools, toolSlot{block: deref32(e.Value.ContentBlockIndex), tool: idx})
		name := deref(tu.Value.Name)
		t.chars += len(name)
		return provider.Frame{Data: t.cb.ToolCallStart(idx, deref(tu.Value.ToolUseId), name), Content: true}, nil
	case *types.ConverseStreamOutputMemberMessageStart:
		if t.started {
			return provider.Frame{}, nil
		}
		t.started = true
		return provider.Frame{Data: t.cb.Role()}, nil
	case *types.ConverseStreamOutputMemberMessageStop:
		if t.stopped {
			return provider.Frame{}, nil
		}
		fr, err := finishReason(e.Value.StopReason)
		if err != nil {
			return provider.Frame{}, err
		}
		t.stopped = true
		return provider.Frame{Data: t.cb.Finish(fr), Finish: true}, nil
	case *types.ConverseStreamOutputMemberMetadata:
		t.meta = true
		if u := e.Value.Usage; u != nil {
			t.usage = tokenUsage(u)
		}
		return provider.Frame{}, nil
	}
	return provider.Frame{}, nil
}

func (t *translator) delta(e *types.ContentBlockDeltaEvent) (provider.Frame, error) {
	switch d := e.Delta.(type) {
	case *types.ContentBlockDeltaMemberText:
		if d.Value == "" {
			return provider.Frame{}, nil
		}
		t.chars += utf8.RuneCountInString(d.Value)
		return provider.Frame{Data: t.cb.Content(d.Value), Content: true}, nil
	case *types.ContentBlockDeltaMemberToolUse:
		idx := t.toolIndex(deref32(e.ContentBlockIndex))
		if idx < 0 {
			return provider.Frame{}, provider.Interrupted("", "sent tool input for a block that never started", nil)
		}
		args := deref(d.Value.Input)
		t.chars += len(args)
		return provider.Frame{Data: t.cb.ToolCallArguments(idx, args), Content: true}, nil
	case *types.ContentBlockDeltaMemberReasoningContent:
		rt, ok := d.Value.(*types.ReasoningContentBlockDeltaMemberText)
		if !ok || rt.Value == "" {
			return provider.Frame{}, nil
		}
		t.chars += utf8.RuneCountInString(rt.Value)
		return provider.Frame{Data: t.cb.Reasoning(rt.Value), Content: true}, nil
	}
	return provider.Frame{}, nil
}

// toolIndex returns the OpenAI index of the tool-use block at a bedrock
// block index, or -1. Blocks stream one at a time, so the last slot is the
// usual answer.
func (t *translator) toolIndex(block int32) int {
	for i := len(t.tools) - 1; i >= 0; i-- {
		if t.tools[i].block == block {
			return t.tools[i].tool
		}
	}
	return -1
}

// usageChunk writes the include_usage chunk: choices empty, usage set.
func (t *translator) usageChunk(u provider.Usage) []byte {
	return t.cb.Usage(*u.OpenAI())
}

// finishReason maps bedrock's stopReason to OpenAI's finish_reason.
// Malformed output is a provider failure, never a clean finish. Reasons
// newer than this code map to "stop".
func finishReason(r types.StopReason) (string, error) {
	switch r {
	case types.StopReasonEndTurn, types.StopReasonStopSequence:
		return "stop", nil
	case types.StopReasonMaxTokens, types.StopReasonModelContextWindowExceeded:
		return "length", nil
	case types.StopReasonToolUse:
		return "tool_calls", nil
	case types.StopReasonGuardrailIntervened, types.StopReasonContentFiltered:
		return "content_filter", nil
	case types.StopReasonMalformedModelOutput, types.StopReasonMalformedToolUse:
		return "", &gwerr.Error{Category: gwerr.Unavailable, Message: "provider model produced malformed output (" + string(r) + ")", Code: "malformed_output"}
	}
	return "stop", nil
}

// tokenUsage reads bedrock's usage. Bedrock's inputTokens excludes the
// tokens read from or written to the prompt cache; OpenAI's prompt_tokens
// includes cached tokens, so Input is the sum of the three.
func tokenUsage(u *types.TokenUsage) provider.Usage {
	r, w := int(deref32(u.CacheReadInputTokens)), int(deref32(u.CacheWriteInputTokens))
	return provider.Usage{Input: int(deref32(u.InputTokens)) + r + w, Output: int(deref32(u.OutputTokens)), CacheRead: r, CacheWrite: w}
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func deref32(n *int32) int32 {
	if n == nil {
		return 0
	}
	return *n
}

// eventStream is what the stream reads: *bedrockruntime.ConverseStreamEventStream.
type eventStream interface {
	Events() <-chan types.ConverseStreamOutput
	Close() error
	Err() error
}

// stream is a provider.Stream over one ConverseStream response.
type stream struct {
	id        string
	ctx       context.Context
	es        eventStream
	tr        *translator
	reqBytes  int
	usageSent bool
	done      bool
	closeOnce sync.Once
}

func newStream(ctx context.Context, id string, es eventStream, tr *translator, reqBytes int) *stream {
	return &stream{id: id, ctx: ctx, es: es, tr: tr, reqBytes: reqBytes}
}

// Next implements provider.Stream. It returns io.EOF only after messageStop
// and metadata; an event stream that ends before them is interrupted, and
// an exception inside it is classified (see streamError). Cancelling the
// context closes the event stream at once.
func (s *stream) Next() (provider.Frame, error) {
	for {
		if s.done {
			return provider.Frame{}, io.EOF
		}
		if s.tr.stopped && s.tr.meta {
			if s.usageSent {
				s.done = true
				return provider.Frame{}, io.EOF
			}
			s.usageSent = true
			return provider.Frame{Data: s.tr.usageChunk(s.Usage()), UsageOnly: true}, nil
		}
		select {
		case ev, ok := <-s.es.Events():
			if !ok {
				return provider.Frame{}, s.ended()
			}
			f, err := s.tr.event(ev)
			if err != nil {
				s.Close()
				if ge, ok := err.(*gwerr.Error); ok && ge.Provider == "" {
					ge.Provider = s.id
				}
				return provider.Frame{}, err
			}
			if f.Data != nil {
				return f, nil
			}
		case <-s.ctx.Done():
			s.Close()
			return provider.Frame{}, provider.TransportError(s.ctx, s.id, s.ctx.Err())
		}
	}
}

// ended is the error for an event channel that closed before the terminal
// events.
func (s *stream) ended() error {
	s.Close()
	if s.ctx.Err() != nil {
		return provider.TransportError(s.ctx, s.id, s.ctx.Err())
	}
	if err := s.es.Err(); err != nil {
		return streamError(s.id, err)
	}
	why := "ended without messageStop"
	if s.tr.stopped {
		why = "ended without its metadata event"
	}
	return provider.Interrupted(s.id, why, nil)
}

// Usage implements provider.Stream: bedrock's figures once metadata has
// arrived, else an estimate.
func (s *stream) Usage() provider.Usage {
	if s.tr.meta {
		return s.tr.usage
	}
	return provider.Usage{Input: provider.EstimateTokens(s.reqBytes), Output: provider.EstimateTokens(s.tr.chars), Estimated: true}
}

// Close implements provider.Stream.
func (s *stream) Close() error {
	s.closeOnce.Do(func() { s.es.Close() })
	return nil
}

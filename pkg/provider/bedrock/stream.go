package bedrock

import (
	"context"
	"encoding/base64"
	"io"
	"sync"
	"sync/atomic"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/bedrockruntime/types"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
)

// translator turns the events of one ConverseStream response into
// canonical events (exchange.Event). It is small, per response and
// stateful: it numbers tool calls and remembers the finish and the usage.
// Strings are the SDK's own (decoded per event), so translating a text
// delta allocates nothing.
//
// Event by event:
//   - messageStart: Start{ID: bedrock's request id, Name: the target's
//     model, Created: the time of the call}. An event with output before
//     messageStart gets the Start first (encoders need it to name the
//     response); a later messageStart gives nothing.
//   - contentBlockStart with toolUse: ToolCall{Index, ID, Name}, where
//     Index counts tool-use blocks (0, 1, ...), not bedrock's block indices.
//   - contentBlockDelta text: Text.
//   - contentBlockDelta toolUse.input: ToolArgs at that tool's Index.
//   - contentBlockDelta reasoningContent: text -> Reasoning, signature ->
//     Signature, redactedContent -> RedactedReasoning (Text: the bytes in
//     base64, as the wire and Anthropic's redacted_thinking carry them).
//   - contentBlockStop, empty deltas, and deltas of other kinds
//     (citations, images): nothing.
//   - messageStop: Finish{Finish: finishReason(stopReason), Stop: stopReason}.
//   - metadata: the usage; the Usage event is yielded once both messageStop
//     and metadata have arrived, then io.EOF.
type translator struct {
	id, model string
	created   int64
	tools     []toolSlot
	nTools    int

	started bool // Start yielded
	stopped bool // messageStop seen
	meta    bool // metadata seen
	usage   exchange.TokenUsage
	chars   int            // generated characters, for estimates
	pending exchange.Event // the event held back behind a Start (Kind 0: none)
}

// toolSlot maps a bedrock content block index to a tool call index.
type toolSlot struct {
	block int32
	tool  int
}

func newTranslator(id, model string, created int64) *translator {
	return &translator{id: id, model: model, created: created}
}

// next translates one event, putting Start first. An event of Kind 0 means
// it gives nothing; t.pending may hold a second one.
func (t *translator) next(ev types.ConverseStreamOutput) (exchange.Event, error) {
	out, err := t.event(ev)
	if err != nil || out.Kind == 0 || t.started {
		return out, err
	}
	t.started = true
	if out.Kind != exchange.Start {
		t.pending = out
	}
	return exchange.Event{Kind: exchange.Start, ID: t.id, Name: t.model, Created: t.created}, nil
}

// event translates one event. An event of Kind 0 means it gives nothing.
func (t *translator) event(ev types.ConverseStreamOutput) (exchange.Event, error) {
	switch e := ev.(type) {
	case *types.ConverseStreamOutputMemberContentBlockDelta:
		return t.delta(&e.Value)
	case *types.ConverseStreamOutputMemberContentBlockStart:
		tu, ok := e.Value.Start.(*types.ContentBlockStartMemberToolUse)
		if !ok {
			return exchange.Event{}, nil
		}
		idx := t.nTools
		t.nTools++
		t.tools = append(t.tools, toolSlot{block: deref32(e.Value.ContentBlockIndex), tool: idx})
		name := deref(tu.Value.Name)
		t.chars += len(name)
		return exchange.Event{Kind: exchange.ToolCall, Index: idx, ID: deref(tu.Value.ToolUseId), Name: name}, nil
	case *types.ConverseStreamOutputMemberMessageStart:
		if t.started {
			return exchange.Event{}, nil
		}
		return exchange.Event{Kind: exchange.Start}, nil // filled in by next
	case *types.ConverseStreamOutputMemberMessageStop:
		if t.stopped {
			return exchange.Event{}, nil
		}
		fr, err := finishReason(e.Value.StopReason)
		if err != nil {
			return exchange.Event{}, err
		}
		t.stopped = true
		return exchange.Event{Kind: exchange.Finish, Finish: fr, Stop: string(e.Value.StopReason)}, nil
	case *types.ConverseStreamOutputMemberMetadata:
		t.meta = true
		if u := e.Value.Usage; u != nil {
			t.usage = tokenUsage(u, e.Value.ServiceTier)
		}
		return exchange.Event{}, nil
	}
	return exchange.Event{}, nil
}

func (t *translator) delta(e *types.ContentBlockDeltaEvent) (exchange.Event, error) {
	switch d := e.Delta.(type) {
	case *types.ContentBlockDeltaMemberText:
		if d.Value == "" {
			return exchange.Event{}, nil
		}
		t.chars += utf8.RuneCountInString(d.Value)
		return exchange.Event{Kind: exchange.Text, Text: d.Value}, nil
	case *types.ContentBlockDeltaMemberToolUse:
		idx := t.toolIndex(deref32(e.ContentBlockIndex))
		if idx < 0 {
			return exchange.Event{}, provider.Interrupted("", "sent tool input for a block that never started", nil)
		}
		args := deref(d.Value.Input)
		if args == "" {
			return exchange.Event{}, nil
		}
		t.chars += len(args)
		return exchange.Event{Kind: exchange.ToolArgs, Index: idx, Text: args}, nil
	case *types.ContentBlockDeltaMemberReasoningContent:
		return reasoningDelta(d.Value, &t.chars), nil
	}
	return exchange.Event{}, nil
}

// reasoningDelta translates a reasoning delta, counting its characters.
func reasoningDelta(d types.ReasoningContentBlockDelta, chars *int) exchange.Event {
	switch r := d.(type) {
	case *types.ReasoningContentBlockDeltaMemberText:
		if r.Value != "" {
			*chars += utf8.RuneCountInString(r.Value)
			return exchange.Event{Kind: exchange.Reasoning, Text: r.Value}
		}
	case *types.ReasoningContentBlockDeltaMemberSignature:
		if r.Value != "" {
			return exchange.Event{Kind: exchange.Signature, Text: r.Value}
		}
	case *types.ReasoningContentBlockDeltaMemberRedactedContent:
		if len(r.Value) > 0 {
			return exchange.Event{Kind: exchange.RedactedReasoning, Text: base64.StdEncoding.EncodeToString(r.Value)}
		}
	}
	return exchange.Event{}
}

// toolIndex returns the tool call index of the tool-use block at a bedrock
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

// finishReason maps bedrock's stopReason to the canonical finish reason
// (bedrockwire.FinishReason). Malformed output is a provider failure,
// never a clean finish. Reasons newer than this code map to "stop".
func finishReason(r types.StopReason) (string, error) {
	if bedrockwire.Malformed(string(r)) {
		return "", malformedOutput("", string(r))
	}
	return bedrockwire.FinishReason(string(r)), nil
}

// tokenUsage reads bedrock's usage. Bedrock's inputTokens excludes the
// tokens read from or written to the prompt cache; the gateway's Input
// counts every prompt token, so it is the sum of the three.
// Writes with a 1-hour lifetime are counted from cacheDetails; tier is the
// response's serviceTier.
func tokenUsage(u *types.TokenUsage, tier *types.ServiceTier) exchange.TokenUsage {
	r, w := int(deref32(u.CacheReadInputTokens)), int(deref32(u.CacheWriteInputTokens))
	out := exchange.TokenUsage{Input: int(deref32(u.InputTokens)) + r + w, Output: int(deref32(u.OutputTokens)), CacheRead: r, CacheWrite: w,
		Tier: servedTier(tier)}
	for _, d := range u.CacheDetails {
		if d.Ttl == types.CacheTTLOneHour {
			out.CacheWrite1h += int(deref32(d.InputTokens))
		}
	}
	return out
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
	// malformed counts the events the body's frame filter dropped as
	// invalid JSON (nil: none is filtered); trace is the request's trace,
	// where they are added as they are learned (counted).
	malformed *atomic.Int64
	counted   int64
	trace     *exchange.Trace
}

// countMalformed adds the frames dropped since the last call to the trace.
func (s *stream) countMalformed() {
	if s.malformed == nil || s.trace == nil {
		return
	}
	if n := s.malformed.Load(); n != s.counted {
		s.trace.MalformedFrames += int(n - s.counted)
		s.counted = n
	}
}

func newStream(ctx context.Context, id string, es eventStream, tr *translator, reqBytes int) *stream {
	return &stream{id: id, ctx: ctx, es: es, tr: tr, reqBytes: reqBytes}
}

// Next implements provider.Stream. It returns io.EOF only after messageStop
// and metadata; an event stream that ends before them is interrupted, and
// an exception inside it is classified (see streamError). Cancelling the
// context closes the event stream at once.
func (s *stream) Next() (exchange.Event, error) {
	if ev := s.tr.pending; ev.Kind != 0 {
		s.tr.pending = exchange.Event{}
		return ev, nil
	}
	for {
		if s.done {
			return exchange.Event{}, io.EOF
		}
		if s.tr.stopped && s.tr.meta {
			if s.usageSent {
				s.done = true
				return exchange.Event{}, io.EOF
			}
			s.usageSent = true
			return exchange.Event{Kind: exchange.Usage, Usage: s.Usage()}, nil
		}
		select {
		case ev, ok := <-s.es.Events():
			s.countMalformed()
			if !ok {
				return exchange.Event{}, s.ended()
			}
			out, err := s.tr.next(ev)
			if err != nil {
				s.Close()
				if ge, ok := err.(*gwerr.Error); ok && ge.Provider == "" {
					ge.Provider = s.id
				}
				return exchange.Event{}, err
			}
			if out.Kind != 0 {
				return out, nil
			}
		case <-s.ctx.Done():
			s.Close()
			return exchange.Event{}, provider.TransportError(s.ctx, s.id, s.ctx.Err())
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
func (s *stream) Usage() exchange.TokenUsage {
	if s.tr.meta {
		return s.tr.usage
	}
	return exchange.TokenUsage{Input: exchange.EstimateTokens(s.reqBytes), Output: exchange.EstimateTokens(s.tr.chars), Estimated: true}
}

// Close implements provider.Stream.
func (s *stream) Close() error {
	s.closeOnce.Do(func() { s.es.Close() })
	return nil
}

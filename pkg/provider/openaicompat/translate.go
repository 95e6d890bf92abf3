package openaicompat

import (
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/delta"
)

// Translation, OpenAI chat chunks (read by chatwire.ReadChunk) -> canonical events, for requests that
// arrived on another client API (an Anthropic Messages or Responses client
// served by an OpenAI-compatible upstream):
//
//	first chunk (id, model, created)    -> Start
//	delta.content                       -> Text
//	delta.reasoning_content / reasoning -> Reasoning
//	delta.tool_calls[i] with id/name    -> ToolCall{Index: i}, then its arguments as ToolArgs
//	delta.tool_calls[i].function.arguments -> ToolArgs{Index: i}
//	delta.refusal                       -> Text (the client sees the refusal)
//	finish_reason                       -> Finish
//	usage                               -> Usage
//
// Only choice 0 is read (translating ingresses never ask for n > 1).

// chunkTranslator turns chunks into events, queueing the several events one
// chunk can hold. Strings are cloned: a queued event outlives the frame.
type chunkTranslator struct {
	started bool
	parts   []delta.Part // the frame's parts, reused
	queue   []exchange.Event
	head    int
}

func (t *chunkTranslator) pop() (exchange.Event, bool) {
	if t.head >= len(t.queue) {
		t.queue, t.head = t.queue[:0], 0
		return exchange.Event{}, false
	}
	ev := t.queue[t.head]
	t.head++
	return ev, true
}

// chunk translates one chat.completion.chunk; u is the usage seen so far.
func (t *chunkTranslator) chunk(data []byte, u exchange.TokenUsage) {
	_, t.parts = chatwire.ReadChunk(t.parts[:0], data, !t.started)
	t.push(t.parts, u)
}

// push queues the events of one frame's parts (chatwire's reader): a
// refusal is shown as text, output the canonical events cannot carry
// (another choice, log probabilities) is dropped, and a usage part
// becomes the usage seen so far.
func (t *chunkTranslator) push(parts []delta.Part, u exchange.TokenUsage) {
	for i := range parts {
		p := &parts[i]
		switch p.Kind {
		case delta.Start:
			if t.started {
				continue // a later role chunk opens nothing
			}
			t.started = true
		case delta.Refusal:
			t.queue = append(t.queue, exchange.Event{Kind: exchange.Text, Text: strings.Clone(p.Text)})
			continue
		case delta.Usage:
			t.queue = append(t.queue, exchange.Event{Kind: exchange.Usage, Usage: u})
			continue
		}
		if ev, ok := exchange.EventOf(p); ok {
			ev = ev.Clone()
			ev.Finish = strings.Clone(ev.Finish) // Clone keeps Finish: usually a constant, here maybe a view of the frame
			t.queue = append(t.queue, ev)
		}
	}
}

// responseEvents translates a whole chat.completion body.
func responseEvents(data []byte, u exchange.TokenUsage) []exchange.Event {
	var t chunkTranslator
	ci, parts := chatwire.ReadResponse(nil, data)
	t.push(parts, u)
	if !ci.HasUsage {
		t.queue = append(t.queue, exchange.Event{Kind: exchange.Usage, Usage: u})
	}
	return t.queue
}

package openaicompat

import (
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Translation, OpenAI chat chunks -> canonical events, for requests that
// arrived on another client API (an Anthropic Messages or Responses client
// served by an OpenAI-compatible upstream):
//
//	first chunk (id, model, created)    -> Start
//	delta.content                       -> Text
//	delta.reasoning_content / reasoning -> Reasoning
//	delta.tool_calls[i] with id/name    -> ToolCall{Index: i}, then its arguments as ToolArgs
//	delta.tool_calls[i].function.arguments -> ToolArgs{Index: i}
//	finish_reason                       -> Finish
//	usage                               -> Usage
//
// Only choice 0 is read (translating ingresses never ask for n > 1).

// chunkTranslator turns chunks into events, queueing the several events one
// chunk can hold. Strings are cloned: a queued event outlives the frame.
type chunkTranslator struct {
	started bool
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

func (t *chunkTranslator) push(ev exchange.Event) { t.queue = append(t.queue, ev.Clone()) }

// chunk translates one chat.completion.chunk; u is the usage seen so far.
func (t *chunkTranslator) chunk(data []byte, u exchange.TokenUsage) {
	t.read(gjson.ParseBytes(data), "delta", u)
}

// read translates a chunk (part "delta") or a whole response (part
// "message").
func (t *chunkTranslator) read(doc gjson.Result, part string, u exchange.TokenUsage) {
	if !t.started {
		t.started = true
		t.push(exchange.Event{Kind: exchange.Start, ID: doc.Get("id").String(), Name: doc.Get("model").String(), Created: doc.Get("created").Int()})
	}
	c := doc.Get("choices.0")
	d := c.Get(part)
	for _, f := range [...]string{"reasoning_content", "reasoning"} {
		if v := d.Get(f); v.Type == gjson.String && v.Str != "" {
			t.push(exchange.Event{Kind: exchange.Reasoning, Text: v.Str})
		}
	}
	if v := d.Get("content"); v.Type == gjson.String && v.Str != "" {
		t.push(exchange.Event{Kind: exchange.Text, Text: v.Str})
	}
	if v := d.Get("refusal"); v.Type == gjson.String && v.Str != "" {
		t.push(exchange.Event{Kind: exchange.Text, Text: v.Str})
	}
	d.Get("tool_calls").ForEach(func(k, call gjson.Result) bool {
		i := int(k.Int())
		if ix := call.Get("index"); ix.Exists() {
			i = int(ix.Int())
		}
		if id, name := call.Get("id").Str, call.Get("function.name").Str; id != "" || name != "" {
			t.push(exchange.Event{Kind: exchange.ToolCall, Index: i, ID: id, Name: name})
		}
		if a := call.Get("function.arguments").Str; a != "" {
			t.push(exchange.Event{Kind: exchange.ToolArgs, Index: i, Text: a})
		}
		return true
	})
	if fr := c.Get("finish_reason"); fr.Type == gjson.String {
		t.push(exchange.Event{Kind: exchange.Finish, Finish: fr.Str})
	}
	if doc.Get("usage").IsObject() {
		t.push(exchange.Event{Kind: exchange.Usage, Usage: u})
	}
}

// responseEvents translates a whole chat.completion body.
func responseEvents(data []byte, u exchange.TokenUsage) []exchange.Event {
	var t chunkTranslator
	doc := gjson.ParseBytes(data)
	t.read(doc, "message", u)
	if !doc.Get("usage").IsObject() {
		t.push(exchange.Event{Kind: exchange.Usage, Usage: u})
	}
	return t.queue
}

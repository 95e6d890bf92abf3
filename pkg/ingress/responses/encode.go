package responses

import (
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
)

// Encoding, canonical events -> Responses API, one output item at a time
// as the real API sends them (an item is done before the next starts):
//
//	Raw (responses)  -> the upstream's own event, relayed untouched (or its whole body)
//	Start            -> response.created, response.in_progress
//	Text             -> a message item: output_item.added, content_part.added (first),
//	                    then output_text.delta
//	Reasoning        -> a reasoning item with one summary part: output_item.added,
//	                    reasoning_summary_part.added (first), then
//	                    reasoning_summary_text.delta (what the SDKs, the AI SDK and
//	                    Codex display; chat upstreams' reasoning_content and
//	                    Anthropic's thinking are both shown this way)
//	ToolCall         -> a function_call item: output_item.added (arguments "")
//	ToolArgs         -> function_call_arguments.delta
//	a new item, Finish, End -> the open item's done events: output_text.done,
//	                    content_part.done / function_call_arguments.done /
//	                    reasoning_summary_text.done, reasoning_summary_part.done;
//	                    then output_item.done with the item's full content
//	End              -> response.completed, or response.incomplete when the finish was
//	                    length (reason max_output_tokens) or content_filter, with the
//	                    output and usage
//	Fail             -> response.failed (status failed, the error, the output so far
//	                    marked incomplete, usage so far); no done events for the open
//	                    item and never response.completed
//	Signature, RedactedReasoning, Usage -> nothing (usage comes with End)
//
// Every event has its `event:` line and a sequence_number counted from 0.
// response.failed also carries the error object at the top level: that is
// where the OpenAI SDKs (openai-go, -node, -python) look to raise, so an
// unmodified program that only iterates events still gets an error.

// The item statuses.
const (
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
	statusIncomplete = "incomplete"
)

type itemKind uint8

const (
	itemMessage itemKind = iota + 1
	itemCall
	itemReasoning
)

// item is one output item of a translated response.
type item struct {
	kind         itemKind
	id           string
	callID, name string
	namespace    string // a namespaced function's namespace
	// text is the message text, the call's arguments or the reasoning
	// summary.
	text   []byte
	status string
}

// callRef maps a canonical tool-call index to its item.
type callRef struct{ index, item int }

// arguments returns a call's arguments, "{}" when the model sent none.
func (it *item) arguments() string {
	if len(it.text) == 0 {
		return "{}"
	}
	return bytesString(it.text)
}

// encoder writes one response. Streamed, it appends each event's frames as
// the event arrives, into the caller's (reused) buffer; not streamed, it
// only keeps state and appends the whole response object at End.
type encoder struct {
	stream  bool
	suffix  string // the request id's hex, for response and item ids
	route   string
	body    []byte
	seq     int64
	started bool

	id, model string
	created   int64
	// completed is when the response completed (unix seconds), set at End.
	completed int64
	echo      echo
	items     []item
	open      int       // the open item's index, -1 if none
	calls     []callRef // canonical tool-call index -> item index
	finish    string
	// spaced are the request's namespaced functions, by the flat name the
	// upstream calls them by.
	spaced map[string][2]string

	pass bool   // the upstream speaks the Responses API: Raw events only
	raw  []byte // a passthrough's whole non-streaming body
}

func newEncoder(req *exchange.Request) *encoder {
	suffix := strings.TrimPrefix(req.ID, "req_")
	if suffix == "" {
		suffix = "gw"
	}
	return &encoder{stream: req.Stream, suffix: suffix, route: req.Route, body: req.Body, open: -1}
}

// ContentType implements ingress.Encoder.
func (e *encoder) ContentType() string {
	if e.stream {
		return "text/event-stream; charset=utf-8"
	}
	return "application/json"
}

// Event implements ingress.Encoder.
func (e *encoder) Event(dst []byte, ev *exchange.Event) []byte {
	switch ev.Kind {
	case exchange.Raw:
		return e.relay(dst, ev)
	case exchange.Start:
		if !e.started {
			e.id, e.model, e.created = "resp_"+e.suffix, ev.Name, ev.Created
		}
		return e.start(dst)
	case exchange.Text:
		dst = e.want(e.start(dst), itemMessage, -1)
		return e.delta(dst, ev.Text)
	case exchange.Reasoning:
		dst = e.want(e.start(dst), itemReasoning, -1)
		return e.delta(dst, ev.Text)
	case exchange.ToolCall:
		dst = e.start(dst)
		dst = e.closeOpen(dst)
		return e.add(dst, item{kind: itemCall, callID: ev.ID, name: ev.Name}, ev.Index)
	case exchange.ToolArgs:
		i := e.call(ev.Index)
		if i < 0 {
			return dst
		}
		if i != e.open {
			// The call's item is done already (never so with the providers
			// the gateway knows): keep the arguments for the final object.
			e.items[i].text = append(e.items[i].text, ev.Text...)
			return dst
		}
		return e.delta(dst, ev.Text)
	case exchange.Finish:
		e.finish = ev.Finish
		return e.closeOpen(e.start(dst))
	}
	return dst
}

// start writes response.created and response.in_progress once.
func (e *encoder) start(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	if e.id == "" {
		e.id = "resp_" + e.suffix
	}
	if e.model == "" {
		e.model = e.route
	}
	if e.created == 0 {
		e.created = time.Now().Unix()
	}
	e.echo = readEcho(e.body)
	e.spaced = namespaced(e.body)
	if !e.stream {
		return dst
	}
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		dst = e.begin(dst, typ)
		dst = append(dst, `,"response":`...)
		dst = e.appendResponse(dst, response{status: statusInProgress})
		dst = end(dst)
	}
	return dst
}

// call returns the item index of canonical tool call index, or -1.
func (e *encoder) call(index int) int {
	for i := len(e.calls) - 1; i >= 0; i-- {
		if e.calls[i].index == index {
			return e.calls[i].item
		}
	}
	return -1
}

// want makes an item of kind the open one, closing another.
func (e *encoder) want(dst []byte, kind itemKind, index int) []byte {
	if e.open >= 0 && e.items[e.open].kind == kind {
		return dst
	}
	dst = e.closeOpen(dst)
	return e.add(dst, item{kind: kind}, index)
}

// add opens a new output item and writes its added events.
func (e *encoder) add(dst []byte, it item, index int) []byte {
	n := len(e.items)
	prefix := "msg_"
	switch it.kind {
	case itemCall:
		prefix = "fc_"
		e.calls = append(e.calls, callRef{index, n})
		if it.callID == "" {
			it.callID = "call_" + e.suffix + "_" + strconv.Itoa(n)
		}
		if sp, ok := e.spaced[it.name]; ok {
			it.namespace, it.name = sp[0], sp[1]
		}
	case itemReasoning:
		prefix = "rs_"
	}
	it.id = prefix + e.suffix + "_" + strconv.Itoa(n)
	it.status = statusInProgress
	e.items = append(e.items, it)
	e.open = n
	if !e.stream {
		return dst
	}
	p := &e.items[n]
	dst = e.begin(dst, "response.output_item.added")
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, `,"item":`...)
	dst = end(appendItem(dst, p, true))
	switch it.kind {
	case itemMessage:
		dst = itemRef(e.begin(dst, "response.content_part.added"), p, n)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = end(outputText(dst, ""))
	case itemReasoning:
		dst = itemRef(e.begin(dst, "response.reasoning_summary_part.added"), p, n)
		dst = append(dst, `,"summary_index":0,"part":`...)
		dst = end(summaryText(dst, ""))
	}
	return dst
}

// delta appends text to the open item and writes its delta event.
func (e *encoder) delta(dst []byte, text string) []byte {
	p := &e.items[e.open]
	p.text = append(p.text, text...)
	if !e.stream {
		return dst
	}
	switch p.kind {
	case itemMessage:
		dst = itemRef(e.begin(dst, "response.output_text.delta"), p, e.open)
		dst = append(dst, `,"content_index":0,"delta":`...)
		dst = str(dst, text)
		return end(append(dst, `,"logprobs":[]`...))
	case itemCall:
		dst = itemRef(e.begin(dst, "response.function_call_arguments.delta"), p, e.open)
	default:
		dst = itemRef(e.begin(dst, "response.reasoning_summary_text.delta"), p, e.open)
		dst = append(dst, `,"summary_index":0`...)
	}
	dst = append(dst, `,"delta":`...)
	return end(str(dst, text))
}

// closeOpen finishes the open item: its done events, then output_item.done.
func (e *encoder) closeOpen(dst []byte) []byte {
	n := e.open
	if n < 0 {
		return dst
	}
	e.open = -1
	p := &e.items[n]
	p.status = statusCompleted
	if e.finish == exchange.FinishLength || e.finish == exchange.FinishContentFilter {
		p.status = statusIncomplete
	}
	if !e.stream {
		return dst
	}
	text := bytesString(p.text)
	switch p.kind {
	case itemMessage:
		dst = itemRef(e.begin(dst, "response.output_text.done"), p, n)
		dst = append(dst, `,"content_index":0,"text":`...)
		dst = str(dst, text)
		dst = end(append(dst, `,"logprobs":[]`...))
		dst = itemRef(e.begin(dst, "response.content_part.done"), p, n)
		dst = append(dst, `,"content_index":0,"part":`...)
		dst = end(outputText(dst, text))
	case itemCall:
		dst = itemRef(e.begin(dst, "response.function_call_arguments.done"), p, n)
		dst = append(dst, `,"name":`...)
		dst = str(dst, p.name)
		dst = append(dst, `,"arguments":`...)
		dst = end(str(dst, p.arguments()))
	default:
		dst = itemRef(e.begin(dst, "response.reasoning_summary_text.done"), p, n)
		dst = append(dst, `,"summary_index":0,"text":`...)
		dst = end(str(dst, text))
		dst = itemRef(e.begin(dst, "response.reasoning_summary_part.done"), p, n)
		dst = append(dst, `,"summary_index":0,"part":`...)
		dst = end(summaryText(dst, text))
	}
	dst = e.begin(dst, "response.output_item.done")
	dst = append(dst, `,"output_index":`...)
	dst = strconv.AppendInt(dst, int64(n), 10)
	dst = append(dst, `,"item":`...)
	return end(appendItem(dst, p, false))
}

// End implements ingress.Encoder: response.completed or
// response.incomplete (streamed), or the whole response object.
func (e *encoder) End(dst []byte, u exchange.TokenUsage) []byte {
	if e.pass {
		if e.stream {
			return dst // the upstream's own terminal event was relayed
		}
		return append(dst, e.raw...)
	}
	dst = e.closeOpen(e.start(dst))
	r := response{status: statusCompleted, output: true, usage: &u}
	switch e.finish {
	case exchange.FinishLength:
		r.status, r.incomplete = statusIncomplete, "max_output_tokens"
	case exchange.FinishContentFilter:
		r.status, r.incomplete = statusIncomplete, "content_filter"
	}
	if r.status == statusCompleted {
		e.completed = time.Now().Unix()
		if e.completed < e.created {
			e.completed = e.created
		}
	}
	if !e.stream {
		return e.appendResponse(dst, r)
	}
	dst = e.begin(dst, "response."+r.status)
	dst = append(dst, `,"response":`...)
	return end(e.appendResponse(dst, r))
}

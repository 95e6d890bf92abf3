package messages

import (
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// Encoding, canonical events -> Anthropic server-sent events. Every frame
// has its "event:" line (Claude Code falls back to non-streaming without
// it):
//
//	Raw (messages)    -> the upstream's own frame, byte for byte (passthrough)
//	Start             -> message_start (id "msg_...", the model, usage zero: translated
//	                     upstreams report usage at the end, in message_delta)
//	Text              -> content_block_delta text_delta (a text block is started first)
//	Reasoning         -> thinking_delta (a thinking block is started first)
//	Signature         -> signature_delta of the open thinking block (one is started if
//	                     none is open); the next Reasoning starts a new block
//	RedactedReasoning -> a redacted_thinking block (start and stop)
//	ToolCall          -> content_block_start tool_use {id, name, input: {}}
//	ToolArgs          -> input_json_delta of that tool call's block
//	Finish            -> content_block_stop of every open block; the stop reason is kept
//	Usage             -> kept for message_delta
//	End               -> message_delta {stop_reason, stop_sequence, usage with input,
//	                     cache and output tokens}, then message_stop (nothing after a
//	                     passthrough: the upstream's message_stop was relayed)
//	Fail              -> one "event: error" frame, and nothing after it: never an invented
//	                     content_block_stop, message_delta or message_stop
//
// Block indices count 0, 1, 2, ... in output order. Tool-call blocks stay
// open until the next text, reasoning or finish (parallel calls may
// interleave their arguments); a text or thinking block is stopped when
// another kind of block starts. Arguments for a tool call whose block was
// already stopped cannot be sent (the adapters never produce them: each
// call's arguments come before the next text or finish).

// Kinds of the open text-like block (delta.Blocks.Current).
const (
	curNone = iota
	curText
	curThinking
)

// streamEncoder writes one streamed response. It keeps only small state;
// every frame is appended to the caller's (reused) buffer.
type streamEncoder struct {
	model   string // the route, for a stream whose upstream named no model
	started bool
	raw     bool // the upstream's own frames are relayed

	blocks    delta.Blocks // block numbering: the open text or thinking block (curText, curThinking), tool calls'
	curSigned bool         // the open thinking block has its signature

	finish, stop, stopSeq string
	usage                 exchange.TokenUsage
	gotUsage              bool
}

func (e *streamEncoder) ContentType() string { return "text/event-stream; charset=utf-8" }

// randomHex is a random id suffix for an upstream that gave no id.
func randomHex() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// messageID is the Message id for an upstream response id.
func messageID(id string) string {
	switch {
	case id == "":
		return "msg_gw" + randomHex()
	case strings.HasPrefix(id, "msg_"):
		return id
	}
	return "msg_" + id
}

// frame starts an SSE frame: its event line and "data: ".
func frame(dst []byte, event string) []byte {
	dst = append(dst, "event: "...)
	dst = append(dst, event...)
	return append(dst, "\ndata: "...)
}

func (e *streamEncoder) Event(dst []byte, ev *exchange.Event) []byte {
	switch ev.Kind {
	case exchange.Raw:
		if ev.RawAPI != exchange.Messages {
			return dst
		}
		e.raw, e.started = true, true
		return append(dst, ev.Raw...)
	case exchange.Start:
		return e.start(dst, ev.ID, ev.Name)
	case exchange.Text:
		dst, i := e.textLike(e.start(dst, "", ""), curText)
		return e.delta(dst, i, "text_delta", "text", ev.Text)
	case exchange.Reasoning:
		dst, i := e.textLike(e.start(dst, "", ""), curThinking)
		return e.delta(dst, i, "thinking_delta", "thinking", ev.Text)
	case exchange.Signature:
		dst, i := e.textLike(e.start(dst, "", ""), curThinking)
		e.curSigned = true
		return e.delta(dst, i, "signature_delta", "signature", ev.Text)
	case exchange.RedactedReasoning:
		dst = e.closeAll(e.start(dst, "", ""))
		i := e.blocks.Open()
		dst = blockStart(dst, i)
		dst = append(dst, `{"type":"redacted_thinking","data":`...)
		dst = jsonb.AppendString(dst, ev.Text)
		return blockStop(append(dst, "}}\n\n"...), i)
	case exchange.ToolCall:
		return e.toolCall(e.start(dst, "", ""), ev)
	case exchange.ToolArgs:
		if _, ok := e.blocks.Tool(ev.Index); !ok {
			dst = e.toolCall(e.start(dst, "", ""), &exchange.Event{Kind: exchange.ToolCall, Index: ev.Index})
		}
		i, ok := e.blocks.Tool(ev.Index)
		if !ok {
			return dst
		}
		return e.delta(dst, i, "input_json_delta", "partial_json", ev.Text)
	case exchange.Finish:
		e.finish, e.stop, e.stopSeq = ev.Finish, ev.Stop, ev.StopSequence
		return e.closeAll(e.start(dst, "", ""))
	case exchange.Usage:
		e.usage, e.gotUsage = ev.Usage, true
	}
	return dst
}

// start writes message_start once.
func (e *streamEncoder) start(dst []byte, id, model string) []byte {
	if e.started {
		return dst
	}
	e.started = true
	if model == "" {
		model = e.model
	}
	dst = frame(dst, "message_start")
	dst = append(dst, `{"type":"message_start","message":{"id":`...)
	dst = jsonb.AppendString(dst, messageID(id))
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonb.AppendString(dst, model)
	dst = append(dst, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	dst = appendUsage(dst, exchange.TokenUsage{})
	return append(dst, "}}\n\n"...)
}

// textLike makes the open text-like block one of kind, starting it (and
// stopping whatever else is open) when needed, and returns its index.
func (e *streamEncoder) textLike(dst []byte, kind int) ([]byte, int) {
	if cur, i := e.blocks.Current(); cur == kind && !(kind == curThinking && e.curSigned) {
		return dst, i
	}
	dst = e.closeAll(dst)
	e.curSigned = false
	i := e.blocks.OpenCurrent(kind)
	dst = blockStart(dst, i)
	if kind == curText {
		dst = append(dst, `{"type":"text","text":""}`...)
	} else {
		dst = append(dst, `{"type":"thinking","thinking":"","signature":""}`...)
	}
	return append(dst, "}\n\n"...), i
}

// toolCall starts a tool_use block (once per tool call index).
func (e *streamEncoder) toolCall(dst []byte, ev *exchange.Event) []byte {
	if !e.blocks.NewTool(ev.Index) {
		return dst // started already (a stopped block is not reopened), or out of range
	}
	dst = e.closeCur(dst)
	i := e.blocks.OpenTool(ev.Index)
	id := ev.ID
	if id == "" {
		id = "toolu_gw" + randomHex()
	}
	dst = blockStart(dst, i)
	dst = append(dst, `{"type":"tool_use","id":`...)
	dst = jsonb.AppendString(dst, id)
	dst = append(dst, `,"name":`...)
	dst = jsonb.AppendString(dst, ev.Name)
	return append(dst, `,"input":{}}}`+"\n\n"...)
}

// closeCur stops the open text or thinking block.
func (e *streamEncoder) closeCur(dst []byte) []byte {
	if i, ok := e.blocks.StopCurrent(); ok {
		return blockStop(dst, i)
	}
	return dst
}

// closeAll stops every open block, in index order.
func (e *streamEncoder) closeAll(dst []byte) []byte {
	for i, ok := e.blocks.StopNext(); ok; i, ok = e.blocks.StopNext() {
		dst = blockStop(dst, i)
	}
	return dst
}

func blockStart(dst []byte, i int) []byte {
	dst = frame(dst, "content_block_start")
	dst = append(dst, `{"type":"content_block_start","index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	return append(dst, `,"content_block":`...)
}

func blockStop(dst []byte, i int) []byte {
	dst = frame(dst, "content_block_stop")
	dst = append(dst, `{"type":"content_block_stop","index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	return append(dst, "}\n\n"...)
}

// delta writes a content_block_delta whose delta is {type, field: s}.
func (e *streamEncoder) delta(dst []byte, i int, typ, field, s string) []byte {
	dst = frame(dst, "content_block_delta")
	dst = append(dst, `{"type":"content_block_delta","index":`...)
	dst = strconv.AppendInt(dst, int64(i), 10)
	dst = append(dst, `,"delta":{"type":"`...)
	dst = append(dst, typ...)
	dst = append(dst, `","`...)
	dst = append(dst, field...)
	dst = append(dst, `":`...)
	dst = jsonb.AppendString(dst, s)
	return append(dst, "}}\n\n"...)
}

func (e *streamEncoder) End(dst []byte, u exchange.TokenUsage) []byte {
	if e.raw {
		return dst
	}
	dst = e.closeAll(e.start(dst, "", ""))
	if !e.gotUsage || u.Input+u.Output > 0 {
		e.usage = u
	}
	dst = frame(dst, "message_delta")
	dst = append(dst, `{"type":"message_delta","delta":{"stop_reason":`...)
	stop, seq := stopReason(e.finish, e.stop, e.stopSeq)
	dst = jsonb.AppendString(dst, stop)
	dst = append(dst, `,"stop_sequence":`...)
	if seq != "" {
		dst = jsonb.AppendString(dst, seq)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `},"usage":`...)
	dst = appendUsage(dst, e.usage)
	dst = append(dst, "}\n\n"...)
	dst = frame(dst, "message_stop")
	return append(dst, `{"type":"message_stop"}`+"\n\n"...)
}

func (e *streamEncoder) Fail(dst []byte, ge *gwerr.Error, rid string, u exchange.TokenUsage) []byte {
	wu := wireUsage(u)
	dst = frame(dst, "error")
	dst = append(dst, errorBody(ge, rid, &wu)...)
	return append(dst, "\n\n"...)
}

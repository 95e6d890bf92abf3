package bedrock

import (
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"strings"
	"time"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/bedrockwire"
	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// The answer of Converse and ConverseStream, from canonical events. One
// state machine numbers the content blocks for both; a stream writes each
// step as an event-stream frame, a Converse body aggregates them:
//
//	Raw (converse)    -> a Bedrock upstream's own frame, or whole body, byte for byte
//	                     (passthrough); End then adds nothing
//	Start             -> messageStart {"role":"assistant"} (once)
//	Text              -> contentBlockDelta {text} (Converse opens text blocks without a
//	                     contentBlockStart)
//	Reasoning         -> contentBlockDelta {reasoningContent: {text}}
//	Signature         -> contentBlockDelta {reasoningContent: {signature}}; the next
//	                     Reasoning opens a new block
//	RedactedReasoning -> a block of one {reasoningContent: {redactedContent}} delta
//	ToolCall          -> contentBlockStart {toolUse: {toolUseId, name}}
//	ToolArgs          -> contentBlockDelta {toolUse: {input}} of that call's block
//	Finish            -> contentBlockStop of every open block, then messageStop {stopReason}
//	End               -> metadata {usage, metrics} (messageStop first if no Finish came)
//	Fail              -> one exception frame (streamException), nothing after it
//
// A Converse body is {"output":{"message":{"role":"assistant","content":
// [blocks]}},"stopReason","usage","metrics"}; a tool call's input is its
// arguments as a JSON object ({} when empty).

// Block kinds.
const (
	kindNone = iota
	kindText
	kindReasoning
	kindRedacted
	kindTool
)

// outBlock is one content block of a Converse body.
type outBlock struct {
	kind     int
	text     strings.Builder // text, reasoning, redacted data, or a tool call's arguments
	sig      string
	id, name string
}

// converseEncoder writes one Converse or ConverseStream answer.
type converseEncoder struct {
	stream  bool
	start   time.Time
	started bool
	stopped bool // messageStop written
	raw     bool // a Bedrock upstream's own frames are relayed
	body    []byte

	numbers   delta.Blocks // block numbering: the open text or reasoning block (its kind), tool calls'
	curSigned bool         // the open reasoning block has its signature

	finish, stop, seq string
	usage             exchange.TokenUsage
	gotUsage          bool

	blocks  []*outBlock // a body's blocks, by index
	payload []byte      // scratch for a frame's payload
}

func newConverseEncoder(req *exchange.Request) *converseEncoder {
	return &converseEncoder{stream: req.Stream, start: req.Start}
}

func (e *converseEncoder) ContentType() string {
	if e.stream {
		return bedrockwire.EventStreamType
	}
	return "application/json"
}

// emit appends one event frame of a stream; a body keeps nothing of it.
func (e *converseEncoder) emit(dst []byte, typ string, payload []byte) []byte {
	if !e.stream {
		return dst
	}
	return bedrockwire.AppendEvent(dst, typ, payload)
}

func (e *converseEncoder) Event(dst []byte, ev *exchange.Event) []byte {
	switch ev.Kind {
	case exchange.Raw:
		if ev.RawAPI != exchange.Converse {
			return dst
		}
		e.raw = true
		if !e.stream {
			e.body = append(e.body, ev.Raw...)
			return dst
		}
		return append(dst, ev.Raw...)
	case exchange.Start:
		return e.begin(dst)
	case exchange.Text:
		dst, i := e.textLike(e.begin(dst), kindText)
		return e.delta(dst, i, bedrockwire.DeltaText, ev.Text)
	case exchange.Reasoning:
		dst, i := e.textLike(e.begin(dst), kindReasoning)
		return e.delta(dst, i, bedrockwire.DeltaReasoning, ev.Text)
	case exchange.Signature:
		dst, i := e.textLike(e.begin(dst), kindReasoning)
		e.curSigned = true
		return e.delta(dst, i, bedrockwire.DeltaSignature, ev.Text)
	case exchange.RedactedReasoning:
		dst = e.closeAll(e.begin(dst))
		i := e.open(e.numbers.Open(), kindRedacted)
		dst = e.delta(dst, i, bedrockwire.DeltaRedacted, blob(ev.Text))
		return e.emit(dst, bedrockwire.EventContentBlockStop, bedrockwire.AppendBlockStop(e.payload[:0], i))
	case exchange.ToolCall:
		return e.toolCall(e.begin(dst), ev.Index, ev.ID, ev.Name)
	case exchange.ToolArgs:
		dst = e.toolCall(e.begin(dst), ev.Index, "", "")
		i, ok := e.numbers.Tool(ev.Index)
		if !ok {
			return dst // the call's block was stopped already
		}
		return e.delta(dst, i, bedrockwire.DeltaToolInput, ev.Text)
	case exchange.Finish:
		e.finish, e.stop, e.seq = ev.Finish, ev.Stop, ev.StopSequence
		return e.messageStop(e.closeAll(e.begin(dst)))
	case exchange.Usage:
		e.usage, e.gotUsage = ev.Usage, true
	}
	return dst
}

// begin writes messageStart once.
func (e *converseEncoder) begin(dst []byte) []byte {
	if e.started {
		return dst
	}
	e.started = true
	return e.emit(dst, bedrockwire.EventMessageStart, []byte(bedrockwire.MessageStartPayload))
}

// open keeps a body's block i, of kind.
func (e *converseEncoder) open(i, kind int) int {
	if !e.stream {
		e.blocks = append(e.blocks, &outBlock{kind: kind})
	}
	return i
}

// textLike makes the open text or reasoning block one of kind and returns
// its index.
func (e *converseEncoder) textLike(dst []byte, kind int) ([]byte, int) {
	if cur, i := e.numbers.Current(); cur == kind && !(kind == kindReasoning && e.curSigned) {
		return dst, i
	}
	dst = e.closeAll(dst)
	e.curSigned = false
	return dst, e.open(e.numbers.OpenCurrent(kind), kind)
}

// toolCall opens tool call index's toolUse block, once.
func (e *converseEncoder) toolCall(dst []byte, index int, id, name string) []byte {
	if !e.numbers.NewTool(index) {
		return dst
	}
	dst = e.closeCur(dst)
	if id == "" {
		id = "tooluse_gw" + randomHex()
	}
	i := e.open(e.numbers.OpenTool(index), kindTool)
	if !e.stream {
		e.blocks[i].id, e.blocks[i].name = id, name
		return dst
	}
	return e.emit(dst, bedrockwire.EventContentBlockStart, bedrockwire.AppendToolUseStart(e.payload[:0], i, id, name))
}

// delta adds s to block i.
func (e *converseEncoder) delta(dst []byte, i int, kind, s string) []byte {
	if !e.stream {
		b := e.blocks[i]
		if kind == bedrockwire.DeltaSignature {
			b.sig += s
		} else {
			b.text.WriteString(s)
		}
		return dst
	}
	e.payload = bedrockwire.AppendDelta(e.payload[:0], i, kind, s)
	return bedrockwire.AppendEvent(dst, bedrockwire.EventContentBlockDelta, e.payload)
}

// closeCur stops the open text or reasoning block.
func (e *converseEncoder) closeCur(dst []byte) []byte {
	if i, ok := e.numbers.StopCurrent(); ok {
		return e.emit(dst, bedrockwire.EventContentBlockStop, bedrockwire.AppendBlockStop(e.payload[:0], i))
	}
	return dst
}

// closeAll stops every open block, in index order.
func (e *converseEncoder) closeAll(dst []byte) []byte {
	for i, ok := e.numbers.StopNext(); ok; i, ok = e.numbers.StopNext() {
		dst = e.emit(dst, bedrockwire.EventContentBlockStop, bedrockwire.AppendBlockStop(e.payload[:0], i))
	}
	return dst
}

// messageStop writes messageStop once.
func (e *converseEncoder) messageStop(dst []byte) []byte {
	if e.stopped {
		return dst
	}
	e.stopped = true
	return e.emit(dst, bedrockwire.EventMessageStop, bedrockwire.AppendMessageStop(e.payload[:0], stopReason(e.finish, e.stop, e.seq)))
}

func (e *converseEncoder) End(dst []byte, u exchange.TokenUsage) []byte {
	if e.raw {
		return append(dst, e.body...) // the upstream's body, or nothing after its metadata frame
	}
	if !e.gotUsage || u.Input+u.Output > 0 {
		e.usage = u
	}
	latency := time.Since(e.start).Milliseconds()
	if e.stream {
		dst = e.messageStop(e.closeAll(e.begin(dst)))
		e.payload = bedrockwire.AppendMetadata(e.payload[:0], wireUsage(e.usage), latency)
		return bedrockwire.AppendEvent(dst, bedrockwire.EventMetadata, e.payload)
	}
	var blocks []byte
	for i, b := range e.blocks {
		if i > 0 {
			blocks = append(blocks, ',')
		}
		switch b.kind {
		case kindText:
			blocks = bedrockwire.AppendTextBlock(blocks, b.text.String())
		case kindReasoning:
			blocks = bedrockwire.AppendReasoningBlock(blocks, b.text.String(), b.sig)
		case kindRedacted:
			blocks = bedrockwire.AppendRedactedBlock(blocks, b.text.String())
		case kindTool:
			blocks = bedrockwire.AppendToolUseBlock(blocks, b.id, b.name, toolInput(b.text.String()))
		}
	}
	return bedrockwire.AppendConverseResponse(dst, blocks, stopReason(e.finish, e.stop, e.seq), wireUsage(e.usage), latency)
}

func (e *converseEncoder) Fail(dst []byte, ge *gwerr.Error, _ string, _ exchange.TokenUsage) []byte {
	return bedrockwire.AppendException(dst, streamException(ge, false), message(ge))
}

// wireUsage maps the gateway's counts (Input counts every prompt token)
// to Bedrock's (inputTokens excludes the cached ones).
func wireUsage(u exchange.TokenUsage) bedrockwire.Usage {
	return bedrockwire.Usage{Input: max(0, u.Input-u.CacheRead-u.CacheWrite), Output: u.Output, CacheRead: u.CacheRead, CacheWrite: u.CacheWrite}
}

// stopReason maps a finish to Converse's stopReason: the upstream's own
// when Converse knows it, else stop -> end_turn (stop_sequence when a
// sequence matched), length -> max_tokens, tool_calls -> tool_use,
// content_filter -> content_filtered.
func stopReason(finish, native, seq string) string {
	if bedrockwire.StopReasons[native] {
		return native
	}
	switch finish {
	case exchange.FinishLength:
		return bedrockwire.StopMaxTokens
	case exchange.FinishToolCalls:
		return bedrockwire.StopToolUse
	case exchange.FinishContentFilter:
		return bedrockwire.StopContentFiltered
	}
	if seq != "" {
		return bedrockwire.StopStopSequence
	}
	return bedrockwire.StopEndTurn
}

// toolInput is a tool call's arguments as a toolUse input: the compact
// object, {} when empty, a JSON string when not an object.
func toolInput(args string) []byte {
	a := bytes.TrimSpace([]byte(args))
	if len(a) == 0 {
		return []byte("{}")
	}
	var c bytes.Buffer
	if a[0] == '{' && json.Compact(&c, a) == nil {
		return c.Bytes()
	}
	return jsonb.AppendString(nil, args)
}

// blob is redacted reasoning's data as a Converse blob: base64 as it
// came (Bedrock's and Anthropic's are), else encoded.
func blob(s string) string {
	if _, err := base64.StdEncoding.DecodeString(s); err == nil {
		return s
	}
	return base64.StdEncoding.EncodeToString([]byte(s))
}

// randomHex is a random id suffix for an upstream that gave no id.
func randomHex() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

package messages

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
)

// A non-streaming response: the upstream's own body on passthrough (a Raw
// Whole event), else one Message object aggregated from the events:
//
//	{"id":"msg_...","type":"message","role":"assistant","model":...,
//	 "content":[blocks in output order],"stop_reason":...,"stop_sequence":...,
//	 "usage":{"input_tokens","cache_creation_input_tokens","cache_read_input_tokens","output_tokens"}}
//
// Consecutive Text events make one text block; Reasoning and its Signature
// one thinking block; each RedactedReasoning a redacted_thinking block;
// each ToolCall a tool_use block whose input is its arguments (a JSON
// object; "{}" when empty; arguments that are not a JSON object are kept
// as a JSON string rather than dropped, so the client sees what the model
// produced).

// usageJSON is Anthropic's usage object. input_tokens excludes the cached
// prompt tokens, which Anthropic counts apart.
type usageJSON struct {
	InputTokens              int `json:"input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// wireUsage maps the gateway's token counts (Input counts every prompt
// token) to Anthropic's.
func wireUsage(u exchange.TokenUsage) usageJSON {
	return usageJSON{InputTokens: max(0, u.Input-u.CacheRead-u.CacheWrite), CacheCreationInputTokens: u.CacheWrite,
		CacheReadInputTokens: u.CacheRead, OutputTokens: u.Output}
}

// appendUsage appends the usage object of u.
func appendUsage(dst []byte, u exchange.TokenUsage) []byte {
	w := wireUsage(u)
	dst = append(dst, `{"input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(w.InputTokens), 10)
	dst = append(dst, `,"cache_creation_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(w.CacheCreationInputTokens), 10)
	dst = append(dst, `,"cache_read_input_tokens":`...)
	dst = strconv.AppendInt(dst, int64(w.CacheReadInputTokens), 10)
	dst = append(dst, `,"output_tokens":`...)
	dst = strconv.AppendInt(dst, int64(w.OutputTokens), 10)
	return append(dst, '}')
}

// stopReasons are Anthropic's stop reasons: a native Stop in this set is
// sent as it is.
var stopReasons = map[string]bool{"end_turn": true, "max_tokens": true, "stop_sequence": true, "tool_use": true,
	"pause_turn": true, "refusal": true, "model_context_window_exceeded": true}

// stopReason maps a finish to Anthropic's stop_reason and stop_sequence:
// the upstream's own reason when it is one of Anthropic's, else stop ->
// end_turn (stop_sequence when a sequence matched), length -> max_tokens,
// tool_calls -> tool_use, content_filter -> refusal.
func stopReason(finish, native, seq string) (string, string) {
	if stopReasons[native] {
		return native, seq
	}
	switch finish {
	case exchange.FinishLength:
		return "max_tokens", ""
	case exchange.FinishToolCalls:
		return "tool_use", ""
	case exchange.FinishContentFilter:
		return "refusal", ""
	}
	if seq != "" {
		return "stop_sequence", seq
	}
	return "end_turn", ""
}

// outBlock is one content block being aggregated.
type outBlock struct {
	typ      string
	text     strings.Builder // text, thinking, or a tool call's arguments
	sig      string          // a thinking block's signature
	signed   bool
	id, name string // tool_use
}

// bodyEncoder aggregates a non-streaming response.
type bodyEncoder struct {
	model     string
	raw       []byte
	id, name  string
	blocks    []*outBlock
	tools     map[int]*outBlock
	finish    string
	stop, seq string
	usage     exchange.TokenUsage
	gotUsage  bool
}

func (e *bodyEncoder) ContentType() string { return "application/json" }

// last returns the last block when it is of type typ (and, for thinking,
// not yet signed), else appends a new one.
func (e *bodyEncoder) last(typ string) *outBlock {
	if n := len(e.blocks); n > 0 {
		if b := e.blocks[n-1]; b.typ == typ && typ != "tool_use" && typ != "redacted_thinking" && !b.signed {
			return b
		}
	}
	b := &outBlock{typ: typ}
	e.blocks = append(e.blocks, b)
	return b
}

func (e *bodyEncoder) Event(dst []byte, ev *exchange.Event) []byte {
	switch ev.Kind {
	case exchange.Raw:
		if ev.RawAPI == exchange.Messages {
			e.raw = append(e.raw, ev.Raw...)
		}
	case exchange.Start:
		e.id, e.name = ev.ID, ev.Name
	case exchange.Text:
		e.last("text").text.WriteString(ev.Text)
	case exchange.Reasoning:
		e.last("thinking").text.WriteString(ev.Text)
	case exchange.Signature:
		b := e.last("thinking")
		b.sig, b.signed = b.sig+ev.Text, true
	case exchange.RedactedReasoning:
		e.last("redacted_thinking").text.WriteString(ev.Text)
	case exchange.ToolCall:
		if e.tools == nil {
			e.tools = map[int]*outBlock{}
		}
		if _, ok := e.tools[ev.Index]; !ok {
			b := e.last("tool_use")
			b.id, b.name = ev.ID, ev.Name
			e.tools[ev.Index] = b
		}
	case exchange.ToolArgs:
		b, ok := e.tools[ev.Index]
		if !ok {
			e.Event(nil, &exchange.Event{Kind: exchange.ToolCall, Index: ev.Index})
			b = e.tools[ev.Index]
		}
		b.text.WriteString(ev.Text)
	case exchange.Finish:
		e.finish, e.stop, e.seq = ev.Finish, ev.Stop, ev.StopSequence
	case exchange.Usage:
		e.usage, e.gotUsage = ev.Usage, true
	}
	return dst
}

func (e *bodyEncoder) End(dst []byte, u exchange.TokenUsage) []byte {
	if e.raw != nil {
		return append(dst, e.raw...)
	}
	if !e.gotUsage {
		e.usage = u
	}
	model := e.name
	if model == "" {
		model = e.model
	}
	dst = append(dst, `{"id":`...)
	dst = jsonb.AppendString(dst, messageID(e.id))
	dst = append(dst, `,"type":"message","role":"assistant","model":`...)
	dst = jsonb.AppendString(dst, model)
	dst = append(dst, `,"content":[`...)
	for i, b := range e.blocks {
		if i > 0 {
			dst = append(dst, ',')
		}
		dst = b.appendJSON(dst)
	}
	stop, seq := stopReason(e.finish, e.stop, e.seq)
	dst = append(dst, `],"stop_reason":`...)
	dst = jsonb.AppendString(dst, stop)
	dst = append(dst, `,"stop_sequence":`...)
	if seq != "" {
		dst = jsonb.AppendString(dst, seq)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"usage":`...)
	dst = appendUsage(dst, e.usage)
	return append(dst, '}')
}

// appendJSON appends the block as Anthropic writes it.
func (b *outBlock) appendJSON(dst []byte) []byte {
	dst = append(dst, `{"type":"`...)
	dst = append(dst, b.typ...)
	dst = append(dst, `",`...)
	switch b.typ {
	case "text":
		dst = append(dst, `"text":`...)
		dst = jsonb.AppendString(dst, b.text.String())
	case "thinking":
		dst = append(dst, `"thinking":`...)
		dst = jsonb.AppendString(dst, b.text.String())
		dst = append(dst, `,"signature":`...)
		dst = jsonb.AppendString(dst, b.sig)
	case "redacted_thinking":
		dst = append(dst, `"data":`...)
		dst = jsonb.AppendString(dst, b.text.String())
	default: // tool_use
		id := b.id
		if id == "" {
			id = "toolu_gw" + randomHex()
		}
		dst = append(dst, `"id":`...)
		dst = jsonb.AppendString(dst, id)
		dst = append(dst, `,"name":`...)
		dst = jsonb.AppendString(dst, b.name)
		dst = append(dst, `,"input":`...)
		dst = append(dst, toolInput(b.text.String())...)
	}
	return append(dst, '}')
}

// toolInput is a tool call's arguments as a tool_use input: the compact
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

// Fail cannot be reached: the front sends a non-streaming body only whole,
// and answers a failure before it with an error response.
func (e *bodyEncoder) Fail(dst []byte, _ *gwerr.Error, _ string, _ exchange.TokenUsage) []byte {
	return dst
}

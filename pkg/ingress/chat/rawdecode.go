package chat

import (
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/delta"
)

var _ ingress.RawDecoder = Ingress{}

// DecodeRaw implements ingress.RawDecoder: it reads a Chat Completions
// chunk (a stream's data frame) or a whole chat.completion body back into
// canonical events through the chat wire reader (chatwire.ReadChunk,
// chatwire.ReadResponse), in the order the encoder writes them: Start (the
// role chunk, or the body's id and model), reasoning, text, tool calls and
// their arguments, the finish reason, usage.
//
// Only what the canonical events carry is accepted: a frame with a second
// choice, log probabilities, a refusal, audio, annotations, a legacy
// function_call or any other non-empty field of the delta (or message) that
// is not listed above is refused (ok false), and so is an error. Top-level
// fields other than id, model, created, choices and usage
// (system_fingerprint, service_tier) are dropped: a response rebuilt from
// these events does not carry them.
func (Ingress) DecodeRaw(dst []exchange.Event, ev *exchange.Event) ([]exchange.Event, bool) {
	if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Chat || !validObject(ev.Raw) {
		return dst, false
	}
	var ci chatwire.ChunkInfo
	var parts []delta.Part
	if ev.Flags&exchange.Whole != 0 {
		ci, parts = chatwire.ReadResponse(nil, ev.Raw)
	} else {
		ci, parts = chatwire.ReadChunk(nil, ev.Raw, false)
	}
	if ci.Error {
		return dst, false
	}
	return exchange.AppendParts(dst, parts)
}

// validObject reports whether b is one valid JSON object.
func validObject(b []byte) bool { return gjson.ValidBytes(b) && gjson.ParseBytes(b).IsObject() }

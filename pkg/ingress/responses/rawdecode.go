package responses

import (
	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/wire/delta"
	"github.com/llmgw/llmgw/pkg/wire/responseswire"
)

var _ ingress.RawDecoder = Ingress{}

// DecodeRaw implements ingress.RawDecoder: it reads a Responses upstream's
// passthrough event (its data) or whole response body back into canonical
// events through the Responses wire reader (responseswire.ReadEvent,
// responseswire.ReadBody): Start, output text, reasoning summaries,
// function calls (numbered by their output index) and their arguments, the
// finish and the usage.
//
// Only what the encoder can write back is accepted: a failure, a refusal,
// encrypted reasoning, annotations, built-in and custom tool items and
// unknown events are refused (ok false).
func (Ingress) DecodeRaw(dst []exchange.Event, ev *exchange.Event) ([]exchange.Event, bool) {
	if ev.Kind != exchange.Raw || ev.RawAPI != exchange.Responses || !gjson.ValidBytes(ev.Raw) {
		return dst, false
	}
	var ri responseswire.ResponsesEventInfo
	var parts []delta.Part
	if ev.Flags&exchange.Whole != 0 {
		ri, parts = responseswire.ReadBody(nil, ev.Raw)
	} else {
		ri, parts = responseswire.ReadEvent(nil, nil, ev.Raw)
	}
	if ri.Failed {
		return dst, false
	}
	return exchange.AppendParts(dst, parts)
}

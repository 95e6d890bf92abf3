package responses

import (
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/responseswire"
)

// relay passes an upstream's own event through, noting its sequence
// number and, from response.created, the response's id and model (a
// failure after them continues the upstream's numbering).
func (e *encoder) relay(dst []byte, ev *exchange.Event) []byte {
	e.pass, e.started = true, true
	if !e.stream {
		e.raw = append(e.raw, ev.Raw...)
		return dst
	}
	if n := responseswire.SequenceNumber(ev.Raw); n >= e.seq {
		e.seq = n + 1
	}
	s := bytesString(ev.Raw)
	typ := gjson.Get(s, "type").Str
	if typ == "response.created" && e.id == "" {
		r := gjson.Get(s, "response")
		e.id, e.model, e.created = strings.Clone(r.Get("id").Str), strings.Clone(r.Get("model").Str), r.Get("created_at").Int()
	}
	if typ != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, typ...)
		dst = append(dst, '\n')
	}
	dst = append(dst, "data: "...)
	dst = append(dst, ev.Raw...)
	return append(dst, "\n\n"...)
}

// Fail implements ingress.Encoder: response.failed, continuing the
// numbering of the events sent (the upstream's own on passthrough).
func (e *encoder) Fail(dst []byte, ge *gwerr.Error, rid string, u exchange.TokenUsage) []byte {
	if !e.stream {
		return dst
	}
	if e.pass {
		if e.id == "" {
			e.id = "resp_" + e.suffix
		}
		if e.model == "" {
			e.model = e.route
		}
		e.echo = readEcho(e.body)
	}
	dst = e.start(dst)
	for i := range e.items {
		if e.items[i].status == statusInProgress {
			e.items[i].status = statusIncomplete
		}
	}
	errObj, err := json.Marshal(chatwire.NewErrorEnvelope(ge, rid, nil).Error)
	if err != nil { // cannot happen: every field is a plain value
		errObj = []byte(`{"message":"internal error","type":"internal","param":null,"code":"internal"}`)
	}
	dst = e.begin(dst, "response.failed")
	dst = append(dst, `,"response":`...)
	dst = e.appendResponse(dst, response{status: "failed", err: errObj, output: !e.pass, usage: &u})
	dst = append(dst, `,"error":`...)
	dst = append(dst, errObj...)
	return end(dst)
}

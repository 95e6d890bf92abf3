// Package responses is the OpenAI Responses API ingress (POST
// /v1/responses), the API of Codex CLI, the AI SDK's and the Agents SDK's
// default OpenAI models.
//
// Decode validates the request and decodes it into the canonical Prompt
// (see prompt.go; translate.go still builds the retiring chat form); the
// client's bytes are kept, so an upstream that speaks the Responses API
// natively receives them with only the model rewritten. What a Prompt
// cannot carry (stored conversations, files by id) is recorded as
// exchange.Request.Untranslated: a translating target refuses the attempt
// and the failover engine tries the next, and only when no target can
// serve it does the client get a 400 naming the feature and the target.
// What a Prompt carries but a target cannot (custom and built-in tools on
// a chat upstream) that target's adapter refuses the same way.
//
// The encoder relays a native upstream's events untouched (passthrough) or
// builds the Responses event lifecycle from canonical events (see
// encode.go): response.created, response.in_progress, one output item per
// message, reasoning summary or function call (added, deltas, done),
// response.completed or response.incomplete with usage, every event with
// its `event:` line and a sequence_number counted from 0. A failure after
// the first token ends the stream with response.failed, never with an
// invented response.completed.
package responses

import (
	"net/http"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/ingress"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

// Ingress is the Responses API.
type Ingress struct{}

var _ ingress.Ingress = Ingress{}

// API implements ingress.Ingress.
func (Ingress) API() exchange.API { return exchange.Responses }

// Decode implements ingress.Ingress.
func (Ingress) Decode(_ *http.Request, body []byte, req *exchange.Request) error {
	d, err := decode(body)
	if err != nil {
		return gwerr.As(err)
	}
	req.Prompt, req.Body, req.Untranslated = d.prompt, body, d.lost
	req.Route, req.Stream = d.wire.Model, d.wire.Stream != nil && *d.wire.Stream
	// The Responses API always reports usage, in its terminal event.
	req.WantsUsage = true
	req.Tag = d.wire.Metadata["tag"]
	return nil
}

// NewEncoder implements ingress.Ingress.
func (Ingress) NewEncoder(req *exchange.Request) ingress.Encoder {
	return newEncoder(req)
}

// WriteError implements ingress.Ingress: the OpenAI error envelope
// {"error":{"message","type","param","code",...}} with the gateway's
// category, retryable and provider.
func (Ingress) WriteError(w http.ResponseWriter, req *exchange.Request, e *gwerr.Error) int {
	status := ingress.Status(e)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	ingress.SetErrorHeaders(h, e)
	w.WriteHeader(status)
	w.Write(chatwire.NewErrorEnvelope(e, req.ID, nil).Marshal())
	return status
}

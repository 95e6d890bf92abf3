// Package ingress is the client-side seam: the interface every client API
// (OpenAI Chat Completions, Anthropic Messages, OpenAI Responses, ...)
// implements. An ingress decodes its wire request into the canonical
// exchange.Request and encodes canonical events and errors back into its
// own wire format; everything between (auth, limits, the failover engine,
// usage records) is shared by every ingress. The APIs are the sub-packages;
// pkg/ingress/registry lists them.
package ingress

import (
	"net/http"
	"strconv"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Ingress is one client API.
type Ingress interface {
	// API names it; it is recorded on every usage record.
	API() exchange.API
	// Decode validates the client's body and fills the client's part of
	// req: Route, Stream, WantsUsage, Prompt (the canonical form), Header
	// and Tag (from the body; the x-gateway-tag header wins). Bad input is
	// a *gwerr.Error (a 4xx; no upstream call follows).
	Decode(r *http.Request, body []byte, req *exchange.Request) error
	// NewEncoder returns the encoder of one response.
	NewEncoder(req *exchange.Request) Encoder
	// WriteError answers with e before anything was committed, in this
	// API's error shape, and returns the status sent.
	WriteError(w http.ResponseWriter, req *exchange.Request, e *gwerr.Error) int
}

// Encoder writes the canonical events of one response in one API's wire
// format. It is a small per-request object (it may reuse one buffer and
// keep state across events, e.g. the open content blocks).
//
// For a streamed response the bytes each method appends are sent at once.
// For a non-streaming one the front sends nothing until End, so an Encoder
// may aggregate events and append the whole body there.
type Encoder interface {
	// ContentType is the response's media type.
	ContentType() string
	// Event appends the wire bytes for ev (possibly none).
	Event(dst []byte, ev *exchange.Event) []byte
	// End appends what completes a clean response (the terminator of a
	// stream, or the whole body of a non-streaming response).
	End(dst []byte, u exchange.TokenUsage) []byte
	// Fail appends what ends a streamed response that failed after it was
	// committed: one typed error in the API's own mid-stream form, never
	// an invented clean end.
	Fail(dst []byte, e *gwerr.Error, rid string, u exchange.TokenUsage) []byte
}

// Counter is implemented by an ingress whose API counts a request's input
// tokens without generating (Anthropic's POST /v1/messages/count_tokens).
// The front serves it at the registry entry's CountPaths: authenticated and
// routed like a generation, with no limits, no failover and no usage
// record.
type Counter interface {
	// DecodeCount validates a count request's body and fills req as Decode
	// does.
	DecodeCount(r *http.Request, body []byte, req *exchange.Request) error
	// WriteCount answers with the count; estimated marks the gateway's own
	// estimate (no upstream counted it).
	WriteCount(w http.ResponseWriter, req *exchange.Request, tokens int, estimated bool) int
}

// Error codes the front sets that an ingress may answer with a status of
// its own (Anthropic's 413 request_too_large, a 405).
const (
	// CodeMethodNotAllowed marks a request with the wrong HTTP method.
	CodeMethodNotAllowed = "method_not_allowed"
	// CodeBodyTooLarge marks a body over server.max_body_bytes.
	CodeBodyTooLarge = "body_too_large"
	// CodeUnsupportedMediaType marks a body whose Content-Type is not JSON
	// (415).
	CodeUnsupportedMediaType = "unsupported_media_type"
)

// Status is the HTTP status of an error in the OpenAI-style APIs: the
// category's, except 405 for CodeMethodNotAllowed and 415 for
// CodeUnsupportedMediaType.
func Status(e *gwerr.Error) int {
	switch e.Code {
	case CodeMethodNotAllowed:
		return http.StatusMethodNotAllowed
	case CodeUnsupportedMediaType:
		return http.StatusUnsupportedMediaType
	}
	return e.Category.Status()
}

// RawDecoder is implemented by an ingress that can read its own API's
// upstream frames (Raw events: bytes an upstream of the same API sent,
// relayed untouched) back into canonical events. The response cache stores
// canonical events, and the pacer weighs raw frames by the text they carry.
// ok is false when a frame carries something the canonical events cannot
// represent (several choices, log probabilities, a refusal, ...): such a
// response is relayed as it is but not cached.
type RawDecoder interface {
	DecodeRaw(dst []exchange.Event, ev *exchange.Event) (out []exchange.Event, ok bool)
}

// SetErrorHeaders sets the headers every error response carries, whatever
// the API: the gateway's error category and, when the client should wait,
// Retry-After in whole seconds.
func SetErrorHeaders(h http.Header, e *gwerr.Error) {
	h.Set("x-gateway-error-category", string(e.Category))
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int(e.RetryAfter.Seconds()+0.999)))
	}
}

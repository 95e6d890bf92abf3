package anthropic

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
	"github.com/llmgw/llmgw/pkg/wire/jsonb"
	"github.com/llmgw/llmgw/pkg/wire/messageswire"
)

// Passthrough: a client of the Messages API served by an Anthropic
// upstream. The client's body is sent byte for byte except the model (the
// target's), max_tokens, lowered to the admitted output cap when the
// request has one (exchange.Request.OutputCap) and the client asked for
// more, and the target's prompt variant (system, temperature, top_p,
// max_tokens; see chatwire.ApplyVariantMembers); nothing is decoded and re-encoded, so fields the gateway does not
// know (context_management, defer_loading, ...) reach the upstream. The
// client's anthropic-version and anthropic-beta headers are forwarded
// unchanged (the configured anthropic_version when the client sent none);
// the key is the configured one, in the configured header - the client's
// own Authorization and x-api-key never reach the upstream.
//
// The answer is relayed untouched. A stream becomes one Raw event per SSE
// frame (RawAPI exchange.Messages; Raw is the whole frame: its event line,
// its data line and the blank line), flagged:
//
//	content_block_delta with a non-empty delta       -> HasContent
//	content_block_start of a block that is not an empty text or thinking
//	  block (tool_use, redacted_thinking, server tools, ...) -> HasContent
//	message_delta with a stop_reason                 -> HasFinish (Finish: the canonical reason)
//	message_stop                                     -> the last event; then io.EOF
//	error                                            -> provider.InBandError with its type
//
// A frame whose data is not valid JSON is skipped (never relayed) and
// counted in the request's Trace.MalformedFrames. A stream that ends before
// message_stop, or reaches it without a stop_reason, is
// provider.Interrupted. Usage comes from message_start and message_delta. A
// non-streaming answer is one Raw event with the whole body (Whole |
// HasContent, HasFinish with its stop_reason); an empty one (no content, no
// output tokens) is provider.EmptyResponse.

// messagesVariant is how a target's prompt variant edits a Messages body.
var messagesVariant = messageswire.Variant

// passthroughBody rewrites the client's body for model, the output cap
// (the admitted cap and the variant's, provider.Call.OutputLimit) and the
// target's prompt variant, byte for byte.
func passthroughBody(body []byte, model string, outputCap int, v *chatwire.Variant) ([]byte, error) {
	body, err := chatwire.ApplyVariantMembers(body, v, messagesVariant)
	if err != nil {
		return nil, err
	}
	return chatwire.EditMembers(make([]byte, 0, len(body)+16), body, func(key string, v []byte) ([]byte, bool) {
		switch key {
		case "model":
			return jsonb.AppendString(nil, model), true
		case "max_tokens":
			if n, err := strconv.Atoi(string(bytes.TrimSpace(v))); outputCap > 0 && err == nil && n > outputCap {
				return strconv.AppendInt(nil, int64(outputCap), 10), true
			}
		}
		return nil, false
	})
}

// forwardedHeaders are the client headers a passthrough request carries,
// in canonical form (http.Header's keys), so looking them up allocates
// nothing.
var forwardedHeaders = []string{"Anthropic-Version", "Anthropic-Beta"}

// post sends a passthrough request: the client's anthropic-version and
// anthropic-beta headers go along (the configured version when the client
// gave none).
func (a *Adapter) post(ctx context.Context, call *provider.Call, url string, body []byte, stream bool) (*http.Response, error) {
	return a.send.Post(ctx, call, url, body, stream, func(h http.Header) {
		h.Set("Anthropic-Version", a.version)
		for _, name := range forwardedHeaders {
			if vs := call.Req.Header[name]; len(vs) > 0 {
				h[name] = vs
			}
		}
	})
}

// passthrough serves a Messages request (see above).
func (a *Adapter) passthrough(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	rq := call.Req
	body, err := passthroughBody(rq.Body, call.Model(), call.OutputLimit(), call.Variant())
	if err == nil {
		body, err = call.ServiceTierMember(body)
	}
	if err != nil {
		return nil, err
	}
	resp, err := a.post(ctx, call, a.endpoint, body, rq.Stream)
	if err != nil {
		return nil, err
	}
	if rq.Stream && !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return &rawStream{prov: a.id, body: resp.Body, r: newReader(resp.Body), reqBytes: len(body), trace: &rq.Trace}, nil
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body) // bounded by the client (provider.LimitTransport)
	if err != nil {
		return nil, provider.TransportError(ctx, a.id, err)
	}
	if !gjson.ValidBytes(data) {
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned malformed JSON", Provider: a.id}
	}
	mi, _ := messageswire.ReadMessage(nil, data)
	switch {
	case mi.Error:
		return nil, provider.InBandError(a.id, mi.ErrorType)
	case rq.Stream:
		return nil, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider answered a streaming request with JSON", Provider: a.id}
	}
	u := provider.MessagesUsage(mi.Usage, mi.Container)
	if !mi.Content && u.Output == 0 {
		return nil, provider.EmptyResponse(a.id)
	}
	ev := exchange.Event{Kind: exchange.Raw, Raw: data, RawAPI: exchange.Messages, Flags: exchange.Whole | exchange.HasContent}
	if stop := mi.StopReason; stop != "" {
		ev.Flags |= exchange.HasFinish
		ev.Finish, ev.Stop = finishReason(stop), stop
	}
	return provider.Events(u, ev), nil
}

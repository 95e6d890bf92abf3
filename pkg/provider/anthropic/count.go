package anthropic

import (
	"context"
	"io"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
	"github.com/llmgw/llmgw/pkg/provider"
	"github.com/llmgw/llmgw/pkg/wire/chatwire"
)

var _ provider.TokenCounter = (*Adapter)(nil)

// CountTokens implements provider.TokenCounter for a Messages client's
// count_tokens request: the client's body, with the target's model, is
// posted to {base_url}/v1/messages/count_tokens with the passthrough
// headers, and the upstream's input_tokens returned. The answer is read
// within server.max_upstream_body_bytes (the client's transport,
// provider.LimitTransport); a longer one is provider.BodyTooLarge. A request of any other
// API cannot be counted here (provider.ErrCannotCount).
func (a *Adapter) CountTokens(ctx context.Context, call *provider.Call) (int, error) {
	if !provider.Passthrough(call.Req, exchange.Messages) {
		return 0, provider.ErrCannotCount
	}
	var sys *chatwire.Variant
	if v := call.Variant(); v != nil && v.EditsSystem() {
		// The prompt the target would get; count_tokens takes no sampling
		// parameters or output limit.
		sys = &chatwire.Variant{System: v.System, SystemPrefix: v.SystemPrefix, SystemSuffix: v.SystemSuffix}
	}
	body, err := passthroughBody(call.Req.Body, call.Model(), 0, sys)
	if err != nil {
		return 0, err
	}
	resp, err := a.post(ctx, call, a.countURL, body, false)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	// Bounded like every whole upstream body (provider.LimitTransport:
	// server.max_upstream_body_bytes): an answer over the bound is
	// provider.BodyTooLarge, never cut short and read as something else.
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, provider.TransportError(ctx, a.id, err)
	}
	n := gjson.GetBytes(data, "input_tokens")
	if n.Type != gjson.Number {
		return 0, &gwerr.Error{Category: gwerr.Unavailable, Message: "provider returned no input_tokens count", Provider: a.id}
	}
	return int(n.Int()), nil
}

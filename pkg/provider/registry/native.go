package registry

import (
	"context"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/provider"
)

// nativeGuard wraps every adapter Build makes: an attempt whose request
// needs an upstream that speaks the client's API natively
// (exchange.Request.Untranslated: Anthropic extended thinking, a Responses
// request with built-in tools or a stored conversation, ...) is refused as unsupported, before any network
// call, when the provider does not speak that API (config Provider.Speaks)
// and would have to translate it. The failover engine then tries the next
// target, and the client gets the 400 naming the feature and the target
// only when none can serve it. Whether a provider speaks the API is asked
// per target (config Provider.SpeaksAt: a Bedrock target speaks Messages
// when its model is Claude). When the route's translate_without lets the
// features drop, the guard notes them on the request's trace
// (exchange.Trace.NoteDrop), so the response names them.
type nativeGuard struct {
	p    *config.Provider
	d    *provider.Descriptor
	next provider.Provider
}

// Unwrap returns the adapter the guard wraps, so optional interfaces
// (provider.TokenCounter) stay reachable (provider.Underlying).
func (g nativeGuard) Unwrap() provider.Provider { return g.next }

// Send implements provider.Provider.
//
// An embeddings request is refused the same way by a provider that neither
// speaks the embeddings API (apis: [embeddings]) nor translates it
// (provider.Descriptor.Serves).
func (g nativeGuard) Send(ctx context.Context, call *provider.Call) (provider.Stream, error) {
	if !g.d.Serves(g.p, call.Req.API) {
		return nil, provider.Unsupported(call.Step.ID, "input", "the embeddings API (the provider does not list embeddings in apis)")
	}
	native := g.p.SpeaksAt(string(call.Req.API), call.Step)
	if e := provider.RefuseUntranslated(call.Req, call.Step.ID, native); e != nil {
		return nil, e
	}
	if !native {
		// The route's translate_without let them drop: the response names
		// them if this target serves.
		for _, f := range call.Req.Untranslated {
			k := f.Key
			if k == "" {
				k = exchange.FeatureKey(f.Param)
			}
			call.Req.Trace.NoteDrop(call.Step.ID, k)
		}
	}
	return g.next.Send(ctx, call)
}

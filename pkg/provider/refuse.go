package provider

import (
	"slices"

	"github.com/llmgw/llmgw/pkg/gwerr"
)

// Refuse is the one rule for a part of the canonical Prompt that this
// attempt's upstream API cannot carry: it returns the unsupported-feature
// error naming param and what (Unsupported, category invalid_request, code
// unsupported_feature: the failover engine skips the target and the client
// gets the 400 only when no target can serve), or nil when the route's
// translate_without lists key ("thinking", "top_k", ...), in which case
// the adapter drops the feature silently and the drop is recorded on the
// request's trace (exchange.Trace.Dropped), so the response names it in
// x-gateway-dropped-features. Adapters call it before any network call.
func Refuse(call *Call, key, param, what string) *gwerr.Error {
	if !slices.Contains(call.Req.Policy.TranslateWithout, key) {
		return Unsupported(call.Step.ID, param, what)
	}
	call.Req.Trace.NoteDrop(call.Step.ID, key)
	return nil
}

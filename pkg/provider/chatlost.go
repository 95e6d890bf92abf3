package provider

import (
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/gwerr"
)

// The bridge while adapters move from the retiring Chat form to the Prompt
// (removed with exchange.Request.Chat): an ingress that decodes its API
// into a lossless Prompt lists in Request.Untranslated only what a Prompt
// cannot hold, and in Request.ChatLost what its Chat form loses besides.
// An adapter that builds from the Prompt says so (PromptReader) and
// refuses what its API cannot carry itself (Refuse); every other adapter
// is refused what its Chat form lost, by the same rule.

// PromptReader is implemented by adapters that build their upstream
// request from Call.Prompt (never Call.Chat).
type PromptReader interface {
	// ReadsPrompt marks the adapter; it does nothing.
	ReadsPrompt()
}

// RefuseChatLost returns the unsupported-feature error for an attempt at
// a translating (non-native) target whose adapter p still builds from the
// Chat form while the request holds a feature that form loses
// (Request.ChatLost), unless the route's translate_without lets it drop
// it (then the drop is noted, as Refuse does); nil when the attempt may go
// ahead.
func RefuseChatLost(call *Call, p Provider, native bool) *gwerr.Error {
	if _, ok := p.(PromptReader); ok || native {
		return nil
	}
	for _, f := range call.Req.ChatLost {
		key := f.Key
		if key == "" {
			key = exchange.FeatureKey(f.Param)
		}
		if e := Refuse(call, key, f.Param, f.What); e != nil {
			e.Message += ": only an upstream that speaks the " + string(call.Req.API) + " API natively can honour it"
			return e
		}
	}
	return nil
}

package server

import "github.com/llmgw/llmgw/pkg/keyledger"

// KeyStatuses is the key pool of one target of the config in force: the
// ledger's view of its keys, then the configured keys whose reference did
// not resolve (as /healthz lists them). Keys are named by fingerprint or
// reference only. For the status page.
func (h *Handler) KeyStatuses(provider, model string) []keyledger.Status {
	return append(h.up.Keys.Statuses(provider, model), h.current.Load().unresolved[provider]...)
}

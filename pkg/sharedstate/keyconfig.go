package sharedstate

import (
	"context"
	"fmt"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/keys"
)

// ResolveKeys resolves every provider's key references in cfg into keys,
// for [Ledger.SetKeys], with the same rules as the server's in-process pool
// (pkg/server Handler.Reload): a reference that resolves to nothing is
// skipped; a key's priority is its configured priority, else its index in
// the list; a provider configured without keys is absent from the result
// (Pick then returns the zero Key for it).
//
// The server resolves keys only for its own pool, so whoever passes a
// Ledger as server.Options.Keys must call SetKeys with this on every config
// load.
func ResolveKeys(ctx context.Context, cfg *config.Config,
	resolve func(ctx context.Context, ref config.KeyRef) (secret string, ok bool, err error)) (map[string][]keys.Key, error) {
	out := map[string][]keys.Key{}
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		if len(p.Keys) == 0 {
			continue
		}
		ks := []keys.Key{}
		for i, ref := range p.Keys {
			secret, ok, err := resolve(ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("provider %s: keys[%d]: %w", id, i, err)
			}
			if !ok {
				continue
			}
			prio := ref.Priority
			if prio == 0 {
				prio = i
			}
			ks = append(ks, keys.New(secret, prio))
		}
		out[id] = ks
	}
	return out, nil
}

package keyledger

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/llmgw/llmgw/pkg/config"
)

// Resolver returns the secret a key reference points at; ok false skips
// that key (the reference resolves to nothing).
type Resolver func(ctx context.Context, ref config.KeyRef) (secret string, ok bool, err error)

// Env is the Resolver of environment references: {env: NAME} resolves to
// the variable's value; an unset or empty variable, and any other kind of
// reference, skips the key.
func Env(_ context.Context, ref config.KeyRef) (string, bool, error) {
	if ref.Env == "" {
		return "", false, nil
	}
	v := os.Getenv(ref.Env)
	return v, v != "", nil
}

// Resolve resolves every provider's key references in cfg into keys
// (provider id -> keys), for [Ledger.SetKeys]. It is the one place key
// references are resolved. A reference that resolves to nothing is skipped
// (with a warning on log, when log is not nil); a key's priority is its
// configured priority, else its index in the list; a provider configured
// without keys is absent from the result (Pick then returns the zero Key
// for it), while one whose references all resolve to nothing has an empty
// list (no usable key).
func Resolve(ctx context.Context, cfg *config.Config, resolve Resolver, log *slog.Logger) (map[string][]Key, error) {
	out := map[string][]Key{}
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		if len(p.Keys) == 0 {
			continue
		}
		ks := []Key{}
		for i, ref := range p.Keys {
			secret, ok, err := resolve(ctx, ref)
			if err != nil {
				return nil, fmt.Errorf("provider %s: keys[%d]: %w", id, i, err)
			}
			if !ok {
				if log != nil {
					log.LogAttrs(ctx, slog.LevelWarn, "provider key skipped: its reference resolves to nothing",
						slog.String("provider", id), slog.Int("key_index", i))
				}
				continue
			}
			prio := ref.Priority
			if prio == 0 {
				prio = i
			}
			ks = append(ks, NewKey(secret, prio))
		}
		out[id] = ks
	}
	return out, nil
}

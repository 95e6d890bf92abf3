package server

import (
	"context"
	"errors"
	"log/slog"

	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/keys"
)

// resolveKeys resolves the config's key references into keys (provider id
// -> keys, for the picker's SetKeys). A reference whose resolution fails
// does not fail the config: that key is skipped, logged by name, reported
// to OnKeyError and returned in unresolved (provider id -> statuses, shown
// in /healthz), and the provider's other keys serve.
func (h *Handler) resolveKeys(ctx context.Context, cfg *config.Config) (resolved map[string][]keys.Key, unresolved map[string][]keys.Status) {
	resolved = map[string][]keys.Key{}
	unresolved = map[string][]keys.Status{}
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		if len(p.Keys) == 0 {
			continue
		}
		ks := []keys.Key{}
		for i, ref := range p.Keys {
			secret, ok, err := h.opts.ResolveKey(ctx, ref)
			if err != nil {
				unresolved[id] = append(unresolved[id], h.unresolvedKey(ctx, id, i, ref, err))
				continue
			}
			if !ok {
				h.log.LogAttrs(ctx, slog.LevelWarn, "provider key skipped: its reference resolves to nothing",
					slog.String("provider", id), slog.Int("key_index", i))
				continue
			}
			prio := ref.Priority
			if prio == 0 {
				prio = i
			}
			ks = append(ks, keys.New(secret, prio))
		}
		resolved[id] = ks
	}
	return resolved, unresolved
}

// unresolvedKey logs and reports one key reference that failed to resolve
// and returns its /healthz status: no fingerprint, the reference's name
// (never a secret) and why.
func (h *Handler) unresolvedKey(ctx context.Context, provider string, i int, ref config.KeyRef, err error) keys.Status {
	reason := keys.ReasonUnresolved
	if errors.Is(err, keys.ErrNotFound) {
		reason = keys.ReasonMissing
	}
	name := ref.SSM
	if name == "" {
		name = ref.Env
	}
	h.log.LogAttrs(ctx, slog.LevelError, "provider key skipped: its reference could not be resolved",
		slog.String("provider", provider), slog.Int("key_index", i), slog.String("ref", name),
		slog.String("reason", reason), slog.String("error", err.Error()))
	if h.opts.OnKeyError != nil {
		h.opts.OnKeyError(provider, i, err)
	}
	return keys.Status{Reason: reason, Ref: name}
}

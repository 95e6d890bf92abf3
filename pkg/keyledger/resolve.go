package keyledger

import (
	"context"
	"errors"
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

// Resolution is the outcome of resolving a config's key references.
type Resolution struct {
	// Keys maps provider id -> its usable keys, for [Ledger.SetKeys]. A
	// provider configured without keys is absent (Pick then returns the
	// zero Key for it); one whose references all failed has an empty list.
	Keys map[string][]Key
	// Unresolved maps provider id -> the keys whose reference failed to
	// resolve or resolved to nothing (an unset environment variable: reason
	// missing), with no fingerprint and Ref, RefKind and Reason set, for
	// /healthz and the error of a target that has no key left.
	Unresolved map[string][]Status
}

// Resolve resolves every provider's key references in cfg. It is the one
// place key references are resolved. A reference that resolves to nothing
// is skipped with a warning naming the provider and the reference (the
// environment variable that is not set) and listed in Unresolved as
// missing; one whose resolution fails is skipped too,
// logged by name (never a secret), reported to onError (when not nil) and
// listed in Unresolved: one missing key never stops the rest of the config.
// A key's priority is its configured priority, else its index in the list.
func Resolve(ctx context.Context, cfg *config.Config, resolve Resolver, log *slog.Logger, onError func(provider string, keyIndex int, err error)) Resolution {
	out := Resolution{Keys: map[string][]Key{}, Unresolved: map[string][]Status{}}
	for _, id := range cfg.ProviderIDs() {
		p := cfg.Providers[id]
		if len(p.Keys) == 0 {
			continue
		}
		ks := []Key{}
		for i, ref := range p.Keys {
			secret, ok, err := resolve(ctx, ref)
			if err != nil {
				out.Unresolved[id] = append(out.Unresolved[id], unresolved(ctx, log, id, i, ref, err))
				if onError != nil {
					onError(id, i, err)
				}
				continue
			}
			if !ok {
				st := Status{Reason: ReasonMissing}
				st.Ref, st.RefKind = refName(ref)
				if log != nil {
					log.LogAttrs(ctx, slog.LevelWarn, "provider key skipped: "+st.Describe(),
						slog.String("provider", id), slog.Int("key_index", i), slog.String("ref", st.Ref))
				}
				out.Unresolved[id] = append(out.Unresolved[id], st)
				continue
			}
			prio := ref.Priority
			if prio == 0 {
				prio = i
			}
			ks = append(ks, NewKey(secret, prio))
		}
		out.Keys[id] = ks
	}
	return out
}

// unresolved logs one key reference that failed to resolve and returns its
// status: no fingerprint, the reference's name and why.
func unresolved(ctx context.Context, log *slog.Logger, provider string, i int, ref config.KeyRef, err error) Status {
	reason := ReasonUnresolved
	if errors.Is(err, ErrNotFound) {
		reason = ReasonMissing
	}
	name, kind := refName(ref)
	if log != nil {
		log.LogAttrs(ctx, slog.LevelError, "provider key skipped: its reference could not be resolved",
			slog.String("provider", provider), slog.Int("key_index", i), slog.String("ref", name),
			slog.String("reason", reason), slog.String("error", err.Error()))
	}
	return Status{Reason: reason, Ref: name, RefKind: kind}
}

// refName returns what a reference names and its kind (env or ssm).
func refName(ref config.KeyRef) (name, kind string) {
	if ref.SSM != "" {
		return ref.SSM, "ssm"
	}
	return ref.Env, "env"
}

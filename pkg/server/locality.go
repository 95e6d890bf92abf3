package server

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/tidwall/gjson"

	"github.com/llmgw/llmgw/pkg/breaker"
	"github.com/llmgw/llmgw/pkg/config"
	"github.com/llmgw/llmgw/pkg/exchange"
	"github.com/llmgw/llmgw/pkg/keyledger"
	"github.com/llmgw/llmgw/pkg/locality"
)

// Prompt-cache locality (docs/prompt-caching.md): on a route with
// cache_locality, a conversation (locality.Affinity) starts from the target
// and provider key that last served it (Upstream.Places) while that target's
// breaker is closed and that key is usable; otherwise the chain runs in its
// own order and the conversation moves to whatever serves it. Unlike a
// Responses account pin (responses_pin.go) it is a preference, never a
// constraint: the rest of the chain follows in its order.

// localityState is what a request of a locality route learned before its
// chain ran.
type localityState struct {
	hash  string
	ttl   time.Duration // the route's cache_locality.ttl
	from  locality.Place
	found bool
	// kept: the chain was reordered to start from the stored place.
	kept bool
}

// localize reorders the request's chain to start from its conversation's
// place. A store error costs nothing but the preference.
func (x *exchangeState) localize(ctx context.Context) {
	r := x.rt.cfg.Routes[x.req.Route]
	if r == nil || r.CacheLocality == nil || x.pin != nil || x.h.up.Places == nil {
		return
	}
	team := ""
	if x.req.Caller != nil {
		team = x.req.Caller.Team
	}
	key := ""
	if x.req.API == exchange.Chat || x.req.API == exchange.Responses {
		key = gjson.GetBytes(x.req.Body, "prompt_cache_key").Str
	}
	hash := locality.Affinity(x.req, team, key)
	if hash == "" {
		return
	}
	pl, found, err := x.h.up.Places.Get(ctx, hash)
	if err != nil {
		x.h.log.LogAttrs(ctx, slog.LevelWarn, "could not read a conversation's place; the chain runs in its order",
			slog.String("request_id", x.req.ID), slog.String("error", err.Error()))
		return
	}
	x.loc = &localityState{hash: hash, ttl: r.CacheLocality.TTLOrDefault(), from: pl, found: found}
	if !found {
		return
	}
	i := slices.IndexFunc(x.req.Steps, func(s config.Step) bool { return s.ID == pl.Target })
	if i < 0 || !x.healthy(x.req.Steps[i], pl.Key) {
		return
	}
	x.loc.kept = true
	if i > 0 {
		steps := make([]config.Step, 0, len(x.req.Steps))
		steps = append(append(append(steps, x.req.Steps[i]), x.req.Steps[:i]...), x.req.Steps[i+1:]...)
		x.req.Steps = steps
	}
	if pl.Key != "" {
		x.rt = x.rt.preferring(x.req.Steps[0].Provider, pl.Key)
	}
}

// healthy reports whether step may serve its conversation again: its
// breaker closed (not open, not probing, not forced open) and, when it
// served with a key, that key usable now (not cooling after a 429, not
// disabled).
func (x *exchangeState) healthy(step config.Step, fp string) bool {
	if step.Breaker == "open" || x.h.up.Breakers.Snapshot(step.ID).State != breaker.Closed && step.Breaker != "closed" {
		return false
	}
	if fp == "" {
		return true
	}
	kp, ok := x.h.up.Keys.(keyPinner)
	if !ok {
		return false
	}
	_, err := kp.PickKey(step.Provider, step.LedgerModel(), fp)
	return err == nil
}

// notePlace stores where the conversation was served, after a clean end
// (one write only when the place changed: locality.Places.Note).
func (x *exchangeState) notePlace() {
	if x.loc == nil || x.end != io.EOF || x.req.Trace.Target == "" {
		return
	}
	tr := &x.req.Trace
	to := locality.Place{Target: tr.Target}
	for i := len(tr.Attempts) - 1; i >= 0; i-- {
		if a := tr.Attempts[i]; a.Stage == "" && a.Target == tr.Target && a.Skipped == "" {
			to.Key = a.Key
			break
		}
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(x.r.Context()), locality.DefaultTimeout)
	defer cancel()
	if _, err := x.h.up.Places.Note(ctx, x.loc.hash, x.loc.from, x.loc.found, to, x.loc.ttl); err != nil {
		x.h.log.LogAttrs(ctx, slog.LevelWarn, "could not record a conversation's place", slog.String("request_id", x.req.ID),
			slog.String("target", to.Target), slog.String("error", err.Error()))
	}
}

// preferring is rt with a router that picks the key fp first for provider,
// and the provider's usual key when fp is not usable.
func (rt *runtimeState) preferring(provider, fp string) *runtimeState {
	r := *rt.router
	r.Keys = preferredKeys{Picker: r.Keys, provider: provider, fp: fp}
	cp := *rt
	cp.router = &r
	return &cp
}

// preferredKeys is a Picker that tries one key of one provider first.
type preferredKeys struct {
	keyledger.Picker
	provider, fp string
}

// Pick implements keyledger.Picker.
func (p preferredKeys) Pick(provider, model string) (keyledger.Key, error) {
	if kp, ok := p.Picker.(keyPinner); ok && provider == p.provider {
		if k, err := kp.PickKey(provider, model, p.fp); err == nil {
			return k, nil
		}
	}
	return p.Picker.Pick(provider, model)
}

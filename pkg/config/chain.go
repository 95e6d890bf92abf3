package config

import (
	"time"
)

// Step is one resolved target of a route's chain, with its policy applied.
type Step struct {
	// ID is "provider/model": the identity of the target in breakers, logs
	// and health reports.
	ID                string
	Provider          string
	Model             string
	Attempts          int
	FirstTokenTimeout time.Duration
	MaxTokens         int
	// Breaker is "", "open" or "closed" (an operator's override).
	Breaker string
	// Prefill: the target can continue a final assistant message.
	Prefill bool
	// Variant is the target's prompt variant, nil if none.
	Variant *Variant
	// Options are the target's kind-specific options (Target.Options).
	Options map[string]string
	// ServiceTier is the provider service tier the target asks for
	// (Target.ServiceTier), "" for none.
	ServiceTier string
}

// LedgerModel is the model a step's keys are rate-limited under in the key
// ledger: its model, and its service tier apart ("model#tier"), so that a
// 429 of a key's priority capacity leaves that key usable for the
// default-tier target of the same model.
func (s Step) LedgerModel() string { return LedgerModel(s.Model, s.ServiceTier) }

// LedgerModel is Step.LedgerModel of a model at service tier tier.
func LedgerModel(model, tier string) string {
	if tier == "" {
		return model
	}
	return model + "#" + tier
}

// Chain returns a route's resolved chain: route references spliced in, the
// targets of disabled providers dropped, and a target that appears twice
// kept at its first place. ok is false for an unknown route. Chains are
// resolved once, when the config is loaded; callers must not modify the
// returned slice.
func (c *Config) Chain(name string) (steps []Step, r *Route, ok bool) {
	r, ok = c.Routes[name]
	if !ok {
		return nil, nil, false
	}
	if c.chains == nil {
		c.resolveChains()
	}
	return c.chains[name], r, true
}

// resolveChains resolves every route once. A referenced route's steps take
// the policy of the route that references it only where the step does not
// set its own (attempts, first-token timeout); each route is expanded once
// per referencing policy, so deep or repeated references cost linear time.
func (c *Config) resolveChains() {
	type memoKey struct{ route, policyOf string }
	memo := map[memoKey][]Step{}
	var expand func(name, policyOf string) []Step
	expand = func(name, policyOf string) []Step {
		key := memoKey{name, policyOf}
		pol := c.Routes[policyOf]
		if s, ok := memo[key]; ok {
			return s
		}
		memo[key] = nil // a cycle (rejected at load) expands to nothing
		var out []Step
		seen := map[string]bool{}
		add := func(s Step) {
			if !seen[s.ID] {
				seen[s.ID] = true
				out = append(out, s)
			}
		}
		for _, t := range c.Routes[name].Targets {
			if t.Route != "" {
				for _, s := range expand(t.Route, policyOf) {
					add(s)
				}
				continue
			}
			p := c.Providers[t.Provider]
			if p.Disabled {
				continue
			}
			s := Step{ID: t.ID(), Provider: t.Provider, Model: t.Model, Attempts: t.Attempts,
				FirstTokenTimeout: t.FirstTokenTimeout.D(), MaxTokens: t.MaxTokens, Breaker: t.Breaker, Prefill: t.Prefill,
				Variant: t.Variant, Options: t.Options, ServiceTier: t.ServiceTier}
			if s.Attempts == 0 {
				s.Attempts = pol.Attempts
			}
			if s.FirstTokenTimeout == 0 {
				s.FirstTokenTimeout = pol.FirstTokenTimeout.D()
			}
			if s.MaxTokens == 0 {
				s.MaxTokens = 4096
			}
			add(s)
		}
		memo[key] = out
		return out
	}
	c.bases = map[string]string{}
	for _, r := range c.Routes {
		for _, t := range r.Targets {
			if b := t.Options["base_model"]; b != "" {
				c.bases[t.Provider+"/"+t.Model] = b
			}
		}
	}
	chains := make(map[string][]Step, len(c.Routes))
	for name := range c.Routes {
		chains[name] = expand(name, name)
	}
	c.chains = chains
}

// BaseModel is the model a target's prices are looked up under when none
// is configured for its own model id: the target's base_model option, else
// the provider kind's price rule (Kind.BaseModel: for bedrock, the base
// model behind a cross-region inference profile id or an ARN), else model
// itself.
func (c *Config) BaseModel(provider, model string) string {
	if b := c.bases[provider+"/"+model]; b != "" {
		return b
	}
	if p := c.Providers[provider]; p != nil {
		if rule := p.kind().BaseModel; rule != nil {
			if b := rule(model); b != "" {
				return b
			}
		}
	}
	return model
}

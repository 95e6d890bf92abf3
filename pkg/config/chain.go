package config

import "time"

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
}

// Chain returns a route's resolved chain: route references spliced in, the
// targets of disabled providers dropped, and a target that appears twice
// kept at its first place. ok is false for an unknown route.
func (c *Config) Chain(name string) (steps []Step, r *Route, ok bool) {
	r, ok = c.Routes[name]
	if !ok {
		return nil, nil, false
	}
	seen := map[string]bool{}
	c.appendSteps(&steps, r, seen)
	return steps, r, true
}

func (c *Config) appendSteps(steps *[]Step, r *Route, seen map[string]bool) {
	for _, t := range r.Targets {
		if t.Route != "" {
			c.appendSteps(steps, c.Routes[t.Route], seen)
			continue
		}
		p := c.Providers[t.Provider]
		id := t.Provider + "/" + t.Model
		if p.Disabled || seen[id] {
			continue
		}
		seen[id] = true
		s := Step{ID: id, Provider: t.Provider, Model: t.Model, Attempts: t.Attempts,
			FirstTokenTimeout: t.FirstTokenTimeout.D(), MaxTokens: t.MaxTokens, Breaker: t.Breaker}
		if s.Attempts == 0 {
			s.Attempts = r.Attempts
		}
		if s.FirstTokenTimeout == 0 {
			s.FirstTokenTimeout = r.FirstTokenTimeout.D()
		}
		if s.MaxTokens == 0 {
			s.MaxTokens = 4096
		}
		*steps = append(*steps, s)
	}
}

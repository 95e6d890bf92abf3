package config

import "slices"

// ProviderAPIs are the client APIs an upstream may declare it speaks
// natively (Provider.APIs).
var ProviderAPIs = []string{"chat", "responses", "embeddings"}

// validateAPIs checks a provider's apis: known API names, each once, and
// only on the kinds that can pass a client's bytes through (openai and
// fake; the others translate every request).
func (p *Provider) validateAPIs(at Path) error {
	if len(p.APIs) == 0 {
		return nil
	}
	if p.Kind != "openai" && p.Kind != "fake" {
		return errAt(at.Key("apis"), "only kinds openai and fake declare the APIs they speak; kind %s translates every request", p.Kind)
	}
	for i, api := range p.APIs {
		if err := oneOf(at.Key("apis").Index(i), "API", api, ProviderAPIs...); err != nil {
			return err
		}
		if slices.Contains(p.APIs[:i], api) {
			return errAt(at.Key("apis").Index(i), "%s is listed twice", show(api))
		}
	}
	return nil
}
